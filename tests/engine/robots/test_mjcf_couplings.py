"""MJCF ``<equality joint>`` couplings with a linear polynomial, as mimic joints: the coupled
state satisfies MuJoCo's own equality (its constraint residual is zero there), and the model's
mass matrix and bias forces are the projection of MuJoCo's unconstrained ones, ``G^T M G`` and
``G^T h`` (``G``: every joint's velocity from the independent ones, written here from the
polynomial, not read from the model)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from engine.robots import RobotModel
from engine.robots.mjcf import MJCFError, load_mjcf
from tests.engine.robots.mjcf_scene import full_mass_matrix, write_scene

t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731

# j3 - j3_ref = 0.1 + 0.5 (j2 - j2_ref), with reference positions (j3: -0.1, j2: 0.2 degrees)
COUPLED = '<equality><joint name="follow" joint1="j3" joint2="j2" polycoef="0.1 0.5 0 0 0"/></equality>'


def _scene(tmp_path, extra=COUPLED):
    path = write_scene(tmp_path, extra=extra)
    path.write_text(path.read_text().replace('<joint name="j3" axis="1 0 0.5"/>',
                                             '<joint name="j3" axis="1 0 0.5" ref="-0.1"/>')
                    .replace('actuatorgravcomp="true"/>', 'actuatorgravcomp="true" ref="0.2"/>'))
    return path


def test_a_linear_joint_equality_is_a_mimic_joint(tmp_path, dynamics_path):
    path = _scene(tmp_path)
    model = RobotModel.from_file(path, tree="world")
    assert model.joint_names == ["j1", "j2"] and model.mimic_joint_names == ["j3"]
    mimic = model.description.joint("j3").mimic
    offset = np.radians(-0.1) + 0.1 - 0.5 * np.radians(0.2)          # refs in degrees (MJCF's default unit)
    assert (mimic.joint, mimic.multiplier, mimic.offset) == ("j2", 0.5, pytest.approx(offset, abs=1e-15))
    assert not any("equality" in line for line in model.description.not_modelled)
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    G = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.5]])        # (j1, j2, j3) per (j1, j2)
    dofs = [mm.joint(n).dofadr[0] for n in ("j1", "j2", "j3")]
    rng = np.random.default_rng(17)
    for _ in range(5):
        q, v = rng.uniform(-1.5, 1.5, 2), rng.normal(size=2)
        q_all = np.array([q[0], q[1], 0.5 * q[1] + mimic.offset])
        md.qpos[:] = mm.qpos0
        md.qvel[:] = 0.0
        md.qpos[[mm.joint(n).qposadr[0] for n in ("j1", "j2", "j3")]] = q_all
        md.qvel[dofs] = G @ v
        mujoco.mj_forward(mm, md)
        rows = md.efc_type[:md.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        assert rows.sum() == 1
        assert abs(md.efc_pos[:md.nefc][rows][0]) < 1e-12           # MuJoCo's own equality holds
        M_mj = full_mass_matrix(mm, md)[np.ix_(dofs, dofs)]
        np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), G.T @ M_mj @ G, atol=1e-12)
        np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), G.T @ md.qfrc_bias[dofs], atol=1e-11)
        # the coupled joint's pose is MuJoCo's
        P = model.link_pose(t(q), "lower").numpy()
        np.testing.assert_allclose(P[:3, 3], md.xpos[mm.body("lower").id], atol=1e-12)


def test_couplings_left_as_constraints_are_named(tmp_path):
    path = _scene(tmp_path)
    loose = load_mjcf(path, tree="world", mimic="independent")
    assert [j.name for j in loose.movable_joints if j.mimic] == []
    assert "equality constraints <joint>: 1 joint coupling(s) (a polynomial of another joint): 'follow'" \
        in loose.not_modelled
    with pytest.raises(MJCFError, match=r"scene\.xml.*joint 'j3' is coupled to 'j2' by an <equality joint>"):
        load_mjcf(path, tree="world", mimic="error")
    for extra in ('<equality><joint joint1="j3" joint2="j2" polycoef="0 0.5 0.2 0 0"/></equality>',   # quadratic
                  '<equality><joint joint1="j3" joint2="j2" active="false"/></equality>',            # inactive
                  '<equality><joint joint1="j3"/></equality>',                                        # a lock
                  '<equality><joint joint1="j3" joint2="j2"/><joint joint1="j2" joint2="j3"/></equality>'):
        desc = load_mjcf(_scene(tmp_path, extra), tree="world")
        coupled = [j.name for j in desc.movable_joints if j.mimic]
        listed = [l for l in desc.not_modelled if l.startswith("equality constraints <joint>")]
        assert len(coupled) + int(listed[0].split(": ")[1].split(" ")[0] if listed else 0) == extra.count("<joint ")


def test_joint_ref_the_file_pose_is_at_q_equal_ref(tmp_path, dynamics_path):
    """MuJoCo's ``ref``: the body is where the file puts it at ``q = ref`` (hinge and slide, with an
    anchored hinge and two joints in one body)."""
    path = tmp_path / "ref.xml"
    path.write_text(
        '<mujoco><compiler angle="radian"/><worldbody><body name="a" pos="0.1 0 0.2" euler="0.3 0 0.1">'
        '<joint name="s" type="slide" axis="1 1 0" ref="0.4"/><joint name="h" axis="0 0.6 0.8" pos="0 0.1 0" '
        'ref="-0.7"/><geom type="box" size="0.1 0.2 0.05" pos="0.1 0 0" mass="1"/>'
        '<body name="b" pos="0.3 0 0"><joint name="h2" axis="1 0 0" ref="1.1"/>'
        '<geom type="sphere" size="0.05" pos="0 0.1 0" mass="0.5"/></body></body></worldbody></mujoco>')
    model = RobotModel.from_file(path)
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(2)
    for q in [np.array([0.4, -0.7, 1.1])] + [rng.uniform(-2, 2, 3) for _ in range(4)]:
        md.qpos[:] = q
        md.qvel[:] = rng.normal(size=3)
        mujoco.mj_forward(mm, md)
        poses = model.forward_kinematics(t(q)).numpy()
        for body in ("a", "b"):
            P = poses[model.link_names.index(body)]
            np.testing.assert_allclose(P[:3, 3], md.xpos[mm.body(body).id], atol=1e-12)
            np.testing.assert_allclose(P[:3, :3], md.xmat[mm.body(body).id].reshape(3, 3), atol=1e-12)
        np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), full_mass_matrix(mm, md), atol=1e-12)
        np.testing.assert_allclose(model.bias_forces(t(q), t(md.qvel)).numpy(), md.qfrc_bias, atol=1e-12)
