"""Several kinematic trees in one MJCF file (a fixed arm, a free box with a lid, a free ball), and
what a file holds that the model does not model: every tree is named, each loads on request and
matches its block of MuJoCo's mass matrix and bias forces, nothing is dropped silently."""

from __future__ import annotations

import json
import logging

import mujoco
import numpy as np
import pytest
import torch

from engine.cli import main
from engine.robots import RobotModel
from engine.robots.mjcf import MJCFError, load_mjcf, load_mjcf_trees
from tests.engine.robots.mjcf_scene import (
    coordinates,
    full_mass_matrix,
    random_state,
    velocity_map,
    write_scene,
)

t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
# j3 = 0.1 + 0.5 j2 (both joints' references zero)
COUPLING = '<equality><joint joint1="j3" joint2="j2" polycoef="0.1 0.5 0 0 0"/></equality>'

EXTRA = """
  <tendon><fixed name="split"><joint joint="j2" coef="1"/><joint joint="j3" coef="-1"/></fixed></tendon>
  <equality><joint joint1="j3" joint2="j2" polycoef="0 0.5 0.1 0 0"/>
    <connect name="loop" body1="lower" body2="lid" anchor="0 0 0"/></equality>
"""


def test_a_file_with_several_trees_loads_the_robot_and_names_the_others(tmp_path, caplog):
    """Beside a robot with joints coupled by <equality joint> the free objects are kept too (the
    couplings are between the robot's scalar joints, the objects' quaternions pass through); a tree
    named loads alone, the others named with how to load one."""
    path = write_scene(tmp_path, extra=COUPLING)
    with caplog.at_level(logging.WARNING):
        desc = load_mjcf(path)
    assert desc.root == "world" and not desc.floating_base       # the arm, with the box and ball it handles
    assert not [line for line in desc.not_modelled if line.startswith("other kinematic trees")]
    assert "other kinematic trees" not in caplog.text
    assert [j.name for j in desc.movable_joints if j.mimic] == ["j3"]
    assert {"box_free", "ball_free", "hinge"} <= {j.name for j in desc.movable_joints}
    arm = load_mjcf(path, tree="world")
    others = [line for line in arm.not_modelled if line.startswith("other kinematic trees")]
    assert others == ["other kinematic trees of the file, not in this model (load one with tree='NAME', the "
                      "CLI's --tree NAME): 'box', 'ball'"]
    assert [j.name for j in arm.movable_joints] == ["j1", "j2", "j3"]
    with pytest.raises(MJCFError) as info:
        load_mjcf(path, tree="cube")
    message = str(info.value)
    assert "\n" not in message and "scene.xml" in message
    assert ("no tree named 'cube'; the trees are 'world' (fixed to the world, 3 DoF, 4.1 kg), 'box' (free body, "
            "7 DoF, 1.1 kg), 'ball' (free body, 6 DoF, 0.3 kg)") in message
    assert load_mjcf(path, tree="lower").root == "world"         # any body of a tree names it


def _scene_state(model, mm, md, rng):
    """A random state of the whole-scene model set into MuJoCo (each free object: slides from its
    initial position, ball quaternion after its initial one) -> ``(q, v, dofs)`` with ``dofs``
    MuJoCo's dof index of each of the model's velocity coordinates."""
    from scipy.spatial.transform import Rotation

    q = rng.uniform(-1.0, 1.0, model.nq)
    v = rng.normal(size=model.nv)
    md.qpos[:] = mm.qpos0
    dofs = np.zeros(model.nv, dtype=int)
    for name in model.joint_names:
        sq, sv = model.joint_coordinates(name)
        if name in model.ball_joint_names:                        # a free object's rotation
            quat = rng.normal(size=4)
            q[sq] = quat / np.linalg.norm(quat)                   # x y z w
            body = mm.body(model.description.joint(name).child)
            j = mm.joint(int(body.jntadr[0]))              # the free joint (perhaps unnamed in the file)
            w0, x0, y0, z0 = body.quat
            R = Rotation.from_quat([x0, y0, z0, w0]) * Rotation.from_quat(q[sq])
            x, y, z, w = R.as_quat()
            a, d = int(j.qposadr[0]), int(j.dofadr[0])
            md.qpos[a + 3:a + 7] = [w, x, y, z]
            dofs[sv] = range(d + 3, d + 6)
        elif name[-2:] in ("_x", "_y", "_z") and name[:-2] in model.ball_joint_names:
            j = mm.joint(int(mm.body(model.description.joint(name[:-2]).child).jntadr[0]))
            i = "xyz".index(name[-1])
            a, d = int(j.qposadr[0]), int(j.dofadr[0])
            md.qpos[a + i] = mm.body(int(j.bodyid[0])).pos[i] + q[sq.start]
            dofs[sv.start] = d + i
        else:
            md.qpos[mm.joint(name).qposadr[0]] = q[sq.start]
            dofs[sv.start] = mm.joint(name).dofadr[0]
    md.qvel[dofs] = v
    mujoco.mj_forward(mm, md)
    return q, v, dofs


def test_a_fixed_robot_keeps_its_free_objects_as_mujocos_free_joints(tmp_path, dynamics_path, caplog):
    """Without a tree named, a robot fixed to the world keeps the free bodies beside it (three world
    slides and a ball each): every degree of freedom of the file, MuJoCo's mass matrix, bias forces
    and gravity to 1e-10, the objects where the file puts them at q = 0, nothing named as left out."""
    path = write_scene(tmp_path, gravity="0.2 0.1 -9.81")
    with caplog.at_level(logging.WARNING):
        desc = load_mjcf(path)
    assert not [line for line in desc.not_modelled if line.startswith("other kinematic trees")]
    model = RobotModel.from_description(desc)
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    assert model.nv == mm.nv and model.nq == mm.nq
    assert model.ball_joint_names == ["box_free", "ball_free"]
    assert model.joint_names[3:7] == ["box_free_x", "box_free_y", "box_free_z", "box_free"]
    fk = model.forward_kinematics(model.neutral())             # q = 0: where the file puts everything
    d0 = mujoco.MjData(mm)
    mujoco.mj_forward(mm, d0)
    for body in ("box", "lid", "ball", "lower"):
        T = fk[model.link_names.index(body)].numpy()
        np.testing.assert_allclose(T[:3, 3], d0.xpos[mm.body(body).id], atol=1e-12)
        np.testing.assert_allclose(T[:3, :3], d0.xmat[mm.body(body).id].reshape(3, 3), atol=1e-12)
    rng = np.random.default_rng(5)
    for _ in range(4):
        q, v, dofs = _scene_state(model, mm, md, rng)
        M_mj = full_mass_matrix(mm, md)[np.ix_(dofs, dofs)]
        np.testing.assert_allclose(model.mass_matrix(t(q)).numpy(), M_mj, atol=1e-11)
        np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), md.qfrc_bias[dofs], atol=1e-10)
        md.qvel[:] = 0.0
        mujoco.mj_forward(mm, md)
        np.testing.assert_allclose(model.bias_forces(t(q), t(np.zeros_like(v))).numpy(), md.qfrc_bias[dofs],
                                   atol=1e-10)


def test_a_robot_with_coupled_joints_keeps_its_free_objects_and_matches_mujoco(tmp_path, dynamics_path):
    """The arm's coupled j3 (a mimic of j2) beside the free box and ball (three slides and a ball
    joint each): every MuJoCo degree of freedom but the coupled one is a coordinate, and the mass
    matrix, bias forces and gravity are MuJoCo's projected through ``G`` (written here from the
    polynomial) to 1e-10, at states where MuJoCo's own equality holds."""
    path = write_scene(tmp_path, gravity="0.2 0.1 -9.81", extra=COUPLING)
    model = RobotModel.from_file(path)
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    assert model.mimic_joint_names == ["j3"] and model.ball_joint_names == ["box_free", "ball_free"]
    assert (model.nv, model.nq) == (mm.nv - 1, mm.nq - 1)
    a2, a3 = mm.joint("j2").qposadr[0], mm.joint("j3").qposadr[0]
    d2, d3 = mm.joint("j2").dofadr[0], mm.joint("j3").dofadr[0]
    rng = np.random.default_rng(21)
    for _ in range(4):
        q, v, dofs = _scene_state(model, mm, md, rng)
        md.qpos[a3], md.qvel[d3] = 0.1 + 0.5 * md.qpos[a2], 0.5 * md.qvel[d2]
        mujoco.mj_forward(mm, md)
        rows = md.efc_type[:md.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        assert rows.sum() == 1 and abs(md.efc_pos[:md.nefc][rows][0]) < 1e-12
        G = np.zeros((mm.nv, model.nv))
        G[dofs, np.arange(model.nv)] = 1.0
        G[d3] = 0.5 * G[d2]
        M = model.mass_matrix(t(q)).numpy()
        np.testing.assert_allclose(M, G.T @ full_mass_matrix(mm, md) @ G, atol=1e-11)
        np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), G.T @ md.qfrc_bias, atol=1e-10)
        P = model.link_pose(t(q), "lower").numpy()
        np.testing.assert_allclose(P[:3, 3], md.xpos[mm.body("lower").id], atol=1e-12)
        md.qvel[:] = 0.0
        mujoco.mj_forward(mm, md)
        np.testing.assert_allclose(model.gravity_torques(t(q)).numpy(), G.T @ md.qfrc_bias, atol=1e-10)


def test_every_tree_matches_its_block_of_mujocos_mass_matrix_and_bias(tmp_path, dynamics_path):
    path = write_scene(tmp_path, gravity="0.2 0.1 -9.81")
    descs = load_mjcf_trees(path)
    assert list(descs) == ["world", "box", "ball"]
    assert [(d.root, d.floating_base) for d in descs.values()] == [("world", False), ("box", True), ("ball", True)]
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    models = [RobotModel.from_description(d) for d in descs.values()]
    assert sum(m.nv for m in models) == mm.nv                 # every degree of freedom is in one tree
    rng = np.random.default_rng(13)
    for _ in range(4):
        blocks = []
        for model in models:
            q, v = random_state(model, mm, md, rng)
            _, di = coordinates(model, mm)
            blocks.append(di)
            T = velocity_map(model, mm, md)
            M_mj = full_mass_matrix(mm, md)
            M = model.mass_matrix(t(q)).numpy()
            np.testing.assert_allclose(M, T.T @ M_mj[np.ix_(di, di)] @ T, atol=1e-11)
            dTv = np.zeros(model.nv)
            if model.floating:
                dTv[:3] = T[:3, :3] @ np.cross(v[3:6], v[:3])
            h = T.T @ (md.qfrc_bias[di] + M_mj[np.ix_(di, di)] @ dTv)
            np.testing.assert_allclose(model.bias_forces(t(q), t(v)).numpy(), h, atol=1e-10)
        # MuJoCo couples no two trees: its mass matrix is block-diagonal over them
        M_mj = full_mass_matrix(mm, md)
        for i, a in enumerate(blocks):
            for b in blocks[i + 1:]:
                assert not M_mj[np.ix_(a, b)].any()


def test_what_is_not_modelled_is_named_once_carried_and_listed(tmp_path, caplog, capsys):
    path = write_scene(tmp_path, extra=EXTRA)
    with caplog.at_level(logging.WARNING, logger="engine.robots.mjcf"):
        desc = load_mjcf(path, tree="world")
    warnings = [r.getMessage() for r in caplog.records if "not modelled" in r.getMessage()]
    assert len(warnings) == 1 and "scene.xml" in warnings[0]
    lines = desc.not_modelled
    expected = [
        "other kinematic trees of the file, not in this model (load one with tree='NAME', the CLI's --tree NAME): "
        "'box', 'ball'",
        "equality constraints <joint>: 1 joint coupling(s) (a polynomial of another joint): 'j3-j2'",  # quadratic
        "equality constraints <connect>: 1 loop closure(s) at a point: 'loop'",
        "tendons (their springs, damping, friction and the forces through them; a spatial tendon's length and "
        "limits): 1 fixed ('split')",
        "actuators (1; the model takes joint forces, not controls): 'm2'",
    ]
    for line in expected:
        assert line in lines
    assert any(l.startswith("joint limits as MuJoCo's soft constraints") and "'j1'" in l for l in lines)
    assert any(l.startswith("contacts (7 colliding geoms") for l in lines)
    for line in lines:                 # each named once
        assert warnings[0].count(line) == 1
    assert main(["robot", "info", str(path), "--tree", "world", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["not_modelled"] == list(lines) and info["dof"] == 3 and info["root"] == "world"
    assert info["gravcomp"] == {"upper": 0.7, "lower": 1.0} and info["gravity"] == [0.0, 0.0, -9.81]
    assert main(["robot", "info", str(path), "--tree", "box", "--json"]) == 0
    box = json.loads(capsys.readouterr().out)
    assert box["floating_base"] and box["dof"] == 1 and box["root"] == "box"
    assert main(["robot", "info", str(path), "--json"]) == 0      # the arm with the free objects beside it
    default = json.loads(capsys.readouterr().out)
    assert default["root"] == "world" and default["dof"] == 16
    assert not any(line.startswith("other kinematic trees") for line in default["not_modelled"])
    assert [t["name"] for t in default["trees"]] == ["world", "box", "ball"]      # what --tree can pick
    assert main(["robot", "info", str(path), "--tree", "cube"]) != 0
    err = capsys.readouterr().err
    assert "no tree named 'cube'" in err and "Traceback" not in err


def test_a_file_with_nothing_unmodelled_says_nothing(tmp_path, caplog):
    path = tmp_path / "plain.xml"
    path.write_text('<mujoco><worldbody><body name="a"><joint name="j" axis="0 1 0"/>'
                    '<geom size="0.1" mass="1" contype="0" conaffinity="0"/></body></worldbody></mujoco>')
    with caplog.at_level(logging.WARNING):
        desc = load_mjcf(path)
    assert desc.not_modelled == () and not caplog.records


def test_mujocos_compile_error_is_one_line(tmp_path):
    path = tmp_path / "fragment.xml"
    path.write_text('<mujoco><actuator><position class="waist" joint="j"/></actuator></mujoco>')
    with pytest.raises(MJCFError) as info:
        load_mjcf(path)
    message = str(info.value)
    assert "\n" not in message
    assert "MuJoCo could not compile the file: XML Error: unknown default class name 'waist'; Element 'position'" \
        in message and "fragment.xml" in message
