"""The Car planner workspace: draw target poses, optimise a trajectory on a learned model (or
the simulator), play it on the simulator, drive a race track with MPC at real-time pace, and
train, save and load the learned models (the Model tab, :mod:`.model_panel`).

What the user placed and computed lives in :class:`.state.CarPlannerState` (Qt-free); this
page lays out the canvas, the plots and the side panels (:mod:`.plan_panel`,
:mod:`.track_panel`), draws the state when it changes, and submits the jobs (:mod:`.jobs`).
All computation is in ``engine.car``. A running job hands its latest iterate to the page
through a ``Latest`` slot (or every MPC cycle through a ``Feed``), read when the (throttled)
progress signal arrives and passed on to the state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.widgets.plots import make_plot
from app.workspaces.car.canvas import CarCanvas
from app.workspaces.car.jobs import Feed, Latest, drive_job, optimise_job
from app.workspaces.car.model_panel import ModelPanel, clean_error
from app.workspaces.car.models import SIM, ModelCatalogue, example_folder
from app.workspaces.car.plan_panel import PLAN_COLOURS, PlanPanel
from app.workspaces.car.state import CarPlannerState, PlanResult, file_kind, skid_marks
from app.workspaces.car.track_panel import TrackPanel
from engine.systems.rc_car import CarParams

__all__ = ["CarPlannerPage"]

SPLITTER_KEY = "car/side_panel"     # the splitter's state: the side panel's width, or collapsed
SIDE_MIN_WIDTH = 330
SIDE_WIDTH = 380


class CarPlannerPage(QWidget):
    """Car planner: targets by click-and-drag, optimisation as a job, playback, MPC laps."""

    def __init__(self, ctx, parent: QWidget | None = None, state: CarPlannerState | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.state = state if state is not None else CarPlannerState(CarParams())
        self.catalogue = ModelCatalogue()
        self._job = None
        self._drive = None
        self._live = Latest()
        self._drive_feed = Feed()
        self._frames = None
        self._frame = 0
        self._skid_points: list = []
        self._build()
        self._refresh_models(first=True)
        self._refresh_tracks()
        self._timer = QTimer(self)
        self._timer.setInterval(int(self.params.dt * 1000))
        self._timer.timeout.connect(self._next_frame)
        for event, slot in (("targets", self._draw_targets), ("selection", self._draw_targets),
                            ("plan", self._draw_plan), ("track", self._draw_track), ("drive", self._draw_drive),
                            ("history", self._update_undo_actions)):
            self.state.connect(event, slot)
        self._update_undo_actions()

    @property
    def params(self) -> CarParams:
        return self.state.params

    @params.setter
    def params(self, value: CarParams):
        self.state.params = value

    # -- layout --------------------------------------------------------------------------
    def _build(self):
        outer = QHBoxLayout(self)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        outer.addWidget(split)
        left = QSplitter(Qt.Orientation.Vertical)
        self.canvas = CarCanvas()
        left.addWidget(self.canvas)
        plots = QWidget()
        pl = QHBoxLayout(plots)
        pl.setContentsMargins(0, 0, 0, 0)
        self.cost_plot = make_plot("Cost", "iteration", "", log_y=True, legend=False)
        self.cost_curve = self.cost_plot.plot(pen=pg.mkPen(PLAN_COLOURS[0], width=2))
        self.cost_curve2 = self.cost_plot.plot(pen=pg.mkPen(PLAN_COLOURS[1], width=2))
        self.cost_plot.setYRange(0, 3, padding=0)     # decades 1..1000 until there is data (log axis)
        self.throttle_plot = make_plot("Throttle", "step", "m/s²")
        self.steer_plot = make_plot("Steering", "step", "rad")
        self.speed_plot = make_plot("Speed profile", "s", "m/s", legend=False)
        self.throttle_curves = {k: self.throttle_plot.plot(pen=pg.mkPen(c, width=2), name=k)
                                for k, c in (("plan", "#ff8c00"), ("other model", "#9467bd"))}
        self.steer_curves = {k: self.steer_plot.plot(pen=pg.mkPen(c, width=2), name=k)
                             for k, c in (("plan", "#ff8c00"), ("other model", "#9467bd"))}
        self.speed_curve = self.speed_plot.plot(pen=pg.mkPen("#2ca02c", width=2))
        for w in (self.cost_plot, self.throttle_plot, self.steer_plot, self.speed_plot):
            w.setMinimumHeight(150)
            pl.addWidget(w)
        # the plots of the layer shown: a plan's cost and controls, a drive's speed profile
        self.layer_plots = {"plan": (self.cost_plot, self.throttle_plot, self.steer_plot),
                            "track": (self.speed_plot,)}
        self.speed_plot.setVisible(False)
        left.addWidget(plots)
        left.setSizes([600, 200])
        split.addWidget(left)

        side = QWidget()
        side.setMinimumWidth(SIDE_MIN_WIDTH)
        sl = QVBoxLayout(side)
        self.tabs = QTabWidget()
        self.plan_panel = PlanPanel(self.state)
        self.tabs.addTab(self.plan_panel, "Plan")
        self.track_panel = TrackPanel(self.state)
        self.tabs.addTab(self.track_panel, "Track")
        self.model_panel = ModelPanel(self.ctx, lambda: self.params, self.models_dir, self.current_model_folder)
        self.model_panel.model_ready.connect(self.add_model)
        self.model_panel.log_loaded.connect(self._on_log_loaded)
        self.tabs.addTab(self.model_panel, "Model")
        self.tabs.currentChanged.connect(self._on_tab_changed)
        sl.addWidget(self.tabs)
        self.status = QLabel("Click and drag on the canvas to place a target pose.")
        self.status.setWordWrap(True)
        self.status.setObjectName("carStatus")
        sl.addWidget(self.status)
        # the side panel scrolls vertically only, can be collapsed (drag the handle to the edge)
        # and keeps the width the user gave it
        self.side_scroll = scroll = QScrollArea()
        scroll.setObjectName("carSidePanel")
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(side)
        scroll.setMinimumWidth(SIDE_MIN_WIDTH + scroll.verticalScrollBar().sizeHint().width() + 4)
        split.addWidget(scroll)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)
        split.setCollapsible(0, False)
        split.setCollapsible(1, True)
        self.splitter = split
        saved = self.ctx.settings.value(SPLITTER_KEY)
        if not (saved and split.restoreState(saved)):
            split.setSizes([900, SIDE_WIDTH])
        split.splitterMoved.connect(lambda *_: self.ctx.settings.setValue(SPLITTER_KEY, split.saveState()))

        p = self.plan_panel
        p.optimise_button.clicked.connect(self.optimise)
        p.cancel_button.clicked.connect(self.cancel)
        p.play_button.clicked.connect(self.play)
        p.train_button.clicked.connect(self.train_model)
        p.add_model_button.clicked.connect(self._add_model_folder)
        p.save_button.clicked.connect(self._save_plan_dialog)
        p.load_button.clicked.connect(self._load_plan_dialog)
        t = self.track_panel
        t.track_combo.currentTextChanged.connect(self._on_track_chosen)
        t.load_button.clicked.connect(self._load_track_dialog)
        t.save_button.clicked.connect(self._save_track_dialog)
        t.draw_button.toggled.connect(self._toggle_draw)
        t.finish_button.clicked.connect(self.finish_drawn_track)
        t.drive_button.clicked.connect(self.drive)
        t.stop_button.clicked.connect(self.stop_drive)

        self.canvas.target_placed.connect(self.state.place_target)
        self.canvas.target_moved.connect(lambda i, _x0, _y0, x, y: self.state.move_target(i, x, y))
        self.canvas.target_selected.connect(self.state.select)
        self.canvas.delete_requested.connect(lambda _: self.state.delete_selected())

        self.undo_action = QAction("Undo", self)
        self.redo_action = QAction("Redo", self)
        for action, key, slot in ((self.undo_action, QKeySequence.StandardKey.Undo, self.state.undo),
                                  (self.redo_action, QKeySequence.StandardKey.Redo, self.state.redo)):
            action.setShortcut(key)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(slot)
            self.addAction(action)

    def _update_undo_actions(self):
        h = self.state.history
        self.undo_action.setEnabled(h.can_undo)
        self.redo_action.setEnabled(h.can_redo)
        self.undo_action.setText(f"Undo {h.undo_text}".strip())
        self.redo_action.setText(f"Redo {h.redo_text}".strip())

    def _on_tab_changed(self, index: int):
        """The Track tab shows the track layer (driven path, MPC plan), the others the plan layer."""
        layer = "track" if self.tabs.widget(index) is self.track_panel else "plan"
        if layer == "track" and self.state.track is None:
            data = self.track_panel.track_combo.currentData()
            if data:                          # the chosen track ("default") is drawn on open, not at Drive
                self.load_track(data)
        if layer == self.canvas.layer:
            return
        self.canvas.set_layer(layer)
        for key, plots in self.layer_plots.items():
            for plot in plots:
                plot.setVisible(key == layer)
        self._skid_points = []
        self.canvas.skid.setData([], [])
        if layer == "track":
            d = self.state.drive
            if d is not None and d.pose is not None:
                self.canvas.set_car(*d.pose)
            elif self.state.track is not None:
                self.canvas.set_car(*self.state.track.start_pose())
        else:
            self._timer.stop()
            self.canvas.set_car(0.0, 0.0, 0.0)

    # -- models ----------------------------------------------------------------------------
    def models_dir(self) -> Path:
        default = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)) / "car_models"
        return Path(str(self.ctx.settings.value("car/models_dir", str(default))))

    def current_model_folder(self) -> str | None:
        """The folder of the model chosen under "Plan on" (None for the simulator)."""
        spec = self.plan_panel.model_combo.currentData()
        return spec if spec and spec != SIM else None

    def _refresh_models(self, select: str | None = None, first: bool = False):
        """Offer the shipped model, the models folder's and the ones the user added; on the first
        fill the shipped learned model is chosen (plans and MPC at the benchmark's speed)."""
        from engine.car.model import default_model_dir

        extra = [str(p) for p in (self.ctx.settings.value("car/extra_models", []) or []) if p]
        self.catalogue = ModelCatalogue(self.models_dir(), extra, builtin=[str(default_model_dir())])
        self.plan_panel.show_models(self.catalogue, select or (self.catalogue.default if first else None))

    def _add_model_folder(self):
        path = QFileDialog.getExistingDirectory(self, "Folder with car_model.safetensors and car_model.json",
                                                self.start_folder("model"))
        if path:
            self.remember_folder("model", str(Path(path).parent))
            self.model_panel.load_model(path)

    def add_model(self, path: str):
        """Offer the model in folder ``path`` in the choosers (remembered in the settings) and select it."""
        if not (Path(path) / "car_model.json").exists():
            self.ctx.show_error("Car model", f"{path}: no car_model.json in this folder")
            return
        path = str(path)
        try:
            inside = Path(path).resolve().parent == self.models_dir().resolve()
        except OSError:
            inside = False
        if not inside:
            extra = [p for p in (self.ctx.settings.value("car/extra_models", []) or []) if p]
            if path not in extra:
                extra.append(path)
            self.ctx.settings.setValue("car/extra_models", extra)
        self._refresh_models(select=path)
        self.status.setText(f"Model {Path(path).name} ready: choose it under 'Plan on' (chosen now).")

    def train_model(self):
        """Open the training settings (the Model tab)."""
        self.tabs.setCurrentWidget(self.model_panel)

    def _on_log_loaded(self, prep: dict):
        P = prep["pose"]
        self.canvas.log_path.setData(P[:, 0], P[:, 1])
        self.canvas.getPlotItem().autoRange()
        self.status.setText(f"Driving log {Path(prep['path']).name} loaded (drawn in grey): "
                            f"{len(prep['inputs'])} training pairs. Train on it in the Model tab.")

    # -- drawing the state ---------------------------------------------------------------------
    def _draw_targets(self):
        s = self.state
        self.canvas.set_targets([(t.x, t.y, t.yaw, t.step) for t in s.targets], s.selected)

    def _plan_items(self):
        c = self.canvas
        return (c.nominal, c.executed, c.compare, c.compare_executed)

    def _draw_plan(self):
        s = self.state
        if s.optimising:
            live = s.live
            if live is None:                    # a new optimisation: nothing of the old plan stays
                self._clear_plan()
                return
            curve = self.cost_curve if live.variant == 0 else self.cost_curve2
            curve.setData(np.arange(1, len(live.costs) + 1), np.maximum(np.asarray(live.costs), 1e-12))
            if live.pose is not None:
                (self.canvas.nominal if live.variant == 0 else self.canvas.compare).setData(
                    live.pose[:, 0], live.pose[:, 1])
            return
        plan = s.plan
        if plan is None:
            self._clear_plan()
        else:
            self._show_result(plan)

    def _clear_plan(self):
        self._timer.stop()
        self._frames = None
        if self.canvas.layer == "plan":
            self._skid_points = []
            self.canvas.skid.setData([], [])
        for item in self._plan_items():
            item.setData([], [])
        for c in (self.cost_curve, self.cost_curve2, *self.throttle_curves.values(), *self.steer_curves.values()):
            c.setData([], [])
        self.cost_plot.getPlotItem().enableAutoRange()
        self._label_control_plots({})

    def _show_result(self, res: PlanResult):
        variants = res.variants
        steps = np.arange(len(res.main.controls))
        c = self.canvas
        keys = ("plan", "other model")
        for k, v in enumerate(variants[:2]):
            (c.nominal, c.compare)[k].setData(v.pose[:, 0], v.pose[:, 1])
            (c.executed, c.compare_executed)[k].setData(v.executed_pose[:, 0], v.executed_pose[:, 1])
            (self.cost_curve, self.cost_curve2)[k].setData(np.arange(len(v.costs)), np.maximum(v.costs, 1e-12))
            self.throttle_curves[keys[k]].setData(steps, v.controls[:, 0])
            self.steer_curves[keys[k]].setData(steps, v.controls[:, 1])
        if res.compared:
            a, b = variants[0].label, variants[1].label
            names = {"plan": f"{a} plan", "other model": f"{b} plan"}
            c.set_legend([(c.nominal, f"{a} plan"), (c.executed, f"{a} executed"),
                          (c.compare, f"{b} plan"), (c.compare_executed, f"{b} executed")])
        elif res.compare is not None:
            C = res.compare
            c.compare.setData(C.pose[:, 0], C.pose[:, 1])
            c.compare_executed.setData([], [])
            self.cost_curve2.setData([], [])
            self.throttle_curves["other model"].setData(steps, C.controls[:, 0])
            self.steer_curves["other model"].setData(steps, C.controls[:, 1])
            names = {"plan": "plan", "other model": C.model}
            c.set_legend([(c.nominal, "plan"), (c.executed, "executed"), (c.compare, C.model)])
        else:
            for item in (c.compare, c.compare_executed, self.cost_curve2,
                         self.throttle_curves["other model"], self.steer_curves["other model"]):
                item.setData([], [])
            names = {"plan": "plan", "other model": "other model"}
            c.set_legend([(c.nominal, "plan"), (c.executed, "executed on simulator")])
        self._label_control_plots(names)

    def _label_control_plots(self, names: dict[str, str]) -> None:
        """The throttle and steering legends list only the curves drawn ("other model" only
        when there is one), under ``names``."""
        for plot, curves in ((self.throttle_plot, self.throttle_curves), (self.steer_plot, self.steer_curves)):
            legend = plot.getPlotItem().legend
            if legend is None:
                continue
            legend.clear()
            for key, curve in curves.items():
                x, _ = curve.getData()
                if x is not None and len(x):
                    legend.addItem(curve, names[key])
            legend.setVisible(bool(legend.items))

    def _draw_track(self):
        track = self.state.track
        if track is None:
            return
        left, right = track.edges()
        self.canvas.set_track(left, right, track.centre)
        self.canvas.set_car(*track.start_pose())

    def _draw_drive(self):
        d = self.state.drive
        c = self.canvas
        if d is None:
            for item in (c.driven, c.mpc_plan):
                item.setData([], [])
            self.speed_curve.setData([], [])
            if c.layer == "track":
                c.skid.setData([], [])
            return
        path = np.asarray(d.path, dtype=float).reshape(-1, 2)
        c.driven.setData(path[:, 0], path[:, 1])
        if d.plan is not None:
            c.mpc_plan.setData(d.plan[:, 0], d.plan[:, 1])
        else:
            c.mpc_plan.setData([], [])
        sp = np.asarray(d.speed, dtype=float).reshape(-1, 2)
        self.speed_curve.setData(sp[:, 0], sp[:, 1])
        if c.layer == "track":
            skid = np.asarray(d.skid, dtype=float).reshape(-1, 2)
            c.skid.setData(skid[:, 0], skid[:, 1])
            if d.pose is not None:
                c.set_car(*d.pose)

    # -- optimise ----------------------------------------------------------------------------
    def optimise(self):
        if self._job is not None:
            return
        p = self.plan_panel
        try:
            cfg = p.opt_form.value()
            if not self.state.targets:
                raise ValueError("Place at least one target first (click and drag on the canvas).")
        except ValueError as exc:
            if self.state.targets:
                self.ctx.show_error("Car planner", str(exc))
            self.status.setText(str(exc))
            return
        if p.compare_models.isEnabled() and p.compare_models.isChecked():
            variants = self.catalogue.compared_variants(self.current_model_folder())
            compare = None
            what = " and ".join(f"{label} ({Path(spec).name})" for label, spec in variants)
        else:
            variants = [("plan", p.model_combo.currentData() or SIM)]
            compare = p.compare_combo.currentData() or None
            what = p.model_combo.currentText()
        self._variant_count = len(variants)
        self._max_iterations = cfg.max_iterations
        self._optimised_plan = plan = self.state.begin_optimise()
        self.status.setText(f"Optimising on {what}…")
        self._job = self.ctx.jobs.submit(optimise_job(plan, variants, compare, self.params, cfg, self._live),
                                         name="Optimise car trajectory",
                                         on_result=self._on_optimised, on_error=self._on_job_failed,
                                         on_progress=self._on_opt_progress, on_cancelled=self._on_cancelled)
        self._job.ended.connect(self._on_job_ended)

    def _on_opt_progress(self, update):
        live = self._live.take()
        if live is None:
            return
        self.state.update_live(live)
        who = f"{live['label']}: " if self._variant_count > 1 else ""
        of = f" of at most {self._max_iterations}"
        self.status.setText(f"{who}iteration {live['iteration']}{of}: cost {live['costs'][-1]:.4g}")

    def _on_cancelled(self):
        self.status.setText("Cancelled.")

    def _on_optimised(self, res: dict):
        result = PlanResult.from_job(self._optimised_plan, res)
        self.state.finish_optimise(result)
        if result.compared:
            rows = "; ".join(f"{v.label}: {v.executed_position_error:.2f} m / "
                             f"{v.executed_heading_error:.2f} rad" for v in result.variants)
            self.status.setText(f"Planned on {len(result.variants)} models. Executed on the simulator: {rows}.")
        else:
            m = result.main
            errs = ", ".join(f"step {e['step']}: {e['position_error']:.2f} m / {e['heading_error']:.2f} rad"
                             for e in m.target_errors)
            self.status.setText(
                f"{'Converged' if m.converged else 'Stopped'} after {m.iterations} iterations "
                f"({m.seconds:.2f} s) on {m.model}. Targets: {errs}. Executed on the simulator: "
                f"{m.executed_position_error:.2f} m, {m.executed_heading_error:.2f} rad.")

    def _on_job_failed(self, message, tb):
        message = clean_error(message)
        self.status.setText(f"Failed: {message}")
        self.ctx.show_error("Car planner", message)

    def _on_job_ended(self):
        self._job = None
        self.state.end_optimise()

    def cancel(self):
        if self._job is not None:
            self._job.cancel()

    # -- playback ------------------------------------------------------------------------------
    def play(self):
        plan = self.state.plan
        if plan is None:
            return
        m = plan.main
        self._frames = (m.executed_pose, m.controls, m.slip)
        self._frame = 0
        self._skid_points = []
        self.canvas.skid.setData([], [])
        self._timer.start()

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def _next_frame(self):
        if self._frames is None or self._frame >= len(self._frames[0]):
            self._timer.stop()
            self._skid_points = []                  # the wheel marks go with the playback
            self.canvas.skid.setData([], [])
            return
        E, U, slip = self._frames
        i = self._frame
        x, y, yaw = E[i]
        self.canvas.set_car(x, y, yaw, float(U[min(i, len(U) - 1), 1]))
        if i > 0:
            pts = skid_marks(E[i:i + 1], slip[i - 1:i], self.params)
            if len(pts):
                self._skid_points.extend(map(tuple, pts))
                P = np.asarray(self._skid_points)
                self.canvas.skid.setData(P[:, 0], P[:, 1])
        self._frame += 1

    # -- tracks and MPC --------------------------------------------------------------------------
    def _refresh_tracks(self):
        from engine.car.tracks import track_names

        combo = self.track_panel.track_combo
        combo.blockSignals(True)
        combo.clear()
        for name in track_names():
            combo.addItem(name, name)
        combo.blockSignals(False)

    def _on_track_chosen(self, name: str):
        data = self.track_panel.track_combo.currentData()
        if data:
            self.load_track(data)

    def load_track(self, path_or_name) -> bool:
        if not self._guard("Track", lambda: self.state.load_track(path_or_name)):
            return False
        t = self.state.track
        self.tabs.setCurrentWidget(self.track_panel)
        if self.canvas.layer == "track":
            self.canvas.fit_view()
        self.status.setText(f"Track {t.name}: {t.length:.1f} m, {t.width:.2f} m wide.")
        return True

    def _toggle_draw(self, on: bool):
        self.canvas.set_mode("draw_track" if on else "targets")
        self.track_panel.finish_button.setEnabled(on)
        if on:
            self.status.setText("Click the centre line's points in order; Finish closes the loop.")

    def finish_drawn_track(self) -> bool:
        """Close the drawn centre line into a track (at least 4 points)."""
        from engine.car.tracks import Track

        try:
            track = Track("drawn", np.asarray(list(self.canvas.draw_points), dtype=float).reshape(-1, 2),
                          self.track_panel.width_spin.value())
        except ValueError as exc:
            self.status.setText(str(exc))
            return False
        self.track_panel.draw_button.setChecked(False)
        self.state.set_track(track)
        self.tabs.setCurrentWidget(self.track_panel)
        self.status.setText(f"Drawn track: {track.length:.1f} m. Press Drive.")
        return True

    def drive(self):
        t = self.track_panel
        if self.state.track is None and (not t.track_combo.count() or not self.load_track(t.track_combo.currentData())):
            return
        if self._drive is not None:
            return
        try:
            cfg = t.mpc_form.value()
        except ValueError as exc:
            self.ctx.show_error("MPC", str(exc))
            return
        spec = self.plan_panel.model_combo.currentData() or SIM
        self._drive_feed.take_all()
        self.state.begin_drive()
        self.canvas.set_legend([(self.canvas.driven, "driven"), (self.canvas.mpc_plan, "MPC plan")], "track")
        self._drive = self.ctx.jobs.submit(
            drive_job(self.state.track, spec, self.params, cfg, t.laps_spin.value(), self._drive_feed,
                      t.real_time_check.isChecked()), name="MPC laps",
            on_result=self._on_driven, on_error=self._on_job_failed, on_progress=self._on_drive_progress,
            on_cancelled=self._on_drive_stopped)
        self._drive.ended.connect(self._on_drive_ended)

    def _on_drive_progress(self, update):
        cycles = self._drive_feed.take_all()
        if cycles:
            self.state.add_cycles(cycles)
            info = cycles[-1]
            self.status.setText(f"t = {info['time']:.1f} s, {info['speed']:.2f} m/s, "
                                f"off centre {info['deviation']:.2f} m")

    def _on_driven(self, res: dict):
        self._drive_feed.take_all()
        self.state.finish_drive(res)
        lap = f"{res['lap_time']:.2f} s" if res["lap_time"] else "not completed"
        self.status.setText(f"MPC: lap {lap}, max deviation {res['max_track_deviation']:.2f} m, "
                            f"{res['control_rate_hz']:.1f} Hz control rate, {res['iterations_per_cycle']} iterations/cycle.")

    def _on_drive_stopped(self):
        self.state.end_drive(stopped=True)

    def _on_drive_ended(self):
        self._drive = None
        self.state.end_drive()

    def stop_drive(self):
        if self._drive is not None:
            self._drive.cancel()

    # -- files ---------------------------------------------------------------------------------
    def _guard(self, title: str, action, path: str | None = None) -> bool:
        """Run ``action()``; a ValueError / OSError becomes an error (naming ``path``) and False."""
        try:
            action()
        except (OSError, ValueError) as exc:
            msg = str(exc) if path is None or str(path) in str(exc) else f"{path}: {exc}"
            self.ctx.show_error(title, msg)
            self.status.setText(msg)
            return False
        return True

    def save_plan(self, path: str) -> bool:
        """Write the plan (and the optimised controls, when they fit it) as JSON, atomically."""
        if not self._guard("Save plan", lambda: self.state.save_plan(path), path):
            return False
        self.ctx.add_recent_file(path)
        self.status.setText(f"Plan saved to {path}.")
        return True

    def save_track(self, path: str) -> bool:
        """Write the current track as JSON, atomically."""
        if self.state.track is None or not self._guard("Save track", lambda: self.state.save_track(path), path):
            return False
        self.ctx.add_recent_file(path)
        self.status.setText(f"Track saved to {path}.")
        return True

    def load_plan(self, path: str) -> bool:
        if not self._guard("Load plan", lambda: self.state.load_plan(path)):
            return False
        self.ctx.add_recent_file(path)
        return True

    def _save_plan_dialog(self):
        path, _ = QFileDialog.getSaveFileName(self, "Save plan", "plan.json", "Car plan (*.json)")
        if path:
            self.save_plan(path)

    def _load_plan_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Load plan", self.start_folder("plan"), "Car plan (*.json)")
        if path:
            self.remember_folder("plan", str(Path(path).parent))
            self.load_plan(path)

    def _load_track_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Load track", self.start_folder("track"), "Tracks (*.csv *.json)")
        if path:
            self.remember_folder("track", str(Path(path).parent))
            self.load_track(path)

    def _save_track_dialog(self):
        if self.state.track is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save track", f"{self.state.track.name}.json",
                                              "Car track (*.json)")
        if path:
            self.save_track(path)

    def start_folder(self, kind: str) -> str:
        """The folder an open dialog for ``kind`` starts in: the last one used, else the examples'."""
        last = str(self.ctx.settings.value(f"car/last_folder/{kind}", "") or "")
        return last if last and Path(last).is_dir() else example_folder(kind)

    def remember_folder(self, kind: str, folder: str) -> None:
        self.ctx.settings.setValue(f"car/last_folder/{kind}", folder)

    # -- page interface --------------------------------------------------------------------------
    def file_filters(self) -> list[str]:
        return ["Car plan (*.json)", "Car track (*.csv *.json)"]

    def open_file(self, path: str) -> bool:
        kind = file_kind(path)
        if kind == "plan":
            return self.load_plan(path)
        if kind == "track":
            return self.load_track(path)
        return False

    def session_state(self) -> dict:
        return self.state.session_state(self.plan_panel.model_combo.currentData())

    def restore_session_state(self, state: dict) -> None:
        problems = self.state.restore_session(state)
        if problems:
            message = "Could not restore " + "; ".join(problems) + ". The rest of the car planner was restored."
            self.status.setText(message)
            self.ctx.show_error("Restore car planner", message)
        combo = self.plan_panel.model_combo
        model = state.get("model") if isinstance(state, dict) else None
        idx = combo.findData(model) if isinstance(model, str) else -1
        if idx >= 0:
            combo.setCurrentIndex(idx)

    def menu_actions(self) -> list[QAction]:
        return [self.undo_action, self.redo_action]

    def shutdown(self) -> None:
        self._timer.stop()
        self.model_panel.shutdown()
        for h in (self._job, self._drive):
            if h is not None:
                h.cancel()
