"""The paper's three offline scenarios, plans as data, and open-loop execution on the simulator.

A :class:`Plan` is a start state, a horizon, target poses at chosen steps and cost weights; it
is saved and loaded as JSON. :func:`plan_trajectory` optimises it on any dynamics model;
:func:`execute_open_loop` plays the optimised controls on the simulator and reports the
end-position and heading errors (the paper's Table I).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import torch

from engine import io
from engine.car.costs import MAX_COORDINATE, PlanError, PlanWeights, Target, TargetCost
from engine.car.evaluators import make_evaluator
from engine.car.optimiser import OptimiserConfig, OptimiseResult, optimise
from engine.systems.rc_car import CarParams, simulate
from engine.validation import (
    InputError,
    check_allocation,
    check_file_size,
    check_finite,
    check_int,
    check_range,
)

__all__ = [
    "MAX_HORIZON",
    "MAX_PLAN_FILE_BYTES",
    "MAX_START_SPEED",
    "MAX_TARGETS",
    "MIN_HORIZON",
    "SCENARIOS",
    "Plan",
    "PlanOutcome",
    "check_plan_memory",
    "execute_open_loop",
    "load_plan",
    "plan_trajectory",
    "save_plan",
    "scenario",
]


# The limits of a plan, one source for plan files, sessions, the CLI and the app's form (its
# horizon and start-speed controls take their ranges from here). The optimiser's Gauss-Newton
# system is (2 horizon)^2 and the line search rolls out candidates x horizon steps, so the
# horizon bounds memory and time; a file is refused by its size before it is parsed.
MIN_HORIZON = 1
MAX_HORIZON = 1000             # steps (50 s at the car's 20 Hz)
MAX_TARGETS = 1000
MAX_START_SPEED = 20.0         # m/s (and rad/s for the yaw rate), each start-velocity component
MAX_NAME_LENGTH = 200          # characters
MAX_PLAN_FILE_BYTES = 10 << 20


@dataclass(frozen=True)
class Plan:
    """A trajectory-optimisation problem. Poses in m / rad, velocities in the body frame."""

    name: str = "plan"
    horizon: int = 40
    start_pose: tuple[float, float, float] = (0.0, 0.0, 0.0)
    start_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    targets: tuple[Target, ...] = ()
    weights: PlanWeights = PlanWeights()

    def __post_init__(self):
        try:
            self.check()
        except InputError as exc:
            raise PlanError(str(exc)) from None

    def check(self) -> None:
        """Every range check of a plan (:class:`~engine.validation.InputError` naming the field);
        the same for a plan file, a session, the CLI and the app's form."""
        who = f"plan {str(self.name)[:40]!r}"
        if not isinstance(self.name, str) or len(self.name) > MAX_NAME_LENGTH:
            raise InputError(f"must be text of at most {MAX_NAME_LENGTH} characters", owner=who, field="name")
        check_int(who, "horizon", self.horizon, MIN_HORIZON, MAX_HORIZON, hint="steps of 0.05 s")
        for field_name, values, unit, bound in (
            ("start_pose", self.start_pose, "m", MAX_COORDINATE),
            ("start_velocity", self.start_velocity, "m/s", MAX_START_SPEED),
        ):
            if len(values) != 3:
                raise InputError(f"expected 3 numbers, got {len(values)}", owner=who, field=field_name)
            for v in values:
                check_range(who, field_name, v, -bound, bound, unit=unit)
        if len(self.targets) > MAX_TARGETS:
            raise InputError(f"{len(self.targets)} targets, at most {MAX_TARGETS} are allowed",
                             owner=who, field="targets")
        for t in self.targets:
            if not (1 <= t.step <= self.horizon):
                raise InputError(f"target step {t.step} outside 1..{self.horizon} (the horizon)",
                                 owner=who, field="targets")

    def to_dict(self) -> dict:
        return {"name": self.name, "horizon": self.horizon, "start_pose": list(self.start_pose),
                "start_velocity": list(self.start_velocity),
                "targets": [t.to_dict() for t in self.targets], "weights": self.weights.to_dict()}

    @classmethod
    def from_dict(cls, data: dict, source: str = "plan") -> Plan:
        """A plan from its JSON object; :class:`PlanError` starting with ``source`` otherwise.
        Sizes are checked before anything is built from them."""
        if not isinstance(data, dict):
            raise PlanError(f"{source}: expected a JSON object")
        try:
            if "horizon" not in data:
                raise PlanError("missing field 'horizon'")
            horizon = check_int("plan", "horizon", data["horizon"], MIN_HORIZON, MAX_HORIZON,
                                hint="steps of 0.05 s")
            targets = data.get("targets", [])
            if not isinstance(targets, list):
                raise PlanError("field 'targets' must be a list of objects")
            if len(targets) > MAX_TARGETS:
                raise PlanError(
                    f"field 'targets' has {len(targets)} targets, at most {MAX_TARGETS} are allowed"
                )
            weights = data.get("weights", {})
            return cls(name=_text(data.get("name", "plan")), horizon=horizon,
                       start_pose=_triple(data, "start_pose"), start_velocity=_triple(data, "start_velocity"),
                       targets=tuple(Target.from_dict(t) for t in targets),
                       weights=PlanWeights.from_dict(weights))
        except (TypeError, ValueError) as exc:
            raise PlanError(f"{source}: {exc}") from None

    def with_(self, **changes) -> Plan:
        return replace(self, **changes)


def _text(value) -> str:
    if not isinstance(value, str):
        raise PlanError(f"field 'name' must be text, got {str(value)[:40]!r}")
    return value


def _triple(data: dict, key: str) -> tuple[float, float, float]:
    value = data.get(key, (0.0, 0.0, 0.0))
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise PlanError(f"field {key!r} must be a list of 3 numbers, got {str(value)[:60]}")
    return cast("tuple[float, float, float]", tuple(check_finite("plan", key, v) for v in value))


SCENARIOS: dict[str, Plan] = {
    "parallel-parking": Plan(
        "parallel-parking", 40, (0.0, 0.0, 0.0), (1.5, 0.0, 0.0),
        (Target(18, 1.6, 0.0, 0.0), Target(40, 0.7, 0.45, 0.0))),
    "dynamic-reverse": Plan(
        "dynamic-reverse", 40, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
        (Target(20, -1.2, 0.0, 0.0), Target(40, -1.6, 0.8, math.pi))),
    "drifting-turn": Plan(
        "drifting-turn", 60, (0.0, 0.0, 0.0), (2.5, 0.0, 0.0),
        (Target(25, 2.4, 1.0, math.pi / 2), Target(60, 0.0, 2.0, math.pi))),
}


def scenario(name: str) -> Plan:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise PlanError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}") from None


@dataclass
class PlanOutcome:
    result: OptimiseResult
    controls: torch.Tensor            # physical controls (N, 2): throttle m/s^2, steering rad
    target_errors: list = field(default_factory=list)


BYTES_PER_CANDIDATE_STEP = 1024   # measured: ~0.6-0.9 KB per candidate and step (learned model, line search)


def check_plan_memory(
    plan: Plan, config: OptimiserConfig = OptimiserConfig(), *, allow: bool = False
) -> float:
    """Refuse (:class:`~engine.validation.InputError`) an optimisation whose line search would
    need more than the memory budget: ``candidates x (horizon + 1)`` rollout steps at once.
    Returns the estimate in bytes. Called by :func:`plan_trajectory`, and by the CLI and the app
    before any model is loaded."""
    return check_allocation(f"optimising plan {plan.name[:40]!r} ({config.candidates} candidates x "
                            f"{plan.horizon} steps per line search)", config.candidates * (plan.horizon + 1),
                            BYTES_PER_CANDIDATE_STEP, allow=allow, field="horizon",
                            hint="lower the horizon or the number of candidates (--candidates)")


def plan_trajectory(plan: Plan, dynamics, params: CarParams = CarParams(),
                    config: OptimiserConfig = OptimiserConfig(), ctx=None, on_iteration=None,
                    initial_controls: torch.Tensor | None = None, fast: bool = True) -> PlanOutcome:
    """Optimise ``plan`` on ``dynamics`` (learned or simulator). ``initial_controls`` (N, 2)
    physical; default zeros."""
    if not plan.targets:
        raise PlanError(f"plan {plan.name!r}: place at least one target")
    check_plan_memory(plan, config)
    u_scale = torch.tensor([params.max_throttle, params.max_steering])
    cost = TargetCost(list(plan.targets), plan.weights, plan.horizon)
    ev = make_evaluator(dynamics, torch.tensor(plan.start_pose), torch.tensor(plan.start_velocity),
                        cost, plan.weights, u_scale, fast=fast)
    W0 = torch.zeros(plan.horizon, 2) if initial_controls is None else initial_controls.float() / u_scale
    res = optimise(ev, W0, config, ctx=ctx, on_iteration=on_iteration)
    return PlanOutcome(res, res.controls * u_scale, cost.errors(cast(torch.Tensor, res.pose)))


def execute_open_loop(plan: Plan, controls: torch.Tensor, params: CarParams = CarParams()) -> dict:
    """Play ``controls`` (N, 2) on the simulator from the plan's start; end errors vs the last target.

    Returns ``pose`` (N+1, 3), ``v`` (N+1, 3), ``slip`` (N, 4) tensors and the floats
    ``position_error`` (m), ``heading_error`` (rad) and per-target ``target_errors``.
    """
    out = simulate(torch.tensor(plan.start_pose, dtype=torch.float64),
                   torch.tensor(plan.start_velocity, dtype=torch.float64),
                   controls.detach().double(), params)
    P = out["pose"].float()
    last = max(plan.targets, key=lambda t: t.step)
    errors = TargetCost(list(plan.targets), plan.weights, plan.horizon).errors(P)
    end = [e for e in errors if e["step"] == last.step][0]
    return {"pose": P, "v": out["v"].float(), "slip": out["slip"].float(),
            "position_error": end["position_error"], "heading_error": end["heading_error"],
            "target_errors": errors}


def save_plan(
    path: str | Path, plan: Plan, controls: torch.Tensor | None = None, extra: dict | None = None
) -> Path:
    data = {"kind": "car_plan", **plan.to_dict()}
    if controls is not None:
        data["controls"] = controls.detach().tolist()
    if extra:
        data.update(extra)
    return io.write_json(path, data)


def load_plan(path: str | Path) -> tuple[Plan, torch.Tensor | None]:
    """A plan file (JSON, as :func:`save_plan` writes it): the plan and its saved controls (N, 2)
    or None. :class:`PlanError` (or another ``ValueError``) naming the file and field otherwise;
    a file over :data:`MAX_PLAN_FILE_BYTES` is refused before it is read."""
    try:
        check_file_size(path, MAX_PLAN_FILE_BYTES, "a car plan")
    except InputError as exc:
        raise PlanError(str(exc)) from None
    data = io.read_json(path)
    if not isinstance(data, dict) or data.get("kind", "car_plan") != "car_plan":
        raise PlanError(f"{path}: not a car plan (field 'kind')")
    plan = Plan.from_dict(data, source=str(path))
    controls = None
    if "controls" in data:
        if not isinstance(data["controls"], list) or len(data["controls"]) != plan.horizon:
            raise PlanError(
                f"{path}: field 'controls' must be a list of {plan.horizon} [throttle, steering] pairs"
            )
        try:
            controls = torch.tensor(data["controls"], dtype=torch.float32)
        except (TypeError, ValueError) as exc:
            raise PlanError(
                f"{path}: field 'controls' is not a list of [throttle, steering] ({exc})"
            ) from None
        if controls.shape != (plan.horizon, 2):
            raise PlanError(
                f"{path}: field 'controls' has shape {tuple(controls.shape)}, expected ({plan.horizon}, 2)"
            )
    return plan, controls
