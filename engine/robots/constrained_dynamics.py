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
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.robots.constraints import constraint_drift, constraint_terms

__all__ = [
    "Baumgarte",
    "ConstrainedAcceleration",
    "check_constraints_hold",
    "constrained_forward_dynamics",
    "project_state",
]

_PROXIMAL_ITERATIONS = 8
_RELATIVE_DAMPING = 1e-10


@dataclass(frozen=True)
class Baumgarte:
    """Baumgarte gains: constraint error acceleration ``-kd r-dot - kp r`` (kp in 1/s^2, kd in 1/s)."""

    kp: float = 100.0
    kd: float = 20.0


@dataclass
class ConstrainedAcceleration:
    """qdd ``(..., nv)``; forces ``(..., m)`` (lambda, see the module docstring); residual ``(..., m)``."""

    qdd: torch.Tensor
    forces: torch.Tensor
    residual: torch.Tensor


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


def constrained_forward_dynamics(model, constraints, q, v, tau, gains: Baumgarte | None = Baumgarte(),
                                 gravity=True, damping: bool = False) -> ConstrainedAcceleration:
    """Accelerations and constraint forces of ``model`` closed by ``constraints`` at ``q (..., nq)``,
    ``v (..., nv)`` under joint forces ``tau (..., nv)`` (see the module docstring; ``gains=None``:
    no Baumgarte term, the exact acceleration; ``damping``: subtract the joints' ``D v``)."""
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
    r, J = constraint_terms(model, constraints, q)
    if r.shape[-1] == 0:
        return ConstrainedAcceleration(qdd_free.reshape(shape + (model.nv,)), r.reshape(shape + (0,)),
                                       r.reshape(shape + (0,)))
    gamma = -constraint_drift(model, constraints, q, v)
    if gains is not None:
        gamma = gamma - gains.kd * (J @ v[..., None])[..., 0] - gains.kp * r
    MinvJt = torch.cholesky_solve(J.transpose(-1, -2), Lm)            # (B, nv, m)
    A = J @ MinvJt
    b = gamma - (J @ qdd_free[..., None])[..., 0]
    lam = _solve_forces(A, b)
    qdd = qdd_free + (MinvJt @ lam[..., None])[..., 0]
    m = r.shape[-1]
    return ConstrainedAcceleration(qdd.reshape(shape + (model.nv,)), lam.reshape(shape + (m,)),
                                   r.reshape(shape + (m,)))


def project_state(model, constraints, q, v, tol: float = 1e-12,
                  iterations: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q, v)`` moved onto the constraints: Gauss-Newton steps ``q (+)= -J^+ r`` until
    ``|r| < tol`` (at most ``iterations``), then ``v -= M^-1 J^T (J M^-1 J^T)^+ J v`` (the
    mass-weighted projection: the kinetic energy removed is the least). ``q (..., nq)``,
    ``v (..., nv)``; used by simulation after every step."""
    dt, dev = model.dtype, model.device
    q = torch.as_tensor(q, dtype=dt, device=dev)
    v = torch.as_tensor(v, dtype=dt, device=dev)
    shape = q.shape[:-1]
    q, v = q.reshape(-1, model.nq), v.reshape(-1, model.nv)
    for _ in range(iterations):
        r, J = constraint_terms(model, constraints, q)
        if r.shape[-1] == 0 or float(r.abs().max()) < tol:
            break
        step = torch.linalg.lstsq(J, -r[..., None], rcond=None, driver="gelsd").solution[..., 0] \
            if q.device.type == "cpu" else (torch.linalg.pinv(J) @ -r[..., None])[..., 0]
        q = model.integrate(q, step)
    r, J = constraint_terms(model, constraints, q)
    if r.shape[-1]:
        M = model.mass_matrix(q)
        Lm = _cholesky(M, "mass matrix")
        MinvJt = torch.cholesky_solve(J.transpose(-1, -2), Lm)
        lam = _solve_forces(J @ MinvJt, (J @ v[..., None])[..., 0])
        v = v - (MinvJt @ lam[..., None])[..., 0]
    return q.reshape(shape + (model.nq,)), v.reshape(shape + (model.nv,))


def check_constraints_hold(model, constraints, q, tol: float = 1e-6) -> None:
    """ValueError naming the constraint whose residual at ``q (nq,)`` exceeds ``tol`` (m or
    rad-like): a configuration the loops cannot close from (the mechanism cannot reach it)."""
    r = constraint_terms(model, constraints, q)[0].reshape(-1)
    start = 0
    for c in constraints:
        err = float(r[start:start + c.rows].abs().max())
        if not err <= tol:
            raise ValueError(f"robot {model.name!r}: constraint {c.name!r} ({c.kind}) cannot be closed from this "
                             f"configuration (error {err:.3g} after projection); start from a pose where the "
                             "loop closes, such as the file's own (all joints at their reference)")
        start += c.rows
