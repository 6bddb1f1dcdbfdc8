"""The double pendulum against an independent Lagrangian model in absolute angles (scipy)."""

import numpy as np
import torch
from scipy.integrate import solve_ivp

from engine.eigenmodes.dynamics import closed_loop_energy, closed_loop_field, rk4_trajectory
from engine.systems import double_pendulum as dp

P = dp.DoublePendulumParams(m1=1.3, m2=0.7, l1=1.1, l2=0.8, k1=0.3, k2=0.5, g=9.81)


def absolute_angle_rhs(t, y, P=P):
    """Textbook Euler-Lagrange equations in absolute angles th1, th2 (from the vertical),
    with torsional springs k1 th1 and k2 (th2 - th1); derived independently of engine/."""
    th1, th2, w1, w2 = y
    m1, m2, l1, l2, g = P.m1, P.m2, P.l1, P.l2, P.g
    d = th1 - th2
    M = np.array([[(m1 + m2) * l1 ** 2, m2 * l1 * l2 * np.cos(d)],
                  [m2 * l1 * l2 * np.cos(d), m2 * l2 ** 2]])
    tau_spring1 = -P.k1 * th1 + P.k2 * (th2 - th1)
    tau_spring2 = -P.k2 * (th2 - th1)
    rhs = np.array([-m2 * l1 * l2 * np.sin(d) * w2 ** 2 - (m1 + m2) * g * l1 * np.sin(th1) + tau_spring1,
                    m2 * l1 * l2 * np.sin(d) * w1 ** 2 - m2 * g * l2 * np.sin(th2) + tau_spring2])
    acc = np.linalg.solve(M, rhs)
    return [w1, w2, acc[0], acc[1]]


def test_hamiltonian_flow_matches_independent_lagrangian():
    q0 = np.array([0.9, -0.7])
    qd0 = np.array([0.4, 1.2])
    y0 = [q0[0], q0[0] + q0[1], qd0[0], qd0[0] + qd0[1]]
    T, n = 3.0, 3000
    ref = solve_ivp(absolute_angle_rhs, (0, T), y0, rtol=1e-11, atol=1e-12, t_eval=np.linspace(0, T, 7))
    p0 = dp.momentum(torch.tensor(q0), torch.tensor(qd0), P)
    x0 = torch.cat([torch.tensor(q0), p0])
    xs = rk4_trajectory(closed_loop_field(None, P), x0, T, n)[:: n // 6]
    q = xs[:, :2].numpy()
    qd = dp.velocity(xs[:, :2], xs[:, 2:], P).numpy()
    np.testing.assert_allclose(q[:, 0], ref.y[0], atol=1e-7)
    np.testing.assert_allclose(q[:, 0] + q[:, 1], ref.y[1], atol=1e-7)
    np.testing.assert_allclose(qd[:, 0], ref.y[2], atol=1e-6)
    np.testing.assert_allclose(qd[:, 0] + qd[:, 1], ref.y[3], atol=1e-6)


def test_lagrangian_form_agrees_with_hamiltonian_form_and_autograd():
    torch.manual_seed(0)
    q = torch.randn(5, 2, dtype=torch.float64)
    qd = torch.randn(5, 2, dtype=torch.float64)
    tau = torch.randn(5, 2, dtype=torch.float64)
    p = dp.momentum(q, qd, P)
    _, pdot = dp.hamiltonian_vector_field(q, p, tau, P)
    # d/dt (M qd) = M qdd + Mdot qd must equal pdot
    qdd = dp.forward_dynamics(q, qd, tau, P)
    M = dp.mass_matrix(q, P)
    qr = q.clone().requires_grad_(True)
    Mdot = torch.autograd.functional.jvp(lambda x: dp.mass_matrix(x, P), qr, qd)[1]
    lhs = (M @ qdd[..., None] + Mdot @ qd[..., None])[..., 0]
    torch.testing.assert_close(lhs, pdot, atol=1e-10, rtol=1e-10)
    # Hamilton's equations against autograd of H
    qg = q.clone().requires_grad_(True)
    pg = p.clone().requires_grad_(True)
    dHdq, dHdp = torch.autograd.grad(dp.hamiltonian(qg, pg, P).sum(), (qg, pg))
    qdot, pdot0 = dp.hamiltonian_vector_field(q, p, None, P)
    torch.testing.assert_close(qdot, dHdp)
    torch.testing.assert_close(pdot0, -dHdq)
    torch.testing.assert_close(dp.mass_matrix_inverse(q, P), torch.linalg.inv(M))


def test_unforced_energy_is_conserved():
    x0 = torch.tensor([[1.2, -0.5, 0.3, -0.2], [0.2, 2.0, 0.0, 0.0]], dtype=torch.float64)
    xs = rk4_trajectory(closed_loop_field(None, P), x0, 5.0, 2500)
    e = closed_loop_energy(xs, None, P)
    assert float((e - e[0]).abs().max()) < 1e-6 * (1 + float(e[0].abs().max()))


def test_forward_kinematics_and_reach():
    q = torch.tensor([[0.0, 0.0], [np.pi / 2, 0.0], [0.3, np.pi]], dtype=torch.float64)
    elbow, tip = dp.forward_kinematics(q, P)
    torch.testing.assert_close(tip[0], torch.tensor([0.0, -(P.l1 + P.l2)], dtype=torch.float64))
    torch.testing.assert_close(tip[1], torch.tensor([P.l1 + P.l2, 0.0], dtype=torch.float64))
    r = tip.norm(dim=-1)
    lo, hi = dp.reach(P)
    assert float(r.min()) >= lo - 1e-12 and float(r.max()) <= hi + 1e-12
    torch.testing.assert_close(elbow.norm(dim=-1), torch.full((3,), P.l1, dtype=torch.float64))


def test_bad_parameters_name_the_field():
    import pytest
    with pytest.raises(ValueError, match="l2"):
        dp.DoublePendulumParams(l2=0.0)


def test_fused_closed_loop_field_equals_composed_form():
    from engine.eigenmodes.config import PotentialConfig
    from engine.eigenmodes.potential import PotentialMLP
    pot = PotentialMLP(PotentialConfig(hidden=24), seed=2)
    x = torch.randn(9, 4, dtype=torch.float64)
    torch.testing.assert_close(closed_loop_field(pot, P)(x), closed_loop_field(pot, P, fused=False)(x))
