"""The Car planner's state, Qt-free: what the user has placed, chosen and computed.

:class:`CarPlannerState` holds the targets, the selection, their undo history, the planning
problem (horizon, start speed, weights, scenario), the plan being optimised and the finished
plan (a :class:`PlanResult`), the track and the MPC drive (an :class:`MPCResult`). Widgets
observe it (``state.connect(event, callback)``, plain Python callbacks) and forward the
user's gestures to its methods; tests drive it directly. Events:

``targets``   the target list changed (also its selection)
``selection`` only the selected target changed
``problem``   horizon, start speed, weights or scenario changed
``plan``      the plan result, the live iterate or the optimising flag changed
``track``     a new track
``drive``     the MPC drive started, advanced, ended
``history``   what undo / redo would do changed

A finished plan is shown only with the inputs that made it: :attr:`CarPlannerState.plan`
is ``None`` once the targets, horizon, start speed or weights differ from the plan's (undo
brings it back), and :attr:`can_play` says whether Play has a plan for the current inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from app.widgets.undo import Change, UndoHistory
from engine.car.costs import PlanWeights, Target
from engine.car.scenarios import SCENARIOS, Plan
from engine.systems.rc_car import CarParams

__all__ = ["CUSTOM", "EVENTS", "CarPlannerState", "LivePlan", "MPCResult", "PlanResult", "PlanVariant",
           "skid_marks"]

CUSTOM = "custom"
EVENTS = ("targets", "selection", "problem", "plan", "track", "drive", "history")
SKID_SLIP = 0.3          # slip (m/s) above which a wheel leaves a skid mark


# -- results ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlanVariant:
    """One model's optimised plan, executed open loop on the simulator."""

    label: str
    spec: str                      # "sim" or a model folder
    model: str                     # the model's display name
    converged: bool
    iterations: int
    seconds: float
    costs: np.ndarray              # (iterations + 1,)
    pose: np.ndarray               # (N + 1, 3) planned poses on the model
    controls: np.ndarray           # (N, 2)
    target_errors: list            # [{"step", "position_error", "heading_error"}]
    executed_pose: np.ndarray      # (N + 1, 3) on the simulator
    slip: np.ndarray               # (N, 4)
    executed_position_error: float
    executed_heading_error: float

    @property
    def final_cost(self) -> float:
        return float(self.costs[-1]) if len(self.costs) else float("nan")

    @classmethod
    def from_dict(cls, d: dict) -> PlanVariant:
        return cls(label=d["label"], spec=d["spec"], model=d["model"], converged=bool(d["converged"]),
                   iterations=int(d["iterations"]), seconds=float(d["seconds"]),
                   costs=np.asarray(d["costs"], dtype=float), pose=np.asarray(d["pose"]),
                   controls=np.asarray(d["controls"]), target_errors=list(d["target_errors"]),
                   executed_pose=np.asarray(d["executed_pose"]), slip=np.asarray(d["slip"]),
                   executed_position_error=float(d["executed_position_error"]),
                   executed_heading_error=float(d["executed_heading_error"]))


@dataclass(frozen=True)
class ComparedPlan:
    """An extra model's plan for the same problem, only drawn."""

    model: str
    pose: np.ndarray
    controls: np.ndarray


@dataclass(frozen=True)
class PlanResult:
    """The finished optimisation of :attr:`plan` (the inputs that made it) on one or more models."""

    plan: Plan
    variants: tuple[PlanVariant, ...]
    compare: ComparedPlan | None = None

    @property
    def main(self) -> PlanVariant:
        return self.variants[0]

    @property
    def compared(self) -> bool:
        """Planned on two models (ReLU and GELU) side by side."""
        return len(self.variants) > 1

    @classmethod
    def from_job(cls, plan: Plan, res: dict) -> PlanResult:
        """From the optimise job's dict (:func:`app.workspaces.car.jobs.optimise_job`)."""
        variants = tuple(PlanVariant.from_dict(v) for v in (res.get("variants") or [res]))
        c = res.get("compare")
        compare = ComparedPlan(c["model"], np.asarray(c["pose"]), np.asarray(c["controls"])) if c else None
        return cls(plan, variants, compare)


@dataclass(frozen=True)
class LivePlan:
    """The optimiser's latest iterate while a job runs (drawn, never played)."""

    variant: int
    label: str
    iteration: int
    costs: tuple[float, ...]
    pose: np.ndarray | None


@dataclass
class MPCResult:
    """An MPC drive on :attr:`track`: the cycles so far (``path`` (K, 2), ``speed`` (K, 2) of
    (t, m/s), the latest cycle's numbers) and, once it ended, the engine's result dict."""

    track: object
    path: list = field(default_factory=list)
    speed: list = field(default_factory=list)
    skid: list = field(default_factory=list)
    pose: tuple | None = None          # (x, y, yaw, steering) of the car now
    plan: np.ndarray | None = None     # the MPC's current plan (H + 1, 3)
    last_cycle: dict | None = None
    result: dict | None = None         # run_mpc's result plus achieved_hz, real_time, wall_seconds
    stopped: bool = False


def skid_marks(pose: np.ndarray, slip: np.ndarray, params: CarParams) -> np.ndarray:
    """Rear-wheel skid mark points (M, 2) of a drive: poses (K, 3) where the slip (K, 4)
    of the step before exceeds :data:`SKID_SLIP`."""
    pts = []
    for (x, y, yaw), s in zip(pose, slip):
        if np.max(s) > SKID_SLIP:
            pts.extend(_rear_wheels(x, y, yaw, params))
    return np.asarray(pts, dtype=float).reshape(-1, 2)


def _rear_wheels(x, y, yaw, params: CarParams):
    c, s = math.cos(yaw), math.sin(yaw)
    return [(x + c * px - s * py, y + s * px + c * py)
            for px, py in ((-params.wheelbase / 2, params.track_width / 2),
                           (-params.wheelbase / 2, -params.track_width / 2))]


# -- the state -----------------------------------------------------------------------------------
class CarPlannerState:
    """Targets, problem, plan and drive of the Car planner (see the module docstring)."""

    def __init__(self, params: CarParams = CarParams()):
        self.params = params
        self.targets: tuple[Target, ...] = ()
        self.selected = -1
        self.horizon = Plan().horizon
        self.start_speed = 0.0
        self.weights = PlanWeights()
        self.scenario = CUSTOM
        self.history = UndoHistory()
        self.result: PlanResult | None = None       # the last finished plan (maybe for other inputs)
        self.live: LivePlan | None = None
        self.optimising = False
        self.track = None
        self.drive: MPCResult | None = None
        self.driving = False
        self._observers: dict[str, list[Callable[[], None]]] = {e: [] for e in EVENTS}

    # -- observers ---------------------------------------------------------------------------
    def connect(self, event: str, callback: Callable[[], None]) -> None:
        if event not in self._observers:
            raise KeyError(f"no event {event!r}; one of {EVENTS}")
        self._observers[event].append(callback)

    def _emit(self, *events: str) -> None:
        for e in events:
            for cb in list(self._observers[e]):
                cb()

    # -- targets (undoable) --------------------------------------------------------------------
    def _apply_targets(self, targets) -> None:
        self.targets = tuple(targets)
        if self.selected >= len(self.targets):
            self.selected = len(self.targets) - 1
        self._emit("targets", "plan", "history")

    def set_targets(self, targets, text: str = "Edit targets") -> None:
        """Replace the target list as one undoable step."""
        targets = tuple(targets)
        if targets == self.targets:
            return
        self.history.push(Change(text, self.targets, targets))
        self._apply_targets(targets)

    def undo(self) -> None:
        change = self.history.undo()
        if change is not None:
            self._apply_targets(change.before)

    def redo(self) -> None:
        change = self.history.redo()
        if change is not None:
            self._apply_targets(change.after)

    def place_target(self, x: float, y: float, yaw: float) -> int:
        """A new target at (x, y) heading ``yaw``, half a horizon after the last one (capped at
        the horizon); selected; the problem becomes a custom one. Returns its index."""
        last = max((t.step for t in self.targets), default=0)
        step = min(self.horizon, last + max(1, self.horizon // 2))
        self.selected = len(self.targets)
        self._set_scenario(CUSTOM)
        self.set_targets(self.targets + (Target(step, x, y, yaw),), "Place target")
        return self.selected

    def move_target(self, index: int, x: float, y: float) -> None:
        self.edit_target(index, "Move target", x=x, y=y)

    def set_target_step(self, index: int, step: int) -> None:
        self.edit_target(index, "Edit target step", step=step)

    def edit_target(self, index: int, text: str = "Edit target", **values) -> None:
        """Change fields of target ``index`` (step clamped to 1..horizon, yaw in rad)."""
        if not 0 <= index < len(self.targets):
            return
        if "step" in values:
            values["step"] = int(min(max(1, round(values["step"])), self.horizon))
        after = list(self.targets)
        after[index] = replace(after[index], **values)
        self.set_targets(after, text)

    def delete_selected(self) -> None:
        if 0 <= self.selected < len(self.targets):
            self.set_targets([t for k, t in enumerate(self.targets) if k != self.selected], "Delete target")

    def select(self, index: int) -> None:
        index = int(index) if -1 <= index < len(self.targets) else -1
        if index != self.selected:
            self.selected = index
            self._emit("selection")

    # -- the problem ---------------------------------------------------------------------------
    def _set_scenario(self, name: str) -> None:
        if name != self.scenario:
            self.scenario = name
            self._emit("problem")

    def set_horizon(self, horizon: int) -> None:
        if int(horizon) != self.horizon:
            self.horizon = int(horizon)
            self._emit("problem", "plan")

    def set_start_speed(self, speed: float) -> None:
        if float(speed) != self.start_speed:
            self.start_speed = float(speed)
            self._emit("problem", "plan")

    def set_weights(self, weights: PlanWeights) -> None:
        if weights != self.weights:
            self.weights = weights
            self._emit("problem", "plan")

    def load_scenario(self, name: str) -> None:
        """One of the shipped scenarios (:data:`engine.car.scenarios.SCENARIOS`)."""
        if name not in SCENARIOS:
            raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}")
        self.apply_plan(SCENARIOS[name], scenario=name)

    def apply_plan(self, plan: Plan, scenario: str = CUSTOM) -> None:
        """Take horizon, start speed, weights and targets from ``plan``; the previous plan
        result, the live iterate and its skid marks go (they belong to the old problem)."""
        self.horizon = plan.horizon
        self.start_speed = float(plan.start_velocity[0])
        self.weights = plan.weights
        self.scenario = scenario
        self.result = None
        self.live = None
        self._emit("problem")
        self.set_targets(plan.targets, f"Load {plan.name}")
        self._emit("plan")

    def current_plan(self) -> Plan:
        targets = tuple(replace(t, step=min(t.step, self.horizon)) for t in self.targets)
        return Plan(name=self.scenario, horizon=self.horizon, start_velocity=(self.start_speed, 0.0, 0.0),
                    targets=targets, weights=self.weights)

    # -- optimisation ----------------------------------------------------------------------------
    @property
    def plan(self) -> PlanResult | None:
        """The finished plan for the current inputs, or None (none yet, or the inputs changed)."""
        r = self.result
        if r is None or self.optimising:
            return None
        return r if _same_problem(r.plan, self.current_plan()) else None

    @property
    def can_play(self) -> bool:
        return self.plan is not None

    def begin_optimise(self) -> Plan:
        """Start an optimisation of the current plan: the old result and iterate go. Returns the plan."""
        if not self.targets:
            raise ValueError("Place at least one target first (click and drag on the canvas).")
        plan = self.current_plan()
        self.result = None
        self.live = None
        self.optimising = True
        self._emit("plan")
        return plan

    def update_live(self, live: dict) -> None:
        """The optimiser's latest iterate (the dict the optimise job publishes)."""
        if not self.optimising:
            return
        pose = live.get("pose")
        self.live = LivePlan(int(live.get("variant", 0)), str(live.get("label", "")), int(live["iteration"]),
                             tuple(live["costs"]), None if pose is None else np.asarray(pose))
        self._emit("plan")

    def finish_optimise(self, result: PlanResult) -> None:
        self.result = result
        self.live = None
        self.optimising = False
        self._emit("plan")

    def end_optimise(self) -> None:
        """The job ended (cancelled, failed or done): a partial iterate is not a plan."""
        if self.optimising or self.live is not None:
            self.optimising = False
            self.live = None
            self._emit("plan")

    # -- track and MPC ---------------------------------------------------------------------------
    def set_track(self, track) -> None:
        self.track = track
        self.drive = None
        self._emit("track", "drive")

    def begin_drive(self) -> MPCResult:
        if self.track is None:
            raise ValueError("Choose or draw a track first.")
        self.drive = MPCResult(self.track)
        self.driving = True
        self._emit("drive")
        return self.drive

    def add_cycles(self, cycles: list[dict]) -> None:
        """MPC cycles as the drive job publishes them (pose, u, slip, plan, time, speed...)."""
        d = self.drive
        if d is None or not cycles:
            return
        for info in cycles:
            x, y, yaw = info["pose"]
            d.path.append((x, y))
            d.speed.append((info["time"], info["speed"]))
            if max(info["slip"]) > SKID_SLIP:
                d.skid.extend(_rear_wheels(x, y, yaw, self.params))
        info = cycles[-1]
        x, y, yaw = info["pose"]
        d.pose = (x, y, yaw, info["u"][1])
        d.plan = np.asarray(info["plan"])
        d.last_cycle = info
        self._emit("drive")

    def finish_drive(self, result: dict) -> None:
        d = self.drive if self.drive is not None else MPCResult(self.track)
        P = np.asarray(result["pose"])
        d.path = [tuple(p[:2]) for p in P]
        d.speed = [(i * self.params.dt, float(s)) for i, s in enumerate(result["speed"])]
        d.pose = (*P[-1], 0.0)
        d.plan = None
        d.result = result
        self.drive = d
        self._emit("drive")

    def end_drive(self, stopped: bool = False) -> None:
        self.driving = False
        if self.drive is not None and stopped:
            self.drive.stopped = True
        self._emit("drive")

    # -- files and sessions -----------------------------------------------------------------------
    def save_plan(self, path: str) -> None:
        """The plan as JSON (atomic), with the optimised controls when a plan for these inputs exists."""
        import torch

        from engine.car.scenarios import save_plan

        p = self.plan
        controls = None if p is None else torch.as_tensor(p.main.controls)
        save_plan(path, self.current_plan(), controls)

    def load_plan(self, path: str) -> None:
        from engine.car.scenarios import load_plan

        plan, _ = load_plan(path)
        self.apply_plan(plan, scenario=plan.name if plan.name in SCENARIOS else CUSTOM)

    def load_track(self, path_or_name) -> None:
        from engine.car.tracks import load_track

        self.set_track(load_track(path_or_name))

    def save_track(self, path: str) -> None:
        from engine.car.tracks import save_track

        if self.track is None:
            raise ValueError("no track to save: choose or draw one first")
        save_track(path, self.track)

    def session_state(self, model: str | None = None) -> dict:
        return {"plan": self.current_plan().to_dict(), "model": model,
                "track": self.track.to_dict() if self.track is not None else None}

    def restore_session(self, data: dict) -> list[str]:
        """Restore what a session saved; returns the parts that could not be read (by name).

        The plan and the track pass the same checks as plan and track files (sizes, ranges,
        a simple closed track) before anything is applied; a part that fails is skipped whole
        (never clamped into a different problem) and the other part is restored."""
        if not isinstance(data, dict):
            return ["the car planner's part (not a JSON object)"]
        problems = []
        if data.get("plan"):
            try:
                plan = Plan.from_dict(data["plan"], source="plan")
            except ValueError as exc:
                problems.append(str(exc))
            else:
                self.apply_plan(plan, scenario=plan.name if plan.name in SCENARIOS else CUSTOM)
        if data.get("track"):
            from engine.car.tracks import Track

            try:
                track = Track.from_dict(data["track"], source="track")
            except ValueError as exc:
                problems.append(str(exc))
            else:
                self.set_track(track)
        return problems


def _same_problem(a: Plan, b: Plan) -> bool:
    """Same targets, horizon, start velocity and weights (the name does not matter)."""
    return (a.horizon, tuple(a.start_velocity), tuple(a.targets), a.weights) == \
        (b.horizon, tuple(b.start_velocity), tuple(b.targets), b.weights)


def file_kind(path: str | Path) -> str | None:
    """``"plan"``, ``"track"`` or None: what a file the user opens holds (CSV files are tracks)."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return "track"
    if p.suffix.lower() != ".json":
        return None
    from engine.io import read_json

    try:
        kind = read_json(p).get("kind")
    except (ValueError, OSError, AttributeError):
        return None
    return {"car_plan": "plan", "car_track": "track"}.get(kind)
