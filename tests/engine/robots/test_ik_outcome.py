"""Solving a set of targets and measuring each one's error (engine/robots/ik_outcome.py), checked
with Pinocchio's forward kinematics (an independent reference)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from engine.jobs import NullJobContext
from engine.robots.ik import IKOptions, neutral_configuration
from engine.robots.ik_outcome import IKRequest, rotation_angle, solve_targets, target_errors, targets_reached
from engine.robots.library import load_robot, resolve_robot


@pytest.fixture(scope="module")
def panda():
    return load_robot("panda"), pin.buildModelFromUrdf(str(resolve_robot("panda")))


def _pin_pose(pm, model, q, frame) -> np.ndarray:
    qp = np.array([float(q[model.joint_names.index(n)]) for n in pm.names[1:]])
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, qp)
    return data.oMf[pm.getFrameId(frame)].homogeneous


def test_target_errors_are_the_distance_and_angle_to_pinocchios_pose(panda):
    model, pm = panda
    rng = np.random.default_rng(0)
    q = neutral_configuration(model).numpy() + rng.uniform(-0.3, 0.3, model.dof)
    link, other = "panda_hand_tcp", "panda_link5"
    ref = _pin_pose(pm, model, q, link)
    offset = np.eye(4)
    offset[:3, :3] = Rotation.from_rotvec([0.0, 0.2, 0.1]).as_matrix()
    offset[:3, 3] = [0.03, -0.04, 0.0]
    target = ref @ offset            # 5 cm and 0.2236 rad from the link, in its own frame
    errors = target_errors(model, q, {link: target, other: _pin_pose(pm, model, q, other)},
                           position_only=frozenset({other}))
    assert errors[link][0] == pytest.approx(0.05, abs=1e-12)
    assert errors[link][1] == pytest.approx(np.hypot(0.2, 0.1), abs=1e-9)
    assert errors[other][0] == pytest.approx(0.0, abs=1e-12) and errors[other][1] is None
    assert rotation_angle(Rotation.from_rotvec([0.0, 0.0, 3.0]).as_matrix()) == pytest.approx(3.0)
    opts = IKOptions()
    assert not targets_reached(errors, opts)
    assert targets_reached({other: errors[other]}, opts)


def test_solve_targets_reaches_a_reachable_pose_by_pinocchios_measure(panda):
    model, pm = panda
    rng = np.random.default_rng(1)
    q0 = neutral_configuration(model).numpy()
    goal_q = q0 + rng.uniform(-0.4, 0.4, model.dof)
    link = "panda_hand_tcp"
    goal = _pin_pose(pm, model, goal_q, link)
    out = solve_targets(model, IKRequest(targets={link: goal}, q0=q0, serial=7), ctx=NullJobContext())
    assert out.converged and out.serial == 7
    reached = _pin_pose(pm, model, out.q, link)
    perr = np.linalg.norm(reached[:3, 3] - goal[:3, 3])
    rerr = rotation_angle(reached[:3, :3].T @ goal[:3, :3])
    assert perr <= IKOptions().tol_pos and rerr <= IKOptions().tol_rot
    assert out.per_target[link][0] == pytest.approx(perr, abs=1e-9)
    assert out.position_error == pytest.approx(perr, abs=1e-9)
    assert out.residual == pytest.approx(np.hypot(perr, out.rotation_error), abs=1e-9)


def test_a_start_that_already_reaches_is_returned_unchanged(panda):
    model, pm = panda
    q0 = neutral_configuration(model).numpy()
    link = "panda_link7"
    out = solve_targets(model, IKRequest(targets={link: _pin_pose(pm, model, q0, link)}, q0=q0))
    assert out.converged and np.array_equal(out.q, q0) and out.position_error < 1e-12
