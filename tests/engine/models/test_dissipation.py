"""The Lagrangian models' learned dissipation (engine.models.dissipation): L-NODE and SyMo with
per-joint viscous and Coulomb friction and an offset.

References: scipy's ``solve_ivp`` on the damped cart-pole written out here (the analytic system's
H and V, a viscous and Coulomb friction of our choosing), autograd for Newton's Jacobian and the
unrolled Newton for the implicit gradients.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from torch.func import jacfwd, vmap

from engine.models import ModelSpec, build_model
from engine.models.lagrangian import AnalyticLagrangian
from engine.models.symo import E2ESyMo, SyMo
from engine.systems import get_system

F64 = torch.float64
DAMPING, COULOMB, OFFSET = [0.4, 0.02], [0.3, 0.002], [0.1, -0.005]


def _set(model, damping=DAMPING, coulomb=COULOMB, offset=OFFSET):
    model.dissipation.set_values(damping, coulomb, offset)
    values = model.dissipation.values()
    assert np.allclose(values["damping"], damping) and np.allclose(values["offset"], offset)
    assert np.allclose(values["coulomb"], coulomb)
    return model


def _spec(h=0.05, hidden=16):
    return ModelSpec.for_system(get_system("cartpole"), h, hidden=hidden, dissipation="joint")


def test_lnode_with_the_true_lagrangian_and_friction_follows_scipy():
    system = get_system("cartpole")
    h = 0.005
    model = _set(build_model("lnode-rk4", _spec(h)).double())
    model.lagrangian = AnalyticLagrangian(system)
    v_s = model.dissipation.velocity_scale
    u = 0.8

    def rhs(_, x):
        q, qd = torch.tensor(x[:2])[None], torch.tensor(x[2:])[None]
        H = system.mass_matrix(q)[0].numpy()
        # the gym closed form without friction, plus H^-1 Q
        free = system.forward_dynamics(q, qd, torch.tensor([[u]], dtype=F64)).numpy()[0]
        Q = -(np.array(DAMPING) * x[2:] + np.array(COULOMB) * np.tanh(x[2:] / v_s) + np.array(OFFSET))
        qdd = free + np.linalg.solve(H, Q)
        return np.concatenate([x[2:], qdd])

    x0 = np.array([0.2, 2.5, 0.5, -1.0])
    ref = solve_ivp(rhs, (0, 40 * h), x0, t_eval=h * np.arange(1, 41), rtol=1e-11, atol=1e-12).y.T
    x = torch.tensor(x0, dtype=F64)[None]
    uu = torch.tensor([[u]], dtype=F64)
    ours = []
    for _ in range(40):
        x = model.step(x, uu)
        ours.append(x[0].detach().numpy())
    assert np.abs(np.array(ours) - ref).max() < 2e-6     # RK4's error at this step
    # the friction matters here: the frictionless model leaves the reference far behind
    free = build_model("lnode-rk4", ModelSpec.for_system(system, h, hidden=16)).double()
    free.lagrangian = AnalyticLagrangian(system)
    x = torch.tensor(x0, dtype=F64)[None]
    for _ in range(40):
        x = free.step(x, uu)
    assert np.abs(x[0].detach().numpy() - ref[-1]).max() > 1e-2


def test_lnode_energy_rate_is_the_friction_power():
    """dE/dt = qd^T (B u + Q(qd)) for E = 1/2 qd^T H qd + V along the model's own vector field."""
    torch.manual_seed(0)
    model = _set(build_model("lnode-rk4", _spec()).double())
    q = torch.randn(6, 2, dtype=F64, requires_grad=True)
    qd = torch.randn(6, 2, dtype=F64, requires_grad=True)
    u = torch.randn(6, 1, dtype=F64)
    t = model.lagrangian.terms(q, order=0)
    E = 0.5 * (qd.unsqueeze(-2) @ t.H @ qd.unsqueeze(-1)).reshape(-1) + t.V
    dEq, dEqd = torch.autograd.grad(E.sum(), (q, qd))
    qdd = model.acceleration(q, qd, u)
    rate = (dEq * qd).sum(-1) + (dEqd * qdd).sum(-1)
    power = (qd * (model.force(u) + model.dissipation.force(qd))).sum(-1)
    torch.testing.assert_close(rate, power)
    # without input and offset, friction only takes energy out
    model.dissipation.set_values(offset=[0.0, 0.0])
    assert bool(((qd * model.dissipation.force(qd)).sum(-1) <= 0).all())


@pytest.mark.parametrize("system", ["pendulum", "cartpole"])
def test_symo_newton_jacobian_with_dissipation_matches_autograd(system):
    torch.manual_seed(1)
    sys_ = get_system(system)
    model = SyMo(ModelSpec.for_system(sys_, 0.05, hidden=16, dissipation="joint")).double()
    n = sys_.dof
    _set(model, DAMPING[:n], COULOMB[:n], OFFSET[:n])
    g = torch.Generator().manual_seed(0)
    q_prev = torch.randn(5, n, generator=g, dtype=F64)
    q = q_prev + 0.05 * torch.randn(5, n, generator=g, dtype=F64)
    up, u, un = (torch.randn(5, 1, generator=g, dtype=F64) for _ in range(3))
    q_next = 2 * q - q_prev + 0.01
    J = model.jacobian(q_prev, q, q_next, up, u, un)
    f = lambda z, a, b, c, d, e: model.residual(a[None], b[None], z[None], c[None], d[None], e[None])[0]
    torch.testing.assert_close(J, vmap(jacfwd(f))(q_next, q_prev, q, up, u, un))
    # Newton's root is a root of the full residual (dissipation included)
    z = model.solve_next(q_prev, q, up, u, un, tol=1e-12, max_iter=30)
    assert float(model.residual(q_prev, q, z, up, u, un).abs().max()) < 1e-10


def test_e2e_symo_implicit_gradients_reach_the_friction_and_match_unrolled_newton():
    torch.manual_seed(2)
    model = _set(E2ESyMo(_spec(hidden=8)).double())
    g = torch.Generator().manual_seed(1)
    q_prev = torch.randn(3, 2, generator=g, dtype=F64)
    q = q_prev + 0.05 * torch.randn(3, 2, generator=g, dtype=F64)
    up, u, un = (torch.randn(3, 1, generator=g, dtype=F64) for _ in range(3))
    target = torch.randn(3, 2, dtype=F64)
    params = list(model.dissipation.parameters())
    z = model.solve_next_implicit(q_prev, q, up, u, un, tol=1e-13, max_iter=30)
    g_ift = torch.autograd.grad(((z - target) ** 2).sum(), params)
    z_unr = model.solve_next_unrolled(q_prev, q, up, u, un, iterations=30)
    g_unr = torch.autograd.grad(((z_unr - target) ** 2).sum(), params)
    for a, b in zip(g_ift, g_unr):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-10)
        assert float(a.abs().sum()) > 0


def test_adam_at_the_comparisons_learning_rate_recovers_a_known_friction():
    """The cart-pole's true Lagrangian, its friction learned from next states with Adam at lr 1e-3
    (the comparison's default): the parametrisation must let a few hundred steps reach the truth
    from the start (the old softplus layout moved 0.010 to 0.0102 in a whole comparison)."""
    system = get_system("cartpole")
    h = 0.01
    truth = build_model("lnode-rk4", _spec(h)).double()
    truth.lagrangian = AnalyticLagrangian(system)
    damping, coulomb = [0.6, 0.25], [0.5, 0.3]
    _set(truth, damping, coulomb, [0.0, 0.0])
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.rand(512, 2, generator=g, dtype=F64) * 2 - 1,
                   torch.randn(512, 2, generator=g, dtype=F64)], -1)
    u = torch.randn(512, 1, generator=g, dtype=F64)
    with torch.no_grad():
        target = truth.step(x, u)
    model = build_model("lnode-rk4", _spec(h)).double()
    model.lagrangian = AnalyticLagrangian(system)
    params = list(model.dissipation.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    loss = ((model.step(x, u) - target) ** 2).mean()
    grads = torch.autograd.grad(loss, params)
    assert all(float(gr.abs().min()) > 0 for gr in grads[:2])   # damping and Coulomb of each joint
    for _ in range(400):
        opt.zero_grad()
        loss = ((model.step(x, u) - target) ** 2).mean()
        loss.backward()
        opt.step()
    values = model.dissipation.values()
    np.testing.assert_allclose(values["damping"], damping, rtol=0.05)
    np.testing.assert_allclose(values["coulomb"], coulomb, rtol=0.05)
    np.testing.assert_allclose(values["offset"], [0.0, 0.0], atol=0.02)


def test_checkpoints_of_the_softplus_layout_load_with_the_same_friction():
    """A state dict of the layout before the log-space one (written by hand: ``scale softplus(raw)
    / log 2``, ``offset_scale raw``) loads into L-NODE and SyMo with the same friction."""
    for name in ("lnode-rk4", "symo"):
        model = build_model(name, _spec())
        state = {k: v for k, v in model.state_dict().items() if not k.startswith("dissipation.")}
        raw = {"damping": torch.tensor([0.3, -1.0]), "coulomb": torch.tensor([2.0, 0.0])}
        for kind in ("damping", "coulomb"):
            state[f"dissipation.friction._{kind}_raw"] = raw[kind]
            state[f"dissipation.friction._{kind}_scale"] = torch.tensor([0.01, 0.01])
        state["dissipation.friction._offset_raw"] = torch.tensor([0.5, -0.25])
        state["dissipation.friction._offset_scale"] = torch.tensor([2.0, 2.0])
        model.load_state_dict(model.migrate_state(state), strict=True)
        values = model.dissipation.values()
        for kind in ("damping", "coulomb"):
            want = 0.01 * torch.nn.functional.softplus(raw[kind]) / np.log(2.0)
            np.testing.assert_allclose(values[kind], want.numpy(), rtol=1e-5)
        np.testing.assert_allclose(values["offset"], [1.0, -0.5], rtol=1e-6)
