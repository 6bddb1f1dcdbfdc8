"""A place for friction in the Lagrangian models (L-NODE, SyMo, E2E-SyMo): a learned generalised
non-conservative force beside the conservative part ``L = 1/2 qd^T H(q) qd - V(q)``.

``spec.dissipation`` chooses it:

- ``"none"``: the papers' models (conservative but for the known input ``B u``);
- ``"joint"``: per-joint friction, the non-conservative generalised force

      Q(qd) = -(Fv qd + Fc tanh(qd / v_s) + tau0)                         (..., n)

  with ``Fv >= 0`` (viscous, the Rayleigh dissipation ``D = 1/2 qd^T diag(Fv) qd``), ``Fc >= 0``
  (smooth Coulomb) and a free offset ``tau0`` (:class:`~engine.models.joint_friction.JointFriction`,
  learnable; ``v_s`` its documented velocity scale). The damping and Coulomb parts only ever
  take energy out (``qd^T Q <= 0`` without the offset).

The Euler-Lagrange equations become ``H qdd + C + dV/dq = B u + Q(qd)``. In the discrete
(midpoint) Lagrangian models the force enters the forced discrete Euler-Lagrange equations as the
midpoint discrete forces ``fd+(k-1, k) = h/2 Q(v_{k-1,k})`` and ``fd-(k, k+1) = h/2 Q(v_{k,k+1})``
with ``v_{a,b} = (q_b - q_a) / h``; Newton's Jacobian gains ``dfd-/dq_{k+1} = 1/2 dQ/dv``, a
diagonal.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.models.joint_friction import JointFriction

__all__ = ["DISSIPATIONS", "JointDissipation", "build_dissipation"]

DISSIPATIONS = ("none", "joint")


class JointDissipation(nn.Module):
    """``Q(qd)`` of the module doc for ``n`` joints (all terms learned, starting small)."""

    def __init__(self, n: int):
        super().__init__()
        # float32 as the networks beside it (the model's .double() converts it with them)
        self.friction = JointFriction(n, learn=("damping", "coulomb", "offset"), dtype=torch.float32)

    def force(self, qd: torch.Tensor) -> torch.Tensor:
        """``Q(qd)`` (..., n) for velocities ``qd`` (..., n)."""
        return -self.friction.dissipative_torque(qd)

    def force_derivative(self, qd: torch.Tensor) -> torch.Tensor:
        """``dQ_i/dqd_i`` (..., n): the diagonal of ``dQ/dqd`` (the off-diagonal is zero)."""
        f = self.friction
        d = f.value("damping").to(qd.dtype)
        c = f.value("coulomb").to(qd.dtype)
        s = torch.tanh(qd / f.velocity_scale)
        return -(d + c * (1.0 - s * s) / f.velocity_scale)


def build_dissipation(spec) -> JointDissipation | None:
    """The dissipation module of ``spec.dissipation`` (None for ``"none"``)."""
    kind = getattr(spec, "dissipation", "none")
    if kind == "none":
        return None
    if kind == "joint":
        return JointDissipation(spec.dof)
    raise ValueError(f"unknown dissipation {kind!r}; expected one of {', '.join(DISSIPATIONS)}")
