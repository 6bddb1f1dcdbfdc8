"""The Car planner workspace: draw target poses, optimise a trajectory on a learned model (or
the simulator), play it on the simulator, and drive a race track with MPC.

All computation is in ``engine.planning``; this page only collects inputs, submits jobs
(``ctx.jobs.submit``) and draws. A running job hands its latest iterate to the page through
a :class:`_Latest` slot, read when the (throttled) progress signal arrives.
"""

from __future__ import annotations

import math
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
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

from app.widgets.undo import add_undo_redo_actions
from app.widgets.forms import DataclassForm
from app.widgets.plots import make_plot
from app.workspaces.car.canvas import CarCanvas
from engine.planning.costs import PlanWeights, Target
from engine.planning.mpc import MPCConfig
from engine.planning.optimiser import OptimiserConfig
from engine.planning.scenarios import SCENARIOS, Plan
from engine.systems.rc_car import CarParams

__all__ = ["CarPlannerPage"]

SIM = "sim"


class _Latest:
    """A thread-safe slot for the newest value a job produced."""

    def __init__(self):
        self._lock = threading.Lock()
        self._value = None

    def set(self, value):
        with self._lock:
            self._value = value

    def take(self):
        with self._lock:
            value, self._value = self._value, None
        return value


class _TargetsCommand(QUndoCommand):
    """Replace the target list (add, move, delete, edit step): undo restores the old list."""

    def __init__(self, page, before, after, text):
        super().__init__(text)
        self.page, self.before, self.after = page, list(before), list(after)

    def redo(self):
        self.page._set_targets(self.after)

    def undo(self):
        self.page._set_targets(self.before)


def _optimise_job(plan: Plan, spec: str, compare: str | None, params: CarParams, cfg: OptimiserConfig,
                  live: _Latest):
    def job(ctx):
        from engine.planning.dynamics import load_dynamics
        from engine.planning.scenarios import execute_open_loop, plan_trajectory

        dyn = load_dynamics(spec, params)
        costs = []

        def on_iteration(i, cost, W, traj):
            costs.append(cost)
            live.set({"iteration": i, "costs": list(costs),
                      "pose": None if traj is None or traj[0] is None else traj[0].numpy().copy()})

        out = plan_trajectory(plan, dyn, params, cfg, ctx=ctx, on_iteration=on_iteration)
        ex = execute_open_loop(plan, out.controls, params)
        result = {"model": dyn.name, "converged": out.result.converged, "iterations": out.result.iterations,
                  "seconds": out.result.seconds, "costs": out.result.costs, "pose": out.result.pose.numpy(),
                  "controls": out.controls.numpy(), "target_errors": out.target_errors,
                  "executed_pose": ex["pose"].numpy(), "slip": ex["slip"].numpy(),
                  "executed_position_error": ex["position_error"],
                  "executed_heading_error": ex["heading_error"], "compare": None}
        if compare:
            other = load_dynamics(compare, params)
            o = plan_trajectory(plan, other, params, cfg, ctx=ctx)
            result["compare"] = {"model": other.name, "pose": o.result.pose.numpy(),
                                 "controls": o.controls.numpy()}
        return result
    return job


def _drive_job(track, spec: str, params: CarParams, cfg: MPCConfig, laps: int, live: _Latest):
    def job(ctx):
        from engine.planning.dynamics import load_dynamics
        from engine.planning.mpc import run_mpc

        dyn = load_dynamics(spec, params)
        return run_mpc(track, dyn, params, cfg, laps=laps, ctx=ctx, on_cycle=live.set)
    return job


def _train_job(out_dir: str):
    from engine.planning.training import TrainConfig, train_job

    inner = train_job(TrainConfig(), out_dir)

    def job(ctx):
        res = inner(ctx)
        res.pop("model", None)
        return res
    return job


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
        self._live = _Latest()
        self._drive_live = _Latest()
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
        self.cost_curve = self.cost_plot.plot(pen=pg.mkPen("#ff8c00", width=2))
        self.throttle_plot = make_plot("Throttle", "step", "m/s²")
        self.steer_plot = make_plot("Steering", "step", "rad")
        self.speed_plot = make_plot("Speed", "s", "m/s", legend=False)
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
        self.tabs.addTab(self._track_tab(), "Track")
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
        row = QHBoxLayout()
        self.train_button = QPushButton("Train model")
        self.train_button.clicked.connect(self.train_model)
        add = QPushButton("Add model folder…")
        add.clicked.connect(self._add_model_folder)
        row.addWidget(self.train_button)
        row.addWidget(add)
        form.addRow("Plan on", self.model_combo)
        form.addRow("Compare with", self.compare_combo)
        form.addRow(row)
        lay.addWidget(box)

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
                                      choices={"direction": ["conjugate", "gradient"]})
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
                                                          "w_progress", "w_track", "margin"])
        lay.addWidget(self.mpc_form)
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
        lay.addStretch(1)
        return w

    # -- models ----------------------------------------------------------------------------
    def models_dir(self) -> Path:
        default = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)) / "car_models"
        return Path(str(self.ctx.settings.value("car/models_dir", str(default))))

    def _refresh_models(self, select: str | None = None):
        extra = [str(p) for p in (self.ctx.settings.value("car/extra_models", []) or []) if p]
        found = []
        root = self.models_dir()
        if root.is_dir():
            found = sorted(str(p.parent) for p in root.glob("*/car_model.json"))
        for combo, first in ((self.model_combo, ("Simulator (reference)", SIM)), (self.compare_combo, ("(none)", ""))):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(*first)
            if combo is self.compare_combo:
                combo.addItem("Simulator (reference)", SIM)
            for path in dict.fromkeys(found + extra):
                combo.addItem(Path(path).name, path)
            target = select if (select and combo is self.model_combo) else current
            idx = combo.findData(target)
            combo.setCurrentIndex(max(0, idx))
            combo.blockSignals(False)

    def _add_model_folder(self):
        path = QFileDialog.getExistingDirectory(self, "Folder with car_model.json")
        if path:
            self.add_model(path)

    def add_model(self, path: str):
        if not (Path(path) / "car_model.json").exists():
            self.ctx.show_error("Car model", f"{path}: no car_model.json in this folder")
            return
        extra = [p for p in (self.ctx.settings.value("car/extra_models", []) or []) if p]
        if path not in extra:
            extra.append(path)
        self.ctx.settings.setValue("car/extra_models", extra)
        self._refresh_models(select=path)

    def train_model(self):
        from datetime import datetime

        out = self.models_dir() / datetime.now().strftime("car-%Y%m%d-%H%M%S")
        self.train_button.setEnabled(False)
        self.status.setText("Training the car model (15 minutes of simulated driving)…")

        def done(res):
            self.train_button.setEnabled(True)
            self.status.setText(f"Model trained: loss {res['initial_loss']:.3f} → {res['train_loss']:.3f}, "
                                f"TVE {res['tve']:.2f}; saved in {res['model_dir']}")
            self._refresh_models(select=res["model_dir"])

        def failed(msg, tb):
            self.train_button.setEnabled(True)
            self.status.setText(f"Training failed: {msg}")

        self.ctx.jobs.submit(_train_job(str(out)), name="Train car model", on_result=done, on_error=failed,
                             on_progress=lambda u: self.status.setText(f"Training: {u.message}"),
                             on_cancelled=lambda: self.train_button.setEnabled(True))

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
        self.canvas.nominal.setData([], [])
        self.canvas.executed.setData([], [])

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
        spec = self.model_combo.currentData() or SIM
        compare = self.compare_combo.currentData() or None
        self._costs = []
        self.cost_curve.setData([], [])
        self.canvas.executed.setData([], [])
        self.canvas.compare.setData([], [])
        self.optimise_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.setText(f"Optimising on {self.model_combo.currentText()}…")
        self._job = self.ctx.jobs.submit(_optimise_job(plan, spec, compare, self.params, cfg, self._live),
                                         name="Optimise car trajectory", on_result=self._on_optimised,
                                         on_error=self._on_job_failed, on_progress=self._on_opt_progress,
                                         on_cancelled=self._on_cancelled)
        self._job.ended.connect(self._on_job_ended)

    def _on_opt_progress(self, update):
        live = self._live.take()
        if live is None:
            return
        costs = live["costs"]
        self.cost_curve.setData(np.arange(1, len(costs) + 1), np.maximum(np.asarray(costs), 1e-12))
        if live["pose"] is not None:
            P = live["pose"]
            self.canvas.nominal.setData(P[:, 0], P[:, 1])
        self.status.setText(f"Iteration {live['iteration']}: cost {costs[-1]:.4g}")

    def _on_optimised(self, res: dict):
        self.result = res
        P = res["pose"]
        self.canvas.nominal.setData(P[:, 0], P[:, 1])
        E = res["executed_pose"]
        self.canvas.executed.setData(E[:, 0], E[:, 1])
        costs = np.asarray(res["costs"])
        self.cost_curve.setData(np.arange(len(costs)), np.maximum(costs, 1e-12))
        steps = np.arange(len(res["controls"]))
        self.throttle_curves["plan"].setData(steps, res["controls"][:, 0])
        self.steer_curves["plan"].setData(steps, res["controls"][:, 1])
        if res.get("compare"):
            C = res["compare"]["pose"]
            self.canvas.compare.setData(C[:, 0], C[:, 1])
            self.throttle_curves["other model"].setData(steps, res["compare"]["controls"][:, 0])
            self.steer_curves["other model"].setData(steps, res["compare"]["controls"][:, 1])
        else:
            for d in (self.throttle_curves, self.steer_curves):
                d["other model"].setData([], [])
        errs = ", ".join(f"step {e['step']}: {e['position_error']:.2f} m / {e['heading_error']:.2f} rad"
                         for e in res["target_errors"])
        self.status.setText(
            f"{'Converged' if res['converged'] else 'Stopped'} after {res['iterations']} iterations "
            f"({res['seconds']:.2f} s) on {res['model']}. Targets: {errs}. Executed on the simulator: "
            f"{res['executed_position_error']:.2f} m, {res['executed_heading_error']:.2f} rad.")
        self.play_button.setEnabled(True)

    def _on_job_failed(self, message, tb):
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
        left, right = self.track.edges()
        self.canvas.set_track(left, right, self.track.centre)
        x, y, yaw = self.track.start_pose()
        self.canvas.set_car(x, y, yaw)
        self.canvas.getPlotItem().autoRange()
        self.status.setText(f"Track {self.track.name}: {self.track.length:.1f} m, {self.track.width:.2f} m wide.")
        return True

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
        left, right = track.edges()
        self.canvas.set_track(left, right, track.centre)
        x, y, yaw = track.start_pose()
        self.canvas.set_car(x, y, yaw)
        self.status.setText(f"Drawn track: {track.length:.1f} m. Press Drive.")
        return True

    def drive(self):
        if self.track is None:
            if not self.track_combo.count() or not self.load_track(self.track_combo.currentData()):
                return
        if self._drive is not None:
            return
        try:
            cfg = self.mpc_form.value()
        except ValueError as exc:
            self.ctx.show_error("MPC", str(exc))
            return
        spec = self.model_combo.currentData() or SIM
        self._drive_path = []
        self._drive_speed = []
        self._skid_points = []
        self.canvas.skid.setData([], [])
        self.drive_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.lap_label.setText("Lap time: driving…")
        self._drive = self.ctx.jobs.submit(_drive_job(self.track, spec, self.params, cfg, self.laps_spin.value(),
                                                      self._drive_live), name="MPC laps",
                                           on_result=self._on_driven, on_error=self._on_job_failed,
                                           on_progress=self._on_drive_progress)
        self._drive.ended.connect(self._on_drive_ended)

    def _on_drive_progress(self, update):
        info = self._drive_live.take()
        if info is None:
            return
        x, y, yaw = info["pose"]
        self.canvas.set_car(x, y, yaw, info["u"][1])
        self._drive_path.append((x, y))
        self._drive_speed.append((info["time"], info["speed"]))
        path = np.asarray(self._drive_path)
        self.canvas.executed.setData(path[:, 0], path[:, 1])
        plan = np.asarray(info["plan"])
        self.canvas.mpc_plan.setData(plan[:, 0], plan[:, 1])
        if max(info["slip"]) > 0.3:
            self._add_skid(x, y, yaw)
        sp = np.asarray(self._drive_speed)
        self.speed_curve.setData(sp[:, 0], sp[:, 1])
        self.status.setText(f"t = {info['time']:.1f} s, {info['speed']:.2f} m/s, off centre {info['deviation']:.2f} m")

    def _on_driven(self, res: dict):
        P = np.asarray(res["pose"])
        self.canvas.executed.setData(P[:, 0], P[:, 1])
        self.canvas.mpc_plan.setData([], [])
        x, y, yaw = P[-1]
        self.canvas.set_car(x, y, yaw)
        t = np.arange(len(res["speed"])) * self.params.dt
        self.speed_curve.setData(t, np.asarray(res["speed"]))
        lap = f"{res['lap_time']:.2f} s" if res["lap_time"] else "not completed"
        self.lap_label.setText(f"Lap time: {lap}")
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
    def save_plan(self, path: str):
        import torch

        from engine.planning.scenarios import save_plan

        controls = None if not self.result else torch.as_tensor(self.result["controls"])
        if controls is not None and controls.shape[0] != self.horizon_spin.value():
            controls = None
        save_plan(path, self.current_plan(), controls)
        self.ctx.add_recent_file(path)

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
        from engine.planning.tracks import save_track

        if self.track is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save track", f"{self.track.name}.json", "Car track (*.json)")
        if path:
            save_track(path, self.track)

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
        for h in (self._job, self._drive):
            if h is not None:
                h.cancel()
