"""The Car planner workspace: draw target poses, optimise a trajectory on a learned model (or
the simulator), play it on the simulator, drive a race track with MPC at real-time pace, and
train, save and load the learned models (the Model tab, :mod:`.model_panel`).

All computation is in ``engine.planning``; this page only collects inputs, submits jobs
(:mod:`.jobs`) and draws. A running job hands its latest iterate to the page through a
``Latest`` slot (or every MPC cycle through a ``Feed``), read when the (throttled) progress
signal arrives.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.widgets.plots import make_plot
from app.widgets.undo import add_undo_redo_actions
from app.workspaces.car.canvas import CarCanvas
from app.workspaces.car.jobs import Feed, Latest, drive_job, optimise_job
from app.workspaces.car.model_panel import ModelPanel, clean_error
from engine.planning.costs import PlanWeights, Target
from engine.planning.mpc import MPCConfig
from engine.planning.optimiser import DIRECTIONS, OptimiserConfig
from engine.planning.scenarios import SCENARIOS, Plan
from engine.systems.rc_car import CarParams

__all__ = ["CarPlannerPage"]

SIM = "sim"
PLAN_COLOURS = ("#ff8c00", "#9467bd")      # first and second compared plan (GELU, ReLU)
ACTIVATION_NAMES = {"gelu": "GELU", "relu": "ReLU"}


def read_model_info(folder: str) -> dict:
    """``car_model.json`` of a model folder (config, tve...), or {} when unreadable."""
    from engine.io import read_json

    try:
        meta = read_json(Path(folder) / "car_model.json")
    except (ValueError, OSError):
        return {}
    return meta if isinstance(meta, dict) else {}


def describe_model(folder: str, meta: dict) -> str:
    cfg = meta.get("config") or {}
    if not cfg:
        return Path(folder).name
    act = str(cfg.get("activation", "?"))
    return (f"{Path(folder).name} ({ACTIVATION_NAMES.get(act, act)} "
            f"{cfg.get('layers', '?')}×{cfg.get('hidden', '?')}, {cfg.get('loss', '?')})")


class _TargetsCommand(QUndoCommand):
    """Replace the target list (add, move, delete, edit step): undo restores the old list."""

    def __init__(self, page, before, after, text):
        super().__init__(text)
        self.page, self.before, self.after = page, list(before), list(after)

    def redo(self):
        self.page._set_targets(self.after)

    def undo(self):
        self.page._set_targets(self.before)


class CarPlannerPage(QWidget):
    """Car planner: targets by click-and-drag, optimisation as a job, playback, MPC laps."""

    def __init__(self, ctx, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.params = CarParams()
        self.targets: list[Target] = []
        self.selected = -1
        self.result: dict | None = None
        self.track = None
        self._job = None
        self._drive = None
        self._live = Latest()
        self._drive_feed = Feed()
        self.model_info: dict[str, dict] = {}
        self.last_drive: dict | None = None
        self._drive_pose = None
        self._frames = None
        self._frame = 0
        self._skid_points: list = []
        self.undo_stack = QUndoStack(self)
        self._build()
        self._refresh_models()
        self._refresh_tracks()
        self._timer = QTimer(self)
        self._timer.setInterval(int(self.params.dt * 1000))
        self._timer.timeout.connect(self._next_frame)

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
        left.addWidget(plots)
        left.setSizes([600, 200])
        split.addWidget(left)

        side = QWidget()
        side.setMinimumWidth(330)
        sl = QVBoxLayout(side)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._plan_tab(), "Plan")
        self._track_widget = self._track_tab()
        self.tabs.addTab(self._track_widget, "Track")
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
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(side)
        split.addWidget(scroll)
        split.setSizes([900, 360])

        self.canvas.target_placed.connect(self._on_target_placed)
        self.canvas.target_moved.connect(self._on_target_moved)
        self.canvas.target_selected.connect(self._select)
        self.canvas.delete_requested.connect(lambda _: self.delete_selected())

        self.undo_action, self.redo_action = add_undo_redo_actions(self, self.undo_stack)

    def _plan_tab(self) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        box = QGroupBox("Model")
        form = QFormLayout(box)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("carModel")
        self.compare_combo = QComboBox()
        self.compare_combo.setObjectName("carCompare")
        self.compare_models = QCheckBox("Compare ReLU and GELU")
        self.compare_models.setObjectName("carCompareActivations")
        self.compare_models.setEnabled(False)
        self.compare_models.setToolTip("Needs a trained GELU and a trained ReLU model: Optimise plans on both "
                                       "and overlays them")
        row = QHBoxLayout()
        self.train_button = QPushButton("Train model…")
        self.train_button.setToolTip("Training settings, live loss, save and load: the Model tab")
        self.train_button.clicked.connect(self.train_model)
        add = QPushButton("Load model…")
        add.clicked.connect(self._add_model_folder)
        row.addWidget(self.train_button)
        row.addWidget(add)
        form.addRow("Plan on", self.model_combo)
        form.addRow("Compare with", self.compare_combo)
        form.addRow(self.compare_models)
        form.addRow(row)
        lay.addWidget(box)
        self.compare_table = QTableWidget(0, 6)
        self.compare_table.setObjectName("carCompareTable")
        self.compare_table.setHorizontalHeaderLabels(["model", "act.", "iter.", "cost", "exec. m", "exec. rad"])
        self.compare_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.compare_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.compare_table.verticalHeader().setVisible(False)
        self.compare_table.setToolTip("Each plan executed open loop on the simulator: end position and "
                                      "heading errors against the last target")
        self.compare_table.setMaximumHeight(90)
        self.compare_table.setVisible(False)
        lay.addWidget(self.compare_table)

        box = QGroupBox("Problem")
        form = QFormLayout(box)
        self.scenario_combo = QComboBox()
        self.scenario_combo.addItem("(custom)")
        self.scenario_combo.addItems(list(SCENARIOS))
        self.scenario_combo.currentTextChanged.connect(self._load_scenario)
        self.horizon_spin = QSpinBox()
        self.horizon_spin.setObjectName("carHorizon")
        self.horizon_spin.setRange(2, 400)
        self.horizon_spin.setValue(Plan().horizon)
        self.start_speed = QDoubleSpinBox()
        self.start_speed.setRange(-5, 8)
        self.start_speed.setSingleStep(0.5)
        self.start_speed.setSuffix(" m/s")
        form.addRow("Scenario", self.scenario_combo)
        form.addRow("Horizon (steps)", self.horizon_spin)
        form.addRow("Start speed", self.start_speed)
        lay.addWidget(box)

        box = QGroupBox("Targets")
        tl = QVBoxLayout(box)
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("carTargets")
        self.table.setHorizontalHeaderLabels(["step", "x (m)", "y (m)", "yaw (°)"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.itemChanged.connect(self._on_table_edit)
        self.table.itemSelectionChanged.connect(self._on_table_selection)
        self.table.setMinimumHeight(110)
        tl.addWidget(self.table)
        row = QHBoxLayout()
        delete = QPushButton("Delete")
        delete.clicked.connect(self.delete_selected)
        undo = QPushButton("Undo")
        undo.clicked.connect(self.undo_stack.undo)
        redo = QPushButton("Redo")
        redo.clicked.connect(self.undo_stack.redo)
        for b in (delete, undo, redo):
            row.addWidget(b)
        tl.addLayout(row)
        lay.addWidget(box)

        box = QGroupBox("Weights and optimiser")
        bl = QVBoxLayout(box)
        self.weights_form = DataclassForm(PlanWeights)
        self.opt_form = DataclassForm(OptimiserConfig, include=["candidates", "max_iterations", "direction"],
                                      choices={"direction": list(DIRECTIONS)})
        bl.addWidget(self.weights_form)
        bl.addWidget(self.opt_form)
        lay.addWidget(box)

        row = QHBoxLayout()
        self.optimise_button = QPushButton("Optimise")
        self.optimise_button.setObjectName("carOptimise")
        self.optimise_button.clicked.connect(self.optimise)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.play_button = QPushButton("Play on simulator")
        self.play_button.setEnabled(False)
        self.play_button.clicked.connect(self.play)
        for b in (self.optimise_button, self.cancel_button, self.play_button):
            row.addWidget(b)
        lay.addLayout(row)
        row = QHBoxLayout()
        save = QPushButton("Save plan…")
        save.clicked.connect(self._save_plan_dialog)
        load = QPushButton("Load plan…")
        load.clicked.connect(self._load_plan_dialog)
        row.addWidget(save)
        row.addWidget(load)
        lay.addLayout(row)
        lay.addStretch(1)
        return w

    def _track_tab(self) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        form = QFormLayout()
        self.track_combo = QComboBox()
        self.track_combo.setObjectName("carTrack")
        self.track_combo.currentTextChanged.connect(self._on_track_chosen)
        form.addRow("Track", self.track_combo)
        self.laps_spin = QSpinBox()
        self.laps_spin.setRange(1, 20)
        form.addRow("Laps", self.laps_spin)
        lay.addLayout(form)
        row = QHBoxLayout()
        load = QPushButton("Load track…")
        load.clicked.connect(self._load_track_dialog)
        save = QPushButton("Save track…")
        save.clicked.connect(self._save_track_dialog)
        row.addWidget(load)
        row.addWidget(save)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.draw_button = QPushButton("Draw track")
        self.draw_button.setCheckable(True)
        self.draw_button.setToolTip("Click centre-line points on the canvas, then Finish")
        self.draw_button.toggled.connect(self._toggle_draw)
        self.finish_button = QPushButton("Finish track")
        self.finish_button.setEnabled(False)
        self.finish_button.clicked.connect(self.finish_drawn_track)
        self.width_spin = QDoubleSpinBox()
        self.width_spin.setRange(0.3, 5.0)
        self.width_spin.setValue(1.0)
        self.width_spin.setSuffix(" m")
        row.addWidget(self.draw_button)
        row.addWidget(self.finish_button)
        row.addWidget(self.width_spin)
        lay.addLayout(row)
        self.mpc_form = DataclassForm(MPCConfig, include=["horizon", "iterations", "candidates", "target_speed",
                                                          "w_progress", "w_track", "margin", "direction"],
                                      choices={"direction": ["conjugate", "gradient"]})
        lay.addWidget(self.mpc_form)
        self.real_time_check = QCheckBox("Real-time pace (one control cycle per dt)")
        self.real_time_check.setObjectName("carRealTime")
        self.real_time_check.setChecked(True)
        self.real_time_check.setToolTip(f"The car laps at simulated real time: one MPC cycle every "
                                        f"{self.params.dt * 1000:.0f} ms of wall time; unticked, as fast "
                                        f"as the computer can")
        lay.addWidget(self.real_time_check)
        row = QHBoxLayout()
        self.drive_button = QPushButton("Drive")
        self.drive_button.setObjectName("carDrive")
        self.drive_button.clicked.connect(self.drive)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop_drive)
        row.addWidget(self.drive_button)
        row.addWidget(self.stop_button)
        lay.addLayout(row)
        self.lap_label = QLabel("Lap time: –")
        self.lap_label.setObjectName("carLapTime")
        lay.addWidget(self.lap_label)
        self.rate_label = QLabel("Control rate: –")
        self.rate_label.setObjectName("carControlRate")
        self.rate_label.setWordWrap(True)
        lay.addWidget(self.rate_label)
        lay.addStretch(1)
        return w

    def _on_tab_changed(self, index: int):
        """The Track tab shows the track layer (driven path, MPC plan), the others the plan layer."""
        layer = "track" if self.tabs.widget(index) is self._track_widget else "plan"
        if layer == self.canvas.layer:
            return
        self.canvas.set_layer(layer)
        if layer == "track":
            if self._drive_pose is not None:
                self.canvas.set_car(*self._drive_pose)
            elif self.track is not None:
                self.canvas.set_car(*self.track.start_pose())
        else:
            self._timer.stop()
            self.canvas.set_car(0.0, 0.0, 0.0)
        self.canvas.skid.setData([], [])
        self._skid_points = []

    # -- models ----------------------------------------------------------------------------
    def models_dir(self) -> Path:
        default = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)) / "car_models"
        return Path(str(self.ctx.settings.value("car/models_dir", str(default))))

    def current_model_folder(self) -> str | None:
        """The folder of the model chosen under "Plan on" (None for the simulator)."""
        spec = self.model_combo.currentData()
        return spec if spec and spec != SIM else None

    def _refresh_models(self, select: str | None = None):
        extra = [str(p) for p in (self.ctx.settings.value("car/extra_models", []) or []) if p]
        found = []
        root = self.models_dir()
        if root.is_dir():
            found = sorted(str(p.parent) for p in root.glob("*/car_model.json"))
        paths = [p for p in dict.fromkeys(found + extra) if (Path(p) / "car_model.json").exists()]
        self.model_info = {p: read_model_info(p) for p in paths}
        for combo, first in ((self.model_combo, ("Simulator (reference)", SIM)), (self.compare_combo, ("(none)", ""))):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(*first)
            if combo is self.compare_combo:
                combo.addItem("Simulator (reference)", SIM)
            for path in paths:
                combo.addItem(describe_model(path, self.model_info[path]), path)
            target = select if (select and combo is self.model_combo) else current
            idx = combo.findData(target)
            combo.setCurrentIndex(max(0, idx))
            combo.blockSignals(False)
        both = all(self.models_by_activation(a) for a in ("gelu", "relu"))
        if both and not self.compare_models.isEnabled():
            self.compare_models.setChecked(True)       # the paper's comparison, once it is possible
        self.compare_models.setEnabled(both)
        if not both:
            self.compare_models.setChecked(False)

    def models_by_activation(self, activation: str) -> list[str]:
        """Model folders with this activation, newest first."""
        out = [p for p, meta in self.model_info.items()
               if str((meta.get("config") or {}).get("activation", "")).lower() == activation]
        return sorted(out, key=lambda p: (Path(p) / "car_model.json").stat().st_mtime, reverse=True)

    def compared_variants(self) -> list[tuple[str, str]]:
        """``[(label, folder)]`` for "Compare ReLU and GELU": the chosen model for its own
        activation, the newest model of the other one; GELU first."""
        chosen = self.current_model_folder()
        act = str((self.model_info.get(chosen, {}).get("config") or {}).get("activation", "")) if chosen else ""
        out = []
        for a in ("gelu", "relu"):
            models = self.models_by_activation(a)
            if models:
                out.append((ACTIVATION_NAMES[a], chosen if act == a else models[0]))
        return out

    def _add_model_folder(self):
        path = QFileDialog.getExistingDirectory(self, "Folder with car_model.safetensors and car_model.json")
        if path:
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

    # -- targets -----------------------------------------------------------------------------
    def _set_targets(self, targets: list[Target]):
        self.targets = list(targets)
        if self.selected >= len(self.targets):
            self.selected = len(self.targets) - 1
        self._sync_targets()

    def _sync_targets(self):
        self.canvas.set_targets([(t.x, t.y, t.yaw, t.step) for t in self.targets], self.selected)
        self.table.blockSignals(True)
        self.table.setRowCount(len(self.targets))
        for i, t in enumerate(self.targets):
            values = [str(t.step), f"{t.x:.2f}", f"{t.y:.2f}", f"{math.degrees(t.yaw):.0f}"]
            for j, v in enumerate(values):
                item = QTableWidgetItem(v)
                self.table.setItem(i, j, item)
        self.table.blockSignals(False)

    def _push(self, after, text):
        self.undo_stack.push(_TargetsCommand(self, self.targets, after, text))

    def _on_target_placed(self, x, y, yaw):
        horizon = self.horizon_spin.value()
        last = max((t.step for t in self.targets), default=0)
        step = min(horizon, last + max(1, horizon // 2))
        self.selected = len(self.targets)
        self._push(self.targets + [Target(step, x, y, yaw)], "Place target")
        self.scenario_combo.blockSignals(True)
        self.scenario_combo.setCurrentIndex(0)
        self.scenario_combo.blockSignals(False)

    def _on_target_moved(self, i, x0, y0, x, y):
        after = list(self.targets)
        after[i] = replace(after[i], x=x, y=y)
        self._push(after, "Move target")

    def _select(self, i):
        self.selected = i
        self._sync_targets()
        self.table.blockSignals(True)
        self.table.selectRow(i)
        self.table.blockSignals(False)

    def _on_table_selection(self):
        rows = {i.row() for i in self.table.selectedIndexes()}
        if rows:
            self.selected = min(rows)
            self.canvas.set_targets([(t.x, t.y, t.yaw, t.step) for t in self.targets], self.selected)

    def _on_table_edit(self, item: QTableWidgetItem):
        i, col = item.row(), item.column()
        if i >= len(self.targets):
            return
        t = self.targets[i]
        try:
            value = float(item.text())
        except ValueError:
            self._sync_targets()
            return
        horizon = self.horizon_spin.value()
        if col == 0:
            new = replace(t, step=int(min(max(1, round(value)), horizon)))
        elif col == 1:
            new = replace(t, x=value)
        elif col == 2:
            new = replace(t, y=value)
        else:
            new = replace(t, yaw=math.radians(value))
        after = list(self.targets)
        after[i] = new
        QTimer.singleShot(0, lambda: self._push(after, "Edit target"))

    def set_target_step(self, index: int, step: int):
        """Edit a target's step (time) as an undoable command."""
        after = list(self.targets)
        after[index] = replace(after[index], step=int(step))
        self._push(after, "Edit target step")

    def delete_selected(self):
        if 0 <= self.selected < len(self.targets):
            after = [t for k, t in enumerate(self.targets) if k != self.selected]
            self._push(after, "Delete target")

    def _load_scenario(self, name: str):
        if name not in SCENARIOS:
            return
        plan = SCENARIOS[name]
        self.apply_plan(plan)

    def apply_plan(self, plan: Plan, controls=None):
        self.horizon_spin.setValue(plan.horizon)
        self.start_speed.setValue(plan.start_velocity[0])
        self.weights_form.set_value(plan.weights)
        self._push(list(plan.targets), f"Load {plan.name}")
        for item in (self.canvas.nominal, self.canvas.executed, self.canvas.compare, self.canvas.compare_executed):
            item.setData([], [])
        self.compare_table.setVisible(False)

    def current_plan(self) -> Plan:
        horizon = self.horizon_spin.value()
        targets = tuple(replace(t, step=min(t.step, horizon)) for t in self.targets)
        return Plan(name=self.scenario_combo.currentText() if self.scenario_combo.currentIndex() > 0 else "custom",
                    horizon=horizon, start_velocity=(self.start_speed.value(), 0.0, 0.0), targets=targets,
                    weights=self.weights_form.value())

    # -- optimise ----------------------------------------------------------------------------
    def optimise(self):
        if not self.targets:
            self.status.setText("Place at least one target first (click and drag on the canvas).")
            return
        if self._job is not None:
            return
        try:
            plan = self.current_plan()
            cfg = self.opt_form.value()
        except ValueError as exc:
            self.ctx.show_error("Car planner", str(exc))
            self.status.setText(str(exc))
            return
        if self.compare_models.isEnabled() and self.compare_models.isChecked():
            variants = self.compared_variants()
            compare = None
            what = " and ".join(f"{label} ({Path(spec).name})" for label, spec in variants)
        else:
            variants = [("plan", self.model_combo.currentData() or SIM)]
            compare = self.compare_combo.currentData() or None
            what = self.model_combo.currentText()
        self._variant_labels = [label for label, _ in variants]
        for c in (self.cost_curve, self.cost_curve2):
            c.setData([], [])
        self.cost_plot.getPlotItem().enableAutoRange()
        for item in (self.canvas.executed, self.canvas.compare, self.canvas.compare_executed):
            item.setData([], [])
        self.compare_table.setVisible(False)
        self.optimise_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.setText(f"Optimising on {what}…")
        self._job = self.ctx.jobs.submit(optimise_job(plan, variants, compare, self.params, cfg, self._live),
                                         name="Optimise car trajectory", on_result=self._on_optimised,
                                         on_error=self._on_job_failed, on_progress=self._on_opt_progress,
                                         on_cancelled=self._on_cancelled)
        self._job.ended.connect(self._on_job_ended)

    def _on_opt_progress(self, update):
        live = self._live.take()
        if live is None:
            return
        costs = live["costs"]
        k = live.get("variant", 0)
        curve = self.cost_curve if k == 0 else self.cost_curve2
        curve.setData(np.arange(1, len(costs) + 1), np.maximum(np.asarray(costs), 1e-12))
        if live["pose"] is not None:
            P = live["pose"]
            (self.canvas.nominal if k == 0 else self.canvas.compare).setData(P[:, 0], P[:, 1])
        who = f"{live['label']}: " if len(self._variant_labels) > 1 else ""
        self.status.setText(f"{who}iteration {live['iteration']}: cost {costs[-1]:.4g}")

    def _on_optimised(self, res: dict):
        self.result = res
        variants = res.get("variants") or [res]
        compared = len(variants) > 1
        steps = np.arange(len(res["controls"]))
        plan_items = (self.canvas.nominal, self.canvas.compare)
        exec_items = (self.canvas.executed, self.canvas.compare_executed)
        cost_curves = (self.cost_curve, self.cost_curve2)
        curve_keys = ("plan", "other model")
        for k, v in enumerate(variants[:2]):
            P, E = v["pose"], v["executed_pose"]
            plan_items[k].setData(P[:, 0], P[:, 1])
            exec_items[k].setData(E[:, 0], E[:, 1])
            costs = np.asarray(v["costs"])
            cost_curves[k].setData(np.arange(len(costs)), np.maximum(costs, 1e-12))
            self.throttle_curves[curve_keys[k]].setData(steps, v["controls"][:, 0])
            self.steer_curves[curve_keys[k]].setData(steps, v["controls"][:, 1])
        if compared:
            a, b = variants[0]["label"], variants[1]["label"]
            names = {"plan": f"{a} plan", "other model": f"{b} plan"}
            self.canvas.set_legend([(self.canvas.nominal, f"{a} plan"), (self.canvas.executed, f"{a} executed"),
                                    (self.canvas.compare, f"{b} plan"),
                                    (self.canvas.compare_executed, f"{b} executed")])
        elif res.get("compare"):
            C = res["compare"]["pose"]
            self.canvas.compare.setData(C[:, 0], C[:, 1])
            self.throttle_curves["other model"].setData(steps, res["compare"]["controls"][:, 0])
            self.steer_curves["other model"].setData(steps, res["compare"]["controls"][:, 1])
            names = {"plan": "plan", "other model": res["compare"]["model"]}
            self.canvas.set_legend([(self.canvas.nominal, "plan"), (self.canvas.executed, "executed"),
                                    (self.canvas.compare, res["compare"]["model"])])
        else:
            for d in (self.throttle_curves, self.steer_curves):
                d["other model"].setData([], [])
            names = {"plan": "plan", "other model": "other model"}
            self.canvas.set_legend([(self.canvas.nominal, "plan"), (self.canvas.executed, "executed on simulator")])
        for plot, curves in ((self.throttle_plot, self.throttle_curves), (self.steer_plot, self.steer_curves)):
            legend = plot.getPlotItem().legend
            for key, curve in curves.items():
                label = legend.getLabel(curve) if legend is not None else None
                if label is not None:
                    label.setText(names[key])
        self._fill_compare_table(variants if compared else [])
        if compared:
            rows = "; ".join(f"{v['label']}: {v['executed_position_error']:.2f} m / "
                             f"{v['executed_heading_error']:.2f} rad" for v in variants)
            self.status.setText(f"Planned on {len(variants)} models. Executed on the simulator: {rows}.")
        else:
            errs = ", ".join(f"step {e['step']}: {e['position_error']:.2f} m / {e['heading_error']:.2f} rad"
                             for e in res["target_errors"])
            self.status.setText(
                f"{'Converged' if res['converged'] else 'Stopped'} after {res['iterations']} iterations "
                f"({res['seconds']:.2f} s) on {res['model']}. Targets: {errs}. Executed on the simulator: "
                f"{res['executed_position_error']:.2f} m, {res['executed_heading_error']:.2f} rad.")
        self.play_button.setEnabled(True)

    def _fill_compare_table(self, variants: list[dict]):
        self.compare_table.setRowCount(len(variants))
        for i, v in enumerate(variants):
            cells = [v["model"], v["label"], str(v["iterations"]), f"{v['final_cost']:.3g}",
                     f"{v['executed_position_error']:.2f}", f"{v['executed_heading_error']:.2f}"]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                item.setToolTip(f"{v['spec']}: {v['iterations']} iterations, "
                                f"{'converged' if v['converged'] else 'stopped'}")
                if j == 1:
                    item.setForeground(pg.mkColor(PLAN_COLOURS[i % 2]))
                self.compare_table.setItem(i, j, item)
        self.compare_table.setVisible(bool(variants))

    def _on_job_failed(self, message, tb):
        message = clean_error(message)
        self.status.setText(f"Failed: {message}")
        self.ctx.show_error("Car planner", message)

    def _on_cancelled(self):
        self.status.setText("Cancelled.")

    def _on_job_ended(self):
        self._job = None
        self.optimise_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def cancel(self):
        if self._job is not None:
            self._job.cancel()

    # -- playback ------------------------------------------------------------------------------
    def play(self):
        if not self.result:
            return
        E = self.result["executed_pose"]
        U = self.result["controls"]
        slip = self.result["slip"]
        self._frames = (E, U, slip)
        self._frame = 0
        self._skid_points = []
        self.canvas.skid.setData([], [])
        self._timer.start()

    def _next_frame(self):
        if self._frames is None:
            self._timer.stop()
            return
        E, U, slip = self._frames
        i = self._frame
        if i >= len(E):
            self._timer.stop()
            return
        x, y, yaw = E[i]
        steer = float(U[min(i, len(U) - 1), 1])
        self.canvas.set_car(x, y, yaw, steer)
        if i > 0 and slip[i - 1].max() > 0.3:
            self._add_skid(x, y, yaw)
        self._frame += 1

    def _add_skid(self, x, y, yaw):
        c, s = math.cos(yaw), math.sin(yaw)
        for px, py in ((-self.params.wheelbase / 2, self.params.track_width / 2),
                       (-self.params.wheelbase / 2, -self.params.track_width / 2)):
            self._skid_points.append((x + c * px - s * py, y + s * px + c * py))
        pts = np.asarray(self._skid_points)
        self.canvas.skid.setData(pts[:, 0], pts[:, 1])

    # -- tracks and MPC --------------------------------------------------------------------------
    def _refresh_tracks(self):
        from engine.planning.tracks import track_names

        self.track_combo.blockSignals(True)
        self.track_combo.clear()
        for name in track_names():
            self.track_combo.addItem(name, name)
        self.track_combo.blockSignals(False)

    def _on_track_chosen(self, name: str):
        data = self.track_combo.currentData()
        if data:
            self.load_track(data)

    def load_track(self, path_or_name) -> bool:
        from engine.planning.tracks import load_track

        try:
            self.track = load_track(path_or_name)
        except ValueError as exc:
            self.ctx.show_error("Track", str(exc))
            self.status.setText(str(exc))
            return False
        self._show_new_track()
        self.canvas.getPlotItem().autoRange()
        self.status.setText(f"Track {self.track.name}: {self.track.length:.1f} m, {self.track.width:.2f} m wide.")
        return True

    def _show_new_track(self):
        self.tabs.setCurrentWidget(self._track_widget)
        left, right = self.track.edges()
        self.canvas.set_track(left, right, self.track.centre)
        self._drive_pose = None
        for item in (self.canvas.driven, self.canvas.mpc_plan):
            item.setData([], [])
        self.canvas.set_car(*self.track.start_pose())

    def _toggle_draw(self, on: bool):
        self.canvas.set_mode("draw_track" if on else "targets")
        self.finish_button.setEnabled(on)
        if on:
            self.status.setText("Click the centre line's points in order; Finish closes the loop.")

    def finish_drawn_track(self) -> bool:
        """Close the drawn centre line into a track (at least 4 points)."""
        from engine.planning.tracks import Track

        pts = list(self.canvas.draw_points)
        try:
            track = Track("drawn", np.asarray(pts, dtype=float).reshape(-1, 2), self.width_spin.value())
        except ValueError as exc:
            self.status.setText(str(exc))
            return False
        self.draw_button.setChecked(False)
        self.track = track
        self._show_new_track()
        self.status.setText(f"Drawn track: {track.length:.1f} m. Press Drive.")
        return True

    def drive(self):
        if self.track is None and (not self.track_combo.count()
                                   or not self.load_track(self.track_combo.currentData())):
            return
        if self._drive is not None:
            return
        try:
            cfg = self.mpc_form.value()
        except ValueError as exc:
            self.ctx.show_error("MPC", str(exc))
            return
        spec = self.model_combo.currentData() or SIM
        self._drive_feed.take_all()
        self._drive_path = []
        self._drive_speed = []
        self._skid_points = []
        self.canvas.skid.setData([], [])
        self.canvas.driven.setData([], [])
        self.speed_curve.setData([], [])
        self.drive_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        real_time = self.real_time_check.isChecked()
        self.lap_label.setText("Lap time: driving…")
        self.rate_label.setText(f"Control rate: starting ({'real time, ' if real_time else ''}"
                                f"target {1 / self.params.dt:.0f} Hz)…")
        self.canvas.set_legend([(self.canvas.driven, "driven"), (self.canvas.mpc_plan, "MPC plan")], "track")
        self._drive = self.ctx.jobs.submit(drive_job(self.track, spec, self.params, cfg, self.laps_spin.value(),
                                                     self._drive_feed, real_time), name="MPC laps",
                                           on_result=self._on_driven, on_error=self._on_job_failed,
                                           on_progress=self._on_drive_progress,
                                           on_cancelled=lambda: self.lap_label.setText("Lap time: stopped"))
        self._drive.ended.connect(self._on_drive_ended)

    def _rate_text(self, achieved, compute_ms, real_time: bool) -> str:
        target = 1.0 / self.params.dt
        parts = []
        if achieved is not None:
            parts.append(f"{achieved:.1f} Hz achieved ({achieved / target:.2f}× real time)")
        if compute_ms is not None and compute_ms > 0:
            parts.append(f"compute {compute_ms:.0f} ms/cycle ({1000 / compute_ms:.1f} Hz possible)")
        text = "Control rate: " + (", ".join(parts) if parts else "–")
        if real_time and achieved is not None and achieved < 0.95 * target:
            text += f" — slower than the {target:.0f} Hz real-time pace"
        return text

    def _on_drive_progress(self, update):
        cycles = self._drive_feed.take_all()
        if not cycles:
            return
        for info in cycles:
            x, y, yaw = info["pose"]
            self._drive_path.append((x, y))
            self._drive_speed.append((info["time"], info["speed"]))
            if max(info["slip"]) > 0.3:
                self._add_skid(x, y, yaw)
        info = cycles[-1]
        x, y, yaw = info["pose"]
        self._drive_pose = (x, y, yaw, info["u"][1])
        if self.canvas.layer == "track":
            self.canvas.set_car(*self._drive_pose)
        path = np.asarray(self._drive_path)
        self.canvas.driven.setData(path[:, 0], path[:, 1])
        plan = np.asarray(info["plan"])
        self.canvas.mpc_plan.setData(plan[:, 0], plan[:, 1])
        sp = np.asarray(self._drive_speed)
        self.speed_curve.setData(sp[:, 0], sp[:, 1])
        self.rate_label.setText(self._rate_text(info["achieved_hz"], info["compute_ms"],
                                                self.real_time_check.isChecked()))
        self.lap_label.setText(f"Lap time: driving… t = {info['time']:.2f} s simulated, "
                               f"{info['wall']:.2f} s wall clock")
        self.status.setText(f"t = {info['time']:.1f} s, {info['speed']:.2f} m/s, off centre {info['deviation']:.2f} m")

    def _on_driven(self, res: dict):
        self._drive_feed.take_all()
        P = np.asarray(res["pose"])
        self.canvas.driven.setData(P[:, 0], P[:, 1])
        self.canvas.mpc_plan.setData([], [])
        x, y, yaw = P[-1]
        self._drive_pose = (x, y, yaw, 0.0)
        if self.canvas.layer == "track":
            self.canvas.set_car(*self._drive_pose)
        t = np.arange(len(res["speed"])) * self.params.dt
        self.speed_curve.setData(t, np.asarray(res["speed"]))
        lap = f"{res['lap_time']:.2f} s" if res["lap_time"] else "not completed"
        laps = res.get("lap_times") or []
        more = f" (laps: {', '.join(f'{x:.2f}' for x in laps)} s)" if len(laps) > 1 else ""
        self.lap_label.setText(f"Lap time: {lap}{more}")
        n = res["iterations_per_cycle"]
        wall = res.get("wall_seconds")
        achieved = res["steps"] / wall if wall else None
        self.rate_label.setText(self._rate_text(achieved, res.get("cycle_ms"), res.get("real_time", False))
                                + f"; {n} optimiser iteration{'s' if n != 1 else ''} per cycle")
        self.status.setText(f"MPC: lap {lap}, max deviation {res['max_track_deviation']:.2f} m, "
                            f"{res['control_rate_hz']:.1f} Hz control rate, {res['iterations_per_cycle']} iterations/cycle.")
        self.last_drive = res

    def _on_drive_ended(self):
        self._drive = None
        self.drive_button.setEnabled(True)
        self.stop_button.setEnabled(False)

    def stop_drive(self):
        if self._drive is not None:
            self._drive.cancel()

    # -- files ---------------------------------------------------------------------------------
    def save_plan(self, path: str) -> bool:
        """Write the plan (and the optimised controls, when they fit it) as JSON, atomically."""
        import torch

        from engine.planning.scenarios import save_plan

        controls = None if not self.result else torch.as_tensor(self.result["controls"])
        if controls is not None and controls.shape[0] != self.horizon_spin.value():
            controls = None
        return self._save("plan", path, lambda: save_plan(path, self.current_plan(), controls))

    def save_track(self, path: str) -> bool:
        """Write the current track as JSON, atomically."""
        from engine.planning.tracks import save_track

        if self.track is None:
            return False
        return self._save("track", path, lambda: save_track(path, self.track))

    def _save(self, what: str, path: str, write) -> bool:
        """Run ``write()`` (an atomic JSON save); on failure an error naming the file, False."""
        try:
            write()
        except (OSError, ValueError) as exc:
            msg = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
            self.ctx.show_error(f"Save {what}", msg)
            self.status.setText(msg)
            return False
        self.ctx.add_recent_file(path)
        self.status.setText(f"{what.capitalize()} saved to {path}.")
        return True

    def load_plan(self, path: str) -> bool:
        from engine.planning.scenarios import load_plan

        try:
            plan, _ = load_plan(path)
        except ValueError as exc:
            self.ctx.show_error("Load plan", str(exc))
            self.status.setText(str(exc))
            return False
        self.apply_plan(plan)
        self.ctx.add_recent_file(path)
        return True

    def _save_plan_dialog(self):
        path, _ = QFileDialog.getSaveFileName(self, "Save plan", "plan.json", "Car plan (*.json)")
        if path:
            self.save_plan(path)

    def _load_plan_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Load plan", "", "Car plan (*.json)")
        if path:
            self.load_plan(path)

    def _load_track_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Load track", "", "Tracks (*.csv *.json)")
        if path:
            self.load_track(path)

    def _save_track_dialog(self):
        if self.track is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save track", f"{self.track.name}.json", "Car track (*.json)")
        if path:
            self.save_track(path)

    # -- page interface --------------------------------------------------------------------------
    def file_filters(self) -> list[str]:
        return ["Car plan (*.json)", "Car track (*.csv *.json)"]

    def open_file(self, path: str) -> bool:
        p = Path(path)
        if p.suffix.lower() == ".csv":
            return self.load_track(path)
        if p.suffix.lower() == ".json":
            from engine.io import read_json

            try:
                kind = read_json(p).get("kind")
            except (ValueError, AttributeError):
                return False
            if kind == "car_plan":
                return self.load_plan(path)
            if kind == "car_track":
                return self.load_track(path)
        return False

    def session_state(self) -> dict:
        return {"plan": self.current_plan().to_dict(), "model": self.model_combo.currentData(),
                "track": self.track.to_dict() if self.track is not None else None}

    def restore_session_state(self, state: dict) -> None:
        if state.get("plan"):
            try:
                self.apply_plan(Plan.from_dict(state["plan"]))
            except ValueError:
                pass
        idx = self.model_combo.findData(state.get("model"))
        if idx >= 0:
            self.model_combo.setCurrentIndex(idx)

    def menu_actions(self) -> list[QAction]:
        return [self.undo_action, self.redo_action]

    def shutdown(self) -> None:
        self._timer.stop()
        self.model_panel.shutdown()
        for h in (self._job, self._drive):
            if h is not None:
                h.cancel()
