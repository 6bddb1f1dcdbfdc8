"""The Gauss-Newton search direction: the residual form of the target cost, the exact control
Hessian, the residual Jacobian through the rollout (fast MLP path and autograd path) against
finite differences, and the optimiser with that direction on the learned model."""

import math

import pytest
import torch
from car_testmodels import random_car_model

from engine.car.costs import PlanWeights, Target, TargetCost, control_cost, control_hessian
from engine.car.dynamics import LearnedCarModel, SimulatorCarModel
from engine.car.evaluators import AutogradEvaluator, MLPEvaluator
from engine.car.optimiser import (
    OptimiserConfig,
    gauss_newton_direction,
    optimise,
    supports_gauss_newton,
)
from engine.car.scenarios import Plan, plan_trajectory
from engine.systems.rc_car import CarParams

SCALE = torch.tensor([8.0, 0.45])
TARGETS = [
    Target(6, 0.5, 0.2, 0.3),
    Target(12, 1.0, 0.6, 2.5, weight=2.0),
    Target(9, 0.7, 0.3, heading=False),
]


def test_residuals_square_to_the_target_cost():
    weights = PlanWeights(position=7.0, heading=3.0)
    cost = TargetCost(TARGETS, weights, 12, dtype=torch.float64)
    P = torch.randn(5, 13, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 2.0
    r = cost.residuals(P)
    assert r.shape == (5, 3 * len(TARGETS))
    assert torch.allclose((r * r).sum(-1), cost(P), rtol=1e-12)
    # a free heading contributes a zero residual, whatever the yaw
    assert torch.all(r[:, 8] == 0)


@pytest.mark.parametrize("with_prev", [False, True])
def test_control_hessian_is_the_exact_hessian(with_prev):
    weights = PlanWeights(control=0.03, control_rate=0.5, bounds=40.0)
    W = torch.randn(7, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) * 0.9
    W[2, 0], W[5, 1] = 1.4, -1.3   # two controls beyond the soft bounds
    w_prev = torch.tensor([0.2, -0.4], dtype=torch.float64) if with_prev else None
    ref = torch.autograd.functional.hessian(
        lambda w: control_cost(w.reshape(1, 7, 2), weights, w_prev)[0], W.reshape(-1))
    assert torch.allclose(control_hessian(W, weights, w_prev), ref, atol=1e-12)


def _central_jacobian(f, W, eps=1e-6):
    cols = []
    for idx in range(W.numel()):
        d = torch.zeros_like(W).view(-1)
        d[idx] = eps
        d = d.view_as(W)
        cols.append((f(W + d) - f(W - d)) / (2 * eps))
    return torch.stack(cols, -1).reshape(-1, *W.shape)


def test_mlp_residual_jacobian_matches_finite_differences_and_the_gradient():
    N, weights = 12, PlanWeights()
    pose0, v0 = torch.tensor([0.1, -0.2, 0.3]), torch.tensor([1.0, 0.1, 0.2])
    fast = MLPEvaluator(random_car_model(), 0.05, pose0, v0, TargetCost(TARGETS, weights, N), weights, SCALE)
    ref_dyn = LearnedCarModel(random_car_model().double(), 0.05)
    ref_cost = TargetCost(TARGETS, weights, N, dtype=torch.float64)
    W = torch.randn(N, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.4

    def residuals(w):
        from engine.car.dynamics import rollout
        P, _ = rollout(ref_dyn, pose0.double(), v0.double(), w * SCALE.double())
        return ref_cost.residuals(P)

    r, J = fast.residual_jacobian(W.float())
    fd = _central_jacobian(residuals, W)
    assert torch.allclose(r.double(), residuals(W), atol=1e-4)
    assert torch.allclose(J.double(), fd, atol=2e-3 * float(fd.abs().max()))
    # the gradient is 2 J^T r plus the regulariser's gradient
    c, g, _ = fast.cost_and_grad(W.float())
    Wr = W.clone().requires_grad_(True)
    (g_control,) = torch.autograd.grad(control_cost(Wr.unsqueeze(0), weights)[0], Wr)
    assert torch.allclose(g.double(), 2 * torch.einsum("r,rnk->nk", r.double(), J.double()) + g_control,
                          atol=1e-3 * float(g.abs().max()))


def test_autograd_residual_jacobian_on_the_simulator_matches_finite_differences():
    params = CarParams(substeps=2)
    N, weights = 10, PlanWeights()
    targets = [Target(5, 0.3, 0.05, 0.1), Target(10, 0.6, 0.1, 0.2)]
    ev = AutogradEvaluator(SimulatorCarModel(params), torch.zeros(3), torch.tensor([1.0, 0.0, 0.0]),
                           TargetCost(targets, weights, N, dtype=torch.float64), weights, SCALE,
                           dtype=torch.float64)
    W = torch.full((N, 2), 0.1, dtype=torch.float64)  # gentle driving: away from the friction limit

    def residuals(w):
        from engine.car.dynamics import rollout
        P, _ = rollout(ev.dynamics, ev.pose0, ev.v0, w * ev.u_scale)
        return ev.stage_cost.residuals(P)

    _, J = ev.residual_jacobian(W)
    assert torch.allclose(J, _central_jacobian(residuals, W), rtol=1e-4, atol=1e-6)


def test_gauss_newton_direction_solves_the_damped_normal_equations():
    N, weights = 8, PlanWeights()
    ev = MLPEvaluator(random_car_model(), 0.05, torch.zeros(3), torch.tensor([1.0, 0.0, 0.0]),
                      TargetCost([Target(8, 0.5, 0.1, 0.2)], weights, N), weights, SCALE)
    assert supports_gauss_newton(ev)
    W = torch.randn(N, 2, generator=torch.Generator().manual_seed(5)) * 0.3
    _, g, _ = ev.cost_and_grad(W)
    _, J = ev.residual_jacobian(W)
    Jf = J.reshape(J.shape[0], -1).double()
    H = 2 * Jf.T @ Jf + control_hessian(W.double(), weights)
    for damping in (0.0, 2.0):
        d = gauss_newton_direction(ev, W, g, damping=damping).double().reshape(-1)
        mu = damping * float((2 * Jf.T @ Jf).diagonal().mean())
        assert torch.allclose((H + mu * torch.eye(2 * N, dtype=torch.float64)) @ d, g.double().reshape(-1),
                              atol=1e-4 * float(g.abs().max()))
        assert float(d @ g.double().reshape(-1)) > 0       # a descent direction


def test_gauss_newton_plan_reaches_the_optimum_in_far_fewer_iterations_than_steepest_descent():
    model = random_car_model(seed=3)
    dyn = LearnedCarModel(model, 0.05)
    plan = Plan("turn", 20, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0),
                (Target(10, 0.6, 0.3, 0.8), Target(20, 0.9, 0.9, math.pi / 2)))
    gn = plan_trajectory(plan, dyn, CarParams(), OptimiserConfig(direction="gauss-newton")).result
    # the reference: steepest descent (the paper's direction) run until no step size improves
    ref = plan_trajectory(plan, dyn, CarParams(), OptimiserConfig(direction="gradient", tolerance=0.0,
                                                                   max_iterations=3000)).result
    for res in (gn, ref):
        assert all(b <= a for a, b in zip(res.costs, res.costs[1:]))     # the line search never goes up
    assert gn.converged and gn.cost <= ref.cost + 1e-3 * (ref.initial_cost - ref.cost)
    # how long steepest descent takes to come as close to its own end point
    close = ref.cost + 1e-2 * (ref.initial_cost - ref.cost)
    needed = next(i for i, c in enumerate(ref.costs) if c <= close)
    assert gn.iterations * 5 < needed, (gn.iterations, needed)


def test_a_stage_cost_without_residuals_falls_back_to_conjugate_gradient():
    N, weights = 6, PlanWeights()
    ev = MLPEvaluator(random_car_model(), 0.05, torch.zeros(3), torch.tensor([1.0, 0.0, 0.0]),
                      lambda P, V: (P[..., 1:, 0] - 0.5).pow(2).sum(-1), weights, SCALE)
    assert not supports_gauss_newton(ev)
    res = optimise(ev, torch.zeros(N, 2), OptimiserConfig(max_iterations=50))
    assert res.cost < res.initial_cost


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="direction 'newton'"):
        OptimiserConfig(direction="newton")
