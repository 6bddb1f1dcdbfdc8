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

EXTRA = """
  <tendon><fixed name="split"><joint joint="j2" coef="1"/><joint joint="j3" coef="-1"/></fixed></tendon>
  <equality><joint joint1="j3" joint2="j2" polycoef="0 0.5 0.1 0 0"/>
    <connect name="loop" body1="lower" body2="lid" anchor="0 0 0"/></equality>
"""


def test_a_file_with_several_trees_loads_the_robot_and_names_the_others(tmp_path, caplog):
    path = write_scene(tmp_path)
    with caplog.at_level(logging.WARNING):
        desc = load_mjcf(path)
    assert desc.root == "world" and not desc.floating_base       # the arm, not the box it handles
    others = [line for line in desc.not_modelled if line.startswith("other kinematic trees")]
    assert others == ["other kinematic trees of the file, not in this model (load one with tree='NAME', the "
                      "CLI's --tree NAME): 'box', 'ball'"]
    assert caplog.text.count(others[0]) == 1 and "scene.xml" in caplog.text
    with pytest.raises(MJCFError) as info:
        load_mjcf(path, tree="cube")
    message = str(info.value)
    assert "\n" not in message and "scene.xml" in message
    assert ("no tree named 'cube'; the trees are 'world' (fixed to the world, 3 DoF, 4.1 kg), 'box' (free body, "
            "7 DoF, 1.1 kg), 'ball' (free body, 6 DoF, 0.3 kg)") in message
    assert load_mjcf(path, tree="lower").root == "world"         # any body of a tree names it


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
    assert main(["robot", "info", str(path), "--json"]) == 0      # the largest tree, the others named
    default = json.loads(capsys.readouterr().out)
    assert default["root"] == "world" and any("'box', 'ball'" in line for line in default["not_modelled"])
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
