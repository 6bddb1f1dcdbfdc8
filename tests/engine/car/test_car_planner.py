"""The optimiser: rollout-cost gradients vs finite differences, the line search, the scenarios."""


import pytest
import torch
from car_testmodels import random_car_model

from engine.car.costs import PlanWeights, Target, TargetCost
from engine.car.dynamics import LearnedCarModel, SimulatorCarModel
from engine.car.evaluators import AutogradEvaluator, MLPEvaluator
from engine.car.optimiser import OptimiserConfig, budget_progress, line_search, optimise
from engine.car.scenarios import (
    SCENARIOS,
    Plan,
    execute_open_loop,
    load_plan,
    plan_trajectory,
    save_plan,
    scenario,
)
from engine.systems.rc_car import CarParams

SCALE = torch.tensor([8.0, 0.45])


def _central_differences(f, W, eps=1e-6):
    g = torch.zeros_like(W)
    for idx in range(W.numel()):
        d = torch.zeros_like(W).view(-1)
        d[idx] = eps
        d = d.view_as(W)
        g.view(-1)[idx] = (f(W + d) - f(W - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_fast_mlp_gradient_matches_finite_differences(activation):
    model = random_car_model(activation)
    N = 12
    weights = PlanWeights()
    cost = TargetCost([Target(6, 0.5, 0.2, 0.3), Target(12, 1.0, 0.6, 1.0)], weights, N, dtype=torch.float64)
    pose0, v0 = torch.tensor([0.1, -0.2, 0.3]), torch.tensor([1.0, 0.1, 0.2])
    fast = MLPEvaluator(model, 0.05, pose0, v0, TargetCost(cost.targets, weights, N), weights, SCALE)
    ref_model = random_car_model(activation).double()
    ref = AutogradEvaluator(
        LearnedCarModel(ref_model, 0.05), pose0, v0, cost, weights, SCALE, dtype=torch.float64
    )
    W = torch.randn(N, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.4
    c, g, _ = fast.cost_and_grad(W.float())
    fd = _central_differences(lambda w: ref.batch_costs(w.unsqueeze(0))[0][0], W)
    assert c == pytest.approx(float(ref.batch_costs(W.unsqueeze(0))[0][0]), rel=1e-5)
    assert torch.allclose(g.double(), fd, rtol=2e-3, atol=2e-3 * float(fd.abs().max()))


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_fast_mlp_candidate_costs_match_the_module_rollout(activation):
    """The line search's batch (64 candidates: the fused oneDNN path where torch has it) gives
    the same costs and best trajectory as rolling the module itself out in float64."""
    model = random_car_model(activation)
    N = 10
    weights = PlanWeights()
    targets = [Target(5, 0.4, 0.1, 0.2), Target(10, 0.9, 0.5, 0.8)]
    pose0, v0 = torch.tensor([0.1, -0.2, 0.3]), torch.tensor([1.0, 0.1, 0.2])
    fast = MLPEvaluator(model, 0.05, pose0, v0, TargetCost(targets, weights, N), weights, SCALE)
    ref = AutogradEvaluator(LearnedCarModel(random_car_model(activation).double(), 0.05), pose0, v0,
                            TargetCost(targets, weights, N, dtype=torch.float64), weights, SCALE,
                            dtype=torch.float64)
    Wc = torch.randn(64, N, 2, generator=torch.Generator().manual_seed(3)) * 0.5
    costs, (P, V) = fast.batch_costs(Wc)
    ref_costs, (P_ref, V_ref) = ref.batch_costs(Wc.double())
    assert torch.allclose(costs.double(), ref_costs, rtol=1e-4, atol=1e-5)
    assert torch.allclose(V.double(), V_ref, atol=1e-4) and torch.allclose(P.double(), P_ref, atol=1e-4)


def test_fused_linear_matches_the_plain_formula():
    from engine.onednn import linear_act

    gen = torch.Generator().manual_seed(0)
    x, w, b = (
        torch.randn(300, 64, generator=gen),
        torch.randn(48, 64, generator=gen),
        torch.randn(48, generator=gen),
    )
    z = x @ w.t() + b
    with torch.no_grad():
        assert torch.allclose(linear_act(x, w, b, "gelu"), torch.nn.functional.gelu(z), atol=1e-4)
        assert torch.allclose(linear_act(x, w, b, "relu"), torch.relu(z), atol=1e-4)
        assert torch.allclose(linear_act(x, w, b, "none"), z, atol=1e-4)


def test_simulator_gradient_matches_finite_differences():
    params = CarParams(substeps=2)
    N = 10
    weights = PlanWeights()
    cost = TargetCost([Target(10, 0.6, 0.1, 0.2)], weights, N, dtype=torch.float64)
    ev = AutogradEvaluator(SimulatorCarModel(params), torch.zeros(3), torch.tensor([1.0, 0.0, 0.0]), cost,
                           weights, SCALE, dtype=torch.float64)
    W = torch.full((N, 2), 0.1, dtype=torch.float64)  # gentle driving: no wheel reaches the friction limit
    _, g, _ = ev.cost_and_grad(W)
    fd = _central_differences(lambda w: ev.batch_costs(w.unsqueeze(0))[0][0], W)
    assert torch.allclose(g, fd, rtol=1e-4, atol=1e-6)


class _Quadratic:
    """A test evaluator: cost |A w - b|^2 with a known gradient."""

    def __init__(self, n):
        gen = torch.Generator().manual_seed(3)
        self.A = torch.randn(2 * n, 2 * n, generator=gen)
        self.b = torch.randn(2 * n, generator=gen)

    def _c(self, W):
        r = W.reshape(W.shape[0], -1) @ self.A.T - self.b
        return (r * r).sum(-1)

    def batch_costs(self, Wc):
        c = self._c(Wc)
        return c, (None, None)

    def cost_and_grad(self, W):
        r = self.A @ W.reshape(-1) - self.b
        return float((r * r).sum()), (2 * self.A.T @ r).reshape(W.shape), (None, None)


@pytest.mark.parametrize("scale", [1.0, -1.0, 1e6])
def test_line_search_never_increases_the_cost(scale):
    # scale 1: the gradient; -1: an ascent direction; 1e6: every candidate overshoots
    ev = _Quadratic(5)
    W = torch.randn(5, 2, generator=torch.Generator().manual_seed(4))
    cost, grad, _ = ev.cost_and_grad(W)
    W_new, c_new, alpha, _ = line_search(ev, W, scale * grad, cost, OptimiserConfig())
    assert c_new <= cost
    assert float(ev.batch_costs(W_new.unsqueeze(0))[0][0]) == pytest.approx(c_new, rel=1e-5)
    if scale == 1.0:
        assert c_new < cost and 1e-6 <= alpha <= 1.0
    else:                   # nothing is better: the start is kept
        assert alpha == 0.0 and torch.equal(W_new, W) and c_new == cost


@pytest.mark.parametrize("direction", ["gradient", "conjugate"])
def test_optimiser_decreases_monotonically_and_converges(direction):
    ev = _Quadratic(4)
    res = optimise(ev, torch.zeros(4, 2), OptimiserConfig(max_iterations=300, direction=direction))
    assert all(b <= a for a, b in zip(res.costs, res.costs[1:]))
    # the least-squares optimum is the reference
    w_star = torch.linalg.lstsq(ev.A, ev.b).solution
    best = float(((ev.A @ w_star - ev.b) ** 2).sum())
    assert res.cost < best + 1e-2 * (res.initial_cost - best)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_plan_reaches_its_targets_on_the_simulator(name):
    # the planning copy of the simulator (traction loss blended over 1 m/s^2), 2 sub-steps
    params = CarParams(substeps=2, slip_smoothing=1.0)
    plan = scenario(name)
    out = plan_trajectory(plan, SimulatorCarModel(params), params,
                          OptimiserConfig(candidates=64, max_iterations=150))
    assert out.result.cost < 0.02 * out.result.initial_cost
    for err in out.target_errors:   # the paper's real-car errors are 0.21-0.38 m and 0.1-0.5 rad
        assert err["position_error"] < 0.2, err
        assert err["heading_error"] < 0.6, err
    # executing the plan on that same model reproduces the optimised trajectory
    ex = execute_open_loop(plan, out.controls, params)
    assert torch.allclose(ex["pose"], out.result.pose, atol=1e-3)


def test_plan_json_round_trip_and_errors(tmp_path):
    plan = scenario("drifting-turn")
    U = torch.randn(plan.horizon, 2)
    save_plan(tmp_path / "p.json", plan, U)
    back, controls = load_plan(tmp_path / "p.json")
    assert back == plan and torch.allclose(controls, U)
    (tmp_path / "bad.json").write_text(
        '{"kind": "car_plan", "horizon": 10, "targets": [{"step": 20, "x": 1, "y": 0}]}'
    )
    with pytest.raises(ValueError, match="bad.json"):
        load_plan(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="target step 0"):
        Plan(horizon=5, targets=(Target(0, 1.0, 1.0),))


def test_plan_progress_names_the_time_per_iteration_and_the_most_time_left():
    """The ETA of `car plan` and the planner's Optimise: the iterations' share of the budget, the
    time per iteration so far, and the time left if every remaining iteration ran (an upper bound)."""
    fraction, message = budget_progress(10, 400, 5.0)
    assert fraction == pytest.approx(10 / 400)
    assert message == "iteration 10 of at most 400, 0.5 s each, at most 3 min 15 s left"
    # a time limit nearer than the iteration budget: its share and what is left of it
    fraction, message = budget_progress(10, 400, 5.0, time_limit=20.0)
    assert fraction == pytest.approx(0.25) and message.endswith("at most 15 s left")
    assert budget_progress(400, 400, 9.0)[0] == 0.99            # the end is the job's to say
