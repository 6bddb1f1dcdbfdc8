"""Per-joint friction and actuation of a rigid-body robot: viscous damping, Coulomb friction,
armature (reflected motor inertia) and a torque offset, learnable with physical constraints.

The joint torque that the motors must give beyond the rigid body's own ``M qdd + C qd + g``::

    tau_joint(qd, qdd) = Fv qd + Fc tanh(qd / v_s) + Ia qdd + tau0          (..., n), N m (N)

- ``Fv`` (n,) viscous damping, N m s/rad (N s/m for a prismatic joint), >= 0;
- ``Fc`` (n,) Coulomb (dry) friction, N m (N), >= 0, through a smooth sign ``tanh(qd / v_s)``;
- ``Ia`` (n,) armature, kg m^2 (kg), >= 0: the rotor inertia seen through the gear, on the
  mass matrix's diagonal (MuJoCo's ``armature``, Pinocchio's ``model.armature``);
- ``tau0`` (n,) a constant torque offset, N m (N), any sign (a sensor bias, cable forces).

The velocity scale ``v_s`` (:data:`COULOMB_VELOCITY_SCALE`, rad/s or m/s) sets how fast the
smooth sign turns: ``tanh(qd / v_s)`` is within 1 % of ``sign(qd)`` for ``|qd| > 2.65 v_s``.
A true dry friction (MuJoCo's ``frictionloss``, a constraint) is ``Fc sign(qd)`` while the
joint slides and anything in ``[-Fc, Fc]`` while it sticks; the smooth model agrees with it
wherever ``|qd|`` is a few ``v_s`` and cannot represent sticking (it lets a joint creep under
a torque below ``Fc``). The default 0.05 rad/s keeps the model's friction slope near rest,
``Fc / v_s``, low enough for an explicit step of a few milliseconds on arm joints; lower it for
slow motions, and rollouts then need smaller steps (see ``ModelSpec.robot_substeps``).

Parametrisation: ``Fv``, ``Fc`` and ``Ia`` are ``start * softplus(raw) / log 2`` (``raw`` = 0 at
the start value, so the raw parameters of every joint are of order one whatever the units,
which conditions L-BFGS and Adam alike, and a value can only approach zero, never cross it);
``tau0`` is ``scale * raw``. The kinds that are not learned are buffers at their start values.
Computations are pure functions of the parameters and the inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import torch
from torch import nn

__all__ = ["COULOMB_VELOCITY_SCALE", "FRICTION_KINDS", "JointFriction", "smooth_sign"]

# rad/s (m/s for prismatic joints): v_s of the smooth sign tanh(qd / v_s)
COULOMB_VELOCITY_SCALE = 0.05

# the per-joint kinds, in the order of JointFriction.values()
FRICTION_KINDS = ("damping", "coulomb", "armature", "offset")

# a non-negative kind learned from a start of 0 starts here instead (its softplus factor would
# be 0 and could never grow): N m s/rad, N m, kg m^2
_POSITIVE_START = {"damping": 1e-2, "coulomb": 1e-2, "armature": 1e-3}
_LOG2 = math.log(2.0)


def smooth_sign(qd: torch.Tensor, velocity_scale: float = COULOMB_VELOCITY_SCALE) -> torch.Tensor:
    """``tanh(qd / v_s)``, the smooth sign of the Coulomb friction, same shape as ``qd``."""
    return torch.tanh(qd / velocity_scale)


class JointFriction(nn.Module):
    """Friction and actuation torques of ``n`` joints (module doc).

    ``start``: ``{kind: (n,) values}`` for the kinds of :data:`FRICTION_KINDS` (missing kinds
    start at 0); ``learn``: the kinds made learnable; ``velocity_scale``: ``v_s`` (rad/s);
    ``offset_scale``: N m per unit of the offset's raw parameter (one number, or (n,)).
    """

    def __init__(self, n: int, start: Mapping[str, Iterable[float]] | None = None,
                 learn: Iterable[str] = (), velocity_scale: float = COULOMB_VELOCITY_SCALE,
                 offset_scale: float | Iterable[float] = 1.0, dtype: torch.dtype = torch.float64, device=None):
        super().__init__()
        start = dict(start or {})
        learn = tuple(learn)
        bad = [k for k in list(start) + list(learn) if k not in FRICTION_KINDS]
        if bad:
            raise ValueError(f"unknown joint friction kinds {bad}; expected some of {', '.join(FRICTION_KINDS)}")
        if not velocity_scale > 0:
            raise ValueError(f"the Coulomb velocity scale v_s must be > 0 rad/s, got {velocity_scale!r}")
        self.n = int(n)
        self.velocity_scale = float(velocity_scale)
        self.learned = tuple(k for k in FRICTION_KINDS if k in learn)
        for kind in FRICTION_KINDS:
            v = torch.as_tensor(list(start.get(kind, [0.0] * self.n)), dtype=dtype, device=device).reshape(-1)
            if v.numel() != self.n:
                raise ValueError(f"joint friction {kind}: {v.numel()} values for {self.n} joints")
            if kind != "offset" and bool((v < 0).any()):
                raise ValueError(f"joint friction {kind} must be non-negative, got {v.tolist()}")
            if kind not in self.learned:
                self.register_buffer(f"_{kind}", v.clone())
                continue
            if kind == "offset":
                scale = torch.as_tensor(offset_scale, dtype=dtype, device=device).expand(self.n).clone()
                if not bool((scale > 0).all()):
                    raise ValueError(f"joint friction offset_scale must be > 0, got {scale.tolist()}")
                self.register_buffer("_offset_scale", scale)
                setattr(self, f"_{kind}_raw", nn.Parameter(v / scale))
            else:
                scale = v.clamp_min(_POSITIVE_START[kind])
                self.register_buffer(f"_{kind}_scale", scale)
                setattr(self, f"_{kind}_raw", nn.Parameter(torch.zeros_like(v)))

    def value(self, kind: str) -> torch.Tensor:
        """The current ``kind`` of every joint, ``(n,)`` (differentiable when learned)."""
        if kind not in FRICTION_KINDS:
            raise ValueError(f"unknown joint friction kind {kind!r}; expected one of {', '.join(FRICTION_KINDS)}")
        if kind not in self.learned:
            return getattr(self, f"_{kind}")
        raw = getattr(self, f"_{kind}_raw")
        scale = getattr(self, f"_{kind}_scale")
        if kind == "offset":
            return scale * raw
        return scale * nn.functional.softplus(raw) / _LOG2

    def values(self) -> dict[str, list[float]]:
        """``{kind: [per joint]}`` as plain floats (for reports and files)."""
        with torch.no_grad():
            return {k: [float(v) for v in self.value(k).detach().cpu()] for k in FRICTION_KINDS}

    @property
    def is_zero(self) -> bool:
        """True when no kind is learned and every value is 0 (the term can be skipped)."""
        return not self.learned and all(not bool(getattr(self, f"_{k}").any()) for k in FRICTION_KINDS)

    def dissipative_torque(self, qd: torch.Tensor) -> torch.Tensor:
        """``Fv qd + Fc tanh(qd / v_s) + tau0`` (..., n) for velocities ``qd`` (..., n)."""
        d, c, o = (self.value(k).to(qd.dtype) for k in ("damping", "coulomb", "offset"))
        return d * qd + c * smooth_sign(qd, self.velocity_scale) + o

    def torque(self, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
        """``tau_joint`` (..., n) of the module doc for ``qd``, ``qdd`` (..., n)."""
        return self.dissipative_torque(qd) + self.value("armature").to(qdd.dtype) * qdd
