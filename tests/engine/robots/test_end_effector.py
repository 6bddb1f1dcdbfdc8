"""The end-effector guess (engine/robots/end_effector.py) on small hand-written trees."""

from __future__ import annotations

import pytest

from engine.robots.end_effector import default_end_effector, link_depths


def _urdf(tmp_path, links, joints):
    inertial = ('<inertial><mass value="1"/>'
                '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>')
    body = "".join(f'<link name="{n}">{inertial}</link>' for n in links)
    for i, (parent, child, kind) in enumerate(joints):
        axis = (
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'
            if kind != "fixed"
            else ""
        )
        body += (f'<joint name="j{i}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                 f'<origin xyz="0 0 0.1"/>{axis}</joint>')
    path = tmp_path / "r.urdf"
    path.write_text(f'<robot name="r">{body}</robot>')
    from engine.robots import RobotModel

    return RobotModel.from_file(str(path))


def test_the_deepest_link_when_none_is_named_like_a_tool(tmp_path):
    # base - a - b - c (fixed) and base - d: c is three joints deep
    model = _urdf(
        tmp_path,
        ["base", "a", "b", "c", "d"],
        [("base", "a", "revolute"), ("a", "b", "revolute"), ("b", "c", "fixed"), ("base", "d", "revolute")],
    )
    assert link_depths(model.description) == {"base": 0, "a": 1, "b": 2, "c": 3, "d": 1}
    assert default_end_effector(model) == "c"


def test_a_link_named_like_a_tool_wins_over_a_deeper_one(tmp_path):
    model = _urdf(
        tmp_path,
        ["base", "a", "tool0", "b", "c"],
        [("base", "a", "revolute"), ("a", "tool0", "fixed"), ("a", "b", "revolute"), ("b", "c", "revolute")],
    )
    assert default_end_effector(model) == "tool0"


def test_on_a_tie_the_last_link_wins(tmp_path):
    model = _urdf(tmp_path, ["base", "left_tip", "right_tip"],
                  [("base", "left_tip", "revolute"), ("base", "right_tip", "revolute")])
    assert default_end_effector(model) == "right_tip"


@pytest.mark.parametrize("robot, link", [("panda", "panda_hand_tcp"), ("ur5", "ee_link")])
def test_library_arms(robot, link):
    from engine.robots.library import load_robot

    assert default_end_effector(load_robot(robot)) == link
