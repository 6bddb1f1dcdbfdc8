"""Every URDF of example-robot-data loads with the default settings (issue #31) and matches Pinocchio.

Each file goes through ``load_robot`` as a user would open it (the library entry's options where the
file is one: a floating base), then its mass matrix (CRBA), joint forces (RNEA) and forward dynamics
are compared at two random states with Pinocchio's model of the same file (free-flyer where ours
floats; coupled mimic joints by their URDF definition, see ``LoadedPair``) to 1e-9. What the default loader accepted
from the files it used to refuse is checked by name (``ACCEPTED``), with ``strict=True`` still
refusing them. ``ur3.urdf`` is an empty ``<robot>`` (a xacro fragment with no name and no link),
which Pinocchio and yourdfpy refuse too: one plain refusal line.

The other published quirks (point masses, thin bodies) are covered in test_published_quirks.py;
the coupled mimic algebra in test_mimic.py; the floating-base derivatives in test_floating_base.py.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import LoadedPair, close

from engine.robots import URDFError, load_urdf
from engine.robots.library import load_robot
from engine.robots.urdf import description_package_roots


def _robots_dir() -> Path | None:
    for root in description_package_roots():
        for candidate in (root / "example-robot-data" / "robots", root):
            if (candidate / "ur_description").is_dir():
                return candidate
    return None


ROBOTS = _robots_dir()
FILES = sorted(str(p.relative_to(ROBOTS)) for p in ROBOTS.rglob("*.urdf")) if ROBOTS else []
NOT_A_ROBOT = {"ur_description/urdf/ur3.urdf"}
# the files the default loader refused before issue #31 -> phrases of its warnings now
ACCEPTED = {
    "alex_description/urdf/alex_psyonic_hands.urdf": ["'Left_index_q2' mimics 'index_q1'",
                                                      "'Right_pinky_q2' mimics 'pinky_q1'"],
    "pr2_description/urdf/pr2.urdf": ["triangle inequality: sensor_mount_link, double_stereo_link"],
    "romeo_description/urdf/romeo.urdf": ["joints 'LHand', 'RHand' move no mass"],
    "romeo_description/urdf/romeo_laas_small.urdf": ["not positive definite: body",
                                                     "joints 'l_gripper_joint', 'r_gripper_joint' move no mass"],
    "romeo_description/urdf/romeo_small.urdf": ["triangle inequality: RShoulderYawLink, RElbowYawLink"],
    "tiago_description/robots/tiago.urdf": ["not positive definite: base_antenna_left_link"],
    "tiago_description/robots/tiago_dual.urdf": ["not positive definite: base_antenna_left_link"],
    "tiago_description/robots/tiago_no_hand.urdf": ["not positive definite: base_antenna_left_link"],
}
pytestmark = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")
T = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731


def test_the_package_holds_the_files_of_the_issue():
    assert len(FILES) >= 69 and set(ACCEPTED) | NOT_A_ROBOT <= set(FILES)


@pytest.mark.parametrize("rel", [f for f in FILES if f not in NOT_A_ROBOT])
def test_every_robot_loads_by_default_and_matches_pinocchio(rel, caplog):
    path = ROBOTS / rel
    with caplog.at_level(logging.WARNING, logger="engine.robots.urdf"):
        model = load_robot(path)
    warnings = model.description.warnings
    # each warning said once in the log, naming the file
    said = [r.getMessage() for r in caplog.records if r.name == "engine.robots.urdf" and "mesh" not in r.getMessage()]
    assert said == [f"{path.name}: {w}. File: {path}" for w in warnings]
    for phrase in ACCEPTED.get(rel, []):
        assert any(phrase in w for w in warnings), (phrase, warnings)
    pair = LoadedPair(model, path)
    if model.nv == 0:                # a single body on a fixed base (hector, iris_simple): nothing moves
        assert pair.pm.nv == 0 and model.link_names
        return
    q, v, a = pair.random_states(2, seed=len(rel))
    M = model.mass_matrix(T(q)).numpy()
    tau = model.inverse_dynamics(T(q), T(v), T(a)).numpy()
    poses = model.forward_kinematics(T(q)).numpy()      # every link, massless ones (romeo's fingers) too
    for k in range(len(q)):
        close(poses[k], pair.link_poses(q[k], model.link_names), 1e-9)
        close(M[k], pair.crba(q[k]), 1e-9)
        close(tau[k], pair.rnea(q[k], v[k], a[k]), 1e-9)
    if model.singular_joints:        # M is singular along them: forward dynamics names them
        assert all(np.linalg.eigvalsh(M[k])[0] < 1e-12 for k in range(len(q)))
        with pytest.raises(ValueError, match=f"forward dynamics is undefined: joints? {model.singular_joints[0]!r}"):
            model.forward_dynamics(T(q), T(v), T(tau))
        return
    # M is positive definite at these states, inconsistent published inertias included, and
    # forward dynamics solves Pinocchio's M qdd = tau - h
    qdd = model.forward_dynamics(T(q), T(v), T(a)).numpy()
    for k in range(len(q)):
        Mp = pair.crba(q[k])
        assert np.linalg.eigvalsh(Mp)[0] > 0
        h = pair.rnea(q[k], v[k], np.zeros_like(v[k]))
        close(Mp @ qdd[k], a[k] - h, 1e-9)


@pytest.mark.parametrize("rel", sorted(ACCEPTED))
def test_strict_still_refuses_what_the_default_accepts(rel):
    with pytest.raises(URDFError, match=r"default loader[ ,(]+strict=None") as err:
        load_urdf(ROBOTS / rel, strict=True)
    assert err.value.remedy == {"strict": None} and str(ROBOTS / rel) in str(err.value)


@pytest.mark.parametrize("rel", sorted(NOT_A_ROBOT))
def test_an_empty_robot_element_is_one_plain_refusal_as_in_pinocchio(rel):
    path = ROBOTS / rel
    for strict in (None, True, False):
        with pytest.raises(URDFError) as err:
            load_robot(path, strict=strict)
        assert str(err.value) == (f"{path}, line 6, <robot>: the file holds no robot: <robot> has no name and "
                                  "no <link> (Pinocchio refuses it too)")
    with pytest.raises(ValueError, match="does not contain a valid URDF model"):
        pin.buildModelFromUrdf(str(path))
