"""Cycle multipliers: eigenvalues of the monodromy matrix dPhi_T/dx0 of a periodic orbit.

The flow map ``Phi_T`` is the composition of fixed RK4 steps; its Jacobian is taken by
automatic differentiation of that map and can be checked against central finite differences.
The default ("batched") pushes ``n`` copies of ``x0`` through the batched flow in one pass
and back-propagates the diagonal: row ``i`` of the Jacobian is the gradient of the ``i``-th
output of copy ``i``. ``method="jacfwd"`` uses ``torch.func.jacfwd`` (same numbers, slower on
CPU for long unrolled loops). For an autonomous system one multiplier is
trivially 1 (perturbations along the flow); it is identified as the eigenvalue whose
eigenvector is most parallel to ``f(x0)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.func import jacfwd

from engine.eigenmodes.dynamics import rk4_step, rk4_trajectory

__all__ = [
    "classify_multipliers",
    "flow_map",
    "monodromy",
    "monodromy_fd",
    "return_time",
    "stabilised_cycle_multipliers",
]


def flow_map(f: Callable, duration: float, steps: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """``x0 (..., n) -> x(duration)`` by ``steps`` RK4 steps."""
    dt = duration / steps

    def phi(x0: torch.Tensor) -> torch.Tensor:
        x = x0
        for _ in range(steps):
            x = rk4_step(f, x, dt)
        return x

    return phi


def monodromy(f: Callable, x0: torch.Tensor, duration: float, steps: int,
              method: str = "batched") -> torch.Tensor:
    """dPhi/dx0 ``(n, n)`` by automatic differentiation of the RK4 flow map (``f`` must be batched)."""
    phi = flow_map(f, duration, steps)
    if method == "jacfwd":
        return jacfwd(phi)(x0)
    if method != "batched":
        raise ValueError(f"monodromy: unknown method {method!r} (use 'batched' or 'jacfwd')")
    n = x0.shape[-1]
    with torch.enable_grad():
        xb = x0.detach().expand(n, n).clone().requires_grad_(True)
        out = phi(xb)
        (jac,) = torch.autograd.grad(out.diagonal().sum(), xb)
    return jac


def monodromy_fd(
    f: Callable, x0: torch.Tensor, duration: float, steps: int, eps: float = 1e-6
) -> torch.Tensor:
    """dPhi/dx0 ``(n, n)`` by central finite differences (the reference for :func:`monodromy`)."""
    phi = flow_map(f, duration, steps)
    n = x0.shape[-1]
    with torch.no_grad():
        cols = []
        for i in range(n):
            e = torch.zeros_like(x0)
            e[i] = eps
            cols.append((phi(x0 + e) - phi(x0 - e)) / (2 * eps))
    return torch.stack(cols, -1)


def classify_multipliers(matrix: np.ndarray, flow_direction: np.ndarray) -> dict:
    """Eigenvalues of the monodromy ``matrix`` with the trivial one (along ``flow_direction``) found.

    Returns ``{"multipliers": complex array, "trivial_index": int, "nontrivial": complex array,
    "max_nontrivial_modulus": float}``.
    """
    vals, vecs = np.linalg.eig(np.asarray(matrix))
    d = np.asarray(flow_direction, dtype=float)
    d = d / (np.linalg.norm(d) + 1e-300)
    align = [abs(np.vdot(vecs[:, i] / np.linalg.norm(vecs[:, i]), d)) for i in range(len(vals))]
    trivial = int(np.argmax(align))
    nontrivial = np.delete(vals, trivial)
    return {"multipliers": vals, "trivial_index": trivial, "nontrivial": nontrivial,
            "max_nontrivial_modulus": float(np.max(np.abs(nontrivial))) if nontrivial.size else 0.0}


def return_time(f: Callable, x_star: torch.Tensor, period_guess: float, dt: float) -> float:
    """Time of first return to the section through ``x_star`` normal to ``f(x_star)`` near ``period_guess``.

    Integrates to 1.5 periods with step ``dt`` and interpolates the crossing linearly.
    """
    with torch.no_grad():
        n = f(x_star)
        steps = int(np.ceil(1.5 * period_guess / dt))
        xs = rk4_trajectory(f, x_star, steps * dt, steps)
        g = ((xs - x_star) * n).sum(-1).numpy()
    start = int(0.5 * period_guess / dt)
    for i in range(start, steps):
        if g[i] < 0 <= g[i + 1]:
            return (i + g[i] / (g[i] - g[i + 1])) * dt
    raise ValueError("the stabilised orbit did not return to its Poincare section within 1.5 periods")


def stabilised_cycle_multipliers(controller, settle_periods: float = 3.0, steps_per_period: int = 500,
                                 check_fd: bool = True, fd_eps: float = 1e-6) -> dict:
    """Cycle multipliers of the stabilised closed loop around the learned mode.

    Starts on the desired orbit at phase T/4 (away from the turning points, where p/|p| is
    singular), settles for ``settle_periods`` onto the numerical limit cycle, finds the return
    time, and differentiates the flow map over it. Returns the classified multipliers, the
    return time and (if ``check_fd``) the largest difference to the finite-difference matrix.
    """
    orbit = controller.orbit
    T = orbit.period
    dt = T / steps_per_period
    f = controller.field
    with torch.no_grad():
        x = orbit.state_at(torch.tensor(T / 4, dtype=torch.float64))
        n_settle = int(round(settle_periods * steps_per_period))
        if n_settle:
            x = rk4_trajectory(f, x, n_settle * dt, n_settle)[-1]
    t_ret = return_time(f, x, T, dt)
    steps = max(1, int(round(t_ret / dt)))
    mat = monodromy(f, x, t_ret, steps)
    with torch.no_grad():
        closure = float((flow_map(f, t_ret, steps)(x) - x).norm())
        direction = f(x).numpy()
    out = classify_multipliers(mat.numpy(), direction)
    out.update({"monodromy": mat.numpy(), "return_time": t_ret, "closure_error": closure, "start": x.numpy()})
    if check_fd:
        fd = monodromy_fd(f, x, t_ret, steps, fd_eps)
        out["fd_max_abs_error"] = float((fd - mat).abs().max())
    return out
