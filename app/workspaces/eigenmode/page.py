"""The Eigenmode designer workspace: set a pick-and-place swing on the canvas, learn a control
potential that makes it a natural oscillation of the closed loop, then stabilise it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.workspaces.eigenmode.canvas import PendulumCanvas, fk
from app.workspaces.eigenmode.forms import DataclassForm, FieldSpec
from app.workspaces.eigenmode.plots import LossPlot, PotentialMaps, StabilisePlots, TimePlot, potential_grid
from engine.eigenmodes.config import DesignConfig, StabiliseConfig
from engine.eigenmodes.jobs import LearnJob, StabiliseJob, learn_summary, stabilise_summary
from engine.eigenmodes.storage import (
    load_mode,
    save_mode,
    stabilised_csv,
    trajectory_csv,
    write_trajectory_csv,
)
from engine.systems.double_pendulum import DoublePendulumParams, potential_energy

__all__ = ["EigenmodePage"]

TASK_SPECS = {
    "q0": FieldSpec("start q0 (rad)", -3.2, 3.2, 0.05, 3),
    "target": FieldSpec("target x, y (m)", -3.0, 3.0, 0.05, 3),
    "period": FieldSpec("period T (s)", 0.2, 20.0, 0.1, 3),
    "learn_period": FieldSpec("learn the period"),
}
WEIGHT_SPECS = {
    "task_weight": FieldSpec("task weight", 0.0, 1e6, 1.0, 3),
    "constraint_weight": FieldSpec("constraint weight gamma", 0.0, 1e6, 1.0, 3),
    "effort_weight": FieldSpec("effort weight lambda", 0.0, 10.0, 1e-5, 6),
    "constraint_mode": FieldSpec("constraint", choices=("soft", "hard")),
}
TRAIN_SPECS = {
    "epochs": FieldSpec("epochs", 0, 100000, 50),
    "lr": FieldSpec("learning rate", 1e-6, 1.0, 1e-3, 5),
    "dt": FieldSpec("RK4 step (s)", 0.001, 0.5, 0.01, 3),
    "dtype": FieldSpec("precision", choices=("float64", "float32")),
}
STAB_SPECS = {
    "perturb_q": FieldSpec("start offset dq (rad)", -3.0, 3.0, 0.05, 3),
    "perturb_p": FieldSpec("start offset dp", -20.0, 20.0, 0.1, 3),
    "damping": FieldSpec("damping D", 0.0, 100.0, 0.05, 3),
    "k_energy": FieldSpec("gain k_E", 0.0, 1000.0, 1.0, 3),
    "k_mode": FieldSpec("gain k_M", 0.0, 1000.0, 0.5, 3),
    "periods": FieldSpec("duration (periods)", 0.5, 200.0, 1.0, 1),
    "dt": FieldSpec("simulation step (s)", 0.0005, 0.1, 0.001, 4),
    "multiplier_steps": FieldSpec("monodromy steps / period", 20, 10000, 50),
    "settle_periods": FieldSpec("settle before monodromy (periods)", 0.0, 50.0, 1.0, 1),
}


class EigenmodePage(QWidget):
    """Workspace page (see app/workspaces/__init__.py for the page interface)."""

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.plant = DoublePendulumParams()
        self.mode = None                 # DesignedMode of the last learn / load
        self.stab_result = None          # StabiliseResult of the last stabilise run
        self.learn_handle = None
        self.stab_handle = None
        self._preview_lock = threading.Lock()
        self._preview = None
        self._anim_t = 0.0
        self._build()
        self._anim_timer = QTimer(self)
        self._anim_timer.setInterval(33)
        self._anim_timer.timeout.connect(self._tick)
        self._sync_canvas_from_forms()
        self._update_plant_map()

    # ------------------------------------------------------------------ layout
    def _build(self):
        outer = QHBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        controls = QWidget()
        cl = QVBoxLayout(controls)
        design = DesignConfig()
        self.task_form = DataclassForm(design.task, TASK_SPECS)
        self.weights_form = DataclassForm(design.weights, WEIGHT_SPECS)
        self.train_form = DataclassForm(design.train, TRAIN_SPECS)
        self.stab_form = DataclassForm(StabiliseConfig(), STAB_SPECS)
        for title, form in (("Task", self.task_form), ("Weights", self.weights_form), ("Training", self.train_form)):
            box = QGroupBox(title)
            QVBoxLayout(box).addWidget(form)
            cl.addWidget(box)
        row = QHBoxLayout()
        self.learn_button = QPushButton("Learn")
        self.learn_button.setObjectName("learnButton")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        row.addWidget(self.learn_button)
        row.addWidget(self.cancel_button)
        cl.addLayout(row)
        box = QGroupBox("Stabilise")
        sl = QVBoxLayout(box)
        sl.addWidget(self.stab_form)
        self.drag_perturbed = QCheckBox("dragging sets the perturbed start")
        sl.addWidget(self.drag_perturbed)
        self.stabilise_button = QPushButton("Stabilise")
        self.stabilise_button.setEnabled(False)
        sl.addWidget(self.stabilise_button)
        cl.addWidget(box)
        box = QGroupBox("Mode")
        ml = QHBoxLayout(box)
        self.save_button, self.load_button = QPushButton("Save…"), QPushButton("Load…")
        self.csv_button, self.png_button = QPushButton("CSV…"), QPushButton("PNG…")
        for b in (self.save_button, self.load_button, self.csv_button, self.png_button):
            ml.addWidget(b)
        self.save_button.setEnabled(False)
        self.csv_button.setEnabled(False)
        cl.addWidget(box)
        self.summary = QLabel("Drag the links to set the start, click to set the target, then Learn.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        cl.addWidget(self.summary)
        cl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(controls)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(380)
        scroll.setMaximumWidth(440)
        outer.addWidget(scroll)

        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        self.canvas = PendulumCanvas(self.plant)
        self.canvas.setMinimumSize(360, 360)
        ll.addWidget(self.canvas, 1)
        anim = QHBoxLayout()
        self.play_button = QPushButton("Play")
        self.play_button.setCheckable(True)
        self.play_button.setEnabled(False)
        self.speed = QDoubleSpinBox()
        self.speed.setRange(0.05, 8.0)
        self.speed.setSingleStep(0.25)
        self.speed.setValue(1.0)
        self.speed.setSuffix("×")
        self.source = QComboBox()
        self.source.addItems(["mode", "stabilised run"])
        self.scrub = QSlider(Qt.Orientation.Horizontal)
        self.scrub.setRange(0, 1000)
        self.scrub.setEnabled(False)
        self.time_label = QLabel("t = 0.00 s")
        for w in (self.play_button, QLabel("speed"), self.speed, self.source):
            anim.addWidget(w)
        anim.addWidget(self.scrub, 1)
        anim.addWidget(self.time_label)
        ll.addLayout(anim)
        split.addWidget(left)

        self.tabs = QTabWidget()
        self.loss_plot = LossPlot()
        self.potential_maps = PotentialMaps()
        self.inputs_plot = TimePlot("u (N m)", ["u1", "u2"])
        self.energy_plot = TimePlot("J", ["H_cl (closed loop)", "H (plant)"])
        self.config_plot = TimePlot("q2 (rad)", ["mode path", "stabilised run"], xlabel="q1 (rad)", cursor=False)
        self.config_plot.setAspectLocked(True)
        self.config_plot.curves["mode path"].setZValue(10)   # drawn over the stabilised run
        self.stab_plots = StabilisePlots()
        for w, name in ((self.loss_plot, "Losses"), (self.potential_maps, "Potentials"), (self.inputs_plot, "Inputs"),
                        (self.energy_plot, "Energy"), (self.config_plot, "Configuration path"),
                        (self.stab_plots, "Stabilise")):
            self.tabs.addTab(w, name)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        outer.addWidget(split, 1)

        self.canvas.configurationDragged.connect(self._on_drag)
        self.canvas.targetClicked.connect(self._on_target_clicked)
        self.task_form.changed.connect(self._sync_canvas_from_forms)
        self.stab_form.changed.connect(self._sync_canvas_from_forms)
        self.drag_perturbed.toggled.connect(self._sync_canvas_from_forms)
        self.learn_button.clicked.connect(self.learn)
        self.cancel_button.clicked.connect(self.cancel)
        self.stabilise_button.clicked.connect(self.stabilise)
        self.save_button.clicked.connect(self._save_dialog)
        self.load_button.clicked.connect(self._load_dialog)
        self.csv_button.clicked.connect(self._csv_dialog)
        self.png_button.clicked.connect(self._png_dialog)
        self.play_button.toggled.connect(self._on_play)
        self.scrub.valueChanged.connect(self._on_scrub)
        self.source.currentIndexChanged.connect(lambda _: self._show_frame())

    # ------------------------------------------------------------------ design <-> forms
    def design(self) -> DesignConfig:
        """The design the forms describe (a fresh DesignConfig)."""
        return DesignConfig(plant=self.plant, task=self.task_form.value(), weights=self.weights_form.value(),
                            train=self.train_form.value())

    def set_design(self, design: DesignConfig) -> None:
        self.plant = design.plant
        self.canvas.set_plant(self.plant)
        self.task_form.set_value(design.task)
        self.weights_form.set_value(design.weights)
        self.train_form.set_value(design.train)

    def _sync_canvas_from_forms(self):
        task = self.task_form.value()
        self.canvas.set_configuration(task.q0)
        self.canvas.set_target(task.target)
        if self.drag_perturbed.isChecked() or self.stab_result is not None:
            stab = self.stab_form.value()
            self.canvas.set_ghost(np.asarray(task.q0) + np.asarray(stab.perturb_q))
        else:
            self.canvas.set_ghost(None)

    def _on_drag(self, q1: float, q2: float):
        if self.drag_perturbed.isChecked():
            q0 = np.asarray(self.task_form.value().q0)
            self.stab_form.set_field("perturb_q", (q1 - q0[0], q2 - q0[1]))
            self.canvas.set_configuration(q0)
            self.canvas.set_ghost((q1, q2))
        else:
            self.task_form.set_field("q0", (q1, q2))

    def _on_target_clicked(self, x: float, y: float):
        self.task_form.set_field("target", (x, y))

    # ------------------------------------------------------------------ learning
    def _preview_sink(self, orbit: dict):     # called from the worker thread
        with self._preview_lock:
            self._preview = orbit

    def learn(self):
        if self.learn_handle is not None:
            return
        try:
            design = self.design()
            job = LearnJob(design, preview=self._preview_sink)
        except ValueError as exc:
            self.ctx.show_error("Eigenmode design", str(exc))
            self.summary.setText(f"<b>Cannot learn:</b> {exc}")
            return
        self.loss_plot.clear_data()
        self._stop_animation()
        self.summary.setText("Learning…")
        self.learn_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.learn_handle = self.ctx.jobs.submit(job, name="Learn eigenmode", on_result=self._on_learned,
                                                 on_error=self._on_learn_error, on_progress=self._on_learn_progress,
                                                 on_cancelled=self._on_learn_cancelled)
        self.learn_handle.ended.connect(self._on_learn_ended)
        self.ctx.status("learning an eigenmode…")

    def cancel(self):
        for h in (self.learn_handle, self.stab_handle):
            if h is not None:
                h.cancel()

    def _on_learn_progress(self, update):
        m = update.metrics or {}
        if "epoch" in m:
            self.loss_plot.append(int(m["epoch"]), m)
            self.summary.setText(f"epoch {int(m['epoch'])}: loss {m['total']:.3g}, tip error "
                                 f"{100 * m['tip_error']:.1f} cm, constraint {m['constraint']:.2g}, T = {m['period']:.3f} s")
        with self._preview_lock:
            orbit, self._preview = self._preview, None
        if orbit is not None:
            elbow = np.array([fk(q, self.plant)[0] for q in orbit["q"]])
            self.canvas.set_orbit(orbit["tip"], elbow)
            self.canvas.set_text(f"preview, epoch {orbit['epoch']}")

    def _on_learned(self, mode):
        self.set_mode(mode)
        self.ctx.status(f"eigenmode learned in {mode.seconds:.1f} s")

    def _on_learn_error(self, message: str, tb: str):
        self.summary.setText(f"<b>Learning failed:</b> {message}")
        self.ctx.show_error("Eigenmode learning failed", message)

    def _on_learn_cancelled(self):
        self.summary.setText("Learning cancelled.")

    def _on_learn_ended(self):
        self.learn_handle = None
        self.learn_button.setEnabled(True)
        self.cancel_button.setEnabled(self.stab_handle is not None)

    # ------------------------------------------------------------------ results
    def set_mode(self, mode) -> None:
        """Show a designed mode (learned or loaded)."""
        self.mode = mode
        self.stab_result = None
        self.set_design(mode.design)
        tr = mode.trajectory
        self.loss_plot.set_history(mode.history)
        self.canvas.set_orbit(tr["tip"], tr["elbow"])
        self.canvas.set_text("")
        self.inputs_plot.set_curve("u1", tr["t"], tr["u"][:, 0])
        self.inputs_plot.set_curve("u2", tr["t"], tr["u"][:, 1])
        self.energy_plot.set_curve("H_cl (closed loop)", tr["t"], tr["energy"])
        import torch

        from engine.systems.double_pendulum import hamiltonian
        h = hamiltonian(torch.as_tensor(tr["q"]), torch.as_tensor(tr["p"]), self.plant).numpy()
        self.energy_plot.set_curve("H (plant)", tr["t"], h)
        self.config_plot.set_curve("mode path", tr["q"][:, 0], tr["q"][:, 1])
        self.config_plot.set_curve("stabilised run", [], [])
        self.stab_plots.set_result(_EmptyResult())
        learned, extent = potential_grid(mode.potential)
        plant_v, _ = potential_grid(lambda q: potential_energy(q, self.plant))
        self.potential_maps.set_maps(learned, plant_v, extent)
        self.potential_maps.set_orbit(tr["q"])
        c = learn_summary(mode)
        self.summary.setText(
            f"<b>Mode</b>: tip error {100 * c['tip_error']:.2f} cm, periodicity error {c['periodicity_error']:.2e}, "
            f"|p(T/2)| {c['p_half_norm']:.2e}, line-shaped: {'yes' if c['line_shaped'] else 'no'}, "
            f"effort {c['control_effort']:.3g}, T = {c['period']:.3f} s, learned in {c['seconds']:.1f} s")
        for b in (self.stabilise_button, self.save_button, self.csv_button, self.play_button, self.scrub):
            b.setEnabled(True)
        self.source.setCurrentIndex(0)
        self._anim_t = 0.0
        self._show_frame()

    def _update_plant_map(self):
        plant_v, extent = potential_grid(lambda q: potential_energy(q, self.plant))
        self.potential_maps.set_maps(None, plant_v, extent)

    # ------------------------------------------------------------------ stabilise
    def stabilise(self):
        if self.mode is None or self.stab_handle is not None:
            return
        try:
            cfg = self.stab_form.value()
            job = StabiliseJob(self.mode, cfg)
        except ValueError as exc:
            self.ctx.show_error("Stabilise", str(exc))
            self.summary.setText(f"<b>Cannot stabilise:</b> {exc}")
            return
        self.stabilise_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.stab_handle = self.ctx.jobs.submit(job, name="Stabilise eigenmode", on_result=self._on_stabilised,
                                                on_error=lambda m, tb: (self.summary.setText(f"<b>Stabilise failed:</b> {m}"),
                                                                        self.ctx.show_error("Stabilise failed", m)))
        self.stab_handle.ended.connect(self._on_stab_ended)

    def _on_stabilised(self, result):
        self.stab_result = result
        self.stab_plots.set_result(result)
        self.config_plot.set_curve("stabilised run", result.q[:, 0], result.q[:, 1])
        s = stabilise_summary(result)
        mults = ", ".join(f"{complex(*m):.3f}" for m in s["cycle_multipliers"])
        self.summary.setText(self.summary.text().split("<br>")[0] +
                             f"<br><b>Stabilised</b>: energy error {s['energy_error_final']:.2e} J, distance "
                             f"{s['position_distance_final']:.2e} rad / {s['momentum_distance_final']:.2e}; "
                             f"multipliers {mults}")
        self.tabs.setCurrentWidget(self.stab_plots)
        self.source.setCurrentIndex(1)
        self._anim_t = 0.0
        self._sync_canvas_from_forms()
        self._show_frame()

    def _on_stab_ended(self):
        self.stab_handle = None
        self.stabilise_button.setEnabled(self.mode is not None)
        self.cancel_button.setEnabled(self.learn_handle is not None)

    # ------------------------------------------------------------------ animation
    def _series(self):
        if self.source.currentIndex() == 1 and self.stab_result is not None:
            return self.stab_result.t, self.stab_result.q
        if self.mode is not None:
            return self.mode.trajectory["t"], self.mode.trajectory["q"]
        return None, None

    def _on_play(self, on: bool):
        self.play_button.setText("Pause" if on else "Play")
        if on:
            self._anim_timer.start()
        else:
            self._anim_timer.stop()

    def _stop_animation(self):
        self.play_button.setChecked(False)

    def _tick(self):
        t, _ = self._series()
        if t is None:
            return
        self._anim_t += 0.033 * self.speed.value()
        if self._anim_t > t[-1]:
            self._anim_t = self._anim_t % t[-1] if self.source.currentIndex() == 0 else 0.0
        self._show_frame()

    def _on_scrub(self, value: int):
        t, _ = self._series()
        if t is None or self.scrub.signalsBlocked():
            return
        self._anim_t = value / 1000 * t[-1]
        self._show_frame(from_scrub=True)

    def animation_frame(self):
        """``(t, q)`` currently shown by the animation (None before a mode exists)."""
        t, q = self._series()
        if t is None:
            return None
        i = int(np.clip(np.searchsorted(t, self._anim_t), 0, len(t) - 1))
        return float(t[i]), q[i]

    def _show_frame(self, from_scrub: bool = False):
        frame = self.animation_frame()
        if frame is None:
            return
        t, q = frame
        self.canvas.set_configuration(q)
        self.time_label.setText(f"t = {t:.2f} s")
        for p in (self.inputs_plot, self.energy_plot):
            p.set_cursor(t if self.source.currentIndex() == 0 else t % self.mode.period)
        if not from_scrub:
            ts, _ = self._series()
            self.scrub.blockSignals(True)
            self.scrub.setValue(int(round(1000 * t / ts[-1])) if ts[-1] > 0 else 0)
            self.scrub.blockSignals(False)

    # ------------------------------------------------------------------ files
    def save_mode_to(self, directory: str) -> None:
        if self.mode is None:
            raise ValueError("no designed mode to save: learn or load one first")
        save_mode(self.mode, directory)
        self.ctx.add_recent_file(str(Path(directory) / "mode.json"))
        self.ctx.status(f"saved mode to {directory}")

    def load_mode_from(self, directory: str) -> None:
        mode = load_mode(directory)   # raises a ValueError naming the file; nothing changes then
        self.set_mode(mode)
        self.ctx.add_recent_file(str(Path(directory) / "mode.json"))

    def export_csv_to(self, path: str) -> list[str]:
        if self.mode is None:
            raise ValueError("no designed mode to export")
        written = [str(write_trajectory_csv(trajectory_csv(self.mode), path))]
        if self.stab_result is not None:
            p = Path(path)
            written.append(str(write_trajectory_csv(stabilised_csv(self.stab_result),
                                                    p.with_name(p.stem + "_stabilised.csv"))))
        return written

    def export_png_to(self, path: str) -> None:
        if not self.grab().save(str(path)):
            raise ValueError(f"{path}: could not write the PNG")

    def _guard(self, title, fn, *args):
        try:
            fn(*args)
        except (ValueError, OSError) as exc:
            self.ctx.show_error(title, str(exc))
            self.summary.setText(f"<b>{title}:</b> {exc}")

    def _save_dialog(self):
        d = QFileDialog.getExistingDirectory(self, "Save mode into folder")
        if d:
            self._guard("Save mode", self.save_mode_to, d)

    def _load_dialog(self):
        d = QFileDialog.getExistingDirectory(self, "Load mode from folder")
        if d:
            self._guard("Load mode", self.load_mode_from, d)

    def _csv_dialog(self):
        f, _ = QFileDialog.getSaveFileName(self, "Export trajectory", "eigenmode.csv", "CSV (*.csv)")
        if f:
            self._guard("Export CSV", self.export_csv_to, f)

    def _png_dialog(self):
        f, _ = QFileDialog.getSaveFileName(self, "Export figure", "eigenmode.png", "PNG (*.png)")
        if f:
            self._guard("Export PNG", self.export_png_to, f)

    # ------------------------------------------------------------------ page interface
    def file_filters(self) -> list[str]:
        return ["Eigenmode (mode.json)"]

    def open_file(self, path: str) -> bool:
        p = Path(path)
        if p.name != "mode.json":
            return False
        try:
            self.load_mode_from(str(p.parent))
        except ValueError as exc:
            self.ctx.show_error("Open eigenmode", str(exc))
            return True
        return True

    def session_state(self) -> dict:
        return {"design": self.design().to_dict(), "stabilise": self.stab_form.value().__dict__.copy()}

    def restore_session_state(self, state: dict) -> None:
        try:
            if "design" in state:
                self.set_design(DesignConfig.from_dict(state["design"]))
            if "stabilise" in state:
                from engine.eigenmodes.config import config_from_dict
                self.stab_form.set_value(config_from_dict(StabiliseConfig, state["stabilise"], "stabilise"))
        except (ValueError, TypeError) as exc:
            self.ctx.show_error("Eigenmode session", str(exc))

    def shutdown(self) -> None:
        self._anim_timer.stop()
        self.cancel()


class _EmptyResult:
    t = np.zeros(0)
    energy = np.zeros(0)
    energy_target = 0.0
    position_distance = np.zeros(0)
    momentum_distance = np.zeros(0)
    cycle = {}
