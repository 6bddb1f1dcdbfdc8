"""Floating-base robots against Pinocchio's free-flyer model, float64, 1e-9.

example-robot-data's quadrupeds (Solo-12, ANYmal C, Go1, Go2, A1) and humanoids (TALOS,
Unitree G1, iCub), each with random base poses and joint states, both batch paths (7
samples body-major, 128 batch-last): forward kinematics of every link, Jacobians,
RNEA, CRBA, forward dynamics, gravity, centre of mass, energies, integrate / difference.
Some files carry published inertias that the strict loader refuses (a base link with a
numerically non-positive-definite inertia of 1e-22, zero inertias on sensor frames,
triangle-inequality breaks of camera links); they load with ``strict=False``, as Pinocchio
loads them. Gradients through the base are checked by ``torch.autograd.gradcheck``.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import FreeFlyerPair
from pinocchio_pair import close as _close
from robots_testdata import SMALL_TREE, example_robot_data

from engine.robots import RobotModel
from engine.robots import model as model_module
from engine.robots.urdf import parse_urdf_string

TOL = 1e-9
SMALL = 7
LARGE = max(model_module.BATCH_LAST_BATCH, 128)

LEGGED = {
    "solo12": ("solo_description/robots/solo12.urdf", {}),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", {"strict": False}),
    "go1": ("go1_description/urdf/go1.urdf", {"strict": False}),
    "go2": ("go2_description/urdf/go2.urdf", {}),
    "a1": ("a1_description/urdf/a1.urdf", {}),
    "talos": ("talos_data/robots/talos_reduced.urdf", {"strict": False}),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", {}),
    "icub": ("icub_description/robots/icub.urdf", {"strict": False}),
}
# iCub's joint-space inertia has a condition number near 1e11 (links of 1e-9 kg m^2 far from
# the origin; accelerations of 1e9 rad/s^2 on them): forward dynamics is checked there by its
# backward error (the residual M qdd + h - tau relative to |M| |qdd|) instead
ILL_CONDITIONED = {"icub"}


def close(ours, ref, tol=TOL):
    _close(ours, ref, tol)


@pytest.fixture(scope="module", params=sorted(LEGGED))
def pair(request):
    rel, opts = LEGGED[request.param]
    logging.disable(logging.WARNING)
    try:
        p = FreeFlyerPair(example_robot_data(rel), opts)
    finally:
        logging.disable(logging.NOTSET)
    p.name = request.param
    return p


def _t(x):
    return torch.as_tensor(x, dtype=torch.float64)


def _checked(batch):
    return range(0, batch, 1 if batch <= SMALL else 25)


@pytest.mark.parametrize("batch", [SMALL, LARGE])
def test_kinematics_and_com(pair, batch, dynamics_path):
    m = pair.model
    q, _, _, _ = pair.random_states(batch, seed=batch)
    assert q.shape == (batch, m.nq) and m.nq == m.dof + 7 and m.nv == m.dof + 6
    T = m.forward_kinematics(_t(q)).numpy()
    com = m.center_of_mass(_t(q)).numpy()
    links = [m.link_names[-1], m.link_names[len(m.link_names) // 2], m.link_names[0]]
    J = {link: m.jacobian(_t(q), link).numpy() for link in links}
    frames = [pair.pm.getFrameId(name, pin.BODY) for name in m.link_names]
    for s in _checked(batch):
        qp = pair.q_to_pin(q[s])
        pin.framesForwardKinematics(pair.pm, pair.pd, qp)
        close(T[s], np.stack([pair.pd.oMf[f].homogeneous for f in frames]))
        close(com[s], pin.centerOfMass(pair.pm, pair.pd, qp))
        pin.computeJointJacobians(pair.pm, pair.pd, qp)
        pin.updateFramePlacements(pair.pm, pair.pd)
        for link in links:
            ref = pin.getFrameJacobian(
                pair.pm, pair.pd, pair.pm.getFrameId(link, pin.BODY), pin.LOCAL_WORLD_ALIGNED
            )
            close(J[link][s], np.reshape(ref, (6, -1))[:, pair.iv])


@pytest.mark.parametrize("batch", [SMALL, LARGE])
def test_dynamics(pair, batch, dynamics_path):
    m = pair.model
    q, v, a, tau = pair.random_states(batch, seed=batch + 1)
    rnea = m.inverse_dynamics(_t(q), _t(v), _t(a)).numpy()
    M = m.mass_matrix(_t(q)).numpy()
    g = m.gravity_torques(_t(q)).numpy()
    b = m.bias_forces(_t(q), _t(v)).numpy()
    qdds = [
        m.forward_dynamics(_t(q), _t(v), _t(tau), method=method).numpy()
        for method in ("articulated", "composite")
    ]
    assert rnea.shape == (batch, m.nv) and M.shape == (batch, m.nv, m.nv)
    for s in _checked(batch):
        qp, vp = pair.q_to_pin(q[s]), pair.to_pin(v[s])
        close(rnea[s], pair.from_pin(pin.rnea(pair.pm, pair.pd, qp, vp, pair.to_pin(a[s]))))
        Mp = pair.matrix_from_pin(pin.crba(pair.pm, pair.pd, qp))
        close(M[s], Mp)
        close(g[s], pair.from_pin(pin.computeGeneralizedGravity(pair.pm, pair.pd, qp)))
        h = pair.from_pin(pin.nonLinearEffects(pair.pm, pair.pd, qp, vp))
        close(b[s], h)
        for qdd in qdds:                        # the articulated-body algorithm, then M^-1 (tau - h)
            if pair.name in ILL_CONDITIONED:   # backward error: the residual against |M| |qdd|
                residual = np.abs(Mp @ qdd[s] + h - tau[s]).max()
                assert residual <= TOL * np.abs(Mp).max() * np.abs(qdd[s]).max(), residual
            else:
                close(qdd[s], pair.from_pin(pin.aba(pair.pm, pair.pd, qp, vp, pair.to_pin(tau[s]))))


def test_energies_and_configuration_manifold(pair):
    m = pair.model
    q, v, _, _ = pair.random_states(SMALL, seed=5)
    ke = m.kinetic_energy(_t(q), _t(v)).numpy()
    pe = m.potential_energy(_t(q)).numpy()
    q1 = m.integrate(_t(q), _t(v), 0.3).numpy()
    dq = m.difference(_t(q), _t(q1)).numpy()
    close(dq, 0.3 * v)                                          # difference inverts integrate
    for s in range(SMALL):
        qp, vp = pair.q_to_pin(q[s]), pair.to_pin(v[s])
        close(ke[s], pin.computeKineticEnergy(pair.pm, pair.pd, qp, vp))
        close(pe[s], pin.computePotentialEnergy(pair.pm, pair.pd, qp))
        close(pair.q_to_pin(q1[s]), pin.integrate(pair.pm, qp, 0.3 * vp))
        q2 = q[(s + 1) % SMALL]
        close(m.difference(_t(q[s]), _t(q2)).numpy(),
              pair.from_pin(pin.difference(pair.pm, qp, pair.q_to_pin(q2))))


def _small_floating(armature=None):
    desc = replace(parse_urdf_string(SMALL_TREE), floating_base=True)
    if armature is not None:
        desc = replace(
            desc, joints=tuple(replace(j, armature=armature.get(j.name, 0.0)) for j in desc.joints)
        )
    return RobotModel.from_description(desc)


def test_from_description_and_base_only_motion():
    """A floating model built from a description; a pure base motion moves every link rigidly."""
    m = _small_floating()
    assert m.floating and (m.nq, m.nv) == (11, 10) and m.joint_names == ["j1", "j2", "j3", "j4"]
    q0 = m.neutral()
    assert torch.equal(q0[3:7], torch.tensor([0.0, 0, 0, 1], dtype=torch.float64))
    v = torch.zeros(10, dtype=torch.float64)
    v[5] = np.pi / 2                                            # a quarter turn about the base z axis
    q1 = m.integrate(q0, v)
    T0, T1 = m.forward_kinematics(q0), m.forward_kinematics(q1)
    Rz = torch.tensor([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]], dtype=torch.float64)
    close((Rz @ T0[:, :3, 3].T).T.numpy(), T1[:, :3, 3].numpy(), 1e-12)


def test_armature_against_pinocchio(tmp_path, dynamics_path):
    """Joint armature enters M, RNEA and forward dynamics as Pinocchio's model.armature does."""
    arm = {"j1": 0.05, "j2": 0.3, "j3": 0.01, "j4": 0.02}
    path = tmp_path / "small_tree.urdf"
    path.write_text(SMALL_TREE)
    rng = np.random.default_rng(7)
    for floating in (False, True):
        desc = replace(parse_urdf_string(SMALL_TREE), floating_base=floating)
        desc = replace(desc, joints=tuple(replace(j, armature=arm.get(j.name, 0.0)) for j in desc.joints))
        m = RobotModel.from_description(desc)
        assert m.joint_names == ["j1", "j2", "j3", "j4"]  # Pinocchio's order too
        pm = (
            pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            if floating
            else pin.buildModelFromUrdf(str(path))
        )
        f = 6 if floating else 0
        pm.armature = np.r_[np.zeros(f), [arm[j] for j in m.joint_names]]
        pd = pm.createData()
        for batch in (3, LARGE):
            joints = rng.uniform(-1, 1, (batch, 4)) * [1.0, 0.2, 1.0, 1.0]
            base = np.concatenate([rng.normal(size=(batch, 3)), rng.normal(size=(batch, 4))], 1)
            base[:, 3:] /= np.linalg.norm(base[:, 3:], axis=1, keepdims=True)
            q = np.concatenate([base, joints], 1) if floating else joints
            v, a, tau = rng.normal(size=(3, batch, m.nv))
            tau_ours = m.inverse_dynamics(_t(q), _t(v), _t(a)).numpy()
            M_ours = m.mass_matrix(_t(q)).numpy()
            qdd_ours = m.forward_dynamics(_t(q), _t(v), _t(tau)).numpy()
            for s in range(0, batch, 1 if batch < 10 else 40):
                j = joints[s]
                qp = np.r_[base[s] if floating else [], j[:2], np.cos(j[2]), np.sin(j[2]), j[3]]
                close(tau_ours[s], pin.rnea(pm, pd, qp, v[s], a[s]))
                Mp = pin.crba(pm, pd, qp)
                close(M_ours[s], np.triu(Mp) + np.triu(Mp, 1).T)
                close(qdd_ours[s], pin.aba(pm, pd, qp, v[s], tau[s]))


def _outputs(m, q, v, a, target):
    return (m.inverse_dynamics(q, v, a), m.mass_matrix(q), m.forward_dynamics(q, v, a),
            m.forward_kinematics(q)[..., :3, :], m.jacobian(q, "tool"), m.center_of_mass(q),
            m.kinetic_energy(q, v), m.potential_energy(q), m.integrate(q, v, 0.1), m.difference(q, target))


@pytest.mark.parametrize("batch", [2, LARGE])
def test_gradients_through_the_base(batch):
    """gradcheck (float64 finite differences) through the base pose and velocity, both batch paths
    (the large batch: the gradients of its first two samples, through a random projection)."""
    m = _small_floating(armature={"j2": 0.1})
    g = torch.Generator().manual_seed(batch)
    q = m.neutral().repeat(batch, 1) + 0.3 * torch.randn(batch, m.nq, generator=g, dtype=torch.float64)
    q[:, 3:7] = q[:, 3:7] / q[:, 3:7].norm(dim=-1, keepdim=True)
    v, a = (torch.randn(batch, m.nv, generator=g, dtype=torch.float64) for _ in range(2))
    target = m.integrate(q, v, 0.2)
    w = [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in _outputs(m, q, v, a, target)]

    def f(q2, v2, a2):
        full = [torch.cat([x2, x[2:]]) for x2, x in zip((q2, v2, a2), (q, v, a))]
        out = _outputs(m, *full, target) + (m.forward_dynamics(*full, method="articulated"),)
        return sum((o * wi).sum() for o, wi in zip(out, w + [w[2]]))

    inputs = tuple(x[:2].clone().requires_grad_(True) for x in (q, v, a))
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_learnable_base_mass_enters_the_floating_dynamics():
    """A learnable mass of the base link: the base wrench's gradient matches finite differences."""
    m = _small_floating()
    module = m.make_learnable("base", "mass")
    g = torch.Generator().manual_seed(11)
    q = m.neutral() + 0.2 * torch.randn(m.nq, generator=g, dtype=torch.float64)
    q[3:7] = q[3:7] / q[3:7].norm()
    v, a = (torch.randn(m.nv, generator=g, dtype=torch.float64) for _ in range(2))
    w = torch.randn(m.nv, generator=g, dtype=torch.float64)

    def loss():
        return (
            (m.inverse_dynamics(q, v, a) * w).sum()
            + m.center_of_mass(q).sum()
            + m.forward_dynamics(q, v, a).sum()
        )

    (grad,) = torch.autograd.grad(loss(), [p for p in module.parameters()])
    eps = 1e-6
    with torch.no_grad():
        p = next(iter(module.parameters()))
        p += eps
        up = float(loss())
        p -= 2 * eps
        down = float(loss())
        p += eps
    assert abs(float(grad.sum()) - (up - down) / (2 * eps)) < 1e-6 * max(1.0, abs(up))
    assert abs(float(grad.sum())) > 1e-3
