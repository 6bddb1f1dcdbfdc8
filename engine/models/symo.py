"""Symplectic Momentum networks: SyMo and E2E-SyMo (Santos et al.), on the midpoint discrete Lagrangian.

``Ld(qa, qb) = h [1/2 v^T H(m) v - V(m)]`` with ``m = (qa + qb)/2``, ``v = (qb - qa)/h``, and the
midpoint discrete forces ``fd+(k-1, k) = h/4 B (u_{k-1} + u_k)``, ``fd-(k, k+1) = h/4 B (u_k + u_{k+1})``.
The forced discrete Euler-Lagrange (DEL) residual at ``q_k``::

    g = D2 Ld(q_{k-1}, q_k) + D1 Ld(q_k, q_{k+1}) + fd+ + fd-          (B, n)

with the slot derivatives in closed form (``dHv[k] = dH/dq_k v``)::

    D1 Ld(qa, qb) = -H v + h/4 (v^T dH/dq v) - h/2 dV/dq,   D2 Ld(qa, qb) = H v + h/4 (v^T dH/dq v) - h/2 dV/dq

and Newton's Jacobian ``J = dg / dq_{k+1}``::

    J = -H/h - 1/2 dHv^T + 1/2 dHv + h/8 v^T d2H v - h/4 d2V     (all at m = (q_k + q_{k+1})/2)

With ``spec.dissipation`` (:mod:`engine.models.dissipation`) the learned non-conservative force
``Q(v)`` adds the midpoint discrete forces ``h/2 Q(v_{k-1,k}) + h/2 Q(v_{k,k+1})`` to ``g``, and
``1/2 dQ/dv`` (diagonal) to ``J``.

- SyMo trains on ``|g|^2`` of observed triples and predicts by Newton from ``2 q_k - q_{k-1}``.
- E2E-SyMo trains on ``|q^_{k+1} - q_{k+1}|^2`` through :class:`ImplicitNewtonLayer`, whose
  backward applies the implicit function theorem (never back-propagating through iterations).
"""

from __future__ import annotations

import torch

from engine.data.windows import Windows
from engine.integrators import small_solve
from engine.models.base import LearnedDynamics, ModelSpec
from engine.models.dissipation import JointDissipation, build_dissipation
from engine.models.lagrangian import LagrangianNetworks
from engine.models.lagrangian_prior import RigidBodyPrior, start_as_residual

__all__ = [
    "DiscreteLagrangianModel",
    "SyMo",
    "E2ESyMo",
    "ImplicitNewtonLayer",
    "implicit_newton",
    "newton_active_set",
]


class ImplicitNewtonLayer(torch.autograd.Function):
    """Attach implicit-function-theorem gradients to a root ``z*`` of ``g(z; x, theta) = 0``.

    forward(z, g, J): ``z`` (B, n) the root (no graph), ``g`` (B, n) the residual evaluated at the
    detached root with a graph to ``x`` and ``theta``, ``J = dg/dz`` (B, n, n) at the root (no graph).
    Returns ``z``. backward: ``dL/dg = -J^-T dL/dz``, which autograd carries through ``g``'s graph to
    ``x`` and ``theta``: ``dL/dtheta = -dL/dz J^-1 dg/dtheta`` (the implicit function theorem).
    """

    @staticmethod
    def forward(ctx, z, g, J):
        ctx.save_for_backward(J)
        return z.clone()

    @staticmethod
    def backward(ctx, grad_z):
        (J,) = ctx.saved_tensors
        w = small_solve(J.transpose(-1, -2), grad_z)
        return None, -w, None


@torch.no_grad()
def newton_active_set(residual_and_jacobian, z0, tol, max_iter):
    """Batched Newton where each sample stops as soon as its own ``max_i |g_i| < tol``.

    residual_and_jacobian(z, rows) -> ``(g, J)`` (R, n), (R, n, n) for the samples ``rows`` (an
    index tensor, or None for all) at their iterates ``z`` (R, n). Samples that converged leave
    the batch, so the late iterations (a few hard or float32-noise-limited samples) cost little.
    At most ``max_iter`` updates. Returns ``(z, J, iterations)``: the iterates (B, n), the Jacobian
    at them (B, n, n) (at the last iterate for a sample that did not converge) and the number of
    updates made.
    """
    z = z0.clone()
    J_out = None
    rows = None                      # the samples still iterating (None: all of them)
    za = z0
    it = 0
    for it in range(max_iter + 1):
        g, J = residual_and_jacobian(za, rows)
        if J_out is None:
            J_out = J.new_empty(*z0.shape, z0.shape[-1])
        if it == max_iter:
            done = None
        else:
            ok = g.abs().amax(-1) < tol
            done = None if bool(ok.all()) else ok
        if done is None:             # everyone left is converged (or out of iterations)
            if rows is None:
                return za, J, it
            z[rows] = za
            J_out[rows] = J
            return z, J_out, it
        keep = (~done).nonzero().squeeze(1)
        if len(keep) < len(done):    # record the converged ones and drop them
            sel = done.nonzero().squeeze(1)
            tgt = sel if rows is None else rows[sel]
            z[tgt] = za[sel]
            J_out[tgt] = J[sel]
            rows = keep if rows is None else rows[keep]
            za, g, J = za[keep], g[keep], J[keep]
        za = za - small_solve(J, g)
    raise AssertionError("unreachable")


def implicit_newton(residual, residual_and_jacobian, z0, tol, max_iter):
    """Solve ``residual(z) = 0`` by Newton (no graph) and return the root with IFT gradients.

    residual(z) -> g (B, n), differentiable w.r.t. the parameters and inputs it closes over;
    residual_and_jacobian(z, rows) -> (g, J) without graph for the samples ``rows`` (None: all),
    used by the iterations (:func:`newton_active_set`) and for J at the root.
    """
    z, J, _ = newton_active_set(residual_and_jacobian, z0.detach(), tol, max_iter)
    g = residual(z)
    return ImplicitNewtonLayer.apply(z, g, J)


class DiscreteLagrangianModel(LearnedDynamics):
    """The shared parts of SyMo and E2E-SyMo: networks, DEL residual, Jacobian, Newton."""

    kind = "del"

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self.lagrangian = LagrangianNetworks(
            spec.angle_mask, spec.hidden, spec.layers, spec.inertia_eps, spec.init, spec.potential_scale
        )
        self.dissipation = build_dissipation(spec)
        self.prior: RigidBodyPrior | None = None
        if spec.lagrangian_prior == "robot":   # a residual on a fixed rigid body (engine/models/lagrangian_prior.py)
            if spec.robot is None:
                raise ValueError("lagrangian_prior 'robot' needs the spec's robot (a library name or robot file)")
            self.prior = RigidBodyPrior(spec.robot)
            start_as_residual(self.lagrangian, self.dissipation, self.prior)

    def mass_matrix(self, q):
        H = self.lagrangian.mass_matrix(q)
        return H if self.prior is None else H + self.prior.mass_matrix(q)

    def migrate_state(self, state: dict) -> dict:
        """A checkpoint of the dissipation's earlier layout in the current one (the same friction)."""
        return JointDissipation.migrate_state(state)

    def dissipative_force(self, qa, qb):
        """The midpoint discrete force ``h/2 Q((qb - qa)/h)`` (B, n) of the learned dissipation, or 0."""
        if self.dissipation is None:
            return torch.zeros_like(qa)
        return 0.5 * self.h * self.dissipation.force((qb - qa) / self.h).to(qa.dtype)

    def _dissipative_jacobian(self, qa, qb):
        """``d/dqb [h/2 Q((qb - qa)/h)] = 1/2 dQ/dv`` (B, n, n) (diagonal), or None."""
        if self.dissipation is None:
            return None
        return torch.diag_embed(0.5 * self.dissipation.force_derivative((qb - qa) / self.h).to(qa.dtype))

    def _slot_terms(self, qa, qb, order=1):
        """``(Hv, dHv, quad, terms, v)`` at the midpoint of (qa, qb): dHv[k] = dH/dq_k v, quad[k] = v^T dH/dq_k v."""
        v = (qb - qa) / self.h
        t = self.lagrangian.terms(0.5 * (qa + qb), order=order)
        if self.prior is not None:   # the prior's slots; its part of J only -M_rb/h (module doc there)
            M_rb, quad_rb, g_rb = self.prior.slot_terms(0.5 * (qa + qb), v)
            t.H = t.H + M_rb
            t.dV = t.dV + g_rb
            dHv = (t.dH @ v.unsqueeze(-2).unsqueeze(-1)).squeeze(-1)
            quad = (dHv @ v.unsqueeze(-1)).squeeze(-1) + quad_rb
            Hv = (t.H @ v.unsqueeze(-1)).squeeze(-1)
            return Hv, dHv, quad, t, v
        if self.n == 1:  # scalars: products instead of batched matrix products
            Hv = t.H.reshape(v.shape) * v
            dHv = t.dH.reshape(v.shape) * v
            return Hv, dHv.unsqueeze(-1), dHv * v, t, v
        Hv = (t.H @ v.unsqueeze(-1)).squeeze(-1)
        dHv = (t.dH @ v.unsqueeze(-2).unsqueeze(-1)).squeeze(-1)    # (B, k, i) = (dH/dq_k v)_i
        quad = (dHv @ v.unsqueeze(-1)).squeeze(-1)
        return Hv, dHv, quad, t, v

    def _slots(self, qa, qb):
        """``(D1 Ld(qa, qb), D2 Ld(qa, qb))`` (B, n) each."""
        Hv, _, quad, t, _ = self._slot_terms(qa, qb)
        common = 0.25 * self.h * quad - 0.5 * self.h * t.dV
        return common - Hv, common + Hv

    def d1_ld(self, qa, qb):
        return self._slots(qa, qb)[0]

    def d2_ld(self, qa, qb):
        return self._slots(qa, qb)[1]

    def velocity(self, q, q_next, u, u_next):
        """``qd_{k+1} = H(q_{k+1})^-1 p_{k+1}`` with the discrete Legendre transform
        ``p_{k+1} = D2 Ld(q_k, q_{k+1}) + fd+(u_k, u_{k+1})`` (B, n): the variational integrator's
        own velocity, second-order accurate (``(q_{k+1} - q_k)/h`` is the midpoint velocity, O(h) off)."""
        p = self.d2_ld(q, q_next) + 0.25 * self.h * self.force(u + u_next) + self.dissipative_force(q, q_next)
        return small_solve(self.mass_matrix(q_next), p)

    def forces(self, u_prev, u, u_next):
        """``fd+ + fd- = h/4 B (u_{k-1} + 2 u_k + u_{k+1})`` (B, n)."""
        return 0.25 * self.h * self.force(u_prev + 2.0 * u + u_next)

    def residual(self, q_prev, q, q_next, u_prev, u, u_next):
        """The DEL residual ``g`` (B, n); both collocation points in one network pass (2B)."""
        B = q.shape[0]
        d1, d2 = self._slots(torch.cat([q_prev, q]), torch.cat([q, q_next]))
        g = d2[:B] + d1[B:] + self.forces(u_prev, u, u_next)
        if self.dissipation is not None:
            g = g + self.dissipative_force(q_prev, q) + self.dissipative_force(q, q_next)
        return g

    def _newton_problem(self, q_prev, q, u_prev, u, u_next, const=None):
        """Closures for Newton in ``q_{k+1}``: ``(residual(z), residual_and_jacobian(z))``.

        ``const``: the part of ``g`` that does not depend on ``q_{k+1}``,
        ``D2 Ld(q_{k-1}, q_k) + fd+ + fd-`` (B, n) (with the dissipation's ``h/2 Q(v_{k-1,k})``),
        when the caller has it already.
        """
        h = self.h
        if const is None:
            with torch.no_grad():
                const = self.d2_ld(q_prev, q) + self.forces(u_prev, u, u_next) + self.dissipative_force(q_prev, q)

        def residual(z):
            return self.residual(q_prev, q, z, u_prev, u, u_next)

        def residual_and_jacobian(z, rows=None, graph=False):
            with torch.set_grad_enabled(graph and torch.is_grad_enabled()):
                qk = q if rows is None else q[rows]
                Hv, dHv, quad, t, v = self._slot_terms(qk, z, order=2)
                if graph:
                    c = self.d2_ld(q_prev, q) + self.forces(u_prev, u, u_next) + self.dissipative_force(q_prev, q)
                else:
                    c = const if rows is None else const[rows]
                g = c + (-Hv + 0.25 * h * quad - 0.5 * h * t.dV)
                if self.dissipation is not None:
                    g = g + self.dissipative_force(qk, z)
                if self.n == 1:  # the dHv terms cancel; v^T d2H v = d2H v^2
                    J = (-t.H.reshape(v.shape) / h + 0.125 * h * t.d2H.reshape(v.shape) * v * v
                         - 0.25 * h * t.d2V.reshape(v.shape)).unsqueeze(-1)
                else:
                    vv = v.unsqueeze(-1) * v.unsqueeze(-2)
                    d2Hvv = (t.d2H * vv.unsqueeze(-3).unsqueeze(-3)).sum((-1, -2))
                    J = -t.H / h - 0.5 * dHv.transpose(-1, -2) + 0.5 * dHv + 0.125 * h * d2Hvv - 0.25 * h * t.d2V
                dJ = self._dissipative_jacobian(qk, z)
                if dJ is not None:
                    J = J + dJ
            return g, J

        return residual, residual_and_jacobian

    def jacobian(self, q_prev, q, q_next, u_prev, u, u_next):
        """``dg/dq_{k+1}`` (B, n, n) in closed form (no graph)."""
        return self._newton_problem(q_prev, q, u_prev, u, u_next)[1](q_next)[1]

    def solve_next(self, q_prev, q, u_prev, u, u_next, tol=None, max_iter=None):
        """Newton from ``2 q_k - q_{k-1}`` (no graph)."""
        tol = self.spec.newton_tol if tol is None else tol
        max_iter = self.spec.newton_max_iter if max_iter is None else max_iter
        _, rj = self._newton_problem(q_prev, q, u_prev, u, u_next)
        with torch.no_grad():
            z = newton_active_set(rj, 2.0 * q - q_prev, tol, max_iter)[0]
        return z

    def solve_next_implicit(self, q_prev, q, u_prev, u, u_next, tol=None, max_iter=None):
        """``q_{k+1}`` with implicit-function-theorem gradients (E2E-SyMo's layer)."""
        tol = self.spec.train_newton_tol if tol is None else tol
        max_iter = self.spec.train_newton_max_iter if max_iter is None else max_iter
        if not torch.is_grad_enabled():
            r, rj = self._newton_problem(q_prev, q, u_prev, u, u_next)
            return implicit_newton(r, rj, (2.0 * q - q_prev).detach(), tol, max_iter)
        # the slot that does not depend on q_{k+1} once, with its graph: Newton's constant and
        # part of the residual at the root (instead of a separate graph-free pass)
        f = self.forces(u_prev, u, u_next) + self.dissipative_force(q_prev, q)
        d2 = self.d2_ld(q_prev, q)
        _, rj = self._newton_problem(q_prev, q, u_prev, u, u_next, const=(d2 + f).detach())
        return implicit_newton(
            lambda z: d2 + self.d1_ld(q, z) + f + self.dissipative_force(q, z), rj, (2.0 * q - q_prev).detach(),
            tol, max_iter
        )

    def solve_next_unrolled(self, q_prev, q, u_prev, u, u_next, iterations=20):
        """Newton with the graph through every iteration (for checking the implicit gradients)."""
        _, rj = self._newton_problem(q_prev, q, u_prev, u, u_next)
        z = 2.0 * q - q_prev
        for _ in range(iterations):
            g, J = rj(z, graph=True)
            z = z - small_solve(J, g)
        return z


class SyMo(DiscreteLagrangianModel):
    """Trained on the DEL residual ``mean_b |g_b|^2`` of observed triples."""

    def loss(self, w: Windows) -> torch.Tensor:
        g = self.residual(w.q_prev, w.q, w.q_next, w.u_prev, w.u, w.u_next)
        return (g ** 2).sum(-1).mean()


class E2ESyMo(DiscreteLagrangianModel):
    """Trained end to end on the MSE of the Newton solution ``q^_{k+1}``."""

    def loss(self, w: Windows) -> torch.Tensor:
        q_next = self.solve_next_implicit(w.q_prev, w.q, w.u_prev, w.u, w.u_next)
        return ((q_next - w.q_next) ** 2).mean()
