"""Costs of a car trajectory (Köhler et al., Eqs. 4-6), batched over candidates.

Controls are optimised in *normalised* units ``w = u / u_scale`` (throttle / max_throttle,
steering / max_steering) so both channels live in [-1, 1]; the regulariser and the soft bounds
act on ``w``. Shapes: poses and velocities (B, N+1, 3) (index 0 is the start), normalised
controls (B, N, 2); every cost returns (B,).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from engine.io import dataclass_from_dict
from engine.validation import InputError, check_finite, check_int, check_range

__all__ = [
    "MAX_COORDINATE",
    "MAX_WEIGHT",
    "PlanError",
    "PlanWeights",
    "Target",
    "TargetCost",
    "control_cost",
    "control_hessian",
    "poses_from_velocities",
]


class PlanError(ValueError):
    """A malformed plan (target steps, horizon, weights); the message names the field."""


MAX_WEIGHT = 1e9        # any cost weight: at most this, and not negative (a negative one has no minimum)
MAX_COORDINATE = 1e4    # m, |x| and |y| of a target or a start pose; rad for angles


@dataclass(frozen=True)
class PlanWeights:
    """Weights of the trajectory cost."""

    position: float = 20.0       # per target, on |p_xy - target_xy|^2 (1/m^2)
    heading: float = 5.0         # per target, on 2 (1 - cos(yaw - target_yaw)) ~ dyaw^2
    control: float = 0.01        # sum |w_i|^2 (normalised controls)
    control_rate: float = 0.2    # sum |w_i - w_{i-1}|^2
    bounds: float = 100.0        # one-sided quadratic barrier outside [-1, 1]

    def __post_init__(self):
        for name in ("position", "heading", "control", "control_rate", "bounds"):
            _checked(lambda n=name: check_range("plan weight", n, getattr(self, n), 0.0, MAX_WEIGHT))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PlanWeights:
        def number(value):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise PlanError(f"plan weights: {value!r} is not a finite number")
            return float(value)

        return dataclass_from_dict(cls, data, where="plan weights", error=PlanError, convert=number)


@dataclass(frozen=True)
class Target:
    """A target pose ``(x, y, yaw)`` (m, m, rad) to be reached at trajectory step ``step``
    (1..N). ``heading`` False leaves the heading free."""

    step: int
    x: float
    y: float
    yaw: float = 0.0
    heading: bool = True
    weight: float = 1.0

    def __post_init__(self):
        _checked(lambda: self.check())

    def check(self) -> None:
        """The range checks of every field (:class:`~engine.validation.InputError` naming it)."""
        who = f"target at step {self.step}"
        check_int(f"target step {self.step}", "step", self.step, 1, None, hint="steps count from 1")
        for name in ("x", "y", "yaw"):
            check_range(who, name, getattr(self, name), -MAX_COORDINATE, MAX_COORDINATE,
                        unit="rad" if name == "yaw" else "m")
        check_range(who, "weight", self.weight, 0.0, MAX_WEIGHT)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Target:
        """A target from its JSON object; :class:`PlanError` naming the field otherwise."""
        if not isinstance(data, dict):
            raise PlanError(f"target {str(data)[:60]!r}: expected an object with step, x, y (and yaw)")
        missing = [k for k in ("step", "x", "y") if k not in data]
        if missing:
            raise PlanError(f"target {str(data)[:60]}: missing field(s) {', '.join(missing)}")
        heading = data.get("heading", True)
        if not isinstance(heading, bool):
            raise PlanError(
                f"target at step {data['step']!r}: 'heading' must be true or false, got {heading!r}"
            )
        step = _checked(
            lambda: check_int(
                f"target step {str(data['step'])[:20]}",
                "step",
                data["step"],
                1,
                None,
                hint="steps count from 1",
            )
        )
        fields = {k: _checked(lambda k=k: check_finite(f"target at step {step}", k, data[k]))
                  for k in ("x", "y", "yaw", "weight") if k in data}
        return cls(step=step, heading=heading, **fields)


def _checked(check):
    """Run ``check()``; an :class:`~engine.validation.InputError` becomes a :class:`PlanError`."""
    try:
        return check()
    except InputError as exc:
        raise PlanError(str(exc)) from None


def poses_from_velocities(pose0: torch.Tensor, V: torch.Tensor, h: float) -> torch.Tensor:
    """The pose update ``p_{k+1} = p_k + h R(yaw_k) v_{k+1}`` for a whole trajectory at once.

    ``pose0`` (..., 3), ``V`` (..., N+1, 3) (``V[..., 0, :]`` is not used) -> poses (..., N+1, 3).
    """
    r = V[..., 1:, 2]
    yaw = pose0[..., 2:3] + h * torch.cumsum(r, -1)                     # yaw_1..yaw_N
    yaw_prev = torch.cat([pose0[..., 2:3].expand(yaw[..., :1].shape), yaw[..., :-1]], -1)
    c, s = torch.cos(yaw_prev), torch.sin(yaw_prev)
    vx, vy = V[..., 1:, 0], V[..., 1:, 1]
    x = pose0[..., 0:1] + h * torch.cumsum(c * vx - s * vy, -1)
    y = pose0[..., 1:2] + h * torch.cumsum(s * vx + c * vy, -1)
    rest = torch.stack([x, y, yaw], -1)
    return torch.cat([pose0.unsqueeze(-2).expand(rest[..., :1, :].shape), rest], -2)


class TargetCost:
    """``sum_t weight_t (position |p_xy - t_xy|^2 + heading 2 (1 - cos(yaw - t_yaw)))``."""

    def __init__(self, targets: list[Target], weights: PlanWeights, horizon: int,
                 dtype=torch.float32, device=None):
        if not targets:
            raise PlanError("targets: at least one target pose is needed")
        for t in targets:
            if not (1 <= t.step <= horizon):
                raise PlanError(f"target step {t.step}: must be within 1..{horizon} (the horizon)")
        self.targets = list(targets)
        self.weights = weights
        self.steps = torch.tensor([t.step for t in targets], device=device)
        self.goal = torch.tensor([[t.x, t.y, t.yaw] for t in targets], dtype=dtype, device=device)
        self.w_pos = torch.tensor([t.weight * weights.position for t in targets], dtype=dtype, device=device)
        self.w_head = torch.tensor([t.weight * weights.heading * float(t.heading) for t in targets],
                                   dtype=dtype, device=device)

    def __call__(self, P: torch.Tensor, V: torch.Tensor | None = None) -> torch.Tensor:
        p = P[..., self.steps, :]                                            # (B, T, 3)
        d = p[..., :2] - self.goal[:, :2]
        pos = (d * d).sum(-1)
        head = 2.0 * (1.0 - torch.cos(p[..., 2] - self.goal[:, 2]))
        return (self.w_pos * pos + self.w_head * head).sum(-1)

    def residuals(self, P: torch.Tensor) -> torch.Tensor:
        """The cost as a sum of squares: residuals (..., 3T) with ``(r * r).sum(-1) == self(P)``.

        Per target: ``sqrt(w_pos) (x - t_x)``, ``sqrt(w_pos) (y - t_y)`` and the heading term
        ``2 sqrt(w_head) sin((yaw - t_yaw) / 2)`` (since ``2 (1 - cos e) = 4 sin^2(e / 2)``).
        Used for the Gauss-Newton search direction.
        """
        p = P[..., self.steps, :]
        d = (p[..., :2] - self.goal[:, :2]) * self.w_pos.sqrt()[:, None]
        head = 2.0 * self.w_head.sqrt() * torch.sin(0.5 * (p[..., 2] - self.goal[:, 2]))
        return torch.cat([d, head.unsqueeze(-1)], -1).flatten(-2)

    def errors(self, P: torch.Tensor) -> list[dict]:
        """Per target: position error (m) and absolute heading error (rad, wrapped) of one
        trajectory ``P`` (N+1, 3)."""
        out = []
        for t in self.targets:
            p = P[t.step]
            pos = float(torch.hypot(p[0] - t.x, p[1] - t.y))
            head = float(torch.atan2(torch.sin(p[2] - t.yaw), torch.cos(p[2] - t.yaw)).abs())
            out.append({"step": t.step, "position_error": pos, "heading_error": head})
        return out


def control_cost(W: torch.Tensor, weights: PlanWeights, w_prev: torch.Tensor | None = None) -> torch.Tensor:
    """Regulariser and soft bounds on normalised controls ``W`` (B, N, 2) -> (B,).

    ``w_prev`` (2,) is the control applied just before (MPC), included in the rate term.
    """
    mag = (W * W).sum((-1, -2))
    dW = W[..., 1:, :] - W[..., :-1, :]
    rate = (dW * dW).sum((-1, -2))
    if w_prev is not None:
        d0 = W[..., 0, :] - w_prev
        rate = rate + (d0 * d0).sum(-1)
    over = torch.relu(W.abs() - 1.0)
    bound = (over * over).sum((-1, -2))
    return weights.control * mag + weights.control_rate * rate + weights.bounds * bound


def control_hessian(
    W: torch.Tensor, weights: PlanWeights, w_prev: torch.Tensor | None = None
) -> torch.Tensor:
    """The Hessian of :func:`control_cost` at ``W`` (N, 2), as a (2N, 2N) matrix over
    ``W.reshape(-1)`` (step-major: ``[w_0 throttle, w_0 steering, w_1 throttle, ...]``).

    Exact: the magnitude and rate terms are quadratic, and the soft bound is quadratic on each
    side of its kink (its Hessian counts where ``|w| > 1``). ``w_prev`` only shifts the rate
    term, so it adds the identity on the first step whenever it is given.
    """
    N = W.shape[0]
    dtype, device = W.dtype, W.device
    D = torch.zeros(N + 1, N, dtype=dtype, device=device)       # first differences, row 0: w_0 - w_prev
    idx = torch.arange(N, device=device)
    D[idx + 1, idx] = -1.0
    D[idx, idx] = 1.0
    D = D[1:N] if w_prev is None else D[:N]
    rate = torch.kron(D.T @ D, torch.eye(2, dtype=dtype, device=device))
    active = (W.abs() > 1.0).to(dtype).reshape(-1)
    return 2.0 * (weights.control * torch.eye(2 * N, dtype=dtype, device=device)
                  + weights.control_rate * rate + weights.bounds * torch.diag(active))
