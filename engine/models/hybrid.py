"""The hybrid model (``hybrid-rk4``): a fixed rigid body with joint friction plus a learned residual
generalised force.

    qdd = (M(q) + diag(Ia))^-1 (B u - C qd - g - tau_joint(qd) - r(q, qd))

The rigid body and its joint terms come from the spec's robot (usually the robot identified from
the log's torques, written as URDF + actuation JSON, see :mod:`engine.models.robot_source`) and
are frozen; ``r`` is a tanh MLP of ``(embed(q), qd)`` (N m), its last layer zero at the start, so
the model starts as the rigid body and the network learns only what the rigid body misses. It is
trained like the robot model, on the next state. The residual depends on ``(q, qd)`` and not on
``u``, so the inverse dynamics stays explicit: ``tau = M qdd + C qd + g + tau_joint + r(q, qd)``
(:meth:`HybridDynamics.inverse_dynamics`), and both metrics of a comparison apply.
"""

from __future__ import annotations

import torch

from engine.models.base import ModelSpec
from engine.models.nets import MLP, AngleEmbedding, embed_dim
from engine.models.robot import RobotDynamics

__all__ = ["HybridDynamics"]


class HybridDynamics(RobotDynamics):
    """The frozen robot of ``spec.robot`` plus a residual force network (module doc)."""

    def __init__(self, spec: ModelSpec, integrator: str = "rk4", dtype: torch.dtype = torch.float64):
        super().__init__(spec, integrator, dtype)
        for p in list(self.robot.parameters()) + list(self.friction.parameters()):
            p.requires_grad_(False)
        self.embedding = AngleEmbedding(spec.angle_mask)
        self.residual = MLP(embed_dim(spec.angle_mask) + spec.dof, spec.dof, spec.hidden, spec.layers,
                            spec.init).to(dtype)
        with torch.no_grad():
            self.residual.linears[-1].weight.zero_()
            self.residual.linears[-1].bias.zero_()

    def residual_force(self, q: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        """``r(q, qd)`` (..., n), N m."""
        e = self.embedding(q)[0]
        return self.residual(torch.cat([e, qd], -1)).to(q.dtype)

    def _acceleration(self, q: torch.Tensor, qd: torch.Tensor, force: torch.Tensor) -> torch.Tensor:
        return super()._acceleration(q, qd, force - self.residual_force(q, qd))

    def inverse_dynamics(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
        """The rigid body's joint forces plus the residual ``r(q, qd)`` (..., n), N m."""
        return super().inverse_dynamics(q, qd, qdd) + self.residual_force(q, qd)
