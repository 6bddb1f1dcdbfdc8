"""The design losses of METHODS section 3 on one closed-loop trajectory over a period.

Given the trajectory ``xs`` of shape ``(N + 1, ..., 4)`` on a uniform grid over ``[0, T]``
(``N`` even, so ``xs[N // 2]`` is the state at ``T/2``):

- eigenmode constraint ``C = |p(T/2)|^2 + |q(T) - q0|^2 + |p(T)|^2``;
- task ``|tip(q(T/2)) - target|^2`` (m^2);
- metabolic cost ``int_0^T |u|^2 dt`` with ``u = -dV_theta/dq`` (trapezoidal rule, N^2 m^2 s).
"""

from __future__ import annotations

import torch

from engine.systems.double_pendulum import DoublePendulumParams, tip_position

__all__ = ["constraint_loss", "design_losses", "effort_integral", "task_loss"]


def constraint_loss(xs: torch.Tensor) -> torch.Tensor:
    n = xs.shape[0] - 1
    q0 = xs[0, ..., :2]
    half, end = xs[n // 2], xs[-1]
    return ((half[..., 2:] ** 2).sum(-1) + ((end[..., :2] - q0) ** 2).sum(-1) + (end[..., 2:] ** 2).sum(-1))


def task_loss(xs: torch.Tensor, target: torch.Tensor, plant: DoublePendulumParams) -> torch.Tensor:
    n = xs.shape[0] - 1
    tip = tip_position(xs[n // 2, ..., :2], plant)
    return ((tip - target) ** 2).sum(-1)


def effort_integral(us: torch.Tensor, duration) -> torch.Tensor:
    """Trapezoidal ``int |u|^2 dt`` over a uniform grid, ``us`` of shape ``(N + 1, ..., 2)``."""
    n = us.shape[0] - 1
    sq = (us ** 2).sum(-1)
    return (duration / n) * (sq.sum(0) - 0.5 * (sq[0] + sq[-1]))


def design_losses(xs: torch.Tensor, duration, potential, target: torch.Tensor,
                  plant: DoublePendulumParams) -> dict[str, torch.Tensor]:
    """``{"constraint", "task", "effort"}`` (unweighted) for one trajectory."""
    us = -potential.gradient(xs[..., :2])
    return {"constraint": constraint_loss(xs), "task": task_loss(xs, target, plant),
            "effort": effort_integral(us, duration)}
