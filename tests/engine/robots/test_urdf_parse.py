"""URDF loading: the description, validation errors that say where, and file resolution.

(The corpus of malformed URDFs and the fuzzing of the loader live in test_urdf_corpus.py.)
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re

import pytest
from robots_testdata import SMALL_TREE, example_robot_data

from engine.robots import RobotModel, URDFError, load_urdf, parse_urdf_string, resolve_uri

LINK = ('<link name="{n}"><inertial><mass value="1"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>')
JOINT = ('<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/><axis xyz="0 0 1"/>'
         '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


def robot(*body: str) -> str:
    return '<?xml version="1.0"?>\n<robot name="r">\n' + "\n".join(body) + "\n</robot>\n"


def test_description_of_the_small_tree():
    desc = parse_urdf_string(SMALL_TREE, source="small_tree.urdf")
    assert desc.name == "small_tree" and desc.root == "base"
    assert [j.name for j in desc.movable_joints] == ["j1", "j2", "j3", "j4"]
    j2 = desc.joint("j2")
    assert j2.type == "prismatic" and j2.axis == pytest.approx((0.6, 0.0, 0.8))
    assert (j2.limit.lower, j2.limit.upper, j2.limit.effort, j2.limit.velocity) == (-0.2, 0.4, 100, 1)
    assert j2.damping == 1.5
    j3 = desc.joint("j3")
    assert j3.limit.lower == -math.inf and j3.limit.upper == math.inf
    assert desc.link("a").inertial.mass == 1.3
    assert desc.total_mass == pytest.approx(5.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        desc.name = "other"
    model = RobotModel.from_description(desc)
    assert model.joint_names == ["j1", "j2", "j4", "j3"] or model.joint_names == ["j1", "j2", "j3", "j4"]
    assert set(model.link_names) == {"base", "a", "b", "c", "tool", "d"}
    lim = model.joint_limits
    assert float(lim.upper[model.joint_names.index("j1")]) == 2.0


def test_example_robot_data_panda_and_mimic():
    path = example_robot_data("panda_description/urdf/panda.urdf")
    with pytest.raises(URDFError, match=r"panda_finger_joint2.*mimic") as err:
        load_urdf(path, mimic="error")
    assert err.value.line is not None and str(path) in str(err.value)
    coupled = RobotModel.from_urdf(path)  # the default: the second finger follows the first
    assert coupled.nv == 8 and "panda_finger_joint2" not in coupled.joint_names
    model = RobotModel.from_urdf(path, mimic="independent")
    assert model.dof == 9 and model.mimic_joint_names == []
    coupled = RobotModel.from_urdf(path)                # the default: the second finger follows the first
    assert coupled.dof == 8 and coupled.mimic_joint_names == ["panda_finger_joint2"]
    assert load_urdf(path).joint("panda_finger_joint2").mimic.joint == "panda_finger_joint1"
    desc = model.description
    mesh = desc.link("panda_link3").visuals[0].geometry
    assert mesh.kind == "mesh" and mesh.path is not None and mesh.path.endswith("link3.dae")


def test_strict_physics_and_the_default(caplog):
    """The Allegro hand's published inertias break the triangle inequality: strict=True refuses the
    file naming the link and line; the default and strict=False keep them as written, in one warning
    line (the log's and the description's) naming the four links."""
    path = example_robot_data("allegro_hand_description/urdf/allegro_right_hand.urdf")
    with pytest.raises(URDFError, match="triangle inequality") as err:
        load_urdf(path, strict=True)
    assert err.value.line is not None and "default loader" in str(err.value)
    assert err.value.remedy == {"strict": None}
    for strict in (None, False):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="engine.robots.urdf"):
            desc = load_urdf(path, strict=strict)
        assert len(desc.movable_joints) == 16
        (line,) = desc.warnings
        assert "triangle inequality" in line and all(f"link_{k}.0" in line for k in (3, 7, 11, 15))
        assert [r.getMessage() for r in caplog.records] == [f"{path.name}: {line}. File: {path}"]


BAD = {
    "malformed XML": ('<robot name="r"><link name="a"></robot>', r"malformed XML", 1),
    "not a robot": ('<?xml version="1.0"?>\n<model name="r"/>', r"root element must be <robot>", 2),
    "unknown child link": (
        robot(LINK.format(n="a"), JOINT.format(n="j", t="revolute", p="a", c="ghost")),
        r"child link 'ghost' is not defined",
        4,
    ),
    "two parents": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            LINK.format(n="c"),
            JOINT.format(n="j1", t="revolute", p="a", c="c"),
            JOINT.format(n="j2", t="revolute", p="b", c="c"),
        ),
        r"link 'c' has two parents",
        7,
    ),
    "loop": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            LINK.format(n="c"),
            JOINT.format(n="j1", t="revolute", p="a", c="b"),
            JOINT.format(n="j2", t="revolute", p="b", c="c"),
            JOINT.format(n="j3", t="revolute", p="c", c="b"),
        ),
        r"two parents|loop",
        None,
    ),
    "pure loop": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            JOINT.format(n="j1", t="revolute", p="a", c="b"),
            JOINT.format(n="j2", t="revolute", p="b", c="a"),
        ),
        r"loop",
        None,
    ),
    "two roots": (robot(LINK.format(n="a"), LINK.format(n="b")), r"2 root links", None),
    "floating": (
        robot(LINK.format(n="a"), LINK.format(n="b"), JOINT.format(n="j", t="floating", p="a", c="b")),
        r"floating joints are not supported",
        5,
    ),
    "planar": (
        robot(LINK.format(n="a"), LINK.format(n="b"), JOINT.format(n="j", t="planar", p="a", c="b")),
        r"planar joints are not supported",
        5,
    ),
    "negative mass": (
        robot(
            '<link name="a"><inertial><mass value="-1"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        ),
        r"mass must be positive",
        3,
    ),
    "not positive definite": (
        robot(
            '<link name="a"><inertial><mass value="1"/>'
            '<inertia ixx="1" ixy="2" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        ),
        r"not positive definite",
        3,
    ),
    "triangle": (
        robot(
            '<link name="a"><inertial><mass value="1"/>'
            '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.5"/></inertial></link>'
        ),
        r"triangle inequality",
        3,
    ),
    "NaN": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            JOINT.format(n="j", t="revolute", p="a", c="b").replace(
                '<axis xyz="0 0 1"/>', '<origin xyz="0 nan 0"/>'
            ),
        ),
        r"not finite",
        5,
    ),
    "bad number": (
        robot(
            '<link name="a"><inertial><mass value="heavy"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        ),
        r"'heavy' is not a number",
        3,
    ),
    "wrong count": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            JOINT.format(n="j", t="revolute", p="a", c="b").replace('xyz="0 0 1"', 'xyz="0 1"'),
        ),
        r"must hold 3 number",
        5,
    ),
    "unknown type": (
        robot(LINK.format(n="a"), LINK.format(n="b"), JOINT.format(n="j", t="hinge", p="a", c="b")),
        r"unknown joint type 'hinge'",
        5,
    ),
    "zero axis": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            JOINT.format(n="j", t="revolute", p="a", c="b").replace('xyz="0 0 1"', 'xyz="0 0 0"'),
        ),
        r"axis is zero",
        5,
    ),
    "no limit": (
        robot(
            LINK.format(n="a"),
            LINK.format(n="b"),
            JOINT.format(n="j", t="revolute", p="a", c="b").replace(
                '<limit lower="-1" upper="1" effort="1" velocity="1"/>', ""
            ),
        ),
        r"needs a <limit>",
        5,
    ),
    "duplicate link": (robot(LINK.format(n="a"), LINK.format(n="a")), r"link 'a' is defined twice", 4),
}


# physically inconsistent rotational inertias: the default loader keeps them (as Pinocchio does), with a
# warning; strict=True refuses them
STRICT_ONLY = {"not positive definite", "triangle"}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_urdfs_raise_clear_errors(name, tmp_path):
    xml, pattern, line = BAD[name]
    path = tmp_path / f"{name.replace(' ', '_')}.urdf"
    path.write_text(xml)
    if name in STRICT_ONLY:
        assert re.search(pattern, RobotModel.from_urdf(path).description.warnings[0])
    with pytest.raises(URDFError, match=pattern) as err:
        RobotModel.from_urdf(path, **({"strict": True} if name in STRICT_ONLY else {}))
    assert isinstance(err.value, ValueError)
    assert str(path) in str(err.value)
    if line is not None:
        assert err.value.line == line and f"line {line}" in str(err.value)


def test_missing_mesh_is_a_warning(caplog, tmp_path):
    xml = robot('<link name="a"><visual><geometry><mesh filename="package://nowhere/meshes/a.stl"/></geometry>'
                '</visual></link>')
    with caplog.at_level(logging.WARNING):
        desc = parse_urdf_string(xml, base_dir=tmp_path)
    assert "package://nowhere/meshes/a.stl" in caplog.text
    assert desc.link("a").visuals[0].geometry.path is None


def test_resolve_uri(tmp_path, monkeypatch):
    pkg = tmp_path / "ws" / "my_robot_description"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    mesh = pkg / "meshes" / "arm.stl"
    mesh.write_bytes(b"solid")
    urdf_folder = pkg / "urdf"
    # the URDF's own package, found from its folder
    assert resolve_uri("package://my_robot_description/meshes/arm.stl", urdf_folder) == mesh
    # relative to the URDF
    assert resolve_uri("../meshes/arm.stl", urdf_folder).resolve() == mesh
    assert resolve_uri(str(mesh), None) == mesh
    assert resolve_uri(f"file://{mesh}", None) == mesh
    # ROS_PACKAGE_PATH, from anywhere
    assert resolve_uri("package://my_robot_description/meshes/arm.stl", tmp_path / "elsewhere") is None
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ws"))
    assert resolve_uri("package://my_robot_description/meshes/arm.stl", tmp_path / "elsewhere") == mesh
    # installed description packages (example-robot-data)
    found = resolve_uri("package://example-robot-data/robots/panda_description/meshes/visual/link0.dae", None)
    assert found is not None and found.is_file()
    assert resolve_uri("package://nowhere/x.stl", urdf_folder) is None


def test_a_robot_without_movable_joints():
    xml = robot(
        LINK.format(n="a"),
        LINK.format(n="b"),
        '<joint name="f" type="fixed"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/></joint>',
    )
    model = RobotModel.from_string(xml)
    q = model.joint_limits.lower.new_zeros(3, 0)
    assert model.dof == 0 and model.forward_kinematics(q).shape == (3, 2, 4, 4)
    assert float(model.forward_kinematics(q)[0, model.link_names.index("b"), 0, 3]) == 1.0
    assert model.forward_dynamics(q, q, q).shape == (3, 0) and model.mass_matrix(q).shape == (3, 0, 0)


def test_a_mesh_that_is_a_folder_or_empty_is_named_with_its_link(tmp_path, caplog):
    import logging

    from engine.robots.urdf import parse_urdf_string as parse

    (tmp_path / "meshes" / "a.stl").mkdir(parents=True)
    (tmp_path / "meshes" / "b.stl").write_bytes(b"")
    xml = (
        '<robot name="r"><link name="base"><visual><geometry><mesh filename="meshes/a.stl"/></geometry></visual>'
        '<visual><geometry><mesh filename="meshes/b.stl"/></geometry></visual></link></robot>'
    )
    with caplog.at_level(logging.WARNING):
        desc = parse(xml, base_dir=tmp_path)
    assert [v.geometry.path for v in desc.link("base").visuals] == [None, None]
    text = caplog.text
    assert "mesh 'meshes/a.stl' of link 'base' is a folder" in text
    assert "mesh 'meshes/b.stl' of link 'base' is empty" in text


@pytest.mark.parametrize(("text", "expected"), [("2", (2.0, 2.0, 2.0)), ("1 2 3", (1.0, 2.0, 3.0)),
                                                 (None, (1.0, 1.0, 1.0))])
def test_mesh_scale_takes_one_number_or_three(text, expected, caplog):
    """urdfdom reads ``scale="2"`` as 2 on every axis; a file with a one-number scale loads."""
    scale = "" if text is None else f' scale="{text}"'
    xml = robot(f'<link name="a"><visual><geometry><mesh filename="a.stl"{scale}/></geometry></visual></link>')
    with caplog.at_level(logging.WARNING):
        geometry = parse_urdf_string(xml).link("a").visuals[0].geometry
    assert geometry.scale == expected


def test_a_mesh_scale_of_two_numbers_is_refused():
    xml = robot('<link name="a"><visual><geometry><mesh filename="a.stl" scale="1 2"/></geometry></visual></link>')
    with pytest.raises(URDFError, match="scale"):
        parse_urdf_string(xml)
