"""Identities of rigid-body dynamics that hold whatever the implementation.

ABA inverts RNEA; M is symmetric positive definite and its columns are RNEA responses;
energy is conserved without damping or torque; the gravity torques are the gradient of the
potential energy; the Jacobian is the derivative of forward kinematics; batch shapes are
carried through.
"""

from __future__ import annotations

import pytest
import torch
from robots_testdata import SMALL_TREE, example_robot_data

from engine.paths import urdf_dir
from engine.robots import RobotModel


def _models():
    return {
        "panda": RobotModel.from_urdf(urdf_dir() / "panda.urdf"),
        "allegro": RobotModel.from_urdf(
            example_robot_data("allegro_hand_description/urdf/allegro_right_hand.urdf"), strict=False
        ),
        "small_tree": RobotModel.from_string(SMALL_TREE),
    }


MODELS = _models()


def _state(model, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(shape + (model.dof,), generator=g, dtype=torch.float64) * 2 - 1
    qd = torch.randn(shape + (model.dof,), generator=g, dtype=torch.float64)
    qdd = torch.randn(shape + (model.dof,), generator=g, dtype=torch.float64)
    return q, qd, qdd


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("damping", [False, True])
def test_aba_inverts_rnea(name, damping):
    model = MODELS[name]
    q, qd, qdd = _state(model, (4, 5))
    tau = model.inverse_dynamics(q, qd, qdd, damping=damping)
    assert tau.shape == (4, 5, model.dof)
    back = model.forward_dynamics(q, qd, tau, damping=damping)
    scale = max(1.0, float(qdd.abs().max()))
    assert torch.allclose(back, qdd, atol=1e-9 * scale, rtol=0)


@pytest.mark.parametrize("name", list(MODELS))
def test_mass_matrix_spd_and_rnea_columns(name):
    model = MODELS[name]
    q, _, _ = _state(model, (8,))
    M = model.mass_matrix(q)
    assert torch.allclose(M, M.transpose(-1, -2), atol=1e-14)
    assert float(torch.linalg.eigvalsh(M).min()) > 0
    eye = torch.eye(model.dof, dtype=torch.float64)
    cols = model.inverse_dynamics(
        q[:, None, :].expand(8, model.dof, model.dof),
        torch.zeros(8, model.dof, model.dof),
        eye.expand(8, model.dof, model.dof),
        gravity=False,
    )
    assert torch.allclose(cols.transpose(-1, -2), M, atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_bias_gravity_and_kinetic_energy(name):
    model = MODELS[name]
    q, qd, qdd = _state(model, (6,))
    M = model.mass_matrix(q)
    tau = model.inverse_dynamics(q, qd, qdd)
    bias = model.bias_forces(q, qd)
    assert torch.allclose(tau, (M @ qdd[..., None])[..., 0] + bias, atol=1e-10)
    assert torch.allclose(model.gravity_torques(q), model.inverse_dynamics(q, 0 * qd, 0 * qdd), atol=1e-12)
    ke = model.kinetic_energy(q, qd)
    assert torch.allclose(ke, 0.5 * (qd[..., None, :] @ M @ qd[..., None])[..., 0, 0], atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_gravity_torques_are_the_potential_gradient(name):
    model = MODELS[name]
    q, _, _ = _state(model, (5,))
    q.requires_grad_(True)
    (dV,) = torch.autograd.grad(model.potential_energy(q).sum(), q)
    assert torch.allclose(model.gravity_torques(q.detach()), dV, atol=1e-11)
    # and the potential follows the gravity vector given
    g = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    (dVg,) = torch.autograd.grad(model.potential_energy(q, gravity=g).sum(), q)
    assert torch.allclose(model.gravity_torques(q.detach(), gravity=g), dVg, atol=1e-11)


@pytest.mark.parametrize("name", list(MODELS))
def test_jacobian_is_the_derivative_of_forward_kinematics(name):
    model = MODELS[name]
    q, _, _ = _state(model, (), seed=3)
    link = model.link_names[-1]
    point = torch.tensor([0.03, -0.02, 0.05], dtype=torch.float64)

    def position(x):
        T = model.link_pose(x, link)
        return T[:3, 3] + T[:3, :3] @ point

    J_lin = torch.autograd.functional.jacobian(position, q)
    J = model.jacobian(q, link, point=point)
    assert torch.allclose(J[:3], J_lin, atol=1e-12)
    # angular part: dR/dq_k R^T = [omega_k]x
    dR = torch.autograd.functional.jacobian(lambda x: model.link_pose(x, link)[:3, :3], q)
    R = model.link_pose(q, link)[:3, :3]
    W = torch.einsum("ijk,lj->kil", dR, R)                   # (dof, 3, 3) skew matrices
    omega = torch.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]])
    assert torch.allclose(J[3:], omega, atol=1e-12)


def test_batch_shapes_and_broadcasting():
    model = MODELS["small_tree"]
    q, qd, qdd = _state(model, (2, 3))
    T = model.forward_kinematics(q)
    assert T.shape == (2, 3, len(model.link_names), 4, 4)
    flat = model.forward_kinematics(q.reshape(6, -1)).reshape(T.shape)
    assert torch.equal(T, flat)
    one = model.inverse_dynamics(q[1, 2], qd[1, 2], qdd[1, 2])
    assert one.shape == (model.dof,)
    assert torch.allclose(one, model.inverse_dynamics(q, qd, qdd)[1, 2], atol=1e-14)
    # a single q broadcast against a batch of velocities
    tau = model.inverse_dynamics(q[0, 0], qd, qdd)
    assert tau.shape == (2, 3, model.dof)
    assert model.jacobian(q, "tool", point=torch.zeros(2, 3, 3, dtype=torch.float64)).shape == (
        2,
        3,
        6,
        model.dof,
    )
    assert model.mass_matrix(q).shape == (2, 3, model.dof, model.dof)
    assert model.kinetic_energy(q, qd).shape == (2, 3)


def _rk4(model, q, qd, dt, steps):
    def f(q, qd):
        return qd, model.forward_dynamics(q, qd, torch.zeros_like(q))

    for _ in range(steps):
        k1q, k1v = f(q, qd)
        k2q, k2v = f(q + 0.5 * dt * k1q, qd + 0.5 * dt * k1v)
        k3q, k3v = f(q + 0.5 * dt * k2q, qd + 0.5 * dt * k2v)
        k4q, k4v = f(q + dt * k3q, qd + dt * k3v)
        q = q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        qd = qd + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return q, qd


@pytest.mark.parametrize("name", ["panda", "small_tree"])
def test_energy_is_conserved_without_damping(name):
    model = MODELS[name]
    q0, qd0, _ = _state(model, (4,), seed=7)

    def energy(q, qd):
        return model.kinetic_energy(q, qd) + model.potential_energy(q)

    E0 = energy(q0, qd0)
    q1, qd1 = _rk4(model, q0, qd0, dt=5e-4, steps=300)          # 0.15 s
    E1 = energy(q1, qd1)
    assert float((q1 - q0).abs().max()) > 0.05  # it did move
    scale = (
        model.kinetic_energy(q0, qd0).abs() + (model.potential_energy(q0) - model.potential_energy(q1)).abs()
    )
    drift = ((E1 - E0).abs() / scale.clamp_min(1e-12)).max()
    assert float(drift) < 1e-6, float(drift)


@pytest.mark.parametrize("name", ["panda", "allegro"])
def test_large_batches_agree_with_small_ones(name):
    """Large batches take the depth-by-depth forward kinematics; small ones pointer jumping."""
    model = MODELS[name]
    q, qd, qdd = _state(model, (300,), seed=11)
    chunks = [slice(i, i + 50) for i in range(0, 300, 50)]
    for fn, args in ((model.forward_kinematics, (q,)), (model.inverse_dynamics, (q, qd, qdd)),
                     (model.mass_matrix, (q,)), (model.forward_dynamics, (q, qd, qdd)),
                     (lambda x: model.jacobian(x, model.link_names[-1]), (q,))):
        big = fn(*args)
        small = torch.cat([fn(*(a[c] for a in args)) for c in chunks])
        assert torch.allclose(big, small, atol=1e-10 * max(1.0, float(small.abs().max())), rtol=0)
