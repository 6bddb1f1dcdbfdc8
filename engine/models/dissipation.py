"""A place for friction in the Lagrangian models (L-NODE, SyMo, E2E-SyMo): a learned generalised
non-conservative force beside the conservative part ``L = 1/2 qd^T H(q) qd - V(q)``.

``spec.dissipation`` chooses it:

- ``"none"``: the papers' models (conservative but for the known input ``B u``);
- ``"joint"``: per-joint friction, the non-conservative generalised force

      Q(qd) = -(Fv qd + Fc tanh(qd / v_s) + tau0)                         (..., n)

  with ``Fv >= 0`` (viscous, the Rayleigh dissipation ``D = 1/2 qd^T diag(Fv) qd``), ``Fc >= 0``
  (smooth Coulomb, ``v_s`` = :data:`~engine.models.joint_friction.COULOMB_VELOCITY_SCALE`) and a
  free offset ``tau0``. The damping and Coulomb parts only ever take energy out (``qd^T Q <= 0``
  without the offset).

Parametrisation (:class:`JointDissipation`): ``Fv = Fv0 exp(RATE a)``, ``Fc = Fc0 exp(RATE b)``,
``tau0 = OFFSET_SCALE c`` with ``a``, ``b``, ``c`` the learned parameters, zero at the start
(:data:`DAMPING_START`, :data:`COULOMB_START`: N m s/rad and N m, the order of a robot arm's
joint friction). Adam moves each parameter by about its learning rate per step whatever the
gradient's size, so in log space one step changes ``Fv`` and ``Fc`` by about ``RATE x lr``
*relatively* (1 % at lr 1e-3 with :data:`RATE` 10): a factor of 10 takes some 230 steps. The
earlier layout, ``0.01 softplus(raw) / log 2`` (the robot model's), changed them by about
``0.01 lr`` N m s/rad a step, so 135 epochs moved the damping from 0.010 to 0.0102 while the
true one was 0.1-0.6 (issue #30). :meth:`JointDissipation.migrate_state` reads that layout.

The Euler-Lagrange equations become ``H qdd + C + dV/dq = B u + Q(qd)``. In the discrete
(midpoint) Lagrangian models the force enters the forced discrete Euler-Lagrange equations as the
midpoint discrete forces ``fd+(k-1, k) = h/2 Q(v_{k-1,k})`` and ``fd-(k, k+1) = h/2 Q(v_{k,k+1})``
with ``v_{a,b} = (q_b - q_a) / h``; Newton's Jacobian gains ``dfd-/dq_{k+1} = 1/2 dQ/dv``, a
diagonal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from engine.models.joint_friction import COULOMB_VELOCITY_SCALE, smooth_sign

__all__ = ["COULOMB_START", "DAMPING_START", "DISSIPATIONS", "OFFSET_SCALE", "RATE", "JointDissipation",
           "build_dissipation"]

DISSIPATIONS = ("none", "joint")
DAMPING_START = 0.1    # N m s/rad, Fv at the start
COULOMB_START = 0.1    # N m, Fc at the start
RATE = 10.0            # log-space gain of Fv and Fc (relative change per unit of Adam's step)
OFFSET_SCALE = 1.0     # N m per unit of the offset's parameter
_KINDS = ("damping", "coulomb", "offset")


class JointDissipation(nn.Module):
    """``Q(qd)`` of the module doc for ``n`` joints (every term learned)."""

    def __init__(self, n: int, velocity_scale: float = COULOMB_VELOCITY_SCALE):
        super().__init__()
        self.n = int(n)
        self.velocity_scale = float(velocity_scale)
        # float32 as the networks beside it (the model's .double() converts it with them)
        self.log_damping = nn.Parameter(torch.zeros(self.n))
        self.log_coulomb = nn.Parameter(torch.zeros(self.n))
        self.offset = nn.Parameter(torch.zeros(self.n))

    def value(self, kind: str) -> torch.Tensor:
        """``Fv`` (``"damping"``), ``Fc`` (``"coulomb"``) or ``tau0`` (``"offset"``), (n,)."""
        if kind == "damping":
            return DAMPING_START * torch.exp(RATE * self.log_damping)
        if kind == "coulomb":
            return COULOMB_START * torch.exp(RATE * self.log_coulomb)
        if kind == "offset":
            return OFFSET_SCALE * self.offset
        raise ValueError(f"unknown dissipation kind {kind!r}; expected one of {', '.join(_KINDS)}")

    def values(self) -> dict[str, list[float]]:
        """``{kind: [per joint]}`` as plain floats (for reports)."""
        with torch.no_grad():
            return {k: [float(v) for v in self.value(k).detach().cpu()] for k in _KINDS}

    @torch.no_grad()
    def set_values(self, damping: Sequence[float] | None = None, coulomb: Sequence[float] | None = None,
                   offset: Sequence[float] | None = None) -> None:
        """Put the given values (n each; damping and Coulomb > 0) in the parameters."""
        for p, vals, start in ((self.log_damping, damping, DAMPING_START), (self.log_coulomb, coulomb, COULOMB_START)):
            if vals is not None:
                v = torch.as_tensor(vals, dtype=p.dtype, device=p.device)
                if not bool((v > 0).all()):
                    raise ValueError(f"damping and Coulomb friction must be > 0, got {v.tolist()}")
                p.copy_(torch.log(v / start) / RATE)
        if offset is not None:
            self.offset.copy_(torch.as_tensor(offset, dtype=self.offset.dtype) / OFFSET_SCALE)

    def force(self, qd: torch.Tensor) -> torch.Tensor:
        """``Q(qd)`` (..., n) for velocities ``qd`` (..., n)."""
        d, c, o = (self.value(k).to(qd.dtype) for k in _KINDS)
        return -(d * qd + c * smooth_sign(qd, self.velocity_scale) + o)

    def force_derivative(self, qd: torch.Tensor) -> torch.Tensor:
        """``dQ_i/dqd_i`` (..., n): the diagonal of ``dQ/dqd`` (the off-diagonal is zero)."""
        d = self.value("damping").to(qd.dtype)
        c = self.value("coulomb").to(qd.dtype)
        s = torch.tanh(qd / self.velocity_scale)
        return -(d + c * (1.0 - s * s) / self.velocity_scale)

    @staticmethod
    def migrate_state(state: dict, prefix: str = "dissipation.") -> dict:
        """A model state dict with this module's earlier layout (``<prefix>friction._<kind>_raw``
        and ``_scale``, values ``scale softplus(raw) / log 2`` and ``offset_scale raw``) in the
        current one: the same friction. Any other state is returned as it is."""
        old = f"{prefix}friction."
        if f"{old}_damping_raw" not in state:
            return state
        new = {k: v for k, v in state.items() if not k.startswith(old)}
        for kind in ("damping", "coulomb"):
            raw, scale = state[f"{old}_{kind}_raw"], state[f"{old}_{kind}_scale"]
            value = (scale * nn.functional.softplus(raw) / math.log(2.0)).clamp_min(1e-12)
            start = DAMPING_START if kind == "damping" else COULOMB_START
            new[f"{prefix}log_{kind}"] = torch.log(value / start) / RATE
        new[f"{prefix}offset"] = state[f"{old}_offset_raw"] * state[f"{old}_offset_scale"] / OFFSET_SCALE
        return new


def build_dissipation(spec) -> JointDissipation | None:
    """The dissipation module of ``spec.dissipation`` (None for ``"none"``)."""
    kind = getattr(spec, "dissipation", "none")
    if kind == "none":
        return None
    if kind == "joint":
        return JointDissipation(spec.dof)
    raise ValueError(f"unknown dissipation {kind!r}; expected one of {', '.join(DISSIPATIONS)}")
