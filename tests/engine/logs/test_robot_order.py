"""A log's mapped columns put in a robot's joint order by name (engine.logs.robot_order)."""

from __future__ import annotations

import pytest

from engine.logs import LogError, LogMapping
from engine.logs.robot_order import order_for_robot

PANDA = [f"panda_joint{i}" for i in range(1, 8)]


def _mapping(q, u=None, qd=None):
    return LogMapping(time="t", q=list(q), qd=list(qd or []), u=list(u if u is not None else [c + "_tau" for c in q]))


def test_columns_named_after_the_joints_are_reordered_with_their_velocities_and_torques():
    q = [f"panda_joint{i}_pos" for i in (3, 1, 2, 7, 5, 6, 4)]
    m, notes = order_for_robot(_mapping(q, qd=[c.replace("pos", "vel") for c in q]), PANDA, "panda")
    assert m.q == [f"panda_joint{i}_pos" for i in range(1, 8)]
    assert m.qd == [f"panda_joint{i}_vel" for i in range(1, 8)]
    assert m.u == [f"panda_joint{i}_pos_tau" for i in range(1, 8)]
    assert "panda_joint3_pos -> panda_joint3" in notes[0]
    # already in order: no note
    assert order_for_robot(m, PANDA)[1] == []


def test_columns_that_name_no_joint_keep_the_mappings_order_and_say_so():
    m, notes = order_for_robot(_mapping(["a", "b", "c"]), ["shoulder", "elbow", "wrist"], "arm")
    assert m.q == ["a", "b", "c"] and "mapping's order is taken: a -> shoulder, b -> elbow, c -> wrist" in notes[0]


def test_a_mismatch_is_refused_naming_the_joints_and_columns():
    q = [f"panda_joint{i}_pos" for i in range(1, 7)] + ["gripper_pos"]
    with pytest.raises(LogError) as info:
        order_for_robot(_mapping(q), PANDA, "panda")
    msg = str(info.value)
    assert "joints without a column: 'panda_joint7'" in msg and "columns that name no joint: 'gripper_pos'" in msg
    with pytest.raises(LogError, match="6 configuration columns, 7 joints"):
        order_for_robot(_mapping(q[:6]), PANDA, "panda")


def test_torques_are_required_one_per_joint():
    with pytest.raises(LogError, match="maps no torque columns"):
        order_for_robot(_mapping(["a"], u=[]), ["j"], "one")
    with pytest.raises(LogError, match="2 torque columns for 1 configuration columns"):
        order_for_robot(_mapping(["a"], u=["x", "y"]), ["j"], "one")
