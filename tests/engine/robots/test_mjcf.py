"""MJCF files through MuJoCo's compiled model, checked against Pinocchio's own MJCF parser
(pin.buildModelFromMJCF) and MuJoCo itself (body poses, mj_fullM, mj_inverse) on the same file:
a fixed-base arm with anchored hinges, a slide and armature, and a floating base (a free root
joint) with armature, at random base poses."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import torch
from scipy.spatial.transform import Rotation

from engine.cli import main
from engine.robots import RobotModel
from engine.robots.files import file_format
from engine.robots.mjcf import MJCFError, load_mjcf
from tests.engine.robots.mjcf_scene import assert_poses_match

HERE = Path(__file__).parent / "mjcf"
ARM = HERE / "arm.xml"


def _full_m(mm, md):
    M = np.zeros((mm.nv, mm.nv))
    try:
        mujoco.mj_fullM(mm, md, M)          # MuJoCo >= 4
    except TypeError:
        mujoco.mj_fullM(mm, M, md.qM)       # MuJoCo 3
    return M


def _quat_R(wxyz):
    w, x, y, z = wxyz
    return Rotation.from_quat([x, y, z, w]).as_matrix()


@pytest.fixture(scope="module")
def arm():
    model = RobotModel.from_file(ARM)
    pm = pin.buildModelFromMJCF(str(ARM))
    mm = mujoco.MjModel.from_xml_path(str(ARM))
    return model, pm, pm.createData(), mm, mujoco.MjData(mm)


def test_fixed_base_arm_description(arm):
    model, _, _, mm, _ = arm
    assert file_format(ARM) == "mjcf" and model.name == "arm3"
    desc = model.description
    assert not desc.floating_base and desc.root == "world"
    assert model.joint_names == ["j1", "j2", "j3", "j4"]
    types = {j.name: j.type for j in desc.movable_joints}
    assert types == {"j1": "revolute", "j2": "continuous", "j3": "prismatic", "j4": "continuous"}
    for name in model.joint_names:
        j, k = desc.joint(name), mm.joint(name)
        assert j.armature == pytest.approx(mm.dof_armature[k.dofadr[0]])
        assert j.damping == pytest.approx(mm.dof_damping[k.dofadr[0]])
    assert (desc.joint("j1").limit.lower, desc.joint("j1").limit.upper) == (-2.0, 2.0)
    kinds = {v.geometry.kind for l in desc.links for v in l.visuals}
    assert kinds == {"box", "capsule", "cylinder", "sphere"}          # the plane is left to the viewer


def test_fixed_base_arm_exact_against_pinocchio_and_mujoco(arm, dynamics_path):
    model, pm, pd, mm, md = arm
    assert [pm.names[i] for i in range(1, pm.njoints)][:2] == ["j1", "j2"] and pm.nv == model.dof
    armature = np.array([j.armature for j in model.description.movable_joints])
    np.testing.assert_allclose(pm.armature, armature)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = rng.uniform(-0.1, 0.1, 4) * np.array([10, 10, 1, 10])
        v, a = rng.normal(size=4), rng.normal(size=4)
        M = model.mass_matrix(t(q)).numpy()          # armature on the diagonal, as MuJoCo and Pinocchio
        tau = model.inverse_dynamics(t(q), t(v), t(a)).numpy()
        Mp = pin.crba(pm, pd, q)
        np.testing.assert_allclose(M, np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-12)
        np.testing.assert_allclose(tau, pin.rnea(pm, pd, q, v, a), atol=1e-12)
        md.qpos[:], md.qvel[:] = q, v
        mujoco.mj_forward(mm, md)
        np.testing.assert_allclose(M, _full_m(mm, md), atol=1e-12)
        md.qacc[:] = a
        mujoco.mj_inverse(mm, md)            # with MuJoCo's joint damping
        tau_d = model.inverse_dynamics(t(q), t(v), t(a), damping=True).numpy()
        np.testing.assert_allclose(tau_d, md.qfrc_inverse, atol=1e-12)
        # every body's frame is MuJoCo's (hinges anchored off the body origin included)
        assert_poses_match(model, q, mm, md)


def test_mesh_geoms_show_where_mujoco_puts_them(tmp_path):
    import trimesh

    (tmp_path / "meshes").mkdir()
    part = trimesh.creation.box(extents=[0.2, 0.1, 0.05])
    part.apply_transform(trimesh.transformations.rotation_matrix(0.4, [1, 1, 0], point=[0, 0, 0]))
    part.apply_translation([0.3, 0.1, -0.2])
    part.export(tmp_path / "meshes" / "part.stl")
    xml = tmp_path / "m.xml"
    xml.write_text(
        '<mujoco><compiler meshdir="meshes"/><asset><mesh name="part" file="part.stl" scale="2 1 1"/>'
        '</asset><worldbody><body name="a" pos="0 0 1"><joint name="j" axis="0 1 0"/>'
        '<geom type="mesh" mesh="part" pos="0.1 0.2 0.3" euler="10 20 30" rgba="1 0 0 1"/>'
        "</body></worldbody></mujoco>"
    )
    desc = load_mjcf(xml)
    (visual,) = desc.link("a").visuals
    g = visual.geometry
    assert g.kind == "mesh" and Path(g.path) == (tmp_path / "meshes" / "part.stl").resolve()
    assert g.scale == (2.0, 1.0, 1.0) and visual.rgba == (1.0, 0.0, 0.0, 1.0)
    raw = trimesh.load(g.path).vertices * np.asarray(g.scale)
    shown = raw @ visual.origin.rotation().T + np.asarray(visual.origin.xyz)
    mm = mujoco.MjModel.from_xml_path(str(xml))
    V = mm.mesh_vert[mm.mesh_vertadr[0]:mm.mesh_vertadr[0] + mm.mesh_vertnum[0]]
    expected = V @ _quat_R(mm.geom_quat[0]).T + mm.geom_pos[0]      # in the body frame
    from scipy.spatial import cKDTree
    assert cKDTree(expected).query(shown)[0].max() < 1e-6


def test_floating_base_description_against_mujocos_model():
    path = HERE / "floating.xml"
    desc = load_mjcf(path)
    mm = mujoco.MjModel.from_xml_path(str(path))
    assert desc.floating_base and desc.root == "torso"
    assert "world" not in [l.name for l in desc.links]              # the floor is the viewer's ground
    assert [j.name for j in desc.movable_joints] == ["hip", "knee"]
    for body in ("torso", "thigh", "shin"):
        b = mm.body(body).id
        inertial = desc.link(body).inertial
        assert inertial.mass == pytest.approx(mm.body_mass[b], rel=1e-12)
        np.testing.assert_allclose(inertial.origin.xyz, mm.body_ipos[b], atol=1e-12)
        np.testing.assert_allclose(inertial.origin.rotation(), _quat_R(mm.body_iquat[b]), atol=1e-12)
        np.testing.assert_allclose(np.diag(inertial.inertia_matrix()), mm.body_inertia[b], rtol=1e-12)
    for name in ("hip", "knee"):
        j = desc.joint(name)
        assert j.armature == pytest.approx(mm.dof_armature[mm.joint(name).dofadr[0]])
        np.testing.assert_allclose(
            (j.limit.lower, j.limit.upper), mm.jnt_range[mm.joint(name).id], atol=1e-15
        )
    assert desc.joint("hip").limit.lower == pytest.approx(-np.pi / 2)   # degrees compiled to radians
    # the thigh's inertia MuJoCo computed from its capsule: in the link frame it equals a capsule's
    I_link = desc.link("thigh").inertial.inertia_in_link_frame()
    assert np.allclose(I_link, I_link.T) and I_link[0, 0] == pytest.approx(I_link[1, 1], rel=1e-9)
    # Pinocchio reads the same file as a free flyer on the torso with the same armature
    pm = pin.buildModelFromMJCF(str(path))
    assert pm.nq == 7 + 2 and pm.nv == 6 + 2 and list(pm.names)[2:] == ["hip", "knee"]
    np.testing.assert_allclose(pm.armature[6:], [0.02, 0.01])


def test_ball_joints_load_and_deep_free_joints_are_refused_clearly(tmp_path):
    ball = RobotModel.from_file(HERE / "ball.xml")          # tests/engine/robots/test_ball_joints.py
    assert ball.description.joint("shoulder").type == "ball" and (ball.nq, ball.nv) == (4, 3)
    deep = tmp_path / "deep.xml"
    deep.write_text(
        '<mujoco><worldbody><body name="a"><joint axis="0 0 1"/><geom size="0.1" mass="1"/>'
        '<body name="b"><freejoint/><geom size="0.1" mass="1"/></body></body></worldbody></mujoco>'
    )
    with pytest.raises(MJCFError, match="deep.xml.*free joint"):
        load_mjcf(deep)
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><geom type='sphere'/></worldbody></mujoco>")
    with pytest.raises(MJCFError, match="bad.xml.*MuJoCo could not compile"):
        load_mjcf(bad)
    other = tmp_path / "other.xml"
    other.write_text("<sdf/>")
    with pytest.raises(ValueError, match="not a robot file"):
        RobotModel.from_file(other)


def test_cli_reads_mjcf(capsys):
    assert main(["robot", "info", str(ARM), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "mjcf" and info["dof"] == 4 and info["root"] == "world"
    assert info["total_mass"] == pytest.approx(2 + 1.3 + 0.8 + 0.4)


def test_floating_base_dynamics_exact_against_pinocchio_and_mujoco(dynamics_path):
    path = HERE / "floating.xml"
    model = RobotModel.from_file(path)
    assert model.floating and (model.nq, model.nv) == (9, 8)
    pm = pin.buildModelFromMJCF(str(path))
    pd = pm.createData()
    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    rng = np.random.default_rng(11)
    for _ in range(8):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        q[7:] = rng.uniform(-0.5, 0.0, 2)
        v, a = rng.normal(size=8), rng.normal(size=8)
        np.testing.assert_allclose(
            model.inverse_dynamics(t(q), t(v), t(a)).numpy(), pin.rnea(pm, pd, q, v, a), atol=1e-10
        )
        Mp = pin.crba(pm, pd, q)
        M = model.mass_matrix(t(q)).numpy()
        np.testing.assert_allclose(M, np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-10)
        # MuJoCo: quaternion w, x, y, z; its free-joint velocity is linear in the world frame
        md.qpos[:] = np.concatenate([q[:3], [q[6]], q[3:6], q[7:]])
        mujoco.mj_forward(mm, md)
        assert_poses_match(model, q, mm, md)
        np.testing.assert_allclose(
            np.linalg.eigvalsh(M), np.linalg.eigvalsh(_full_m(mm, md)), rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize(
    "fault,expected",
    [
        ("folder", "is a folder, not a mesh file"),
        ("empty", r"is empty \(0 bytes\)"),
        ("missing", "does not exist"),
    ],
)
def test_a_bad_mesh_file_is_named_with_its_body_before_mujoco_compiles(tmp_path, fault, expected):
    """MuJoCo's own message for a mesh that is a folder is "file is empty ... over 2GB"."""
    (tmp_path / "meshes").mkdir()
    target = tmp_path / "meshes" / "part.stl"
    if fault == "folder":
        target.mkdir()
    elif fault == "empty":
        target.write_bytes(b"")
    (tmp_path / "assets.xml").write_text(
        '<mujoco><asset><mesh name="part" file="part.stl"/></asset></mujoco>'
    )
    xml = tmp_path / "m.xml"
    xml.write_text(
        '<mujoco><compiler meshdir="meshes"/><include file="assets.xml"/><worldbody>'
        '<body name="forearm"><joint name="j" axis="0 1 0"/><geom type="mesh" mesh="part" mass="1"/>'
        "</body></worldbody></mujoco>"
    )
    with pytest.raises(
        MJCFError, match=f"mesh 'part', used by body 'forearm': file 'part.stl' .*{expected}"
    ) as info:
        load_mjcf(xml)
    assert "assets.xml" in str(info.value) and "2GB" not in str(info.value)
    with pytest.raises(ValueError):   # MuJoCo refuses it too: the check only says it first and plainly
        mujoco.MjModel.from_xml_path(str(xml))
