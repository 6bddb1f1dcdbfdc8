"""Whole-body inverse kinematics of floating-base robots: a humanoid reaching with a hand while
both feet stay, the base free or fixed; several targets at once; the Panda with coupled fingers.

The reached poses are checked with Pinocchio's forward kinematics (an independent reference)
on the solution, converted to Pinocchio's configuration.
"""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import FreeFlyerPair
from robots_testdata import example_robot_data

from engine.robots import RobotModel
from engine.robots.ik import solve_ik
from engine.robots.ik_floating import solve_whole_body_ik

HAND, FEET = "arm_left_7_link", ("left_sole_link", "right_sole_link")


@pytest.fixture(scope="module")
def talos():
    logging.disable(logging.WARNING)
    try:
        return FreeFlyerPair(example_robot_data("talos_data/robots/talos_reduced.urdf"), {"strict": False})
    finally:
        logging.disable(logging.NOTSET)


def _pin_poses(pair, q, links):
    pin.framesForwardKinematics(pair.pm, pair.pd, pair.q_to_pin(np.asarray(q)))
    return [pair.pd.oMf[pair.pm.getFrameId(link, pin.BODY)].homogeneous for link in links]


def _standing(model):
    q0 = model.neutral()
    q0[2] = 1.02
    return q0


@pytest.mark.parametrize("base", ["free", "fixed"])
def test_humanoid_reaches_with_a_hand_while_its_feet_stay(talos, base):
    m = talos.model
    q0 = _standing(m)
    T0 = m.link_pose(q0, HAND)
    target = T0.clone()
    target[:3, 3] += torch.tensor([0.1, 0.05, 0.1], dtype=torch.float64)        # forward, inward, up
    result = solve_whole_body_ik(m, {HAND: target}, q0, hold=FEET, base=base)
    assert bool(result.converged) and result.q.shape == (m.nq,)
    before = _pin_poses(talos, q0.numpy(), FEET + (HAND,))
    after = _pin_poses(talos, result.q.numpy(), FEET + (HAND,))
    for foot_before, foot_after in zip(before[:2], after[:2]):
        assert np.abs(foot_after - foot_before).max() < 1e-6                   # the feet did not move
    assert np.abs(after[2] - target.numpy()).max() < 1e-5                      # the hand's pose reached
    assert np.abs(after[2][:3, 3] - before[2][:3, 3]).max() > 0.09              # and it did move
    if base == "fixed":
        assert torch.equal(result.q[:7], q0[:7])
    else:
        assert float((result.q[:7] - q0[:7]).abs().max()) > 1e-3               # the free base took part
    lim = m.joint_limits
    assert bool(((result.q[7:] >= lim.lower) & (result.q[7:] <= lim.upper)).all())


def test_several_targets_batched_through_solve_ik(talos):
    """Both hands at once for a batch of three reaches (position targets), feet held, via solve_ik."""
    m = talos.model
    q0 = _standing(m)
    offsets = torch.tensor([[0.1, 0.0, 0.1], [0.05, -0.05, 0.15], [0.12, 0.05, -0.05]], dtype=torch.float64)
    left = m.link_pose(q0, HAND)[:3, 3] + offsets
    right = m.link_pose(q0, "arm_right_7_link")[:3, 3] + offsets * torch.tensor(
        [1.0, -1.0, 1.0], dtype=torch.float64
    )
    r = solve_ik(m, {HAND: left, "arm_right_7_link": right}, q0, hold=FEET, tol_pos=1e-6)
    assert r.q.shape == (3, m.nq) and bool(r.converged.all())
    for s in range(3):
        poses = _pin_poses(talos, r.q[s].numpy(), FEET + (HAND, "arm_right_7_link"))
        ref = _pin_poses(talos, q0.numpy(), FEET)
        assert max(np.abs(p - q).max() for p, q in zip(poses[:2], ref)) < 1e-6
        assert np.abs(poses[2][:3, 3] - left[s].numpy()).max() < 1e-5
        assert np.abs(poses[3][:3, 3] - right[s].numpy()).max() < 1e-5


def test_coupled_mimic_gripper_ik():
    """The Panda with coupled fingers: the finger tip reaches a point; the mimic finger follows."""
    m = RobotModel.from_urdf(example_robot_data("panda_description/urdf/panda.urdf"))
    q0 = torch.tensor([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8, 0.02], dtype=torch.float64)
    target = m.link_pose(q0, "panda_leftfinger")[:3, 3] + torch.tensor(
        [0.05, -0.03, 0.04], dtype=torch.float64
    )
    r = solve_ik(m, {"panda_leftfinger": target}, q0, tol_pos=1e-6)
    assert bool(r.converged) and r.q.shape == (8,)
    assert float((m.link_pose(r.q, "panda_leftfinger")[:3, 3] - target).abs().max()) < 1e-5
