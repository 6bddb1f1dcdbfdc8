"""The Car planner workspace: draw target poses, optimise a trajectory on a learned model (or
the simulator), play it on the simulator, drive a race track with MPC at real-time pace, and
train, save and load the learned models (the Model tab, :mod:`.model_panel`).

What the user placed and computed lives in :class:`.state.CarPlannerState` (Qt-free); this
page lays out the canvas, the plots (:mod:`.plots`) and the side panels (:mod:`.plan_panel`,
:mod:`.track_panel`) and draws the state when it changes. The work is done by small
controllers: Optimise (:mod:`.optimise_run`), playback (:mod:`.playback`), tracks and MPC laps
(:mod:`.track_run`) and files (:mod:`.files`). All computation is in ``engine.car``. A running
job hands its latest iterate to the page through a ``Latest`` slot (or every MPC cycle through
a ``Feed``), read when the (throttled) progress signal arrives and passed on to the state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.workspaces.car.canvas import CarCanvas
from app.workspaces.car.files import CarFiles
from app.workspaces.car.model_panel import ModelPanel
from app.workspaces.car.models import SIM, ModelCatalogue
from app.workspaces.car.optimise_run import PlanOptimiser
from app.workspaces.car.plan_panel import PlanPanel
from app.workspaces.car.playback import PlanPlayback
from app.workspaces.car.plots import CarPlots
from app.workspaces.car.state import CarPlannerState, PlanResult, file_kind
from app.workspaces.car.track_panel import TrackPanel
from app.workspaces.car.track_run import TrackDriver
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
        self._build()
        self.optimiser = PlanOptimiser(ctx, self.state, self.plan_panel, lambda: self.catalogue,
                                       self.current_model_folder, self.status.setText, self)
        self.driver = TrackDriver(ctx, self.state, self.canvas, self.track_panel,
                                  lambda: self.tabs.setCurrentWidget(self.track_panel),
                                  self.current_model_folder, self.status.setText, self)
        self.files = CarFiles(ctx, self.state, self, self.driver.load_track, self.status.setText)
        self.playback = PlanPlayback(self.canvas, lambda: self.params, self)
        self._connect_panels()
        self._refresh_models(first=True)
        self.driver.refresh_tracks()
        for event, slot in (("targets", self._draw_targets), ("selection", self._draw_targets),
                            ("plan", self._draw_plan), ("track", self._draw_track),
                            ("drive", self._draw_drive), ("history", self._update_undo_actions)):
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
        drawing = QWidget()                     # the legend above the canvas, never over the drawing
        col = QVBoxLayout(drawing)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.canvas.legend)
        col.addWidget(self.canvas, 1)
        left.addWidget(drawing)
        self.plots = plots = CarPlots()
        # the plots by name, as scripts and tests reach them
        self.cost_plot, self.throttle_plot = plots.cost_plot, plots.throttle_plot
        self.steer_plot, self.speed_plot = plots.steer_plot, plots.speed_plot
        self.cost_curve, self.cost_curve2 = plots.cost_curves
        self.throttle_curves, self.steer_curves = plots.throttle_curves, plots.steer_curves
        self.speed_curve = plots.speed_curve
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
        self.model_panel = ModelPanel(self.ctx, lambda: self.params, self.models_dir,
                                      self.current_model_folder)
        self.model_panel.model_ready.connect(self.add_model)
        self.model_panel.log_loaded.connect(self._on_log_loaded)
        self.tabs.addTab(self.model_panel, "Model")
        self.tabs.currentChanged.connect(self._on_tab_changed)
        sl.addWidget(self.tabs)
        # the side panel scrolls vertically only, can be collapsed (drag the handle to the edge)
        # and keeps the width the user gave it
        self.side_scroll = scroll = QScrollArea()
        scroll.setObjectName("carSidePanel")
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(side)
        scroll.setMinimumWidth(SIDE_MIN_WIDTH + scroll.verticalScrollBar().sizeHint().width() + 4)
        # the status (what a job did, why a plan was refused) under the panel, never scrolled away
        self.status = QLabel("Click and drag on the canvas to place a target pose.")
        self.status.setWordWrap(True)
        self.status.setObjectName("carStatus")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.status.setContentsMargins(6, 2, 6, 2)
        column = QWidget()
        cl = QVBoxLayout(column)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(2)
        cl.addWidget(scroll, 1)
        cl.addWidget(self.status)
        split.addWidget(column)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)
        split.setCollapsible(0, False)
        split.setCollapsible(1, True)
        self.splitter = split
        saved = self.ctx.settings.value(SPLITTER_KEY)
        if not (saved and split.restoreState(saved)):
            split.setSizes([900, SIDE_WIDTH])
        split.splitterMoved.connect(lambda *_: self.ctx.settings.setValue(SPLITTER_KEY, split.saveState()))

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

    def _connect_panels(self):
        p = self.plan_panel
        p.optimise_button.clicked.connect(self.optimise)
        p.cancel_button.clicked.connect(self.cancel)
        p.play_button.clicked.connect(self.play)
        p.train_button.clicked.connect(self.train_model)
        p.add_model_button.clicked.connect(self._add_model_folder)
        p.save_button.clicked.connect(self.files.save_plan_dialog)
        p.load_button.clicked.connect(self.files.load_plan_dialog)
        t = self.track_panel
        t.load_button.clicked.connect(self.files.load_track_dialog)
        t.save_button.clicked.connect(self.files.save_track_dialog)

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
        self.plots.set_layer(layer)
        self.playback.clear_marks()
        if layer == "track":
            d = self.state.drive
            if d is not None and d.pose is not None:
                self.canvas.set_car(*d.pose)
            elif self.state.track is not None:
                self.canvas.set_car(*self.state.track.start_pose())
        else:
            self.playback.stop()
            self.canvas.set_car(0.0, 0.0, 0.0)

    # -- models ----------------------------------------------------------------------------
    def models_dir(self) -> Path:
        data = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
        default = Path(data) / "car_models"
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
        self.canvas.refresh_legend()
        self.canvas.getPlotItem().autoRange()
        self.status.setText(f"Driving log {Path(prep['path']).name} loaded (drawn in grey): "
                            f"{len(prep['inputs'])} training pairs. Train on it in the Model tab.")

    # -- drawing the state ---------------------------------------------------------------------
    def _draw_targets(self):
        s = self.state
        self.canvas.set_targets([(t.x, t.y, t.yaw, t.step) for t in s.targets], s.selected)
        self.canvas.show_targets()

    def _draw_plan(self):
        s = self.state
        if s.optimising:
            live = s.live
            if live is None:                    # a new optimisation: nothing of the old plan stays
                self._clear_plan()
                return
            self.plots.show_live_cost(live.variant, live.costs)
            if live.pose is not None:
                (self.canvas.nominal if live.variant == 0 else self.canvas.compare).setData(
                    live.pose[:, 0], live.pose[:, 1])
            return
        if s.plan is None:
            self._clear_plan()
        else:
            self._show_result(s.plan)

    def _clear_plan(self):
        self.playback.stop(forget=True)
        if self.canvas.layer == "plan":
            self.playback.clear_marks()
        c = self.canvas
        for item in (c.nominal, c.executed, c.compare, c.compare_executed):
            item.setData([], [])
        self.plots.clear_plan()

    def _show_result(self, res: PlanResult):
        c = self.canvas
        for k, v in enumerate(res.variants[:2]):
            (c.nominal, c.compare)[k].setData(v.pose[:, 0], v.pose[:, 1])
            (c.executed, c.compare_executed)[k].setData(v.executed_pose[:, 0], v.executed_pose[:, 1])
        if res.compared:
            a, b = res.variants[0].label, res.variants[1].label
            c.set_legend([(c.nominal, f"{a} plan"), (c.executed, f"{a} executed"),
                          (c.compare, f"{b} plan"), (c.compare_executed, f"{b} executed")])
        elif res.compare is not None:
            C = res.compare
            c.compare.setData(C.pose[:, 0], C.pose[:, 1])
            c.compare_executed.setData([], [])
            c.set_legend([(c.nominal, "plan"), (c.executed, "executed"), (c.compare, C.model)])
        else:
            for item in (c.compare, c.compare_executed):
                item.setData([], [])
            c.set_legend([(c.nominal, "plan"), (c.executed, "executed on simulator")])
        self.plots.show_result(res)

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
        self.plots.show_speed(d.speed)
        if c.layer == "track":
            skid = np.asarray(d.skid, dtype=float).reshape(-1, 2)
            c.skid.setData(skid[:, 0], skid[:, 1])
            if d.pose is not None:
                c.set_car(*d.pose)

    # -- the controllers' actions, as scripts and tests call them ----------------------------------
    def optimise(self):
        """Optimise the plan as a job; its handle, or None when nothing started (the reason said)."""
        return self.optimiser.optimise()

    def cancel(self):
        self.optimiser.cancel()

    def play(self):
        if self.state.plan is not None:
            self.playback.play(self.state.plan)

    @property
    def playing(self) -> bool:
        return self.playback.playing

    def load_track(self, path_or_name) -> bool:
        return self.driver.load_track(path_or_name)

    def finish_drawn_track(self) -> bool:
        """Close the drawn centre line into a track (at least 4 points)."""
        return self.driver.finish_drawn_track()

    def drive(self):
        self.driver.drive()

    def stop_drive(self):
        self.driver.stop()

    def save_plan(self, path: str) -> bool:
        """Write the plan (and the optimised controls, when they fit it) as JSON, atomically."""
        return self.files.save_plan(path)

    def save_track(self, path: str) -> bool:
        """Write the current track as JSON, atomically."""
        return self.files.save_track(path)

    def load_plan(self, path: str) -> bool:
        return self.files.load_plan(path)

    def start_folder(self, kind: str) -> str:
        """The folder an open dialog for ``kind`` starts in: the last one used, else the examples'."""
        return self.files.start_folder(kind)

    def remember_folder(self, kind: str, folder: str) -> None:
        self.files.remember_folder(kind, folder)

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
            message = ("Could not restore " + "; ".join(problems)
                       + ". The rest of the car planner was restored.")
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
        self.playback.stop()
        self.model_panel.shutdown()
        self.optimiser.cancel()
        self.driver.stop()
