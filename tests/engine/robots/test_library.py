"""The robot library and the shipped URDFs, checked against the papers' equations.

References are independent of the engine: Pinocchio (``pin``), yourdfpy and the closed-form
equations of METHODS.md (SyMo pendulum and cart-pole, the eigenmode double pendulum).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import torch
import yourdfpy

from engine.paths import urdf_dir
from engine.robots.library import (
    RobotNotFoundError,
    joint_springs,
    list_robots,
    load_robot,
    resolve_robot,
    robot_entry,
)

G = 9.81
SHIPPED = ["acrobot", "cartpole", "double_pendulum", "panda", "pendulum", "planar_2link"]


def test_list_robots_has_shipped_and_installed_robots():
    entries = {e.name: e for e in list_robots()}
    for name in SHIPPED:
        assert entries[name].source == "shipped"
        assert entries[name].path == urdf_dir() / f"{name}.urdf"
    # example-robot-data, pybullet_data and diff_robot_data are dev dependencies
    for name, source in [("panda-erd", "example-robot-data"), ("ur5", "example-robot-data"),
                         ("allegro-right", "example-robot-data"), ("iiwa-bullet", "pybullet_data"),
                         ("iiwa7-drm", "diff_robot_data")]:
        assert entries[name].source == source
        assert entries[name].path.is_file()
    assert len(entries) == len(list_robots())  # names are unique


def test_resolve_names_aliases_and_paths(tmp_path):
    assert resolve_robot("panda") == urdf_dir() / "panda.urdf"
    assert resolve_robot("Double-Pendulum") == urdf_dir() / "double_pendulum.urdf"
    assert resolve_robot("iiwa").name in ("iiwa7.urdf", "model.urdf")
    assert resolve_robot("allegro") == resolve_robot("allegro-right")
    f = tmp_path / "mine.urdf"
    f.write_text((urdf_dir() / "pendulum.urdf").read_text())
    assert resolve_robot(str(f)) == f.resolve()
    assert resolve_robot(f) == f.resolve()


def test_unknown_robot_names_close_matches():
    with pytest.raises(RobotNotFoundError) as err:
        resolve_robot("pandaa")
    assert isinstance(err.value, ValueError)
    assert "'pandaa'" in str(err.value) and "panda" in str(err.value).split("did you mean")[1]
    with pytest.raises(RobotNotFoundError, match="no such robot file"):
        resolve_robot("/nowhere/robot.urdf")
    with pytest.raises(RobotNotFoundError):
        resolve_robot("")


def test_ros_package_path(tmp_path, monkeypatch):
    pkg = tmp_path / "ws" / "my_robot_description"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package><name>my_robot_description</name></package>")
    (pkg / "urdf" / "arm.urdf").write_text((urdf_dir() / "planar_2link.urdf").read_text())
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ws"))
    entry = {e.name: e for e in list_robots()}["my_robot_description/arm"]
    assert entry.source == "ros"
    assert resolve_robot("my_robot_description/arm") == pkg / "urdf" / "arm.urdf"
    assert load_robot("my_robot_description/arm").dof == 2


def test_load_robot_applies_entry_options():
    # the Allegro hand's published inertias load by default (with a warning); Bolt's feet (mass 0 with
    # an inertia) need strict=False
    assert robot_entry("allegro-right").options == {}
    assert robot_entry("bolt").options == {"floating_base": True, "strict": False}
    assert load_robot("allegro-right").dof == 16
    # example-robot-data's Panda: its second finger mimics the first, coupled as the file says
    # (8 dof, the fingers move together; Pinocchio 4's mimic=True model has nv 8 too)
    assert "mimic" not in robot_entry("panda-erd").options
    panda = load_robot("panda-erd")
    assert panda.dof == 8 and panda.mimic_joint_names == ["panda_finger_joint2"]
    assert pin.buildModelFromUrdf(str(resolve_robot("panda-erd")), mimic=True).nv == 8
    model = load_robot("panda", dtype=torch.float32)
    assert model.dof == 7 and model.dtype == torch.float32
    assert robot_entry("urdf/does-not-exist.urdf") is None


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_urdfs_load_in_pinocchio_and_yourdfpy(name):
    path = urdf_dir() / f"{name}.urdf"
    pm = pin.buildModelFromUrdf(str(path))
    urdf = yourdfpy.URDF.load(str(path), build_scene_graph=True, load_meshes=False)
    model = load_robot(name)
    assert pm.nv == model.dof == urdf.num_actuated_joints
    assert list(pm.names[1:]) == model.joint_names
    # no mesh: the app shows them on a fresh machine
    assert "<mesh" not in path.read_text()
    # pinocchio and the engine agree on the total mass
    assert sum(i.mass for i in pm.inertias) == pytest.approx(model.total_mass, rel=1e-12)


def test_pendulum_is_the_symo_pendulum():
    """thdd = -3g/(2l) sin(th + pi) + 3/(m l^2) u, th from the upright (m = l = 1)."""
    model = load_robot("pendulum")
    th = torch.linspace(-math.pi, math.pi, 13, dtype=torch.float64)[:, None]
    u = torch.linspace(-2, 2, 13, dtype=torch.float64)[:, None]
    qdd = model.forward_dynamics(th, torch.zeros_like(th), u)
    expected = -3 * G / 2 * torch.sin(th + math.pi) + 3 * u
    torch.testing.assert_close(qdd, expected, rtol=0, atol=1e-9)
    tip = model.link_pose(th, "tip")[..., :3, 3]
    torch.testing.assert_close(tip[:, 2], torch.cos(th[:, 0]), rtol=0, atol=1e-12)  # upright at 0


def test_cartpole_matches_the_symo_repository_equations():
    model = load_robot("cartpole")
    rng = np.random.default_rng(0)
    mc, mp, l = 1.0, 0.1, 0.5
    for _ in range(10):
        x, th = rng.uniform(-1, 1), rng.uniform(-math.pi, math.pi)
        xd, thd, u = rng.uniform(-2, 2), rng.uniform(-6, 6), rng.uniform(-2, 2)
        temp = (u + mp * l * thd ** 2 * math.sin(th)) / (mc + mp)
        thacc = (G * math.sin(th) - math.cos(th) * temp) / (l * (4 / 3 - mp * math.cos(th) ** 2 / (mc + mp)))
        xacc = temp - mp * l * thacc * math.cos(th) / (mc + mp)
        f64 = dict(dtype=torch.float64)
        qdd = model.forward_dynamics(torch.tensor([x, th], **f64), torch.tensor([xd, thd], **f64),
                                     torch.tensor([u, 0.0], **f64))
        np.testing.assert_allclose(qdd.numpy(), [xacc, thacc], rtol=1e-9, atol=1e-9)


def test_double_pendulum_matches_methods_section_3():
    model = load_robot("double_pendulum")
    q = torch.tensor([[0.4, -0.9], [2.0, 1.3], [-1.0, 3.0]], dtype=torch.float64)
    q1, q2 = q[:, 0], q[:, 1]
    M = model.mass_matrix(q)
    M11 = 3 + 2 * torch.cos(q2)
    M12 = 1 + torch.cos(q2)
    expected = torch.stack([torch.stack([M11, M12], -1), torch.stack([M12, torch.ones_like(q2)], -1)], -2)
    torch.testing.assert_close(M, expected, rtol=0, atol=1e-7)  # the tiny 1e-8 point-mass inertias
    # gravity torques = dV/dq of V = -2 g cos q1 - g cos(q1 + q2) (springs are not in the URDF)
    g = model.gravity_torques(q)
    dV = torch.stack([2 * G * torch.sin(q1) + G * torch.sin(q1 + q2), G * torch.sin(q1 + q2)], -1)
    torch.testing.assert_close(g, dV, rtol=0, atol=1e-9)
    tip = model.link_pose(q, "tip")[..., :3, 3]
    torch.testing.assert_close(tip[:, 0], torch.sin(q1) + torch.sin(q1 + q2), rtol=0, atol=1e-12)
    torch.testing.assert_close(tip[:, 2], -torch.cos(q1) - torch.cos(q1 + q2), rtol=0, atol=1e-12)


def test_double_pendulum_spring_convention(tmp_path):
    springs = joint_springs("double_pendulum")
    assert springs["joint2"].stiffness == 0.5 and springs["joint2"].rest == 0.0
    assert springs["joint1"].stiffness == 0.0
    assert set(springs) <= set(load_robot("double_pendulum").joint_names)
    assert joint_springs("panda") == {}
    bad = tmp_path / "bad.urdf"
    bad.write_text(
        '<!-- lagrange:spring joint="j" stiffness="stiff" -->\n<robot name="r"><link name="a"/></robot>'
    )
    with pytest.raises(ValueError, match=r"bad\.urdf:1"):
        joint_springs(bad)


def test_planar_arm_kinematics_and_gravity():
    model = load_robot("planar_2link")
    q = torch.tensor([[0.3, 0.8], [-1.0, 2.0]], dtype=torch.float64)
    q1, q2 = q[:, 0], q[:, 1]
    tool = model.link_pose(q, "tool")[..., :3, 3]
    torch.testing.assert_close(tool[:, 0], 0.5 * torch.cos(q1) + 0.5 * torch.cos(q1 + q2), rtol=0, atol=1e-12)
    torch.testing.assert_close(tool[:, 2], 0.5 * torch.sin(q1) + 0.5 * torch.sin(q1 + q2), rtol=0, atol=1e-12)
    g = model.gravity_torques(q)
    expected = torch.stack(
        [G * (0.75 * torch.cos(q1) + 0.25 * torch.cos(q1 + q2)), G * 0.25 * torch.cos(q1 + q2)], -1
    )
    torch.testing.assert_close(g, expected, rtol=0, atol=1e-9)


def test_shipped_panda_matches_the_published_description():
    """Same kinematics and inertials as example-robot-data's Panda (fingers fixed at 20 mm)."""
    ours = pin.buildModelFromUrdf(str(urdf_dir() / "panda.urdf"))
    ref = pin.buildModelFromUrdf(str(resolve_robot("panda-erd")))
    d1, d2 = ours.createData(), ref.createData()
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, 7)
        qr = np.concatenate([q, [0.02, 0.02]])
        pin.framesForwardKinematics(ours, d1, q)
        pin.framesForwardKinematics(ref, d2, qr)
        for frame in ("panda_link7", "panda_hand", "panda_hand_tcp", "panda_leftfinger"):
            np.testing.assert_allclose(d1.oMf[ours.getFrameId(frame)].homogeneous,
                                       d2.oMf[ref.getFrameId(frame)].homogeneous, atol=1e-12)
        np.testing.assert_allclose(pin.computeGeneralizedGravity(ours, d1, q),
                                   pin.computeGeneralizedGravity(ref, d2, qr)[:7], atol=1e-9)
        v, a = rng.normal(size=7), rng.normal(size=7)
        z = np.zeros(2)
        np.testing.assert_allclose(pin.rnea(ours, d1, q, v, a),
                                   pin.rnea(ref, d2, qr, np.concatenate([v, z]), np.concatenate([a, z]))[:7],
                                   atol=1e-9)
        M1 = pin.crba(ours, d1, q)
        M2 = pin.crba(ref, d2, qr)[:7, :7]
        np.testing.assert_allclose(np.triu(M1), np.triu(M2), atol=1e-9)
    model = load_robot("panda")
    assert model.joint_names == [f"panda_joint{i}" for i in range(1, 8)]
    lim = model.joint_limits
    assert float(lim.lower[3]) == -3.0718 and float(lim.upper[3]) == -0.0698
    assert float(lim.effort[0]) == 87.0 and float(lim.velocity[6]) == 2.61
