"""A planar RC car with drifting: per-wheel no-slip accelerations and a friction limit.

State: global pose ``pose = (px, py, yaw)`` (m, m, rad) and local (body-frame) velocities
``v = (forward, lateral, yaw rate)`` (m/s, m/s, rad/s). Control ``u = (throttle, steering)``:
throttle is the acceleration asked of the rear (driven) wheels in m/s^2, steering the front
wheel angle in rad. Everything is batched over leading dimensions, torch, differentiable.

Model (one sub-step of length ``dt / substeps``):

1. The *no-slip* motion for the current forward speed is the kinematic bicycle about the
   centre of mass (in the middle of the wheelbase ``L``): yaw rate ``r* = vx tan(delta) / L``,
   lateral velocity ``vy* = r* L / 2`` (the rear axle does not move sideways).
2. Each wheel ``w`` at body position ``p_w`` needs the acceleration that brings its contact
   point velocity to the no-slip one within the tyre relaxation time ``tau``, plus the
   rotating-frame term, plus (rear wheels) the drive ``2 * throttle``.
3. Friction: a wheel carries a quarter of the weight. Where the needed acceleration exceeds
   the static limit ``mu_static g`` traction is lost and the acceleration is scaled down to
   the dynamic limit ``mu_dynamic g`` (the car slides); below it the wheel rolls.
4. The wheel forces ``m/4 a_w`` give the body's linear acceleration and, with the yaw inertia
   of four point masses at the wheels, its yaw acceleration; drag and rolling resistance act
   on the body. Semi-implicit Euler integrates velocities, then the pose.

Without sliding the car follows the kinematic bicycle with the lag ``tau``; above the
friction limit it drifts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import cast

import torch

from engine.io import dataclass_from_dict
from engine.validation import InputError

__all__ = [
    "CarParams",
    "CarParamsError",
    "CarStep",
    "car_step",
    "car_substep",
    "clamp_controls",
    "pose_update",
    "simulate",
    "wheel_positions",
]


class CarParamsError(InputError):
    """Invalid car parameters; the message names the field."""


@dataclass(frozen=True)
class CarParams:
    """Physical parameters of the simulated RC car (SI units)."""

    mass: float = 1.6                 # kg
    wheelbase: float = 0.26           # m, front to rear axle
    track_width: float = 0.20         # m, left to right wheel
    mu_static: float = 0.9            # static friction coefficient (traction limit)
    mu_dynamic: float = 0.6           # dynamic (sliding) friction coefficient
    max_throttle: float = 8.0         # m/s^2, motor limit on the rear-wheel acceleration
    max_steering: float = 0.45        # rad, steering limit
    tyre_relaxation: float = 0.05     # s, time to reach the no-slip velocity
    drag: float = 0.04                # N/(m/s)^2, aerodynamic drag
    rolling_resistance: float = 0.4   # 1/s, linear velocity damping
    gravity: float = 9.81             # m/s^2
    dt: float = 0.05                  # s, one control step
    substeps: int = 6                 # integration sub-steps per control step
    slip_smoothing: float = 0.0       # m/s^2; > 0 blends traction loss over this band (smooth gradients)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise CarParamsError(f"expected a number, got {value!r}", owner="CarParams", field=f.name)
        positive = ["mass", "wheelbase", "track_width", "mu_static", "mu_dynamic", "max_throttle",
                    "max_steering", "tyre_relaxation", "gravity", "dt", "substeps"]
        if self.slip_smoothing < 0:
            raise CarParamsError(f"must not be negative, got {self.slip_smoothing}", owner="CarParams",
                                 field="slip_smoothing")
        for name in positive:
            if getattr(self, name) <= 0:
                raise CarParamsError(
                    f"must be positive, got {getattr(self, name)}", owner="CarParams", field=name
                )
        if self.mu_dynamic > self.mu_static:
            raise CarParamsError(f"must not exceed mu_static ({self.mu_static}), got {self.mu_dynamic}",
                                 owner="CarParams", field="mu_dynamic")
        if self.tyre_relaxation < self.dt / self.substeps:
            raise CarParamsError(
                f"must be at least dt / substeps ({self.dt / self.substeps:.3g} s) for a stable "
                f"simulation, got {self.tyre_relaxation}",
                owner="CarParams",
                field="tyre_relaxation",
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CarParams:
        return dataclass_from_dict(cls, data, "car parameters", CarParamsError)

    def with_(self, **changes) -> CarParams:
        return replace(self, **changes)

    @property
    def control_lower(self) -> tuple[float, float]:
        return (-self.max_throttle, -self.max_steering)

    @property
    def control_upper(self) -> tuple[float, float]:
        return (self.max_throttle, self.max_steering)


@dataclass
class CarStep:
    """The result of one control step: next pose (..., 3), next velocity (..., 3) and the
    fraction of sub-steps each wheel slid, (..., 4), wheels ordered FL, FR, RL, RR."""

    pose: torch.Tensor
    v: torch.Tensor
    slip: torch.Tensor


def wheel_positions(params: CarParams, dtype=torch.float32, device=None) -> torch.Tensor:
    """Body-frame wheel positions (4, 2) in m: front-left, front-right, rear-left, rear-right."""
    a = params.wheelbase / 2
    c = params.track_width / 2
    return torch.tensor([[a, c], [a, -c], [-a, c], [-a, -c]], dtype=dtype, device=device)


def clamp_controls(u: torch.Tensor, params: CarParams) -> torch.Tensor:
    """Motor and steering limits applied to ``u`` (..., 2)."""
    thr = u[..., 0].clamp(-params.max_throttle, params.max_throttle)
    steer = u[..., 1].clamp(-params.max_steering, params.max_steering)
    return torch.stack([thr, steer], dim=-1)


def pose_update(pose: torch.Tensor, v_next: torch.Tensor, h: float) -> torch.Tensor:
    """``pose + h R(yaw) v_next`` (..., 3): the explicit pose update used by learned models."""
    c, s = torch.cos(pose[..., 2]), torch.sin(pose[..., 2])
    dx = c * v_next[..., 0] - s * v_next[..., 1]
    dy = s * v_next[..., 0] + c * v_next[..., 1]
    return pose + h * torch.stack([dx, dy, v_next[..., 2]], dim=-1)


def car_substep(v: torch.Tensor, u: torch.Tensor, params: CarParams, h: float,
                wheels: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Advance the body velocities ``v`` (..., 3) by ``h`` seconds under clamped controls ``u``.

    Returns ``(v_next, slipping)`` with ``slipping`` (..., 4) a 0/1 float per wheel.
    """
    if wheels is None:
        wheels = wheel_positions(params, v.dtype, v.device)
    px, py = wheels[:, 0], wheels[:, 1]                       # (4,)
    vx, vy, r = v[..., 0:1], v[..., 1:2], v[..., 2:3]          # (..., 1)
    thr, steer = u[..., 0:1], u[..., 1:2]
    r_star = vx * torch.tan(steer) / params.wheelbase
    vy_star = r_star * (params.wheelbase / 2)
    # contact point velocity error, per wheel (..., 4): target minus current
    dvx_w = -(r_star - r) * py
    dvy_w = (vy_star - vy) + (r_star - r) * px
    inv_tau = 1.0 / params.tyre_relaxation
    drive = torch.tensor([0.0, 0.0, 2.0, 2.0], dtype=v.dtype, device=v.device) * thr
    ax = dvx_w * inv_tau - r * vy + drive
    ay = dvy_w * inv_tau + r * vx + torch.zeros_like(ax)
    norm = torch.sqrt(ax * ax + ay * ay + 1e-12)
    limit_s = params.mu_static * params.gravity
    limit_d = params.mu_dynamic * params.gravity
    slipping = norm > limit_s
    if params.slip_smoothing > 0:  # a sigmoid blend around the static limit, for planning
        blend = torch.sigmoid((norm - limit_s) / params.slip_smoothing)
        scale = 1.0 - blend * torch.relu(1.0 - limit_d / norm)
    else:
        scale = torch.where(slipping, limit_d / norm, torch.ones_like(norm))
    ax = ax * scale
    ay = ay * scale
    ax_b = ax.mean(-1, keepdim=True)
    ay_b = ay.mean(-1, keepdim=True)
    alpha = (px * ay - py * ax).sum(-1, keepdim=True) / (px * px + py * py).sum()
    resist = params.rolling_resistance * vx + params.drag * vx * vx.abs() / params.mass
    dvx = ax_b + r * vy - resist
    dvy = ay_b - r * vx - params.rolling_resistance * vy
    v_next = v + h * torch.cat([dvx, dvy, alpha], dim=-1)
    return v_next, slipping.to(v.dtype)


def car_step(pose: torch.Tensor, v: torch.Tensor, u: torch.Tensor,
             params: CarParams = CarParams()) -> CarStep:
    """One control step of ``params.dt`` (``params.substeps`` sub-steps), controls held.

    ``pose`` (..., 3), ``v`` (..., 3), ``u`` (..., 2) broadcast together.
    """
    u = clamp_controls(u, params)
    h = params.dt / params.substeps
    wheels = wheel_positions(params, v.dtype, v.device)
    slip: torch.Tensor | None = None
    for _ in range(int(params.substeps)):
        v, s = car_substep(v, u, params, h, wheels)
        pose = pose_update(pose, v, h)
        slip = s if slip is None else slip + s
    return CarStep(pose, v, cast(torch.Tensor, slip) / params.substeps)


def simulate(pose0: torch.Tensor, v0: torch.Tensor, controls: torch.Tensor,
             params: CarParams = CarParams(), record_substeps: bool = False) -> dict:
    """Roll the car out under ``controls`` (..., N, 2).

    Returns a dict with ``pose`` (..., N+1, 3), ``v`` (..., N+1, 3), ``slip`` (..., N, 4);
    with ``record_substeps`` also ``fine_pose`` (..., N*substeps+1, 3) sampled every
    ``dt / substeps`` seconds (the "motion capture" rate).
    """
    u_all = clamp_controls(controls, params)
    h = params.dt / params.substeps
    wheels = wheel_positions(params, v0.dtype, v0.device)
    poses, vels, slips, fine = [pose0], [v0], [], [pose0]
    pose, v = pose0, v0
    for i in range(u_all.shape[-2]):
        u = u_all[..., i, :]
        slip: torch.Tensor | float = 0.0
        for _ in range(int(params.substeps)):
            v, s = car_substep(v, u, params, h, wheels)
            pose = pose_update(pose, v, h)
            slip = slip + s
            if record_substeps:
                fine.append(pose)
        poses.append(pose)
        vels.append(v)
        slips.append(cast(torch.Tensor, slip / params.substeps))
    out = {"pose": torch.stack(poses, -2), "v": torch.stack(vels, -2),
           "slip": torch.stack(slips, -2) if slips else v0.new_zeros(v0.shape[:-1] + (0, 4))}
    if record_substeps:
        out["fine_pose"] = torch.stack(fine, -2)
    return out
