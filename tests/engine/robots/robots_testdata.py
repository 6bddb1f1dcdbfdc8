"""Robots for the engine tests: example-robot-data's Panda, UR5 and Allegro hand, and urdf/."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.paths import urdf_dir
from engine.robots.urdf import description_package_roots


def example_robot_data(relative: str) -> Path:
    """A file of the installed example-robot-data package (a dev dependency: required)."""
    for root in description_package_roots():
        for candidate in (root / "example-robot-data" / "robots" / relative, root / relative):
            if candidate.is_file():
                return candidate
    raise FileNotFoundError(f"example-robot-data is not installed (looking for {relative}); "
                            "install the dev extra: pip install -e .[dev]")


# name -> (path, loader options). The Panda's finger joints mimic each other; like
# Pinocchio's default we load them as independent joints. The Allegro hand's published
# inertias break the triangle inequality slightly: the default loader keeps them with a warning.
REFERENCE_ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", {"mimic": "independent"}),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", {}),
}


def shipped_urdfs() -> list[Path]:
    return sorted(urdf_dir().glob("*.urdf"))


def robot_cases() -> list:
    cases = [
        pytest.param((example_robot_data(rel), opts), id=name)
        for name, (rel, opts) in REFERENCE_ROBOTS.items()
    ]
    cases += [pytest.param((p, {}), id=f"urdf/{p.name}") for p in shipped_urdfs()]
    return cases


# A small tree with every supported joint type: a revolute base, a prismatic slide, a
# continuous wrist, a fixed tool and a second (revolute) branch. Not planar, not symmetric.
SMALL_TREE = """<?xml version="1.0"?>
<robot name="small_tree">
  <link name="base"><inertial><mass value="2.0"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="a"><inertial><origin xyz="0.1 0.02 0.2" rpy="0.1 0.2 0.3"/><mass value="1.3"/>
    <inertia ixx="0.021" ixy="0.001" ixz="-0.002" iyy="0.018" iyz="0.0015" izz="0.012"/></inertial></link>
  <link name="b"><inertial><origin xyz="0.0 0.05 0.1" rpy="0 0.4 0"/><mass value="0.7"/>
    <inertia ixx="0.008" ixy="0" ixz="0.0005" iyy="0.006" iyz="0" izz="0.004"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.03 0 0.05"/><mass value="0.4"/>
    <inertia ixx="0.002" ixy="0.0001" ixz="0" iyy="0.0025" iyz="0" izz="0.0015"/></inertial></link>
  <link name="tool"><inertial><origin xyz="0 0 0.04"/><mass value="0.2"/>
    <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0004" iyz="0" izz="0.0002"/></inertial></link>
  <link name="d"><inertial><origin xyz="0.05 0.01 0"/><mass value="0.5"/>
    <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.004" iyz="0.0002" izz="0.005"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.3" rpy="0 0 0.2"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="50" velocity="3"/><dynamics damping="0.3"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0.2 0 0.3" rpy="0.3 0 0"/>
    <axis xyz="0.6 0 0.8"/><limit lower="-0.2" upper="0.4" effort="100" velocity="1"/><dynamics damping="1.5"/></joint>
  <joint name="j3" type="continuous"><parent link="b"/><child link="c"/><origin xyz="0 0.1 0.2" rpy="0 0.5 -0.4"/>
    <axis xyz="0 1 0"/><dynamics damping="0.05"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="c"/><child link="tool"/>
    <origin xyz="0.1 0 0.05" rpy="0.2 0 0"/></joint>
  <joint name="j4" type="revolute"><parent link="a"/><child link="d"/><origin xyz="-0.1 0.1 0.2" rpy="0 -0.3 0"/>
    <axis xyz="1 0 0"/><limit lower="-1.5" upper="1.5" effort="20" velocity="2"/><dynamics damping="0.2"/></joint>
</robot>
"""
