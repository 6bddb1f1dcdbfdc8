"""Neural ODEs: the geometric NODE (an MLP for the acceleration) and the Lagrangian L-NODE.

Both integrate ``xd = (qd, qdd)`` with an explicit step (RK4 or midpoint) of size ``h`` and
train on the MSE of the next state ``(q, qd)``.

- NODE: ``qdd = MLP(embed(q), qd, u)``.
- L-NODE: ``qdd = H(q)^-1 (B u + Q(qd) - C(q, qd) - dV/dq)`` with the Cholesky inertia and
  potential networks, ``C_i = sum_jk (dH_ij/dq_k - 1/2 dH_jk/dq_i) qd_j qd_k``, and ``Q`` the
  learned non-conservative force of ``spec.dissipation`` (:mod:`engine.models.dissipation`;
  none by default, as in the paper).
"""

from __future__ import annotations

import torch

from engine.data.windows import Windows
from engine.integrators import get_stepper, small_solve
from engine.models.base import LearnedDynamics, ModelSpec
from engine.models.dissipation import JointDissipation, build_dissipation
from engine.models.lagrangian import LagrangianNetworks
from engine.models.nets import MLP, AngleEmbedding, embed_dim

__all__ = ["NODE", "LNODE", "BlackBoxMLP"]


class _StateModel(LearnedDynamics):
    kind = "state"

    def loss(self, w: Windows) -> torch.Tensor:
        pred = self.step(w.x, w.u)
        return ((pred - w.x_next) ** 2).mean()


class NODE(_StateModel):
    def __init__(self, spec: ModelSpec, integrator: str = "rk4"):
        super().__init__(spec)
        self.integrator = integrator
        self._stepper = get_stepper(integrator)
        self.embedding = AngleEmbedding(spec.angle_mask)
        self.net = MLP(
            embed_dim(spec.angle_mask) + spec.dof + spec.control_dim,
            spec.dof,
            spec.hidden,
            spec.layers,
            spec.init,
        )

    def vector_field(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        q, qd = x[..., : self.n], x[..., self.n:]
        e = self.embedding(q)[0]
        return torch.cat([qd, self.net(torch.cat([e, qd, u], -1))], -1)

    def step(self, x, u):
        return self._stepper(self.vector_field, x, u, self.h)


class LNODE(_StateModel):
    def __init__(self, spec: ModelSpec, integrator: str = "rk4"):
        super().__init__(spec)
        self.integrator = integrator
        self._stepper = get_stepper(integrator)
        self.lagrangian = LagrangianNetworks(
            spec.angle_mask, spec.hidden, spec.layers, spec.inertia_eps, spec.init, spec.potential_scale
        )
        self.dissipation = build_dissipation(spec)

    def generalized_force(self, qd, u):
        """``B u`` plus the learned non-conservative force ``Q(qd)`` (spec.dissipation), (B, n)."""
        F = self.force(u)
        return F if self.dissipation is None else F + self.dissipation.force(qd).to(F.dtype)

    def acceleration(self, q, qd, u):
        if self.n == 1:  # C = (dH - dH/2) qd^2, H^-1 a division
            return self.lagrangian.acceleration_1dof(q, qd, self.generalized_force(qd, u))
        t = self.lagrangian.terms(q, order=1)
        # dHqd[b, k, i] = sum_j dH_ij/dq_k qd_j
        dHqd = (t.dH @ qd.unsqueeze(-2).unsqueeze(-1)).squeeze(-1)
        c = (dHqd.transpose(-1, -2) @ qd.unsqueeze(-1)).squeeze(-1) - 0.5 * (dHqd @ qd.unsqueeze(-1)).squeeze(
            -1
        )
        rhs = self.generalized_force(qd, u) - c - t.dV
        return small_solve(t.H, rhs)

    def vector_field(self, x, u):
        q, qd = x[..., : self.n], x[..., self.n:]
        return torch.cat([qd, self.acceleration(q, qd, u)], -1)

    def step(self, x, u):
        return self._stepper(self.vector_field, x, u, self.h)

    def mass_matrix(self, q):
        return self.lagrangian.mass_matrix(q)

    def migrate_state(self, state: dict) -> dict:
        """A checkpoint of the dissipation's earlier layout in the current one (the same friction)."""
        return JointDissipation.migrate_state(state)


class BlackBoxMLP(_StateModel):
    """Baseline without priors: ``x_{k+1} = x_k + MLP(embed(q_k), qd_k, u_k)``."""

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self.embedding = AngleEmbedding(spec.angle_mask)
        self.net = MLP(
            embed_dim(spec.angle_mask) + spec.dof + spec.control_dim,
            2 * spec.dof,
            spec.hidden,
            spec.layers,
            spec.init,
        )

    def step(self, x, u):
        q, qd = x[..., : self.n], x[..., self.n:]
        return x + self.net(torch.cat([self.embedding(q)[0], qd, u], -1))
