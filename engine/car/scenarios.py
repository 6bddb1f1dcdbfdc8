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

import torch

from engine import io
from engine.car.costs import PlanError, PlanWeights, Target, TargetCost
from engine.car.evaluators import make_evaluator
from engine.car.optimiser import OptimiserConfig, OptimiseResult, optimise
from engine.systems.rc_car import CarParams, simulate

__all__ = [
    "SCENARIOS",
    "Plan",
    "PlanOutcome",
    "execute_open_loop",
    "load_plan",
    "plan_trajectory",
    "save_plan",
    "scenario",
]


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
        if int(self.horizon) < 1:
            raise PlanError(f"plan {self.name!r}: horizon must be at least 1")
        for t in self.targets:
            if not (1 <= t.step <= self.horizon):
                raise PlanError(f"plan {self.name!r}: target step {t.step} outside 1..{self.horizon}")

    def to_dict(self) -> dict:
        return {"name": self.name, "horizon": self.horizon, "start_pose": list(self.start_pose),
                "start_velocity": list(self.start_velocity),
                "targets": [t.to_dict() for t in self.targets], "weights": self.weights.to_dict()}

    @classmethod
    def from_dict(cls, data: dict, source: str = "plan") -> Plan:
        if not isinstance(data, dict):
            raise PlanError(f"{source}: expected a JSON object")
        try:
            return cls(name=str(data.get("name", "plan")), horizon=int(data["horizon"]),
                       start_pose=tuple(float(x) for x in data.get("start_pose", (0, 0, 0))),
                       start_velocity=tuple(float(x) for x in data.get("start_velocity", (0, 0, 0))),
                       targets=tuple(Target.from_dict(t) for t in data.get("targets", [])),
                       weights=PlanWeights.from_dict(data.get("weights", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanError(f"{source}: {exc}") from None

    def with_(self, **changes) -> Plan:
        return replace(self, **changes)


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


def plan_trajectory(plan: Plan, dynamics, params: CarParams = CarParams(),
                    config: OptimiserConfig = OptimiserConfig(), ctx=None, on_iteration=None,
                    initial_controls: torch.Tensor | None = None, fast: bool = True) -> PlanOutcome:
    """Optimise ``plan`` on ``dynamics`` (learned or simulator). ``initial_controls`` (N, 2)
    physical; default zeros."""
    if not plan.targets:
        raise PlanError(f"plan {plan.name!r}: place at least one target")
    u_scale = torch.tensor([params.max_throttle, params.max_steering])
    cost = TargetCost(list(plan.targets), plan.weights, plan.horizon)
    ev = make_evaluator(dynamics, torch.tensor(plan.start_pose), torch.tensor(plan.start_velocity),
                        cost, plan.weights, u_scale, fast=fast)
    W0 = torch.zeros(plan.horizon, 2) if initial_controls is None else initial_controls.float() / u_scale
    res = optimise(ev, W0, config, ctx=ctx, on_iteration=on_iteration)
    return PlanOutcome(res, res.controls * u_scale, cost.errors(res.pose))


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


def save_plan(path: str | Path, plan: Plan, controls: torch.Tensor | None = None, extra: dict | None = None) -> Path:
    data = {"kind": "car_plan", **plan.to_dict()}
    if controls is not None:
        data["controls"] = controls.detach().tolist()
    if extra:
        data.update(extra)
    return io.write_json(path, data)


def load_plan(path: str | Path) -> tuple[Plan, torch.Tensor | None]:
    data = io.read_json(path)
    if not isinstance(data, dict) or data.get("kind", "car_plan") != "car_plan":
        raise PlanError(f"{path}: not a car plan (field 'kind')")
    plan = Plan.from_dict(data, source=str(path))
    controls = None
    if "controls" in data:
        try:
            controls = torch.tensor(data["controls"], dtype=torch.float32)
        except (TypeError, ValueError) as exc:
            raise PlanError(f"{path}: field 'controls' is not a list of [throttle, steering] ({exc})") from None
        if controls.shape != (plan.horizon, 2):
            raise PlanError(f"{path}: field 'controls' has shape {tuple(controls.shape)}, expected ({plan.horizon}, 2)")
    return plan, controls
