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
from engine.models.lagrangian_prior import RigidBodyPrior, start_as_residual
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
        self.prior: RigidBodyPrior | None = None
        if spec.lagrangian_prior == "robot":
            if spec.robot is None:
                raise ValueError("lagrangian_prior 'robot' needs the spec's robot (a library name or robot file)")
            self.prior = RigidBodyPrior(spec.robot)
            start_as_residual(self.lagrangian, self.dissipation, self.prior)

    def generalized_force(self, qd, u):
        """``B u`` plus the learned non-conservative force ``Q(qd)`` (spec.dissipation), (B, n)."""
        F = self.force(u)
        return F if self.dissipation is None else F + self.dissipation.force(qd).to(F.dtype)

    def _terms(self, q, qd):
        """``(H, C qd + dV/dq)`` (B, n, n), (B, n): the learned terms, plus the prior's (if any)."""
        t = self.lagrangian.terms(q, order=1)
        # dHqd[b, k, i] = sum_j dH_ij/dq_k qd_j
        dHqd = (t.dH @ qd.unsqueeze(-2).unsqueeze(-1)).squeeze(-1)
        c = (dHqd.transpose(-1, -2) @ qd.unsqueeze(-1)).squeeze(-1) - 0.5 * (dHqd @ qd.unsqueeze(-1)).squeeze(
            -1
        )
        H, bias = t.H, c + t.dV
        if self.prior is not None:
            H = H + self.prior.mass_matrix(q)
            bias = bias + self.prior.bias_forces(q, qd)
        return H, bias

    def acceleration(self, q, qd, u):
        if self.n == 1 and self.prior is None:  # C = (dH - dH/2) qd^2, H^-1 a division
            return self.lagrangian.acceleration_1dof(q, qd, self.generalized_force(qd, u))
        H, bias = self._terms(q, qd)
        return small_solve(H, self.generalized_force(qd, u) - bias)

    def inverse_dynamics(self, q, qd, qdd):
        """The generalised forces ``B u = H qdd + C qd + dV/dq - Q(qd)`` (..., n) (the prior's terms
        included): the torques of a comparison's torque metric."""
        lead = q.shape[:-1]
        q2, qd2, qdd2 = (v.reshape(-1, self.n) for v in (q, qd, qdd))
        H, bias = self._terms(q2, qd2)
        F = (H @ qdd2.unsqueeze(-1)).squeeze(-1) + bias
        if self.dissipation is not None:
            F = F - self.dissipation.force(qd2).to(F.dtype)
        return F.reshape(*lead, self.n)

    def vector_field(self, x, u):
        q, qd = x[..., : self.n], x[..., self.n:]
        return torch.cat([qd, self.acceleration(q, qd, u)], -1)

    def step(self, x, u):
        return self._stepper(self.vector_field, x, u, self.h)

    def mass_matrix(self, q):
        H = self.lagrangian.mass_matrix(q)
        return H if self.prior is None else H + self.prior.mass_matrix(q)

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
