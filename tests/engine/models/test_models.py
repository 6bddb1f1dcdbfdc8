"""Learned models: exact derivatives, the implicit layer's gradients, the DEL residual, training, checkpoints."""

import pytest
import torch
from scipy.optimize import fsolve
from torch.func import jacfwd, vmap

from engine.data import DatasetConfig, generate_dataset, make_windows
from engine.models import ModelSpec, build_model, load_model, model_names, register_model, save_model
from engine.models.lagrangian import AnalyticLagrangian, LagrangianNetworks
from engine.models.symo import E2ESyMo, SyMo
from engine.systems import get_system

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU


def _spec(system="cartpole", h=0.05, hidden=16):
    return ModelSpec.for_system(get_system(system), h, hidden=hidden)


def _triples(n, B=5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q_prev = torch.randn(B, n, generator=g, dtype=dtype)
    q = q_prev + 0.05 * torch.randn(B, n, generator=g, dtype=dtype)
    u = torch.randn(B, 3, 1, generator=g, dtype=dtype)
    return q_prev, q, u[:, 0], u[:, 1], u[:, 2]


def test_network_derivatives_are_exact():
    torch.manual_seed(0)
    net = LagrangianNetworks((False, True), hidden=16).double()
    q = torch.randn(6, 2, dtype=torch.float64)
    t = net.terms(q, order=2)
    Hf = lambda x: net.mass_matrix(x[None])[0]
    Vf = lambda x: net.potential_energy(x[None])[0]
    torch.testing.assert_close(t.dH, vmap(jacfwd(Hf))(q).permute(0, 3, 1, 2))
    torch.testing.assert_close(t.d2H, vmap(jacfwd(jacfwd(Hf)))(q).permute(0, 3, 4, 1, 2))
    torch.testing.assert_close(t.dV, vmap(jacfwd(Vf))(q))
    torch.testing.assert_close(t.d2V, vmap(jacfwd(jacfwd(Vf)))(q))
    # H is symmetric positive definite
    assert torch.linalg.eigvalsh(t.H).min() > 0


def test_newton_jacobian_matches_autograd():
    torch.manual_seed(1)
    model = SyMo(_spec()).double()
    q_prev, q, up, u, un = _triples(2)
    q_next = 2 * q - q_prev + 0.01
    J = model.jacobian(q_prev, q, q_next, up, u, un)
    f = lambda z, a, b, c, d, e: model.residual(a[None], b[None], z[None], c[None], d[None], e[None])[0]
    J_ref = vmap(jacfwd(f))(q_next, q_prev, q, up, u, un)
    torch.testing.assert_close(J, J_ref)


def test_residual_is_zero_on_exact_discrete_trajectories_of_a_known_lagrangian():
    """An independent variational integrator (autograd of Ld + scipy fsolve) for the true cart-pole."""
    system = get_system("cartpole")
    h = 0.05

    def Ld(qa, qb):
        v = (qb - qa) / h
        m = 0.5 * (qa + qb)
        return h * (0.5 * v @ system.mass_matrix(m) @ v - system.potential_energy(m))

    def del_residual(q_prev, q, q_next, u):
        qk = q.clone().requires_grad_(True)
        s = Ld(q_prev, qk) + Ld(qk, q_next)
        return torch.autograd.grad(s, qk)[0] + h * torch.tensor([u, 0.0], dtype=torch.float64)

    u = 0.7
    traj = [torch.tensor([0.1, 2.0], dtype=torch.float64), torch.tensor([0.11, 2.08], dtype=torch.float64)]
    for _ in range(20):
        qp, qk = traj[-2], traj[-1]
        sol = fsolve(
            lambda z, qp=qp, qk=qk: del_residual(qp, qk, torch.tensor(z), u).numpy(),
            (2 * qk - qp).numpy(),
            xtol=1e-13,
        )
        traj.append(torch.tensor(sol))
    traj = torch.stack(traj)
    model = SyMo(ModelSpec.for_system(system, h)).double()
    model.lagrangian = AnalyticLagrangian(system)
    uu = torch.full((len(traj) - 2, 1), u, dtype=torch.float64)
    g = model.residual(traj[:-2], traj[1:-1], traj[2:], uu, uu, uu)
    assert float(g.abs().max()) < 1e-10
    # a wrong trajectory has a clearly non-zero residual
    assert float(model.residual(traj[:-2], traj[1:-1], traj[2:] + 1e-3, uu, uu, uu).abs().max()) > 1e-3
    # and Newton's prediction reproduces the trajectory
    pred = model.solve_next(traj[:-2], traj[1:-1], uu, uu, uu, tol=1e-12, max_iter=20)
    torch.testing.assert_close(pred, traj[2:], atol=1e-10, rtol=0)


def test_implicit_layer_gradients_match_finite_differences_and_unrolled_newton():
    torch.manual_seed(2)
    model = E2ESyMo(_spec(hidden=8)).double()
    q_prev, q, up, u, un = _triples(2, B=3)
    target = torch.randn(3, 2, dtype=torch.float64)

    def loss_implicit():
        z = model.solve_next_implicit(q_prev, q, up, u, un, tol=1e-13, max_iter=30)
        return ((z - target) ** 2).sum()

    params = list(model.parameters())
    g_ift = torch.autograd.grad(loss_implicit(), params, allow_unused=True, materialize_grads=True)
    z_unrolled = model.solve_next_unrolled(q_prev, q, up, u, un, iterations=30)
    g_unr = torch.autograd.grad(((z_unrolled - target) ** 2).sum(), params, allow_unused=True,
                                materialize_grads=True)
    for a, b in zip(g_ift, g_unr):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-9)
    # central finite differences on a few parameter entries
    W = model.lagrangian.nets.weights[1]  # the hidden layer of the inertia (k=0) and potential (k=1) networks
    idx = [i for i, p in enumerate(params) if p is W][0]
    gW = g_ift[idx]
    eps = 1e-6
    for (k, i, j) in [(0, 0, 0), (0, 3, 5), (1, 7, 2)]:
        with torch.no_grad():
            W[k, i, j] += eps
            lp = loss_implicit().item()
            W[k, i, j] -= 2 * eps
            lm = loss_implicit().item()
            W[k, i, j] += eps
        assert abs((lp - lm) / (2 * eps) - gW[k, i, j].item()) < 1e-6 * max(1.0, abs(gW[k, i, j].item()))
    # gradient w.r.t. the inputs as well (q_k)
    qk = q.clone().requires_grad_(True)
    z = model.solve_next_implicit(q_prev, qk, up, u, un, tol=1e-13, max_iter=30)
    gq = torch.autograd.grad(((z - target) ** 2).sum(), qk)[0]
    with torch.no_grad():
        q2 = q.clone()
        q2[1, 0] += eps
        lp = ((model.solve_next(q_prev, q2, up, u, un, tol=1e-13, max_iter=30) - target) ** 2).sum().item()
        q2[1, 0] -= 2 * eps
        lm = ((model.solve_next(q_prev, q2, up, u, un, tol=1e-13, max_iter=30) - target) ** 2).sum().item()
    assert abs((lp - lm) / (2 * eps) - gq[1, 0].item()) < 1e-6


@pytest.fixture(scope="module")
def pendulum_data():
    return generate_dataset(DatasetConfig(train_trajectories=4, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=12, seed=3))


@pytest.mark.parametrize(
    "name", ["node-rk4", "node-midpoint", "lnode-rk4", "lnode-midpoint", "symo", "e2e-symo", "mlp"]
)
def test_short_training_lowers_the_loss_and_rollout_shapes(name, pendulum_data):
    torch.manual_seed(0)
    ds = pendulum_data
    model = build_model(name, ModelSpec.for_system(ds.system, ds.h, hidden=32))
    w = make_windows(ds.train_x, ds.train_u, 1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = model.loss(w).item()
    for _ in range(40):
        loss = model.loss(w)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.loss(w).item() < 0.7 * first
    x = torch.as_tensor(ds.long_x, dtype=torch.float32)
    u = torch.as_tensor(ds.long_u, dtype=torch.float32)
    q, qd = model.rollout(x, u, 12)
    assert q.shape == (2, 12, 1) and qd.shape == (2, 12, 1)
    qn, qdn = model.predict(w)
    assert qn.shape == (len(w), 1) and qdn.shape == (len(w), 1)


def test_checkpoints_round_trip_exactly(tmp_path):
    torch.manual_seed(4)
    spec = _spec(hidden=16)
    q_prev, q, up, u, un = _triples(2, dtype=torch.float32)
    for name in ("e2e-symo", "node-rk4", "lnode-midpoint"):
        model = build_model(name, spec)
        save_model(tmp_path / name, model, {"metrics": {"test_mse": 0.5}})
        back, meta = load_model(tmp_path / name)
        assert type(back) is type(model) and meta["type"] == name and meta["metrics"]["test_mse"] == 0.5
        for (k, a), (k2, b) in zip(model.state_dict().items(), back.state_dict().items()):
            assert k == k2 and torch.equal(a, b)
        assert back.spec == model.spec


def test_registry_accepts_new_model_types_and_rejects_unknown():
    with pytest.raises(ValueError, match="unknown model type"):
        build_model("nope", _spec())
    register_model("test-symo-alias", SyMo, replace=True)
    assert "test-symo-alias" in model_names()
    assert isinstance(build_model("test-symo-alias", _spec()), SyMo)


# -- the hand-written fast paths against autograd (float64) ------------------------------------

def _grads(out, inputs):
    return torch.autograd.grad(out, inputs, allow_unused=True, materialize_grads=True)


@pytest.mark.parametrize("mask", [(True,), (False, True), (True, True, False)])
def test_dual_mlp_values_tangents_and_gradients_match_autograd(mask):
    from engine.models.nets import StackedConfigurationMLP

    torch.manual_seed(5)
    net = StackedConfigurationMLP(mask, (3, 1), hidden=9, layers=3, init="torch").double()
    q = torch.randn(7, len(mask), dtype=torch.float64, requires_grad=True)
    fast, ref = net._forward_dual(q), net._forward_autograd(q, 1)
    ws = [torch.randn_like(t) for o in ref for t in o[:2]]
    loss = lambda outs: sum((w * t).sum() for w, t in zip(ws, [t for o in outs for t in o[:2]]))
    for a, b in zip(fast, ref):
        torch.testing.assert_close(a[0], b[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(a[1], b[1], rtol=0, atol=1e-12)
    inputs = [q, *net.parameters()]
    for a, b in zip(_grads(loss(fast), inputs), _grads(loss(ref), inputs)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("mask", [(True,), (False, True)])
def test_graph_free_stacked_pass_matches_autograd_path(mask):
    from engine.models.nets import StackedConfigurationMLP

    torch.manual_seed(6)
    net = StackedConfigurationMLP(mask, (3, 1), hidden=9, layers=2, init="torch").double()
    q = torch.randn(7, len(mask), dtype=torch.float64)
    with torch.no_grad():
        for order in (0, 1, 2):
            for a, b in zip(net._forward_stacked(q, order), net._forward_autograd(q, order)):
                for x, y in zip(a, b):
                    assert (x is None) == (y is None)
                    if x is not None:
                        torch.testing.assert_close(x, y, rtol=0, atol=1e-12)


def test_hand_written_mlp_matches_autograd():
    from engine.models.nets import MLP

    torch.manual_seed(7)
    m = MLP(4, 2, hidden=9, layers=3, init="torch").double()
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)

    def ref(x):
        for lin in m.linears[:-1]:
            x = torch.tanh(lin(x))
        return m.linears[-1](x)

    w = torch.randn(6, 2, dtype=torch.float64)
    torch.testing.assert_close(m(x), ref(x), rtol=0, atol=1e-12)
    inputs = [x, *m.parameters()]
    for a, b in zip(_grads((m(x) * w).sum(), inputs), _grads((ref(x) * w).sum(), inputs)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_one_dof_terms_and_acceleration_match_autograd():
    torch.manual_seed(8)
    net = LagrangianNetworks((True,), hidden=16, init="torch").double()
    q = torch.randn(6, 1, dtype=torch.float64)
    qd = torch.randn(6, 1, dtype=torch.float64)
    f = torch.randn(6, 1, dtype=torch.float64)
    Hf = lambda x: net.mass_matrix(x[None])[0]
    Vf = lambda x: net.potential_energy(x[None])[0]
    for grad in (False, True):
        with torch.set_grad_enabled(grad):
            t = net.terms(q, order=2)
        torch.testing.assert_close(t.dH, vmap(jacfwd(Hf))(q).permute(0, 3, 1, 2), rtol=0, atol=1e-10)
        torch.testing.assert_close(
            t.d2H, vmap(jacfwd(jacfwd(Hf)))(q).permute(0, 3, 4, 1, 2), rtol=0, atol=1e-10
        )
        torch.testing.assert_close(t.dV, vmap(jacfwd(Vf))(q), rtol=0, atol=1e-10)
        torch.testing.assert_close(t.d2V, vmap(jacfwd(jacfwd(Vf)))(q), rtol=0, atol=1e-10)
    # L-NODE's closed-form acceleration against the Euler-Lagrange equations with autograd derivatives
    dH = vmap(jacfwd(Hf))(q)[..., 0, 0, 0]
    dV = vmap(jacfwd(Vf))(q)[..., 0]
    H = net.mass_matrix(q)[..., 0, 0]
    ref = (f[:, 0] - 0.5 * dH * qd[:, 0] ** 2 - dV) / H
    torch.testing.assert_close(net.acceleration_1dof(q, qd, f)[:, 0], ref, rtol=0, atol=1e-10)


def test_one_dof_newton_jacobian_matches_autograd():
    torch.manual_seed(9)
    model = SyMo(_spec("pendulum", 0.1)).double()
    q_prev, q, up, u, un = _triples(1)
    q_next = 2 * q - q_prev + 0.01
    J = model.jacobian(q_prev, q, q_next, up, u, un)
    f = lambda z, a, b, c, d, e: model.residual(a[None], b[None], z[None], c[None], d[None], e[None])[0]
    torch.testing.assert_close(J, vmap(jacfwd(f))(q_next, q_prev, q, up, u, un), rtol=0, atol=1e-10)


def test_active_set_newton_matches_full_batch_newton():
    from engine.integrators import newton_solve
    from engine.models.symo import newton_active_set

    torch.manual_seed(10)
    model = SyMo(_spec()).double()
    q_prev, q, up, u, un = _triples(2, B=9)
    _, rj = model._newton_problem(q_prev, q, up, u, un)
    with torch.no_grad():
        z_ref = newton_solve(rj, 2 * q - q_prev, 1e-12, 30)[0]
        z, J, _ = newton_active_set(rj, 2 * q - q_prev, 1e-12, 30)
    torch.testing.assert_close(z, z_ref, rtol=0, atol=1e-10)
    torch.testing.assert_close(J, rj(z)[1], rtol=0, atol=1e-12)      # J at the returned iterates
    assert float(rj(z)[0].abs().max()) < 1e-12


def test_fused_one_dof_acceleration_gradients_match_autograd():
    """The training path (angle rows + dual MLP + acceleration, hand-written backwards) against the
    autograd formulation of the same Euler-Lagrange acceleration, all inputs and parameters."""
    torch.manual_seed(11)
    net = LagrangianNetworks((True,), hidden=16, init="torch").double()
    q, qd, f = (torch.randn(6, 1, dtype=torch.float64, requires_grad=True) for _ in range(3))
    w = torch.randn(6, 1, dtype=torch.float64)
    fast = net.acceleration_1dof(q, qd, f)
    (raw, draw, _), (_, dv, _) = net.nets._forward_autograd(q, 1)
    l = torch.nn.functional.softplus(raw)
    ref = (f - l * torch.sigmoid(raw) * draw[:, 0] * qd * qd - dv[:, 0]) / (l * l + net.eps)
    torch.testing.assert_close(fast, ref, rtol=0, atol=1e-12)
    inputs = [q, qd, f, *net.parameters()]
    for a, b in zip(_grads((fast * w).sum(), inputs), _grads((ref * w).sum(), inputs)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


# -- issue #5: the cart-pole (dof 2) prediction path, end to end -------------------------------

@pytest.fixture(scope="module")
def cartpole_windows():
    data = generate_dataset(DatasetConfig(system="cartpole", train_trajectories=4, test_trajectories=1,
                                          long_term_trajectories=1, long_term_steps=4))
    return data, make_windows(data.train_x, data.train_u, 2, torch.float32)


def test_cartpole_prediction_with_the_true_lagrangian_recovers_the_data(cartpole_windows):
    """The default prediction path (float32, active-set Newton, tolerance 1e-4, 10 iterations) of a
    SyMo model that holds the true cart-pole Lagrangian reproduces the RK45 data to the midpoint
    rule's own error (~1e-8): what a learned model's one-step error is compared against (issue #5)."""
    data, w = cartpole_windows
    model = SyMo(ModelSpec.for_system(data.system, data.h))
    model.lagrangian = AnalyticLagrangian(data.system)
    q_next, _ = model.predict(w)
    assert q_next.dtype == torch.float32
    assert float(((q_next - w.q_next) ** 2).mean()) < 5e-8
    with torch.no_grad():   # the Newton Jacobian of the dof-2 path against autograd, in float32 too
        J = model.jacobian(w.q_prev, w.q, w.q_next, w.u_prev, w.u, w.u_next)
    f = lambda z: model.residual(w.q_prev, w.q, z, w.u_prev, w.u, w.u_next).sum(0)
    J_ref = torch.autograd.functional.jacobian(f, w.q_next).permute(1, 0, 2)
    torch.testing.assert_close(J, J_ref, rtol=1e-5, atol=1e-5)


def test_cartpole_symo_loss_gradients_fast_path_match_autograd(cartpole_windows, monkeypatch):
    """The training path of a dof-2 SyMo (dual MLP with hand-written backward, mixed angle mask)
    gives the same loss and parameter gradients as the plain autograd formulation (float64)."""
    import engine.models.nets as nets

    data, w = cartpole_windows
    torch.manual_seed(12)
    model = SyMo(ModelSpec.for_system(data.system, data.h, hidden=16)).double()
    w = w.to(torch.float64)

    def grads():
        model.zero_grad(set_to_none=True)
        loss = model.loss(w)
        loss.backward()
        return loss.detach(), [
            torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()
        ]

    loss_fast, g_fast = grads()
    monkeypatch.setattr(nets, "_plain_tensors", lambda: False)   # forces the autograd formulation
    loss_ref, g_ref = grads()
    torch.testing.assert_close(loss_fast, loss_ref, rtol=1e-12, atol=0)
    for a, b in zip(g_fast, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-14)


# -- initialisation: the paper's (Xavier-uniform, tanh gain, zero biases) ----------------------

def _is_xavier_tanh(W, fan_in, fan_out):
    """Uniform in +-bound with bound = 5/3 sqrt(6 / (fan_in + fan_out)): the extremes approach the
    bound and the variance is bound^2 / 3 (within sampling error)."""
    bound = 5.0 / 3.0 * (6.0 / (fan_in + fan_out)) ** 0.5
    W = W.detach().double()
    return bool(W.abs().max() <= bound) and float(W.abs().max()) > 0.97 * bound \
        and abs(float(W.var()) / (bound ** 2 / 3.0) - 1.0) < 0.1


def test_default_init_is_the_papers_xavier_with_zero_biases_and_default_heads():
    torch.manual_seed(0)
    spec = ModelSpec(hidden=128)
    model = build_model("symo", spec)
    nets = model.lagrangian.nets
    sizes = [2, 128, 128]  # pendulum: (cos q, sin q) -> 128 -> 128, two stacked networks
    for W, b, (a, o) in zip(nets.weights, nets.biases, zip(sizes[:-1], sizes[1:])):
        for k in range(W.shape[0]):
            assert _is_xavier_tanh(W[k], a, o)
        assert torch.count_nonzero(b) == 0
    for head in nets.heads:  # the heads keep nn.Linear's default: +-1/sqrt(fan_in), biases too
        bound = 1.0 / 128 ** 0.5
        assert (
            float(head.weight.abs().max()) <= bound
            and torch.count_nonzero(head.bias.detach()) == head.bias.numel()
        )
    node = build_model("node-rk4", spec)
    dims = [2 + 1 + 1, 128, 128, 1]  # (cos, sin, qd, u) -> 128 -> 128 -> qdd
    for lin, a, o in zip(node.net.linears, dims[:-1], dims[1:]):
        assert _is_xavier_tanh(lin.weight, a, o) and torch.count_nonzero(lin.bias) == 0


def test_torch_init_is_selectable_and_reaches_the_model():
    from engine.training.config import TrainConfig
    from engine.training.trainer import build_for

    data = generate_dataset(DatasetConfig(train_trajectories=2, test_trajectories=2, steps=4,
                                          long_term_trajectories=1, long_term_steps=4))
    model = build_for(TrainConfig(model="symo", init="torch"), data)
    assert all(torch.count_nonzero(b) == b.numel() for b in model.lagrangian.nets.biases)
    assert max(float(W.abs().max()) for W in model.lagrangian.nets.weights) <= 1.0 / 2 ** 0.5
    assert all(
        torch.count_nonzero(b) == 0 for b in build_for(TrainConfig(model="symo"), data).lagrangian.nets.biases
    )
    with pytest.raises(ValueError, match="init"):
        TrainConfig(init="he")
    with pytest.raises(ValueError, match="init"):
        ModelSpec(init="he")
