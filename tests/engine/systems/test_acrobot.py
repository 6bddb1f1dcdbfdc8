"""Acrobot ground truth: the SyMo repository's gym "book" equations, Euler-Lagrange consistency,
energy and work, the torque on joint 2 only, and the shipped URDF through the rigid-body engine."""

import numpy as np
import torch
from scipy.integrate import solve_ivp

from engine.paths import urdf_dir
from engine.robots.model import RobotModel
from engine.systems import get_system
from engine.systems.base import MechanicalSystem

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU


def _gym_book_dsdt(t, s, a):
    """Code/myenv/acrobot.py ``_dsdt`` (book_or_nips = "book"), transcribed as written there."""
    m1, m2, l1, lc1, lc2, I1, I2, g = 1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 9.81
    theta1, theta2, dtheta1, dtheta2 = s
    d1 = m1 * lc1 ** 2 + m2 * (l1 ** 2 + lc2 ** 2 + 2 * l1 * lc2 * np.cos(theta2)) + I1 + I2
    d2 = m2 * (lc2 ** 2 + l1 * lc2 * np.cos(theta2)) + I2
    phi2 = m2 * lc2 * g * np.cos(theta1 + theta2 - np.pi / 2.)
    phi1 = - m2 * l1 * lc2 * dtheta2 ** 2 * np.sin(theta2) \
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * np.sin(theta2) \
        + (m1 * lc1 + m2 * l1) * g * np.cos(theta1 - np.pi / 2) + phi2
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1 ** 2 * np.sin(theta2) - phi2) \
        / (m2 * lc2 ** 2 + I2 - d2 ** 2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return (dtheta1, dtheta2, ddtheta1, ddtheta2)


def _random(seed, count=30):
    rng = np.random.default_rng(seed)
    return rng.uniform(-4, 4, (count, 2)), rng.uniform(-9, 9, (count, 2)), rng.uniform(-2, 2, (count, 1))


def test_acrobot_matches_gym_book_equations_and_lagrangian():
    s = get_system("acrobot")
    assert (s.name, s.dof, s.control_dim, s.angle_mask) == ("acrobot", 2, 1, (True, True))
    q, qd, u = _random(0)
    ref = torch.tensor([_gym_book_dsdt(0, (*qi, *qdi), ui[0])[2:] for qi, qdi, ui in zip(q, qd, u)])
    qt, qdt, ut = torch.tensor(q), torch.tensor(qd), torch.tensor(u)
    torch.testing.assert_close(s.forward_dynamics(qt, qdt, ut), ref, rtol=1e-12, atol=1e-12)
    # the closed form is the Euler-Lagrange equation of its H and V (so V's sign is gym's gravity)
    torch.testing.assert_close(MechanicalSystem.forward_dynamics(s, qt, qdt, ut), ref, rtol=1e-10, atol=1e-10)
    # unforced: u = None is u = 0
    ref0 = torch.tensor([_gym_book_dsdt(0, (*qi, *qdi), 0.0)[2:] for qi, qdi in zip(q, qd)])
    torch.testing.assert_close(s.forward_dynamics(qt, qdt), ref0, rtol=1e-12, atol=1e-12)


def test_torque_acts_on_joint_2_only():
    s = get_system("acrobot")
    B = s.input_matrix(torch.float64)
    torch.testing.assert_close(B, torch.tensor([[0.0], [1.0]], dtype=torch.float64))
    torch.testing.assert_close(s.generalized_force(torch.tensor([[1.5]], dtype=torch.float64)),
                               torch.tensor([[0.0, 1.5]], dtype=torch.float64))
    # the torque's effect on the accelerations is H^-1 B u: nonzero on both joints, but the work
    # it does is u thd2 (checked along trajectories below)
    q, qd, _ = _random(1, 5)
    qt, qdt = torch.tensor(q), torch.tensor(qd)
    du = s.forward_dynamics(qt, qdt, torch.ones(5, 1, dtype=torch.float64)) - s.forward_dynamics(qt, qdt)
    expected = torch.linalg.solve(
        s.mass_matrix(qt), torch.tensor([0.0, 1.0], dtype=torch.float64).expand(5, 2)
    )
    torch.testing.assert_close(du, expected, rtol=1e-10, atol=1e-12)


def test_energy_is_conserved_unforced_and_the_torque_does_work_on_joint_2():
    s = get_system("acrobot")
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-3.14, 3.14, (4, 4))
    h, steps = 0.05, 80  # 4 s
    traj = torch.tensor(s.simulate(x0, np.zeros((4, 1)), h, steps))
    E = s.energy(traj[..., :2], traj[..., 2:])
    assert float((E - E[:, :1]).abs().max()) < 1e-7
    # a constant torque u on joint 2 does the work u (th2(t) - th2(0)): E(t) - E(0) equals it
    u = rng.uniform(-2, 2, (4, 1))
    traj_f = torch.tensor(s.simulate(x0, u, h, steps))
    E_f = s.energy(traj_f[..., :2], traj_f[..., 2:])
    work = torch.tensor(u) * (traj_f[..., 1] - traj_f[:, :1, 1])
    assert float(work.abs().max()) > 0.5
    torch.testing.assert_close(E_f - E_f[:, :1], work, rtol=0, atol=1e-7)


def test_simulation_matches_the_paper_gym_stepping():
    """The paper's ground truth steps gym's env: one solve_ivp (RK45, scipy's default tolerances)
    per h = 0.05. Over a training trajectory (34 steps) ours agrees to 1e-4. (The acrobot is
    chaotic: over the long-term set's 500 steps the two drift apart by O(1), the default
    tolerances' error growing.)"""
    s = get_system("acrobot")
    rng = np.random.default_rng(4)
    x0 = rng.uniform(-3.14, 3.14, (3, 4))
    u = rng.uniform(-2, 2, (3, 1))
    ours = s.simulate(x0, u, 0.05, 34)
    for i in range(3):
        y, ref = x0[i], [x0[i]]
        for _ in range(34):
            y = solve_ivp(_gym_book_dsdt, (0, 0.05), y, method="RK45", args=(u[i, 0],)).y[:, -1]
            ref.append(y)
        np.testing.assert_allclose(ours[i], np.array(ref), atol=1e-4)


def test_urdf_dynamics_equal_the_analytic_acrobot():
    s = get_system("acrobot")
    model = RobotModel.from_urdf(urdf_dir() / "acrobot.urdf")
    assert model.dof == 2 and model.joint_names == ["joint1", "joint2"]
    q, qd, u = (torch.tensor(a) for a in _random(5, 20))
    torch.testing.assert_close(model.mass_matrix(q), s.mass_matrix(q), rtol=0, atol=1e-9)
    dV = torch.func.vmap(torch.func.grad(lambda x: s.potential_energy(x)))(q)
    torch.testing.assert_close(model.gravity_torques(q), dV, rtol=0, atol=1e-9)
    torch.testing.assert_close(model.potential_energy(q), s.potential_energy(q), rtol=0, atol=1e-9)
    tau = s.generalized_force(u)
    torch.testing.assert_close(
        model.forward_dynamics(q, qd, tau), s.forward_dynamics(q, qd, u), rtol=0, atol=1e-9
    )
    # q = 0 hangs down; positive angles swing the links to +x (gym's picture)
    q_pose = torch.tensor([[0.0, 0.0], [0.3, 0.4]], dtype=torch.float64)
    tip = model.link_pose(q_pose, "tip")[..., :3, 3]
    expected = torch.tensor([[0.0, 0.0, -2.0], [np.sin(0.3) + np.sin(0.7), 0.0, -np.cos(0.3) - np.cos(0.7)]],
                            dtype=torch.float64)
    torch.testing.assert_close(tip, expected, rtol=0, atol=1e-12)
