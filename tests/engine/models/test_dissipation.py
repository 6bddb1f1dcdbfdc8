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
    f = model.dissipation.friction
    with torch.no_grad():
        for kind, vals in (("damping", damping), ("coulomb", coulomb)):
            scale = getattr(f, f"_{kind}_scale")
            target = torch.as_tensor(vals, dtype=scale.dtype)
            # value = scale * softplus(raw) / log 2
            getattr(f, f"_{kind}_raw").copy_(torch.log(torch.expm1(target / scale * np.log(2.0))))
        f._offset_raw.copy_(torch.as_tensor(offset, dtype=f._offset_raw.dtype) / f._offset_scale)
    assert np.allclose(f.values()["damping"], damping) and np.allclose(f.values()["offset"], offset)
    return model


def _spec(h=0.05, hidden=16):
    return ModelSpec.for_system(get_system("cartpole"), h, hidden=hidden, dissipation="joint")


def test_lnode_with_the_true_lagrangian_and_friction_follows_scipy():
    system = get_system("cartpole")
    h = 0.005
    model = _set(build_model("lnode-rk4", _spec(h)).double())
    model.lagrangian = AnalyticLagrangian(system)
    v_s = model.dissipation.friction.velocity_scale
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
    _set(model, offset=[0.0, 0.0])
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
