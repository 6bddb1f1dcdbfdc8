"""The Eigenmode designer workspace: set a pick-and-place swing on the canvas, learn a control
potential that makes it a natural oscillation of the closed loop, then stabilise it.

The page lays out widgets and forwards input to :class:`EigenmodeState` (Qt-free); it redraws
from the state's events. Left: the settings (a side panel that scrolls vertically only and
collapses); middle: the pendulum canvas with the animation bar; right: the result plots.
"""

from __future__ import annotations

from pathlib import Path

import torch
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm, FieldSpec
from app.widgets.layout import SidePanel, collapse_button, remember_splitter
from app.widgets.plots import LossPlot
from app.widgets.run_row import RunRow
from app.workspaces.eigenmode.canvas import PendulumCanvas
from app.workspaces.eigenmode.plots import PotentialMaps, StabilisePlots, TimePlot, potential_grid
from app.workspaces.eigenmode.state import LOSS_TERMS, SOURCES, EigenmodeState
from engine.systems.double_pendulum import hamiltonian, potential_energy

__all__ = ["EigenmodePage"]

TASK_SPECS = {
    "q0": FieldSpec("start q0 (rad)", -3.2, 3.2, 0.05),
    "target": FieldSpec("target x, y (m)", -3.0, 3.0, 0.05),
    "period": FieldSpec("period T (s)", 0.2, 20.0, 0.1),
    "learn_period": FieldSpec("learn the period"),
}
WEIGHT_SPECS = {
    "task_weight": FieldSpec("task weight", 0.0, 1e6, 1.0),
    "constraint_weight": FieldSpec("constraint weight γ", 0.0, 1e6, 1.0),
    "effort_weight": FieldSpec("effort weight λ", 0.0, 10.0, 1e-5),
    "constraint_mode": FieldSpec("constraint", choices=("soft", "hard")),
}
TRAIN_SPECS = {
    "epochs": FieldSpec("epochs", 0, 100000, 50),
    "lr": FieldSpec("learning rate", 1e-6, 1.0, 1e-3),
    "dt": FieldSpec("RK4 step (s)", 0.001, 0.5, 0.01),
    "dtype": FieldSpec("precision", choices=("float64", "float32")),
}
STAB_SPECS = {
    "perturb_q": FieldSpec("start offset dq (rad)", -3.0, 3.0, 0.05),
    "perturb_p": FieldSpec("start offset dp", -20.0, 20.0, 0.1),
    "damping": FieldSpec("damping D", 0.0, 100.0, 0.05),
    "k_energy": FieldSpec("gain k_E", 0.0, 1000.0, 1.0),
    "k_mode": FieldSpec("gain k_M", 0.0, 1000.0, 0.5),
    "periods": FieldSpec("duration (periods)", 0.5, 200.0, 1.0),
    "dt": FieldSpec("simulation step (s)", 0.0005, 0.1, 0.001),
    "multiplier_steps": FieldSpec("monodromy steps / period", 20, 10000, 50),
    "settle_periods": FieldSpec("settle periods", 0.0, 50.0, 1.0),
}
TAB_TITLES = ("Losses", "Potentials", "Inputs", "Energy", "Path", "Stabilise")


class EigenmodePage(QWidget):
    """Workspace page (see app/workspaces/__init__.py for the page interface)."""

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.state = EigenmodeState(runner=ctx.jobs)
        self._build()
        self._anim_timer = QTimer(self)
        self._anim_timer.setInterval(33)
        self._anim_timer.timeout.connect(lambda: self.state.advance(0.033 * self.speed.value()))
        self._connect_state()
        self._on_design(self.state.design)
        self._on_ghost(self.state.ghost())
        self._update_plant_map()

    # ------------------------------------------------------------------ layout
    def _build(self):
        outer = QHBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        controls = QWidget()
        cl = QVBoxLayout(controls)
        cl.setContentsMargins(0, 0, 4, 0)
        design = self.state.design
        self.task_form = DataclassForm(design.task, specs=TASK_SPECS)
        self.weights_form = DataclassForm(design.weights, specs=WEIGHT_SPECS)
        self.train_form = DataclassForm(
            design.train, specs=TRAIN_SPECS, exclude=["device"]
        )  # View > Compute Device
        self.stab_form = DataclassForm(self.state.stabilise_config, specs=STAB_SPECS)
        for title, form in (
            ("Task", self.task_form),
            ("Weights", self.weights_form),
            ("Training", self.train_form),
        ):
            box = QGroupBox(title)
            QVBoxLayout(box).addWidget(form)
            cl.addWidget(box)
        self.learn_row = RunRow("Learn", run_name="learnButton")
        self.learn_row.watch_forms(self.task_form, self.weights_form, self.train_form)
        cl.addWidget(self.learn_row)
        box = QGroupBox("Stabilise")
        sl = QVBoxLayout(box)
        sl.addWidget(self.stab_form)
        self.drag_perturbed = QCheckBox("dragging sets the perturbed start")
        sl.addWidget(self.drag_perturbed)
        self.stab_row = RunRow("Stabilise", run_name="stabiliseButton")
        self.stab_row.watch_forms(self.stab_form)
        self.stab_row.set_ready(False, "learn or load a mode first")
        sl.addWidget(self.stab_row)
        cl.addWidget(box)
        box = QGroupBox("Mode")
        ml = QGridLayout(box)
        self.save_button, self.load_button = QPushButton("Save…"), QPushButton("Load…")
        self.csv_button, self.png_button = QPushButton("CSV…"), QPushButton("PNG…")
        for i, b in enumerate((self.save_button, self.load_button, self.csv_button, self.png_button)):
            ml.addWidget(b, i // 2, i % 2)
        self.save_button.setEnabled(False)
        self.csv_button.setEnabled(False)
        cl.addWidget(box)
        self.summary = QLabel(self.state.message)
        self.summary.setObjectName("eigenmodeSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        cl.addStretch(1)
        self.side_panel = SidePanel(controls, preferred_width=330)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        self.canvas = PendulumCanvas(self.state.plant)
        self.canvas.setMinimumSize(240, 240)
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
        self.speed.setToolTip("animation speed")
        self.source = QComboBox()
        self.source.addItems(list(SOURCES))
        # it may shrink (eliding "stabilised run") so the result tabs keep their room at 1366 px
        self.source.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.source.setMinimumContentsLength(4)
        self.scrub = QSlider(Qt.Orientation.Horizontal)
        self.scrub.setRange(0, 1000)
        self.scrub.setEnabled(False)
        self.scrub.setMinimumWidth(40)
        self.time_label = QLabel("t = 0.00 s")
        # playing must not widen the row (and squeeze the result tabs): the button fits "Pause"
        # and the time label "t = 000.00 s" from the start
        self.play_button.setFixedWidth(max(self.play_button.sizeHint().width(),
                                           self.play_button.fontMetrics().horizontalAdvance("Pause") + 24))
        self.time_label.setFixedWidth(self.time_label.fontMetrics().horizontalAdvance("t = 000.00 s") + 4)
        for w in (self.play_button, self.speed, self.source):
            anim.addWidget(w)
        anim.addWidget(self.scrub, 1)
        anim.addWidget(self.time_label)
        ll.addLayout(anim)
        ll.addWidget(self.summary)        # always in view: progress, results, problems

        self.tabs = QTabWidget()
        self.tabs.setUsesScrollButtons(True)
        self.tabs.tabBar().setExpanding(False)
        self.tabs.setMinimumWidth(260)
        self.loss_plot = LossPlot("", keys=LOSS_TERMS)
        self.potential_maps = PotentialMaps()
        self.inputs_plot = TimePlot("u (N m)", ["u1", "u2"])
        self.energy_plot = TimePlot("J", ["H_cl (closed loop)", "H (plant)"])
        self.config_plot = TimePlot(
            "q2 (rad)", ["mode path", "stabilised run"], xlabel="q1 (rad)", cursor=False
        )
        self.config_plot.setAspectLocked(True)
        self.config_plot.curves["mode path"].setZValue(10)   # drawn over the stabilised run
        self.stab_plots = StabilisePlots()
        for w, name in zip((self.loss_plot, self.potential_maps, self.inputs_plot, self.energy_plot,
                            self.config_plot, self.stab_plots), TAB_TITLES):
            w.setMinimumSize(200, 160)
            self.tabs.addTab(w, name)
        self.tabs.setTabToolTip(4, "configuration path (q1, q2)")

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(True)
        self.splitter.addWidget(self.side_panel)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setStretchFactor(2, 1)
        remember_splitter(self.splitter, getattr(self.ctx, "settings", None), "eigenmode/splitter",
                          default=[280, 370, 550])   # the six result tabs fit from 1366 px
        self.collapse_button = collapse_button(self.splitter, 0, "settings")
        anim.insertWidget(0, self.collapse_button)
        outer.addWidget(self.splitter, 1)

    def _connect_state(self):
        s, ev = self.state, self.state.events
        # input -> state
        self.canvas.configurationDragged.connect(lambda q1, q2: s.drag_to((q1, q2)))
        self.canvas.targetClicked.connect(lambda x, y: s.set_target((x, y)))
        for form in (self.task_form, self.weights_form, self.train_form):
            form.changed.connect(self._forms_to_design)
        self.stab_form.changed.connect(self._stab_form_to_state)
        self.drag_perturbed.toggled.connect(s.set_drag_perturbed)
        self.learn_row.run_clicked.connect(self.learn)
        self.learn_row.cancel_clicked.connect(s.cancel)
        self.stab_row.run_clicked.connect(self.stabilise)
        self.stab_row.cancel_clicked.connect(s.cancel)
        self.save_button.clicked.connect(self._save_dialog)
        self.load_button.clicked.connect(self._load_dialog)
        self.csv_button.clicked.connect(self._csv_dialog)
        self.png_button.clicked.connect(self._png_dialog)
        self.play_button.toggled.connect(self._on_play)
        self.scrub.valueChanged.connect(lambda v: s.seek(v / 1000))
        self.source.currentIndexChanged.connect(lambda i: s.set_source(SOURCES[i]))
        # state -> widgets
        ev.design.connect(self._on_design)
        ev.stabilise_config.connect(self._on_stab_config)
        ev.ghost.connect(self._on_ghost)
        ev.busy.connect(self._on_busy)
        ev.progress.connect(lambda status: self.loss_plot.append_values(status.epoch, {
            k: v[-1] for k, v in s.history.items() if v}))
        ev.preview.connect(self._on_preview)
        ev.mode.connect(self._on_mode)
        ev.stabilised.connect(self._on_stabilised)
        ev.message.connect(self.summary.setText)
        ev.error.connect(self.ctx.show_error)
        ev.frame.connect(self._show_frame)

    # ------------------------------------------------------------------ forwarding
    def _forms_to_design(self):
        if self._syncing:
            return
        try:
            parts = {"task": self.task_form.value(), "weights": self.weights_form.value(),
                     "train": self.train_form.value()}
        except ValueError:
            return                       # the form shows the problem; Learn is disabled
        self._syncing = True
        try:
            self.state.update_design(**parts)
        finally:
            self._syncing = False

    def _stab_form_to_state(self):
        if self._syncing:
            return
        try:
            cfg = self.stab_form.value()
        except ValueError:
            return
        self._syncing = True
        try:
            self.state.set_stabilise_config(cfg)
        finally:
            self._syncing = False

    _syncing = False

    def _on_design(self, design):
        self.canvas.set_plant(design.plant)
        self.canvas.set_configuration(design.task.q0)
        self.canvas.set_target(design.task.target)
        if not self._syncing:
            self._syncing = True
            try:
                self.task_form.set_value(design.task)
                self.weights_form.set_value(design.weights)
                self.train_form.set_value(design.train)
            finally:
                self._syncing = False

    def _on_stab_config(self, config):
        if not self._syncing:
            self._syncing = True
            try:
                self.stab_form.set_value(config)
            finally:
                self._syncing = False

    def _on_ghost(self, q):
        self.canvas.set_ghost(q)
        if q is not None and self.state.drag_perturbed:
            self.canvas.set_configuration(self.state.design.task.q0)

    def _on_busy(self):
        s = self.state
        self.learn_row.set_running(s.learning)
        self.stab_row.set_running(s.stabilising)
        self.learn_row.cancel_button.setEnabled(s.learning or s.stabilising)
        self.stab_row.cancel_button.setEnabled(s.learning or s.stabilising)
        if s.learning and not s.history["total"]:
            self.loss_plot.clear_data()
            self.play_button.setChecked(False)

    def _on_preview(self, tip, elbow, epoch):
        self.canvas.set_orbit(tip, elbow)
        self.canvas.set_text(f"preview, epoch {epoch}")

    # ------------------------------------------------------------------ results
    def _on_mode(self, mode):
        tr = mode.trajectory
        plant = self.state.plant
        self.loss_plot.set_history(mode.history)
        self.canvas.set_orbit(tr["tip"], tr["elbow"])
        self.canvas.set_text("")
        self.inputs_plot.set_curve("u1", tr["t"], tr["u"][:, 0])
        self.inputs_plot.set_curve("u2", tr["t"], tr["u"][:, 1])
        self.energy_plot.set_curve("H_cl (closed loop)", tr["t"], tr["energy"])
        h = hamiltonian(torch.as_tensor(tr["q"]), torch.as_tensor(tr["p"]), plant).numpy()
        self.energy_plot.set_curve("H (plant)", tr["t"], h)
        self.config_plot.set_curve("mode path", tr["q"][:, 0], tr["q"][:, 1])
        learned, extent = potential_grid(mode.potential)
        plant_v, _ = potential_grid(lambda q: potential_energy(q, plant))
        self.potential_maps.set_maps(learned, plant_v, extent)
        self.potential_maps.set_orbit(tr["q"])
        for b in (self.save_button, self.csv_button, self.play_button, self.scrub):
            b.setEnabled(True)
        self.stab_row.set_ready(True)
        self.source.blockSignals(True)
        self.source.setCurrentIndex(0)
        self.source.blockSignals(False)

    def _on_stabilised(self, result):
        self.stab_plots.set_result(result)
        if result is None:
            self.config_plot.set_curve("stabilised run", [], [])
            return
        self.config_plot.set_curve("stabilised run", result.q[:, 0], result.q[:, 1])
        self.tabs.setCurrentWidget(self.stab_plots)
        self.source.blockSignals(True)
        self.source.setCurrentIndex(1)
        self.source.blockSignals(False)

    def _update_plant_map(self):
        plant_v, extent = potential_grid(lambda q: potential_energy(q, self.state.plant))
        self.potential_maps.set_maps(None, plant_v, extent)

    # ------------------------------------------------------------------ actions
    def learn(self):
        self.state.learn()
        if self.state.learning:
            self.ctx.status("learning an eigenmode…")

    def stabilise(self):
        self.state.stabilise()

    def cancel(self):
        self.state.cancel()

    # ------------------------------------------------------------------ animation
    def _on_play(self, on: bool):
        self.play_button.setText("Pause" if on else "Play")
        if on:
            self._anim_timer.start()
        else:
            self._anim_timer.stop()

    def animation_frame(self):
        """``(t, q)`` currently shown by the animation (None before a mode exists)."""
        t, q = self.state.frame()
        return None if t is None else (t, q)

    def _show_frame(self, t, q):
        if t is None:
            return
        self.canvas.set_configuration(q)
        self.time_label.setText(f"t = {t:.2f} s")
        for p in (self.inputs_plot, self.energy_plot):
            p.set_cursor(self.state.cursor_time(t))
        self.scrub.blockSignals(True)
        self.scrub.setValue(int(round(1000 * self.state.fraction())))
        self.scrub.blockSignals(False)

    # ------------------------------------------------------------------ state shortcuts (tests, scripts)
    @property
    def plant(self):
        return self.state.plant

    @property
    def mode(self):
        return self.state.mode

    @property
    def stab_result(self):
        return self.state.stab_result

    @property
    def learn_handle(self):
        return self.state.learn_handle

    @property
    def learn_button(self):
        return self.learn_row.run_button

    @property
    def cancel_button(self):
        return self.learn_row.cancel_button

    @property
    def stabilise_button(self):
        return self.stab_row.run_button

    def design(self):
        return self.state.design

    # ------------------------------------------------------------------ files
    def save_mode_to(self, directory: str) -> None:
        path = self.state.save_mode_to(directory)
        self.ctx.add_recent_file(str(path))
        self.ctx.status(f"saved mode to {directory}")

    def load_mode_from(self, directory: str) -> None:
        self.ctx.add_recent_file(str(self.state.load_mode_from(directory)))

    def export_csv_to(self, path: str) -> list[str]:
        return self.state.export_csv_to(path)

    def export_png_to(self, path: str) -> None:
        if not self.grab().save(str(path)):
            raise ValueError(f"{path}: could not write the PNG")

    def _guard(self, title, fn, *args):
        try:
            fn(*args)
        except (ValueError, OSError) as exc:
            self.ctx.show_error(title, str(exc))
            self.summary.setText(f"<b>{title}:</b> {exc}")

    def unsaved_work(self) -> list[str]:
        return self.state.unsaved_work()

    def save_unsaved_work(self) -> bool:
        """Ask for a folder and save the designed mode there (False: the user cancelled or it failed)."""
        if self.state.mode is None or self.state.mode_saved_to is not None:
            return True
        d = QFileDialog.getExistingDirectory(self, "Save mode into folder")
        if not d:
            return False
        try:
            self.save_mode_to(d)
        except (ValueError, OSError) as exc:
            self.ctx.show_error("Save mode", str(exc))
            return False
        return True

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
        self._guard("Open eigenmode", self.load_mode_from, str(p.parent))
        return True

    def session_state(self) -> dict:
        return self.state.session_state()

    def restore_session_state(self, state: dict) -> None:
        try:
            self.state.restore_session_state(state)
        except ValueError as exc:
            self.ctx.show_error("Eigenmode session", str(exc))

    def shutdown(self) -> None:
        self._anim_timer.stop()
        self.state.cancel()

