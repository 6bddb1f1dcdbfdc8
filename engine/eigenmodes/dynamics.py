"""The closed loop of plant and learned potential, and fixed-step RK4 trajectories of it.

State ``x = (q1, q2, p1, p2)``, shape ``(..., 4)``. The closed loop is conservative with
``H_cl(q, p) = H(q, p) + V_theta(q)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from engine.integrators import rk4_step_t
from engine.systems.double_pendulum import DoublePendulumParams, hamiltonian, hamiltonian_vector_field

__all__ = ["closed_loop_energy", "closed_loop_field", "rk4_step", "rk4_trajectory"]

VectorField = Callable[[torch.Tensor], torch.Tensor]


def closed_loop_field(potential, plant: DoublePendulumParams, fused: bool = True) -> VectorField:
    """``f(x) -> xd`` for the plant with ``u = -dV_theta/dq`` (``potential=None``: the bare plant).

    With ``fused`` and a one-hidden-layer potential, the plant and the potential's gradient are
    written out in one function with shared trigonometry (fewer tensor operations per RK4
    stage: the learning loop is overhead-bound); the result equals the composed form.
    """
    hidden = getattr(potential, "hidden", None)
    if fused and hidden is not None and len(hidden) == 1:
        return _fused_field(potential, plant)

    def f(x: torch.Tensor) -> torch.Tensor:
        q, p = x[..., :2], x[..., 2:]
        u = None if potential is None else -potential.gradient(q)
        qd, pd = hamiltonian_vector_field(q, p, u, plant)
        return torch.cat([qd, pd], -1)

    return f


def _fused_field(potential, P: DoublePendulumParams) -> VectorField:
    a = (P.m1 + P.m2) * P.l1 ** 2 + P.m2 * P.l2 ** 2
    b = P.m2 * P.l1 * P.l2
    c = P.m2 * P.l2 ** 2
    g1 = (P.m1 + P.m2) * P.g * P.l1
    g2 = P.m2 * P.g * P.l2
    layer, out = potential.hidden[0], potential.out

    def f(x: torch.Tensor) -> torch.Tensor:
        q = x[..., :2]
        q1, q2, p1, p2 = x.unbind(-1)
        c2 = torch.cos(q2)
        m12 = c + b * c2
        m11 = m12 + (a - c) + b * c2
        inv_det = 1.0 / (m11 * c - m12 * m12)
        qd1 = (c * p1 - m12 * p2) * inv_det
        qd2 = (m11 * p2 - m12 * p1) * inv_det
        s12 = g2 * torch.sin(q1 + q2)
        h = torch.tanh(torch.nn.functional.linear(q, layer.weight, layer.bias))
        w = out.weight[0]
        dv1, dv2 = ((w - w * h * h) @ layer.weight).unbind(-1)
        pd1 = -(g1 * torch.sin(q1) + s12 + P.k1 * q1) - dv1
        pd2 = -(s12 + P.k2 * q2) - b * torch.sin(q2) * qd1 * (qd1 + qd2) - dv2
        return torch.stack([qd1, qd2, pd1, pd2], -1)

    return f


def closed_loop_energy(x: torch.Tensor, potential, plant: DoublePendulumParams) -> torch.Tensor:
    """H_cl = H + V_theta in J, ``(...)``."""
    q, p = x[..., :2], x[..., 2:]
    h = hamiltonian(q, p, plant)
    return h if potential is None else h + potential(q)


def rk4_step(f: VectorField, x: torch.Tensor, dt) -> torch.Tensor:
    """One classical Runge-Kutta step of size ``dt`` (a float or a 0-d tensor, differentiable),
    by the engine's one RK4 (:func:`engine.integrators.rk4_step_t`)."""
    return rk4_step_t(lambda _t, x_: f(x_), 0.0, x, dt)


def rk4_trajectory(f: VectorField, x0: torch.Tensor, duration, steps: int,
                   check_cancelled: Callable[[], None] | None = None) -> torch.Tensor:
    """Integrate ``steps`` RK4 steps of size ``duration / steps``; returns ``(steps + 1, ..., 4)``.

    ``duration`` may be a tensor (e.g. a learned period): gradients flow through the step size.
    """
    dt = duration / steps
    xs = [x0]
    x = x0
    for i in range(steps):
        x = rk4_step(f, x, dt)
        xs.append(x)
        if check_cancelled is not None and i % 200 == 199:
            check_cancelled()
    return torch.stack(xs, 0)
