"""The one RK4 (engine.integrators.rk4_step_t) against closed-form solutions."""

from __future__ import annotations

import math

import torch

from engine.integrators import rk4_step, rk4_step_t


def _solve(f, x0, t1, steps):
    h, x = t1 / steps, x0
    for k in range(steps):
        x = rk4_step_t(f, k * h, x, h)
    return x


def test_rk4_is_exact_for_cubic_time_fields_and_fourth_order_in_general():
    # x' = 4 t^3: RK4 (Simpson's rule in t) integrates it exactly
    x = _solve(lambda t, x: torch.full_like(x, 4 * t**3), torch.zeros(3, dtype=torch.float64), 1.0, 3)
    torch.testing.assert_close(x, torch.ones(3, dtype=torch.float64), rtol=0, atol=1e-14)
    # x' = -x t: x(1) = exp(-1/2); halving h divides the error by about 16
    f = lambda t, x: -x * t  # noqa: E731
    x0 = torch.ones(1, dtype=torch.float64)
    errors = [abs(float(_solve(f, x0, 1.0, n)) - math.exp(-0.5)) for n in (10, 20)]
    assert 14 < errors[0] / errors[1] < 18


def test_rk4_step_with_held_input_and_tensor_step_size_is_differentiable():
    h = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    x = rk4_step(
        lambda x, u: u * x, torch.ones(2, dtype=torch.float64), torch.tensor(-1.0, dtype=torch.float64), h
    )
    expected = 1 - 0.1 + 0.1**2 / 2 - 0.1**3 / 6 + 0.1**4 / 24           # the degree-4 Taylor polynomial
    assert abs(float(x[0].detach()) - expected) < 1e-15
    x.sum().backward()
    assert abs(float(h.grad) - 2 * (-1 + 0.1 - 0.1**2 / 2 + 0.1**3 / 6)) < 1e-14
