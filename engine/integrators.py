"""One-step integrators with a uniform signature, and a batched Newton solver.

Explicit steps take ``f(x, u) -> xdot`` with ``x`` (..., d), ``u`` (..., m) held constant over
the step, and a time step ``h`` (s); they return ``x`` after one step (..., d).
:func:`newton_solve` finds roots of a batched residual ``g(z) -> (g (..., n), J (..., n, n))``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = [
    "rk4_step",
    "rk4_step_t",
    "midpoint_step",
    "euler_step",
    "STEPPERS",
    "get_stepper",
    "newton_solve",
    "small_solve",
]

VectorField = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def euler_step(f: VectorField, x: torch.Tensor, u: torch.Tensor, h: float) -> torch.Tensor:
    return x + h * f(x, u)


def midpoint_step(f: VectorField, x: torch.Tensor, u: torch.Tensor, h: float) -> torch.Tensor:
    """Explicit midpoint rule (second order)."""
    k1 = f(x, u)
    return x + h * f(x + 0.5 * h * k1, u)


def rk4_step_t(
    f: Callable[[float, torch.Tensor], torch.Tensor], t: float, x: torch.Tensor, h
) -> torch.Tensor:
    """Classical fourth-order Runge-Kutta for a time-varying field ``f(t, x) -> xdot``.

    The one RK4 of the project: every other RK4 (:func:`rk4_step`, the robot simulation, the
    eigenmode closed loop, the self-test) calls this. ``h`` may be a float or a 0-d tensor
    (gradients then flow through the step size); ``x`` keeps its leading batch dimensions.
    """
    k1 = f(t, x)
    k2 = f(t + 0.5 * h, x + 0.5 * h * k1)
    k3 = f(t + 0.5 * h, x + 0.5 * h * k2)
    k4 = f(t + h, x + h * k3)
    return x + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def rk4_step(f: VectorField, x: torch.Tensor, u: torch.Tensor, h: float) -> torch.Tensor:
    """Classical fourth-order Runge-Kutta with ``u`` held over the step (:func:`rk4_step_t`)."""
    return rk4_step_t(lambda _t, x_: f(x_, u), 0.0, x, h)


STEPPERS = {"rk4": rk4_step, "midpoint": midpoint_step, "euler": euler_step}


def get_stepper(name: str):
    try:
        return STEPPERS[name]
    except KeyError:
        raise ValueError(
            f"unknown integrator {name!r}; choose one of {', '.join(sorted(STEPPERS))}"
        ) from None


def small_solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Solve ``A x = b`` for batches of small systems: ``A`` (..., n, n), ``b`` (..., n) -> ``x`` (..., n).

    n = 1 and n = 2 in closed form (Cramer's rule: a few fused elementwise ops instead of a
    batched LU, several times faster for the 1- and 2-DOF systems here); larger n by
    ``torch.linalg.solve``. A singular ``A`` gives inf/NaN, not an exception.
    """
    n = A.shape[-1]
    if n == 1:
        return b / A[..., 0]
    if n == 2:
        a, c, d, e = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
        det = a * e - c * d
        b0, b1 = b[..., 0], b[..., 1]
        return torch.stack([e * b0 - c * b1, a * b1 - d * b0], -1) / det.unsqueeze(-1)
    return torch.linalg.solve_ex(A, b.unsqueeze(-1))[0].squeeze(-1)


def newton_solve(residual: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
                 z0: torch.Tensor, tol: float = 1e-4, max_iter: int = 10):
    """Batched Newton's method: ``z <- z - J(z)^-1 g(z)`` until ``max |g| < tol`` or ``max_iter``.

    residual(z) returns ``(g, J)`` with ``g`` (..., n) and ``J = dg/dz`` (..., n, n).
    Converged samples keep iterating with the others (a zero-cost correction), so the loop is
    one batched solve per iteration. Returns ``(z, iterations, J)`` with ``J`` the Jacobian at the
    returned ``z`` when it converged (None after ``max_iter`` updates); call under ``no_grad``
    unless you mean to unroll.
    """
    z = z0
    it = 0
    for it in range(1, max_iter + 1):
        g, J = residual(z)
        if float(g.abs().max()) < tol:
            return z, it - 1, J
        z = z - small_solve(J, g)
    return z, it, None
