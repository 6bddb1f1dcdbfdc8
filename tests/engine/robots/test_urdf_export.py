"""Identified parameters written back as URDF: the file loads to the same model (dynamics checked
against Pinocchio on the written file), visuals and meshes kept, the CLI flag on `identify log`."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pinocchio as pin
import pytest
import torch
from robots_testdata import example_robot_data

from engine.paths import urdf_dir
from engine.robots import RobotModel
from engine.robots.urdf_export import save_urdf

IDENTIFIED = {
    "mass": {"panda_link3": 2.5, "panda_link5": 3.1},
    "com": {"panda_link3": (0.03, 0.02, -0.05), "panda_link6": (0.05, -0.01, 0.0)},
    "inertia": {
        "panda_link4": np.array([[0.03, 0.002, -0.001], [0.002, 0.025, 0.003], [-0.001, 0.003, 0.012]])
    },
    "damping": {"panda_joint2": 0.7},
}


def _states(n, dof, seed=0):
    rng = np.random.default_rng(seed)
    return (torch.as_tensor(rng.uniform(-1.5, 1.5, (n, dof))), torch.as_tensor(rng.normal(size=(n, dof))),
            torch.as_tensor(rng.normal(size=(n, dof))))


def test_identified_panda_written_back_loads_to_the_same_model(tmp_path):
    nominal = RobotModel.from_urdf(urdf_dir() / "panda.urdf")
    identified = nominal.with_link_params(**IDENTIFIED)
    out = save_urdf(identified, tmp_path / "panda_identified.urdf")
    again = RobotModel.from_urdf(out)
    q, qd, qdd = _states(16, 7)
    for damping in (False, True):
        torch.testing.assert_close(
            again.inverse_dynamics(q, qd, qdd, damping=damping),
            identified.inverse_dynamics(q, qd, qdd, damping=damping),
            rtol=0,
            atol=1e-12,
        )
    torch.testing.assert_close(again.mass_matrix(q), identified.mass_matrix(q), rtol=0, atol=1e-12)
    assert not torch.allclose(again.mass_matrix(q), nominal.mass_matrix(q))
    for link in IDENTIFIED["mass"]:
        assert (
            float(again.link_mass(link))
            == float(identified.link_mass(link))
            == pytest.approx(IDENTIFIED["mass"][link])
        )
    # an independent reader of the written file: Pinocchio
    pm = pin.buildModelFromUrdf(str(out))
    pd = pm.createData()
    for k in range(4):
        np.testing.assert_allclose(pin.rnea(pm, pd, q[k].numpy(), qd[k].numpy(), qdd[k].numpy()),
                                   identified.inverse_dynamics(q[k], qd[k], qdd[k]).numpy(), atol=1e-10)
    # everything but the parameters is kept: visuals, collisions, limits
    before, after = nominal.description, again.description
    for a, b in zip(before.links, after.links):
        assert a.visuals == b.visuals and a.collisions == b.collisions
    assert [j.limit for j in before.joints] == [j.limit for j in after.joints]


def test_meshes_still_found_from_another_folder(tmp_path):
    # example-robot-data's Panda: package:// meshes; a copy with relative mesh names
    src = example_robot_data("panda_description/urdf/panda.urdf")
    model = RobotModel.from_urdf(src, mimic="independent").with_link_params(mass={"panda_link2": 3.0})
    out = save_urdf(model, tmp_path / "a" / "p.urdf") if (tmp_path / "a").mkdir() is None else None
    again = RobotModel.from_urdf(out, mimic="independent")
    meshes = [
        v.geometry.path for l in again.description.links for v in l.visuals if v.geometry.kind == "mesh"
    ]
    assert meshes and all(m is not None for m in meshes)
    assert meshes == [
        v.geometry.path for l in model.description.links for v in l.visuals if v.geometry.kind == "mesh"
    ]
    # relative names: a robot folder with meshes/ beside the URDF, saved elsewhere
    robot_dir = tmp_path / "robot"
    (robot_dir / "meshes").mkdir(parents=True)
    mesh = next(m for m in meshes if m.endswith(".dae"))
    shutil.copy(mesh, robot_dir / "meshes" / "link.dae")
    xml = (
        '<robot name="r"><link name="base"><visual><geometry><mesh filename="meshes/link.dae"/></geometry></visual>'
        '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
        "</robot>"
    )
    (robot_dir / "r.urdf").write_text(xml)
    out = save_urdf(
        RobotModel.from_urdf(robot_dir / "r.urdf").with_link_params(mass={"base": 2.0}), tmp_path / "r2.urdf"
    )
    g = RobotModel.from_urdf(out).description.link("base").visuals[0].geometry
    assert g.path == str((robot_dir / "meshes" / "link.dae").resolve())


def test_a_generated_urdf_for_mjcf_and_bad_names(tmp_path):
    from pathlib import Path

    arm = Path(__file__).parent / "mjcf" / "arm.xml"
    model = RobotModel.from_file(arm).with_link_params(mass={"l2": 1.1})
    out = save_urdf(model, tmp_path / "arm.urdf")
    again = RobotModel.from_urdf(out)
    assert again.joint_names == model.joint_names
    # MJCF armature kept through the <dynamics armature> extension (Pinocchio reads the file too)
    assert [j.armature for j in again.description.movable_joints] == [0.1, 0.0, 0.2, 0.0]
    assert pin.buildModelFromUrdf(str(out)).nv == 4
    q, qd, qdd = _states(8, 4)
    torch.testing.assert_close(
        again.inverse_dynamics(q, qd, qdd), model.inverse_dynamics(q, qd, qdd), rtol=0, atol=1e-12
    )
    torch.testing.assert_close(again.forward_kinematics(q), model.forward_kinematics(q), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"\.urdf"):
        save_urdf(model, tmp_path / "arm.xml")
    with pytest.raises(ValueError, match="does not exist"):
        save_urdf(model, tmp_path / "nowhere" / "arm.urdf")


def test_identify_log_cli_saves_the_identified_urdf(tmp_path, capsys):
    from engine.cli import main
    from engine.paths import resource

    out = tmp_path / "identified.urdf"
    rc = main(["identify", "log", str(resource("logs", "panda_joints.csv")),
               "--mapping", str(resource("logs", "panda_joints.mapping.json")), "--robot", "panda",
               "--epochs", "5", "--blackbox-steps", "0", "--json", "--save-urdf", str(out)])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["saved_urdf"] == str(out)
    again = RobotModel.from_urdf(out)
    for p in summary["parameters"]:
        if p["kind"] == "mass":
            assert float(again.link_mass(p["link"])) == pytest.approx(p["identified"], rel=1e-12)
