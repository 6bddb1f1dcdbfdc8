"""Ball (spherical) joints (:mod:`engine.robots.ball`) against MuJoCo's ball joint and Pinocchio's
JointModelSpherical on the same MJCF files: a fixed-base chain (anchored balls, a tilted hinge, a
slide on a branch, armature on a ball) and a free-flying torso with two balls. Body poses,
mj_fullM, qfrc_bias and qacc (forward dynamics from qfrc_applied), pin.rnea / crba / aba, frame
Jacobians, integrate and difference, on both torch layouts (body-major, batch-last) and the
default route; derivatives against finite differences on the manifold.

Conventions: our ball q is (x, y, z, w), MuJoCo's (w, x, y, z); both velocities are the child's
angular velocity in its frame. MuJoCo's free joint velocity is linear in the world frame
(``v_mj = T v``, ``T = diag(R, 1, ...)``)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import torch

import engine.robots.model as model_module
from engine.robots import RobotModel
from engine.robots.backends import torch_only
from tests.engine.robots.mjcf_scene import assert_poses_match, full_mass_matrix

HERE = Path(__file__).parent / "mjcf"
CHAIN = HERE / "ball_chain.xml"
FLOATING = HERE / "ball_floating.xml"


def t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def _to_mujoco_qpos(model, mm, q):
    """Our q (x, y, z, w quaternions) -> MuJoCo's qpos (w, x, y, z)."""
    out = []
    i = 0
    for j in range(mm.njnt):
        kind = mm.jnt_type[j]
        if kind == mujoco.mjtJoint.mjJNT_FREE:
            out += list(q[i:i + 3]) + [q[i + 6]] + list(q[i + 3:i + 6])
            i += 7
        elif kind == mujoco.mjtJoint.mjJNT_BALL:
            out += [q[i + 3]] + list(q[i:i + 3])
            i += 4
        else:
            out.append(q[i])
            i += 1
    return np.array(out)


def _random_q(model, rng):
    q = rng.normal(size=model.nq)
    f = 7 if model.floating else 0
    if model.floating:
        q[3:7] /= np.linalg.norm(q[3:7])
    for qs in model._balls[0]:
        q[f + qs:f + qs + 4] /= np.linalg.norm(q[f + qs:f + qs + 4])
    return q


@pytest.fixture(params=["default", "body-major", "batch-last"])
def path(request, monkeypatch):
    """Each test through the model's default route and each torch layout."""
    if request.param == "default":
        yield request.param
        return
    monkeypatch.setattr(model_module, "BATCH_LAST_BATCH", 1 if request.param == "batch-last" else 10**9)
    with torch_only():
        yield request.param


def test_layout_and_description():
    model = RobotModel.from_file(CHAIN)
    assert model.joint_names == ["shoulder", "elbow", "wrist", "thumb"]
    assert (model.nq, model.nv, model.dof) == (10, 8, 8)
    assert model.description.joint("shoulder").type == "ball"
    np.testing.assert_array_equal(model.neutral().numpy(), [0, 0, 0, 1, 0, 0, 0, 0, 1, 0])
    floating = RobotModel.from_file(FLOATING)
    assert floating.floating and (floating.nq, floating.nv) == (7 + 4 + 1 + 4, 6 + 3 + 1 + 3)
    assert floating.neutral().numpy()[[6, 10, 15]].tolist() == [1, 1, 1]


def test_fixed_base_exact_against_mujoco(path):
    model = RobotModel.from_file(CHAIN)
    mm = mujoco.MjModel.from_xml_path(str(CHAIN))
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = _random_q(model, rng)
        v, tau, a = rng.normal(size=(3, model.nv))
        md.qpos[:], md.qvel[:], md.qfrc_applied[:] = _to_mujoco_qpos(model, mm, q), v, tau
        mujoco.mj_forward(mm, md)
        assert_poses_match(model, q, mm, md)
        M = full_mass_matrix(mm, md)
        np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), M, atol=1e-12)
        np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), md.qfrc_bias, atol=1e-12)
        for method in ("articulated", "composite"):
            qdd = model.forward_dynamics(t(q), t(v), t(tau), method=method).numpy()
            np.testing.assert_allclose(M @ qdd, M @ md.qacc, atol=1e-10)
        np.testing.assert_allclose(model.inverse_dynamics(t(q), t(v), t(a)).numpy(), M @ a + md.qfrc_bias,
                                   atol=1e-11)
        v0 = np.zeros(model.nv)
        md.qvel[:] = 0.0
        mujoco.mj_forward(mm, md)
        np.testing.assert_allclose(model.gravity_torques(t(q)).numpy(), md.qfrc_bias, atol=1e-12)
        np.testing.assert_allclose(model.bias_forces(t(q), t(v0)).numpy(), md.qfrc_bias, atol=1e-12)


def test_floating_base_exact_against_mujoco_and_pinocchio(path):
    model = RobotModel.from_file(FLOATING)
    mm = mujoco.MjModel.from_xml_path(str(FLOATING))
    md = mujoco.MjData(mm)
    pm = pin.buildModelFromMJCF(str(FLOATING))
    pd = pm.createData()
    assert (pm.nq, pm.nv) == (model.nq, model.nv)
    assert [pm.joints[i].shortname() for i in range(2, pm.njoints)] == [
        "JointModelSpherical", "JointModelRY", "JointModelSpherical"]
    rng = np.random.default_rng(5)
    for _ in range(4):
        q = _random_q(model, rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        # Pinocchio: the same coordinates (free flyer and spherical quaternions x, y, z, w)
        tau_pin = pin.rnea(pm, pd, q, v, a)
        np.testing.assert_allclose(model.inverse_dynamics(t(q), t(v), t(a)).numpy(), tau_pin, atol=1e-10)
        Mp = pin.crba(pm, pd, q)
        M = model.mass_matrix(t(q)).numpy()
        np.testing.assert_allclose(M, np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-10)
        np.testing.assert_allclose(model.forward_dynamics(t(q), t(v), t(tau)).numpy(),
                                   pin.aba(pm, pd, q, v, tau), atol=1e-9)
        # MuJoCo: v_mj = T v; its equations give tau = T^T (M_mj (T a + Tdot v) + bias_mj)
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        T = np.eye(model.nv)
        T[:3, :3] = R
        md.qpos[:], md.qvel[:] = _to_mujoco_qpos(model, mm, q), T @ v
        mujoco.mj_forward(mm, md)
        M_mj = full_mass_matrix(mm, md)
        np.testing.assert_allclose(M, T.T @ M_mj @ T, atol=1e-12)
        Tdot_v = np.zeros(model.nv)
        Tdot_v[:3] = R @ np.cross(v[3:6], v[:3])
        np.testing.assert_allclose(model.inverse_dynamics(t(q), t(v), t(a)).numpy(),
                                   T.T @ (M_mj @ (T @ a + Tdot_v) + md.qfrc_bias), atol=1e-10)
        assert_poses_match(model, q, mm, md)


def test_jacobians_against_pinocchio(path):
    model = RobotModel.from_file(CHAIN)
    pm = pin.buildModelFromMJCF(str(CHAIN))
    pd = pm.createData()
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = _random_q(model, rng)
        pin.computeJointJacobians(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        for link in ("upper", "fore", "hand", "thumb"):
            fid = pm.getFrameId(link, pin.BODY)
            Jp = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
            np.testing.assert_allclose(model.jacobian(t(q), link).numpy(), Jp, atol=1e-12)
            np.testing.assert_allclose(model.link_pose(t(q), link).numpy(), pd.oMf[fid].homogeneous, atol=1e-12)


def test_fixed_base_against_pinocchio(path):
    model = RobotModel.from_file(CHAIN)
    pm = pin.buildModelFromMJCF(str(CHAIN))
    pd = pm.createData()
    rng = np.random.default_rng(9)
    for _ in range(3):
        q = _random_q(model, rng)
        v, a, tau = rng.normal(size=(3, model.nv))
        np.testing.assert_allclose(model.inverse_dynamics(t(q), t(v), t(a)).numpy(), pin.rnea(pm, pd, q, v, a),
                                   atol=1e-10)
        np.testing.assert_allclose(model.forward_dynamics(t(q), t(v), t(tau)).numpy(), pin.aba(pm, pd, q, v, tau),
                                   rtol=1e-9, atol=1e-8)


def test_integrate_difference_against_pinocchio():
    model = RobotModel.from_file(FLOATING)
    pm = pin.buildModelFromMJCF(str(FLOATING))
    rng = np.random.default_rng(1)
    for _ in range(3):
        q0, q1 = _random_q(model, rng), _random_q(model, rng)
        v = rng.normal(size=model.nv)
        np.testing.assert_allclose(model.integrate(t(q0), t(v), 0.3).numpy(), pin.integrate(pm, q0, 0.3 * v),
                                   atol=1e-12)
        np.testing.assert_allclose(model.difference(t(q0), t(q1)).numpy(), pin.difference(pm, q0, q1), atol=1e-10)
    batch = model.integrate(t(np.stack([q0, q1])), t(np.stack([v, -v])))
    assert batch.shape == (2, model.nq)


def test_derivatives_against_finite_differences_on_the_manifold():
    model = RobotModel.from_file(FLOATING)
    rng = np.random.default_rng(2)
    q, v, a = t(_random_q(model, rng)), t(rng.normal(size=model.nv)), t(rng.normal(size=model.nv))
    dq, dv, da = model.rnea_derivatives(q, v, a)
    eps = 1e-6
    fd = torch.stack([(model.inverse_dynamics(model.integrate(q, e * eps), v, a)
                       - model.inverse_dynamics(model.integrate(q, -e * eps), v, a)) / (2 * eps)
                      for e in torch.eye(model.nv, dtype=torch.float64)], dim=-1)
    np.testing.assert_allclose(dq.numpy(), fd.numpy(), atol=1e-6)
    np.testing.assert_allclose(da.numpy(), model.mass_matrix(q).numpy(), atol=1e-12)
    # the Jacobian maps v to the link's velocity: d/dt of its pose along q(t) = integrate(q, v t)
    J = model.jacobian(q, "shin")
    p = lambda s: model.link_pose(model.integrate(q, v * s), "shin")  # noqa: E731
    dp = (p(eps) - p(-eps)) / (2 * eps)
    np.testing.assert_allclose((J[:3] @ v).numpy(), dp[:3, 3].numpy(), atol=1e-7)


def test_gradients_flow_through_ball_models():
    model = RobotModel.from_file(CHAIN)
    rng = np.random.default_rng(4)
    q = t(_random_q(model, rng)).requires_grad_(True)
    v = t(rng.normal(size=model.nv)).requires_grad_(True)
    tau = model.inverse_dynamics(q, v, torch.zeros(model.nv, dtype=torch.float64))
    tau.square().sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(v.grad).all() and v.grad.abs().sum() > 0


def test_ball_models_take_the_compiled_kernels_for_values_and_gradients():
    """The compiled value kernels know ball joints (the default route above is checked against
    MuJoCo), and so do the derivative kernels (tests/engine/robots/test_ball_derivatives.py) and
    the compiled backward (test_ball_backward.py): a gradient of a ball model takes the compiled
    backward; the compiled shortcut serves the regressor (checked against Pinocchio there)."""
    from engine.robots.compiled_shortcut import model_calls

    model = RobotModel.from_file(CHAIN)
    q = t(_random_q(model, np.random.default_rng(6)))[None]
    assert model._backend_for(q).name == "compiled"
    assert model._backend_for(q.clone().requires_grad_(True)).name == "compiled-autograd"
    calls = model_calls(model)
    v = np.ones(model.nv)
    with torch_only():
        Y = model.regressor(q[0], t(v), t(v)).numpy()
    np.testing.assert_allclose(calls.regressor(q[0].numpy(), v, v), Y, atol=1e-12)
    np.testing.assert_allclose(calls.crba(q[0].numpy()), model.mass_matrix(q[0]).numpy(), atol=1e-14)
    with torch_only():
        M = model.mass_matrix(q[0]).numpy()
        h = model.bias_forces(q[0], t(v)).numpy()
        J = model.jacobian(q[0], "hand", point=t([0.1, 0.2, 0.3])).numpy()
    np.testing.assert_allclose(calls.crba(q[0].numpy()), M, atol=1e-13)
    np.testing.assert_allclose(calls.rnea(q[0].numpy(), v, None), h, atol=1e-13)
    np.testing.assert_allclose(model.jacobian(q[0], "hand", point=t([0.1, 0.2, 0.3])).numpy(), J, atol=1e-13)
    dq, dv, da = model.rnea_derivatives(q[0], t(v), t(v))
    np.testing.assert_allclose(da.numpy(), M, atol=1e-12)


def test_simulation_integrates_ball_quaternions_like_mujoco():
    """Free fall of the ball chain: our RK4 on the manifold against MuJoCo's RK4 (its ball
    quaternions integrated on the sphere too) at a fine step; quaternions stay unit, energy holds."""
    from engine.robots.simulate import SimulationOptions, simulate

    model = RobotModel.from_file(CHAIN)
    mm = mujoco.MjModel.from_xml_path(str(CHAIN))
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    mm.opt.timestep = 1e-3
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(8)
    q0, v0 = _random_q(model, rng), rng.normal(size=model.nv)
    md.qpos[:], md.qvel[:] = _to_mujoco_qpos(model, mm, q0), v0
    for _ in range(200):
        mujoco.mj_step(mm, md)
    res = simulate(model, t(q0), t(v0), SimulationOptions(mode="free_fall", duration=0.2, dt=1e-3, damping=False,
                                                          frame_rate=50.0))
    qT, vT = res.q[-1], res.qd[-1]
    np.testing.assert_allclose(_to_mujoco_qpos(model, mm, qT), md.qpos, atol=1e-7)
    np.testing.assert_allclose(vT, md.qvel, atol=1e-6)
    for qs in model._balls[0]:
        assert abs(np.linalg.norm(qT[qs:qs + 4]) - 1.0) < 1e-12
    energy = [float(model.kinetic_energy(t(q), t(v)) + model.potential_energy(t(q))) for q, v in zip(res.q, res.qd)]
    assert max(energy) - min(energy) < 1e-6


def test_simulation_of_a_floating_base_with_ball_joints_keeps_energy_and_unit_quaternions():
    from engine.robots.simulate import SimulationOptions, simulate

    model = RobotModel.from_file(FLOATING)
    rng = np.random.default_rng(12)
    q0, v0 = _random_q(model, rng), rng.normal(size=model.nv)
    res = simulate(model, t(q0), t(v0), SimulationOptions(mode="free_fall", duration=0.1, dt=1e-3, damping=False,
                                                          frame_rate=100.0))
    energy = [float(model.kinetic_energy(t(q), t(v)) + model.potential_energy(t(q))) for q, v in zip(res.q, res.qd)]
    assert max(energy) - min(energy) < 1e-7
    for s in (slice(3, 7), slice(7, 11), slice(12, 16)):
        assert abs(np.linalg.norm(res.q[-1][s]) - 1.0) < 1e-12


def test_ik_reaches_a_pose_through_ball_joints():
    """solve_ik takes a ball model to the manifold solver: q stays with unit quaternions, and the
    hand reaches a pose the chain can take (two balls and a hinge: the pose of a random q)."""
    from engine.robots.ik import solve_ik

    model = RobotModel.from_file(CHAIN)
    goal_q = t(_random_q(model, np.random.default_rng(13)))
    target = model.link_pose(goal_q, "hand")
    r = solve_ik(model, {"hand": target}, tol_pos=1e-9, tol_rot=1e-9)
    assert bool(r.converged) and r.q.shape == (model.nq,)
    np.testing.assert_allclose(model.link_pose(r.q, "hand").numpy(), target.numpy(), atol=1e-8)
    for qs in model._balls[0]:
        assert abs(float(r.q[qs:qs + 4].norm()) - 1.0) < 1e-12


def test_log_replay_reads_ball_quaternion_columns(tmp_path):
    """A MuJoCo run of the ball chain written as a CSV log (each ball as <joint>_qw .. _qz, the
    hinge and slide by name): the replay finds the columns, and its configurations put every link
    where MuJoCo had it; the replayed angular velocities are MuJoCo's (central differences)."""
    from engine.data.log_replay import ReplayMapping, make_replay
    from engine.logs.reader import read_log

    model = RobotModel.from_file(CHAIN)
    mm = mujoco.MjModel.from_xml_path(str(CHAIN))
    mm.opt.timestep = 1e-3
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(21)
    md.qpos[:] = _to_mujoco_qpos(model, mm, _random_q(model, rng))
    md.qvel[:] = rng.normal(size=model.nv)
    rows, xpos, qvel = [], [], []
    for _ in range(60):
        mujoco.mj_forward(mm, md)
        rows.append([md.time, *md.qpos])
        xpos.append(md.xpos.copy())
        qvel.append(md.qvel.copy())
        mujoco.mj_step(mm, md)
    header = ["time", "shoulder_qw", "shoulder_qx", "shoulder_qy", "shoulder_qz", "elbow",
              "wrist_qw", "wrist_qx", "wrist_qy", "wrist_qz", "thumb"]
    path = tmp_path / "run.csv"
    np.savetxt(path, np.array(rows), delimiter=",", header=",".join(header), comments="")
    table = read_log(path)
    rmap = ReplayMapping.auto(table, model)
    assert rmap.balls == {"shoulder": header[1:5], "wrist": header[6:10]}
    assert sorted(rmap.joints) == ["elbow", "thumb"]
    assert ReplayMapping.from_dict(rmap.to_dict()).balls == rmap.balls
    replay = make_replay(table, rmap, model)
    assert replay.q.shape == (60, model.dof) and replay.mapped.all()
    poses = replay.link_poses(model, replay.t)
    for b in range(1, mm.nbody):
        i = model.link_names.index(mm.body(b).name)
        np.testing.assert_allclose(poses[:, i, :3, 3], np.array(xpos)[:, b], atol=1e-9)
    # MuJoCo's Euler step moves q by the next velocity: a central difference is the mean of two
    qvel = np.array(qvel)
    np.testing.assert_allclose(replay.qd[10:50], 0.5 * (qvel[10:50] + qvel[11:51]), atol=1e-4)


def test_what_urdf_and_the_model_cannot_say_about_ball_joints_is_said(tmp_path):
    from engine.robots.urdf_export import save_urdf

    model = RobotModel.from_file(CHAIN)
    with pytest.raises(ValueError, match="joint 'shoulder' is a ball joint, which URDF cannot express"):
        save_urdf(model, tmp_path / "chain.urdf")
    assert model.joints_moving(["fore"]) == [0, 1, 2, 3]           # the shoulder's three, the elbow
    assert model.joints_moving(["thumb"]) == [0, 1, 2, 3, 7]
    cone = tmp_path / "cone.xml"
    cone.write_text('<mujoco><worldbody><body name="a"><joint name="s" type="ball" range="0 0.5"/>'
                    '<geom size="0.1 0.2 0.3" type="box" mass="1"/></body></worldbody></mujoco>')
    lines = RobotModel.from_file(cone).description.not_modelled
    assert any(line.startswith("ball joint ranges") and "'s'" in line for line in lines)
    assert not any(line.startswith("joint limits") for line in lines)


def test_a_description_built_in_python_against_pinocchios_spherical_joint_built_by_hand():
    """The Python API (Joint(type="ball")) against a Pinocchio model assembled joint by joint:
    JointModelSpherical at a rotated placement, a revolute below it, a free flyer above."""
    from engine.robots.description import Inertial, Joint, Link, Origin, RobotDescription

    inertials = {
        "base": Inertial(2.0, Origin((0.01, 0.02, -0.03), (0.1, 0.0, 0.2)), (0.05, 0.001, 0.0, 0.06, 0.002, 0.07)),
        "arm": Inertial(1.1, Origin((0.1, 0.03, 0.0), (0.0, 0.3, 0.0)), (0.01, 0.0, 0.001, 0.02, 0.0, 0.015)),
        "hand": Inertial(0.4, Origin((0.05, 0.0, 0.02)), (0.002, 0.0, 0.0, 0.003, 0.0, 0.001)),
    }
    ball = Origin((0.2, -0.1, 0.05), (0.3, -0.2, 0.4))
    hinge = Origin((0.25, 0.0, 0.0), (0.0, 0.1, 0.0))
    desc = RobotDescription(
        name="hand_built", root="base", floating_base=True,
        links=tuple(Link(name, inertial=i) for name, i in inertials.items()),
        joints=(Joint("shoulder", "ball", "base", "arm", origin=ball),
                Joint("wrist", "continuous", "arm", "hand", origin=hinge, axis=(0.0, 0.6, 0.8))))
    model = RobotModel.from_description(desc)

    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, 0.0, -9.81])

    def inertia(i):
        return pin.Inertia(i.mass, np.array(i.origin.xyz), i.inertia_in_link_frame())

    def se3(o):
        return pin.SE3(o.rotation(), np.array(o.xyz))

    j0 = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    pm.appendBodyToJoint(j0, inertia(inertials["base"]), pin.SE3.Identity())
    j1 = pm.addJoint(j0, pin.JointModelSpherical(), se3(ball), "shoulder")
    pm.appendBodyToJoint(j1, inertia(inertials["arm"]), pin.SE3.Identity())
    j2 = pm.addJoint(j1, pin.JointModelRevoluteUnaligned(np.array([0.0, 0.6, 0.8])), se3(hinge), "wrist")
    pm.appendBodyToJoint(j2, inertia(inertials["hand"]), pin.SE3.Identity())
    pd = pm.createData()
    assert (pm.nq, pm.nv) == (model.nq, model.nv) == (12, 10)
    rng = np.random.default_rng(17)
    for path in ("compiled", "torch"):
        for _ in range(3):
            q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
            v, a, tau = rng.normal(size=(3, pm.nv))
            with torch_only() if path == "torch" else torch.no_grad():
                np.testing.assert_allclose(model.inverse_dynamics(t(q), t(v), t(a)).numpy(), pin.rnea(pm, pd, q, v, a),
                                           atol=1e-10)
                Mp = pin.crba(pm, pd, q)
                np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), np.triu(Mp) + np.triu(Mp, 1).T,
                                           atol=1e-10)
                np.testing.assert_allclose(model.forward_dynamics(t(q), t(v), t(tau)).numpy(),
                                           pin.aba(pm, pd, q, v, tau), atol=1e-9)


def test_learnable_damping_of_a_ball_joint_acts_on_its_three_coordinates():
    model = RobotModel.from_file(FLOATING)
    sv = model.joint_coordinates("shoulder")[1]
    k = slice(sv.start - 6, sv.stop - 6)                     # in joint_damping(), without the base
    model.make_learnable("arm", "damping")
    module = model.learnable_parameters()[("arm", "damping")]
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.5)
    d = model.joint_damping()
    assert d.shape == (model.dof,) and float(d[k][0]) > 0 and torch.allclose(d[k], d[k][0].expand(3))
    assert float(d[:k.start].abs().sum()) == 0.0
    v = torch.ones(model.nv, dtype=torch.float64)
    q = model.neutral()
    tau = (model.inverse_dynamics(q, v, torch.zeros_like(v), gravity=False, damping=True)
           - model.inverse_dynamics(q, v, torch.zeros_like(v), gravity=False))
    np.testing.assert_allclose(tau[6:].detach().numpy(), d.detach().numpy(), atol=1e-12)
