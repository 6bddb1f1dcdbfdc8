"""A robot's published reference poses, read from the SRDF beside its URDF.

Robot description packages (example-robot-data, ROS ``*_description`` packages) publish named
configurations as SRDF ``<group_state>`` elements: a quadruped's ``standing`` pose with bent
knees, TALOS's ``half_sitting``. Pinocchio reads them with ``loadReferenceConfigurations``; the
app starts a floating robot in one of them, because a legged robot standing with its joints at
zero has straight legs, a kinematic singularity: whole-body IK cannot lower its base (the feet
cannot move along the leg to first order).

The SRDF is looked for in the package's ``srdf/`` folder (``<package>/robots/solo12.urdf`` ->
``<package>/srdf/``): the file whose name is the URDF's, else the one whose name the URDF's
starts with (``solo12.urdf`` -> ``solo.srdf``), else the only one there. A file that cannot be
read gives no pose (it is optional), and a debug line says why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["STANDING_NAMES", "reference_configurations", "srdf_for", "standing_joint_positions"]

log = logging.getLogger(__name__)

STANDING_NAMES = ("standing", "half_sitting", "stand", "straight_standing", "home", "neutral")
"""Names of a standing pose, in order of preference."""


def srdf_for(robot_file: str | Path) -> Path | None:
    """The SRDF published beside ``robot_file`` (a URDF or xacro path), or None."""
    path = Path(robot_file)
    folder = path.parent.parent / "srdf"
    if not folder.is_dir():
        return None
    files = sorted(folder.glob("*.srdf"))
    stem = path.name.split(".")[0]
    for f in files:
        if f.stem == stem:
            return f
    prefixed = [f for f in files if stem.startswith(f.stem)]
    if prefixed:
        return max(prefixed, key=lambda f: len(f.stem))
    return files[0] if len(files) == 1 else None


def reference_configurations(srdf: str | Path) -> dict[str, dict[str, float]]:
    """``{state name: {joint name: value}}`` of the SRDF's ``<group_state>`` elements (one-value
    joints only: a root joint's seven numbers are the base's pose, not a joint's)."""
    from lxml import etree

    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True)
    root = etree.parse(str(srdf), parser).getroot()
    states: dict[str, dict[str, float]] = {}
    for state in root.iter("group_state"):
        values: dict[str, float] = {}
        for joint in state.iter("joint"):
            parts = (joint.get("value") or "").split()
            if joint.get("name") and len(parts) == 1:
                values[joint.get("name")] = float(parts[0])
        if state.get("name"):
            states.setdefault(state.get("name"), values)
    return states


def standing_joint_positions(robot_file: str | Path, joint_names: Sequence[str]) -> np.ndarray | None:
    """(len(joint_names),) joint positions (rad or m) of the robot's published standing pose
    (the first of :data:`STANDING_NAMES` its SRDF has; joints it leaves out at 0), or None when
    there is no SRDF, no such pose, or the pose names none of ``joint_names``."""
    srdf = srdf_for(robot_file)
    if srdf is None:
        return None
    try:
        states = reference_configurations(srdf)
    except (OSError, ValueError, SyntaxError) as exc:  # lxml's XMLSyntaxError is a SyntaxError
        log.debug("%s: reference poses not read (%s)", srdf, exc)
        return None
    for name in STANDING_NAMES:
        values = states.get(name)
        if values and any(j in values for j in joint_names):
            return np.array([values.get(j, 0.0) for j in joint_names], dtype=float)
    return None
