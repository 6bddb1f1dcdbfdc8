"""Ball joints and joints coupled by a linear ``<equality joint>`` in one model (mjcf/ball_coupled.xml:
two balls, a slide coupled to a slide below them, a hinge coupled across them to the base hinge, a
hinge before them in the joint order coupled to the elbow between them).

The references are MuJoCo's on the full model: its mass matrix (mj_fullM, armature included),
``qfrc_bias``, ``qfrc_passive`` (damping), body Jacobians and poses, projected through ``G``
(MuJoCo's velocity from ours, written here from the file's polynomials, not read from the model);
forward dynamics against the KKT solution of MuJoCo's dynamics with its own equality rows
(``efc_J``) held exactly; integrate against ``mj_integratePos``; a free fall against MuJoCo's
energy. Conventions: our ball q is (x, y, z, w), MuJoCo's (w, x, y, z); both velocities are the
child's angular velocity in its frame."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from engine.robots import RobotModel
from engine.robots.compiled_shortcut import model_calls
from engine.robots.description import Mimic
from engine.robots.mjcf import MJCFError, load_mjcf
from tests.engine.robots.mjcf_scene import assert_poses_match, full_mass_matrix

FILE = Path(__file__).parent / "mjcf" / "ball_coupled.xml"
# joint1 -> (joint2, c1, c0, ref1, ref2): joint1 - ref1 = c0 + c1 (joint2 - ref2), as in the file
COUPLED = {"right": ("left", -1.5, 0.004, -0.02, 0.01), "tip": ("yaw", 0.5, 0.1, 0.3, 0.0),
           "flag": ("elbow", 0.8, -0.05, -0.2, 0.0)}


def t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def _random_q(model, rng):
    q = rng.normal(size=model.nq)
    for name in model.ball_joint_names:
        s = model.joint_coordinates(name)[0]
        q[s] /= np.linalg.norm(q[s])
    return q


def _mujoco(model, mm, q, v=None):
    """Our independent ``q (nq,)`` (and ``v (nv,)``) -> MuJoCo's ``qpos`` (the coupled joints from
    the file's polynomials), ``qvel = G v`` and ``G (mm.nv, nv)``."""
    qpos, G = mm.qpos0.copy(), np.zeros((mm.nv, model.nv))
    for name in model.joint_names:
        sq, sv = model.joint_coordinates(name)
        a, d = int(mm.joint(name).qposadr[0]), int(mm.joint(name).dofadr[0])
        if name in model.ball_joint_names:
            qpos[a:a + 4] = [q[sq][3], *q[sq][:3]]
            G[d:d + 3, sv] = np.eye(3)
        else:
            qpos[a] = q[sq.start]
            G[d, sv.start] = 1.0
    for y, (x, c1, c0, y0, x0) in COUPLED.items():
        qpos[mm.joint(y).qposadr[0]] = y0 + c0 + c1 * (qpos[mm.joint(x).qposadr[0]] - x0)
        G[mm.joint(y).dofadr[0]] = c1 * G[mm.joint(x).dofadr[0]]
    return qpos, (None if v is None else G @ v), G


def _set(mm, md, qpos, qvel=None):
    md.qpos[:] = qpos
    md.qvel[:] = 0.0 if qvel is None else qvel
    mujoco.mj_forward(mm, md)
    rows = md.efc_type[:md.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    assert rows.sum() == 3 and np.abs(md.efc_pos[:md.nefc][rows]).max() < 1e-12    # MuJoCo's equalities hold
    return rows


def test_layout_couples_scalar_joints_and_passes_the_quaternions():
    model = RobotModel.from_file(FILE)
    assert model.joint_names == ["yaw", "shoulder", "elbow", "wrist", "left"]
    assert model.mimic_joint_names == ["flag", "right", "tip"] and model.ball_joint_names == ["shoulder", "wrist"]
    assert (model.nq, model.nv, model.dof) == (11, 9, 9)
    assert not any("equality" in line for line in model.description.not_modelled)
    np.testing.assert_array_equal(model.neutral().numpy(), [0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0])
    assert model.joint_coordinates("wrist") == (slice(6, 10), slice(5, 8))
    # the joints that move a link: through a coupling its master (the right finger: the left slide)
    assert model.joints_moving(["tip"]) == list(range(8)) and model.joints_moving(["right"]) == list(range(9))
    assert model.joints_moving(["upper"]) == [0, 1, 2, 3] and model.joints_moving(["flag"]) == [0, 4]


def test_dynamics_match_mujoco_projected_through_the_coupling(dynamics_path):
    model = RobotModel.from_file(FILE)
    mm = mujoco.MjModel.from_xml_path(str(FILE))
    mm.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(31)
    for _ in range(4):
        q = _random_q(model, rng)
        v, tau, a = rng.normal(size=(3, model.nv))
        qpos, qvel, G = _mujoco(model, mm, q, v)
        rows = _set(mm, md, qpos, qvel)
        assert_poses_match(model, q, mm, md)
        M_mj = full_mass_matrix(mm, md)
        M = G.T @ M_mj @ G
        np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), M, atol=1e-12)
        h = G.T @ md.qfrc_bias
        np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), h, atol=1e-12)
        np.testing.assert_allclose(model.inverse_dynamics(t(q), t(v), t(a)).numpy(), M @ a + h, atol=1e-11)
        for link in ("tip", "right", "hand"):
            jp, jr = np.zeros((3, mm.nv)), np.zeros((3, mm.nv))
            mujoco.mj_jacBody(mm, md, jp, jr, mm.body(link).id)
            np.testing.assert_allclose(model.jacobian(t(q), link).numpy(), np.vstack([jp, jr]) @ G, atol=1e-12)
        # forward dynamics: MuJoCo's with its equality rows held exactly (KKT; linear couplings have
        # no velocity-product term), forces G (G^T G)^-1 tau so that G^T tau_full = tau, damping on
        Je = md.efc_J[:md.nefc * mm.nv].reshape(md.nefc, mm.nv)[rows]
        f = G @ np.linalg.solve(G.T @ G, tau) + md.qfrc_passive - md.qfrc_bias
        K = np.block([[M_mj, Je.T], [Je, np.zeros((len(Je), len(Je)))]])
        a_full = np.linalg.solve(K, np.concatenate([f, np.zeros(len(Je))]))[:mm.nv]
        for method in ("articulated", "composite"):
            qdd = model.forward_dynamics(t(q), t(v), t(tau), damping=True, method=method).numpy()
            np.testing.assert_allclose(G @ qdd, a_full, atol=1e-10)
        if dynamics_path == "compiled":    # the numpy calls of the compiled kernels (compiled_calls)
            assert model._backend_for(t(q)[None]).name == "compiled"
            calls = model_calls(model)
            np.testing.assert_allclose(calls.crba(q), M, atol=1e-12)
            np.testing.assert_allclose(calls.rnea(q, v, a), M @ a + h, atol=1e-11)
            np.testing.assert_allclose(G @ calls.aba(q, v, tau, damping=True), a_full, atol=1e-10)
            np.testing.assert_allclose(calls.fk(q)[model.link_names.index("tip")][:3, 3],
                                       md.xpos[mm.body("tip").id], atol=1e-12)
        md.qvel[:] = 0.0
        mujoco.mj_forward(mm, md)
        np.testing.assert_allclose(model.gravity_torques(t(q)).numpy(), G.T @ md.qfrc_bias, atol=1e-12)


def test_a_tendon_over_coupled_joints_has_mujocos_length_and_jacobian():
    """The file's fixed tendon over two coupled joints and the elbow (between the balls): its length
    (``limit_terms``) is MuJoCo's ``ten_length``, its Jacobian MuJoCo's ``ten_J`` times ``G``."""
    from engine.robots.constraints import limit_terms

    model = RobotModel.from_file(FILE)
    limits = model.description.constraints
    assert [c.name for c in limits] == ["span"]
    mm = mujoco.MjModel.from_xml_path(str(FILE))
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = _random_q(model, rng)
        qpos, _, G = _mujoco(model, mm, q)
        _set(mm, md, qpos)
        L, J = (x.numpy() for x in limit_terms(model, limits, t(q)))
        np.testing.assert_allclose(L, md.ten_length, atol=1e-12)
        Jt = np.zeros((1, mm.nv))                     # MuJoCo's row, stored sparse
        adr, nnz = int(mm.ten_J_rowadr[0]), int(mm.ten_J_rownnz[0])
        Jt[0, mm.ten_J_colind[adr:adr + nnz]] = md.ten_J[adr:adr + nnz]
        np.testing.assert_allclose(J, Jt @ G, atol=1e-12)
        assert np.count_nonzero(J) == 3                    # the tip's master (yaw), the elbow, the left slide


def test_integrate_difference_and_neutral_follow_mujoco():
    """``integrate`` moves each ball by ``q exp(w dt)`` and the scalar joints by addition: mapped to
    MuJoCo (coupled joints from their polynomial) it is ``mj_integratePos`` of the full state."""
    model = RobotModel.from_file(FILE)
    mm = mujoco.MjModel.from_xml_path(str(FILE))
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v = _random_q(model, rng), rng.normal(size=model.nv)
        q1 = model.integrate(t(q), t(v), 0.3).numpy()
        qpos, qvel, _ = _mujoco(model, mm, q, v)
        mujoco.mj_integratePos(mm, qpos, qvel, 0.3)
        got = _mujoco(model, mm, q1)[0]
        for j in range(mm.njnt):            # a quaternion and its negative are one rotation
            a = mm.jnt_qposadr[j]
            if mm.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL and got[a] * qpos[a] < 0:
                got[a:a + 4] *= -1
        np.testing.assert_allclose(got, qpos, atol=1e-12)
        np.testing.assert_allclose(model.difference(t(q), t(q1)).numpy(), 0.3 * v, atol=1e-12)


def test_a_free_fall_keeps_the_coupling_and_mujocos_energy():
    """RK4 on the manifold with the couplings: every frame, mapped to MuJoCo, satisfies MuJoCo's
    equalities with the coupled bodies where our model puts them, and MuJoCo's energy of that state
    holds (no damping, no forces)."""
    from engine.robots.simulate import SimulationOptions, simulate

    model = RobotModel.from_file(FILE)
    mm = mujoco.MjModel.from_xml_path(str(FILE))
    mm.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(9)
    q0, v0 = _random_q(model, rng), rng.normal(size=model.nv)
    res = simulate(model, t(q0), t(v0), SimulationOptions(mode="free_fall", duration=0.2, dt=1e-3, damping=False,
                                                          frame_rate=50.0))
    energy = []
    for q, v in zip(res.q, res.qd):
        qpos, qvel, _ = _mujoco(model, mm, q, v)
        _set(mm, md, qpos, qvel)
        energy.append(md.energy.sum())
        poses = model.forward_kinematics(t(q)).numpy()
        for body in ("tip", "right"):
            np.testing.assert_allclose(poses[model.link_names.index(body)][:3, 3], md.xpos[mm.body(body).id],
                                       atol=1e-12)
        for name in model.ball_joint_names:
            assert abs(np.linalg.norm(q[model.joint_coordinates(name)[0]]) - 1.0) < 1e-12
    assert len(energy) == 11 and np.ptp(energy) < 1e-7 and np.ptp(res.q[:, 0]) > 1e-3


def test_derivatives_of_a_coupled_ball_model_match_finite_differences():
    """Gradients (the torch algorithms, autograd) on the manifold: ``d qdd / d q`` along ``integrate``,
    ``d qdd / d v`` against central differences of MuJoCo-checked forward dynamics."""
    model = RobotModel.from_file(FILE)
    rng = np.random.default_rng(2)
    q, v, tau = t(_random_q(model, rng)), t(rng.normal(size=model.nv)), t(rng.normal(size=model.nv))
    dq, dv, Minv = (x.numpy() for x in model.aba_derivatives(q, v, tau))
    np.testing.assert_allclose(Minv, np.linalg.inv(model.mass_matrix(q).numpy()), atol=1e-10)
    eps = 1e-6
    for k in range(model.nv):
        e = torch.zeros(model.nv, dtype=torch.float64)
        e[k] = eps
        fd_q = (model.forward_dynamics(model.integrate(q, e), v, tau)
                - model.forward_dynamics(model.integrate(q, -e), v, tau)) / (2 * eps)
        fd_v = (model.forward_dynamics(q, v + e, tau) - model.forward_dynamics(q, v - e, tau)) / (2 * eps)
        np.testing.assert_allclose(dq[:, k], fd_q.numpy(), atol=1e-6)
        np.testing.assert_allclose(dv[:, k], fd_v.numpy(), atol=1e-6)


def test_ik_through_balls_keeps_the_couplings():
    from engine.robots.ik import solve_ik

    model = RobotModel.from_file(FILE)
    mm = mujoco.MjModel.from_xml_path(str(FILE))
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(5)
    goal = model.link_pose(t(_random_q(model, rng)), "tip")
    r = solve_ik(model, {"tip": goal}, q0=model.neutral(), max_iters=200, tol_pos=1e-9, tol_rot=1e-9)
    assert bool(r.converged)
    q = r.q.numpy()
    for name in model.ball_joint_names:
        assert abs(np.linalg.norm(q[model.joint_coordinates(name)[0]]) - 1.0) < 1e-12
    _set(mm, md, _mujoco(model, mm, q)[0])             # the coupled tip, placed by MuJoCo, is at the goal
    np.testing.assert_allclose(md.xpos[mm.body("tip").id], goal[:3, 3].numpy(), atol=1e-8)
    np.testing.assert_allclose(md.xmat[mm.body("tip").id].reshape(3, 3), goal[:3, :3].numpy(), atol=1e-8)


def test_a_coupling_that_names_a_ball_joint_is_refused_in_one_line(tmp_path):
    desc = load_mjcf(FILE)
    for joint, mimic in (("tip", Mimic(joint="wrist", multiplier=1.0, offset=0.0)),      # mimics a ball
                         ("wrist", Mimic(joint="elbow", multiplier=1.0, offset=0.0))):   # a ball mimics
        bad = replace(desc, joints=[replace(j, mimic=mimic) if j.name == joint else j for j in desc.joints])
        with pytest.raises(ValueError) as info:
            RobotModel.from_description(bad)
        message = str(info.value)
        assert "\n" not in message and "ball joint 'wrist'" in message and "scalar joints only" in message
    path = tmp_path / "ball_eq.xml"          # MuJoCo refuses a joint equality on a ball joint itself
    path.write_text(FILE.read_text().replace('joint1="tip" joint2="yaw"', 'joint1="tip" joint2="wrist"'))
    with pytest.raises(MJCFError) as err:
        load_mjcf(path)
    assert "\n" not in str(err.value) and "only HINGE and SLIDE joint allowed in constraint" in str(err.value)
