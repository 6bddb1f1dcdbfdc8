"""Forward dynamics of a tree closed by holonomic constraints (loop closures, welds, tendons).

:func:`constrained_forward_dynamics` solves the KKT system of the constrained equations of motion
(as Pinocchio's ``constraintDynamics`` and MuJoCo's hard limit of its equality constraints)::

    [ M  J^T ] [  qdd    ]   [ tau - h                           ]
    [ J   0  ] [ -lambda ] = [ -Jdot v - kd J v - kp r(q)          ]

``M`` the mass matrix, ``h`` the bias forces (and joint damping when asked), ``r, J`` the
constraints' residual and Jacobian (:mod:`engine.robots.constraints`), ``lambda`` the constraint
forces (one per row: N on ``body1`` at a loop's anchor in the world frame, N m-like on a weld's
orientation rows, N or N m on a tendon row; ``J^T lambda`` is the generalised force they apply).
By the Schur complement: ``A lambda = b`` with ``A = J M^-1 J^T`` and ``b = gamma - J M^-1 (tau - h)``.

**Baumgarte stabilisation** (``kp`` 1/s^2, ``kd`` 1/s; :class:`Baumgarte`): the rows' acceleration
is ``-kd r-dot - kp r`` instead of zero, so an error decays like a critically damped spring
(defaults ``kp = 100``, ``kd = 20``: ``omega = 10`` rad/s). Zero gains give the exact constrained
acceleration (Pinocchio's default corrector). Simulation also projects the state back onto the
constraints after every step (:func:`project_state`), which keeps the drift at rounding level.

**Redundant constraints** (a planar four-bar closed by a 3-row ``connect``: one row repeats the
others; rank-deficient ``J``, singular ``A``): ``A`` is regularised by ``mu = 1e-10 * trace(A) / m``
and refined by proximal iterations ``lambda += (A + mu I)^-1 (b - A lambda)`` (Pinocchio's proximal
solver), which converge to the least-squares ``lambda`` of the consistent system: the motion is
exact; the split of force between redundant rows is the minimum-norm one (not unique physically).

**Tendon limits** (:class:`~engine.robots.constraints.TendonLimit`, unilateral): each limit's
nearer bound gives a row ``g = L - lower >= 0`` (or ``upper - L``), active when the tendon is at
or beyond it (``g <= ACTIVE_GAP``). An active row is solved with the equalities (target
acceleration ``-kd g-dot - kp g``); its force must push (``lambda >= 0``): a row that would
pull is released and the system solved again (an active-set step, at most one round per limit:
the linear complementarity problem of a hard contact). Simulation's projection keeps lengths in
range and removes the velocity out of it (an inelastic stop at the bound), with the same sign rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.robots.constraints import (
    constraint_drift,
    constraint_terms,
    equalities,
    limit_terms,
    tendon_limits,
)
from engine.robots.model_build import check_forward_dynamics

__all__ = [
    "Baumgarte",
    "ConstrainedAcceleration",
    "check_constraints_hold",
    "constrained_forward_dynamics",
    "project_state",
]

_PROXIMAL_ITERATIONS = 8
_RELATIVE_DAMPING = 1e-10
ACTIVE_GAP = 1e-9           # m or rad: a tendon this close to a bound (or beyond) may be pushed


@dataclass(frozen=True)
class Baumgarte:
    """Baumgarte gains: constraint error acceleration ``-kd r-dot - kp r`` (kp in 1/s^2, kd in 1/s)."""

    kp: float = 100.0
    kd: float = 20.0


@dataclass
class ConstrainedAcceleration:
    """qdd ``(..., nv)``; forces ``(..., m)`` (lambda of the equality rows, see the module
    docstring); residual ``(..., m)``; ``limit_forces (..., k)``: each tendon limit's force along
    its tendon (N or N m; positive lengthens it: pushing at the lower bound; 0 when inactive)."""

    qdd: torch.Tensor
    forces: torch.Tensor
    residual: torch.Tensor
    limit_forces: torch.Tensor | None = None


def _cholesky(A: torch.Tensor, what: str) -> torch.Tensor:
    """Lower Cholesky factor of ``A (B, k, k)``; ValueError naming ``what`` when not positive definite."""
    L, info = torch.linalg.cholesky_ex(A)
    if bool((info != 0).any()):
        raise ValueError(f"constrained dynamics: the {what} is not positive definite (a massless moving body, "
                         "or constraints that lock a body with no inertia)")
    return L


def _solve_forces(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``lambda (B, m)`` of ``A lambda = b``, ``A (B, m, m)`` symmetric positive semi-definite,
    by damped proximal iterations (see the module docstring)."""
    m = A.shape[-1]
    scale = torch.diagonal(A, dim1=-2, dim2=-1).sum(-1).clamp(min=1e-300) / m
    mu = (_RELATIVE_DAMPING * scale)[:, None, None] * torch.eye(m, dtype=A.dtype, device=A.device)
    L = _cholesky(A + mu, "constraint matrix J M^-1 J^T")
    lam = torch.zeros_like(b)
    for _ in range(_PROXIMAL_ITERATIONS):
        res = b - (A @ lam[..., None])[..., 0]
        lam = lam + torch.cholesky_solve(res[..., None], L)[..., 0]
    return lam


def _limit_gaps(model, limits, q) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each limit's gap to its nearer bound ``g (B, k)`` (>= 0 in range), the row ``dg/dq (B, k, nv)``
    and the side ``s (B, k)`` (+1 lower, -1 upper)."""
    L, a = limit_terms(model, limits, q)
    lo = L.new_tensor([float(c.lower) for c in limits])
    hi = L.new_tensor([float(c.upper) for c in limits])
    lower = (L - lo) <= (hi - L)
    s = torch.where(lower, 1.0, -1.0).to(L.dtype)
    g = torch.where(lower, L - lo, hi - L)
    return g, s[..., None] * a, s


def _active_set_solve(A: torch.Tensor, b: torch.Tensor, n_eq: int, candidate: torch.Tensor) -> torch.Tensor:
    """``lambda (B, m + k)`` of ``A lambda = b`` over the equality rows and the ``candidate (B, k)``
    unilateral rows, every unilateral ``lambda >= 0``: rows that would pull are released (their
    lambda 0, their equation dropped) and the system solved again until none does."""
    active = candidate.clone()
    k = active.shape[-1]
    lam = b.new_zeros(b.shape)
    for _ in range(k + 1):
        keep = torch.cat([active.new_ones(active.shape[:-1] + (n_eq,)), active], -1).to(A.dtype)
        A_m = A * keep[:, :, None] * keep[:, None, :] + torch.diag_embed(1.0 - keep)
        lam = _solve_forces(A_m, b * keep)
        pulling = active & (lam[:, n_eq:] < 0)
        if not bool(pulling.any()):
            break
        active = active & ~pulling
    return lam


def constrained_forward_dynamics(model, constraints, q, v, tau, gains: Baumgarte | None = Baumgarte(),
                                 gravity=True, damping: bool = False) -> ConstrainedAcceleration:
    """Accelerations and constraint forces of ``model`` closed by ``constraints`` at ``q (..., nq)``,
    ``v (..., nv)`` under joint forces ``tau (..., nv)`` (see the module docstring; ``gains=None``:
    no Baumgarte term, the exact acceleration; ``damping``: subtract the joints' ``D v``)."""
    check_forward_dynamics(model.name, model.singular_joints)
    dt, dev = model.dtype, model.device
    q, v, tau = (torch.as_tensor(x, dtype=dt, device=dev) for x in (q, v, tau))
    shape = torch.broadcast_shapes(q.shape[:-1], v.shape[:-1], tau.shape[:-1])
    q = q.expand(shape + q.shape[-1:]).reshape(-1, model.nq)
    v = v.expand(shape + v.shape[-1:]).reshape(-1, model.nv)
    tau = tau.expand(shape + tau.shape[-1:]).reshape(-1, model.nv)
    M = model.mass_matrix(q)
    f = tau - model.bias_forces(q, v, gravity=gravity)
    if damping:
        f = f - model._damping_forces(v)
    Lm = _cholesky(M, "mass matrix")
    qdd_free = torch.cholesky_solve(f[..., None], Lm)[..., 0]
    limits = tendon_limits(constraints)
    constraints = equalities(constraints)
    r, J = constraint_terms(model, constraints, q)
    m, k = r.shape[-1], len(limits)
    forces_along = r.new_zeros(r.shape[0], k)
    near = torch.zeros(k, dtype=torch.bool, device=r.device)
    if k:                   # the limits' rows are linear in q (no drift term); only those at a bound count
        g, Jg, s = _limit_gaps(model, limits, q)
        candidate = g <= ACTIVE_GAP
        near = candidate.any(0)
        g, Jg, s, candidate = g[:, near], Jg[:, near], s[:, near], candidate[:, near]
    if m + int(near.sum()) == 0:
        return ConstrainedAcceleration(qdd_free.reshape(shape + (model.nv,)), r.reshape(shape + (0,)),
                                       r.reshape(shape + (0,)), forces_along.reshape(shape + (k,)))
    gamma = -constraint_drift(model, constraints, q, v) if m else r
    if gains is not None:
        gamma = gamma - gains.kd * (J @ v[..., None])[..., 0] - gains.kp * r
    if bool(near.any()):
        gamma_g = torch.zeros_like(g)
        if gains is not None:
            gamma_g = -gains.kd * (Jg @ v[..., None])[..., 0] - gains.kp * g
        J, gamma = torch.cat([J, Jg], -2), torch.cat([gamma, gamma_g], -1)
    MinvJt = torch.cholesky_solve(J.transpose(-1, -2), Lm)            # (B, nv, m + limits at a bound)
    A = J @ MinvJt
    b = gamma - (J @ qdd_free[..., None])[..., 0]
    lam = _active_set_solve(A, b, m, candidate) if bool(near.any()) else _solve_forces(A, b)
    qdd = qdd_free + (MinvJt @ lam[..., None])[..., 0]
    if bool(near.any()):
        forces_along[:, near] = lam[:, m:] * s
    return ConstrainedAcceleration(qdd.reshape(shape + (model.nv,)), lam[:, :m].reshape(shape + (m,)),
                                   r.reshape(shape + (m,)), forces_along.reshape(shape + (k,)))


def project_state(model, constraints, q, v, tol: float = 1e-12,
                  iterations: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q, v)`` moved onto the constraints: Gauss-Newton steps ``q (+)= -J^+ r`` until
    ``|r| < tol`` (at most ``iterations``), then ``v -= M^-1 J^T (J M^-1 J^T)^+ J v`` (the
    mass-weighted projection: the kinetic energy removed is the least). ``q (..., nq)``,
    ``v (..., nv)``; used by simulation after every step. Tendon limits: a length beyond its
    range is brought back to the bound, and a velocity out of the range at the bound removed
    (with the equalities; an impulse that would pull the tendon back into range is released)."""
    dt, dev = model.dtype, model.device
    q = torch.as_tensor(q, dtype=dt, device=dev)
    v = torch.as_tensor(v, dtype=dt, device=dev)
    shape = q.shape[:-1]
    q, v = q.reshape(-1, model.nq), v.reshape(-1, model.nv)
    limits = tendon_limits(constraints)
    constraints = equalities(constraints)

    def terms(q):
        r, J = constraint_terms(model, constraints, q)
        if not limits:
            return r, J
        g, Jg, _ = _limit_gaps(model, limits, q)
        out = g < 0                                      # beyond the range: back to the bound
        return torch.cat([r, torch.where(out, g, 0.0)], -1), torch.cat([J, Jg * out[..., None]], -2)

    for _ in range(iterations):
        r, J = terms(q)
        if r.shape[-1] == 0 or float(r.abs().max()) < tol:
            break
        step = torch.linalg.lstsq(J, -r[..., None], rcond=None, driver="gelsd").solution[..., 0] \
            if q.device.type == "cpu" else (torch.linalg.pinv(J) @ -r[..., None])[..., 0]
        q = model.integrate(q, step)
    r, J = constraint_terms(model, constraints, q)
    m = r.shape[-1]
    candidate = None
    if limits:
        g, Jg, _ = _limit_gaps(model, limits, q)
        candidate = (g <= ACTIVE_GAP) & ((Jg @ v[..., None])[..., 0] < 0)     # at a bound, moving out
        near = candidate.any(0)
        candidate = candidate[:, near] if bool(near.any()) else None
        J = torch.cat([J, Jg[:, near]], -2)
    if m or candidate is not None:
        M = model.mass_matrix(q)
        Lm = _cholesky(M, "mass matrix")
        MinvJt = torch.cholesky_solve(J.transpose(-1, -2), Lm)
        b = -(J @ v[..., None])[..., 0]
        A = J @ MinvJt
        mu = _solve_forces(A, b) if candidate is None else _active_set_solve(A, b, m, candidate)
        v = v + (MinvJt @ mu[..., None])[..., 0]
    return q.reshape(shape + (model.nq,)), v.reshape(shape + (model.nv,))


def check_constraints_hold(model, constraints, q, tol: float = 1e-6) -> None:
    """ValueError naming the constraint whose residual at ``q (nq,)`` exceeds ``tol`` (m or
    rad-like): a configuration the loops cannot close from (the mechanism cannot reach it).
    Tendon limits are not checked here (the projection brings lengths into range)."""
    constraints = equalities(constraints)
    r = constraint_terms(model, constraints, q)[0].reshape(-1)
    start = 0
    for c in constraints:
        err = float(r[start:start + c.rows].abs().max())
        if not err <= tol:
            raise ValueError(f"robot {model.name!r}: constraint {c.name!r} ({c.kind}) cannot be closed from this "
                             f"configuration (error {err:.3g} after projection); start from a pose where the "
                             "loop closes, such as the file's own (all joints at their reference)")
        start += c.rows
