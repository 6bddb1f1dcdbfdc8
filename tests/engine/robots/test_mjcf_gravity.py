"""The file's gravity and body gravity compensation, against MuJoCo on the same file.

``<option gravity>`` is the model's gravity (a model in centimetres: -981), checked on MuJoCo's
bias forces (``qfrc_bias``) and gravity torques; body ``gravcomp`` and joint ``actuatorgravcomp``
give MuJoCo's ``qfrc_gravcomp``, split between ``qfrc_passive`` and ``qfrc_actuator`` as MuJoCo
splits it, and the accelerations with it are MuJoCo's (constraints off, so ``qacc`` is the
unconstrained ``M^-1 (passive + actuation - bias)``). Fixed and floating trees of one scene."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from engine.robots import RobotModel
from engine.robots.gravcomp import gravity_compensation
from engine.robots.simulate import SimulationOptions, simulate
from tests.engine.robots.mjcf_scene import (
    coordinates,
    full_mass_matrix,
    random_state,
    velocity_map,
    write_scene,
)

t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731


def _dT_v(model, mm, md, v, T):
    """``dT/dt v`` (nv,): MuJoCo's velocity is ``T v``, so its acceleration is ``T a + dT/dt v``
    (a floating base's linear velocity is in the world frame there: d/dt (R v_b) = R (a_b + w x
    v_b)); its bias forces are the model's ``T^-T h`` less ``M_mj dT/dt v``."""
    out = np.zeros(model.nv)
    if model.floating:
        out[:3] = T[:3, :3] @ np.cross(v[3:6], v[:3])
    return out


@pytest.mark.parametrize("tree", ["world", "box"])
def test_option_gravity_is_the_models_and_matches_mujocos_bias(tmp_path, tree, dynamics_path):
    path = write_scene(tmp_path, gravity="3 -2 -981")
    model = RobotModel.from_file(path, tree=tree)
    np.testing.assert_array_equal(model.gravity.numpy(), [3.0, -2.0, -981.0])
    assert model.description.gravity == (3.0, -2.0, -981.0)
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(3)
    _, di = coordinates(model, mm)
    for _ in range(5):
        q, v = random_state(model, mm, md, rng)
        T = velocity_map(model, mm, md)
        M_mj = full_mass_matrix(mm, md)[np.ix_(di, di)]
        bias = T.T @ (md.qfrc_bias[di] + M_mj @ _dT_v(model, mm, md, v, T))
        np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), bias, rtol=1e-11, atol=1e-9)
        np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), T.T @ M_mj @ T, atol=1e-11)
        md.qvel[:] = 0.0
        mujoco.mj_forward(mm, md)
        np.testing.assert_allclose(model.gravity_torques(t(q)).numpy(), T.T @ md.qfrc_bias[di], rtol=1e-11, atol=1e-9)
        # the default -9.81 would be off by a factor of 100
        assert not np.allclose(model.gravity_torques(t(q), gravity=t([0, 0, -9.81])).numpy(),
                               T.T @ md.qfrc_bias[di], rtol=0.5)


def test_disabled_gravity_is_zero_and_urdf_keeps_minus_9_81(tmp_path):
    path = write_scene(tmp_path, gravity="0 0 -981", flags='gravity="disable"')
    model = RobotModel.from_file(path, tree="world")
    assert model.gravity.tolist() == [0.0, 0.0, 0.0]
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    _, di = coordinates(model, mm)
    np.testing.assert_allclose(model.gravity_torques(t(md.qpos[:3])).numpy(), md.qfrc_bias[di], atol=1e-15)
    urdf = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j" type="continuous"><parent link="a"/><child link="b"/></joint></robot>')
    plain = RobotModel.from_string(urdf)
    assert plain.gravity.tolist() == [0.0, 0.0, -9.81] and plain.description.not_modelled == ()
    assert RobotModel.from_file(path, tree="world", gravity=(0.0, 0.0, -1.0)).gravity.tolist() == [0, 0, -1.0]


@pytest.mark.parametrize("tree", ["world", "box"])
def test_body_gravcomp_is_mujocos_passive_and_actuator_force(tmp_path, tree, dynamics_path):
    path = write_scene(tmp_path, gravity="0.5 -1 -9.81", flags='constraint="disable"')
    model = RobotModel.from_file(path, tree=tree)
    desc = model.description
    if tree == "world":
        assert {l.name: l.gravcomp for l in desc.links if l.gravcomp} == {"upper": 0.7, "lower": 1.0}
        assert [j.name for j in desc.movable_joints if j.actuator_gravcomp] == ["j2"]
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    _, di = coordinates(model, mm)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, v = random_state(model, mm, md, rng)
        T = velocity_map(model, mm, md)
        gc = gravity_compensation(model, t(q)).numpy()
        assert np.abs(gc).max() > 0.1
        np.testing.assert_allclose(gc, T.T @ md.qfrc_gravcomp[di], atol=1e-12)
        passive = gravity_compensation(model, t(q), part="passive") - model._damping_forces(t(v)[None])[0]
        np.testing.assert_allclose(passive.numpy(), T.T @ md.qfrc_passive[di], atol=1e-12)
        np.testing.assert_allclose(gravity_compensation(model, t(q), part="actuator").numpy(),
                                   T.T @ md.qfrc_actuator[di], atol=1e-12)
        # the accelerations of the file's robot: M qdd = tau_gc - D qd - h  (MuJoCo: constraints off)
        qdd = model.forward_dynamics(t(q), t(v), t(gc), damping=True).numpy()
        qacc = np.linalg.solve(T, md.qacc[di] - _dT_v(model, mm, md, v, T))
        np.testing.assert_allclose(qdd, qacc, atol=1e-9)
    batch = gravity_compensation(model, t(np.stack([q, q])))                     # batched
    assert batch.shape == (2, model.nv) and torch.allclose(batch[1], t(gc))




def test_a_fully_compensated_arm_stays_where_it_is_in_simulation(tmp_path):
    xml = ('<mujoco><worldbody><body name="a" gravcomp="1"><joint name="j1" axis="0 1 0"/>'
           '<geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/><body name="b" pos="0.5 0 0" '
           'gravcomp="1"><joint name="j2" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" '
           'mass="0.7"/></body></body></worldbody></mujoco>')
    path = tmp_path / "held.xml"
    path.write_text(xml)
    model = RobotModel.from_file(path)
    q0 = [0.4, -0.3]
    held = simulate(model, q0, options=SimulationOptions(mode="free_fall", duration=0.2, dt=0.01))
    np.testing.assert_allclose(held.q[-1], q0, atol=1e-12)
    # the gravity-compensation mode applies g(q) in all: the file's compensation is not added twice
    hold = simulate(model, q0, options=SimulationOptions(mode="gravity_compensation", duration=0.2, dt=0.01))
    np.testing.assert_allclose(hold.q[-1], q0, atol=1e-12)
    path.write_text(xml.replace('gravcomp="1"', 'gravcomp="0"'))
    falls = simulate(RobotModel.from_file(path), q0, options=SimulationOptions(mode="free_fall", duration=0.2,
                                                                               dt=0.01))
    assert np.abs(np.asarray(falls.q[-1]) - q0).max() > 0.05
