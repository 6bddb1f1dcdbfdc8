"""The Robot workspace's Qt-free state (app/workspaces/robot/state.py), driven directly: the
jobs run in this thread, results are checked against Pinocchio on the same URDF."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest
import torch

from app.workspaces.robot.robot_jobs import dynamics_readouts, ik_job, load_robot_job, simulate_job
from app.workspaces.robot.state import RobotState, TargetSpec, describe_ik
from engine.jobs import NullJobContext
from engine.robots.end_effector import default_end_effector
from engine.robots.ik import IKOptions
from engine.robots.simulate import SimulationOptions


@pytest.fixture(scope="module")
def panda():
    return load_robot_job("panda")(NullJobContext())


@pytest.fixture
def state(panda):
    s = RobotState()
    s.log = []
    for name in ("robot", "q", "end_effector", "targets", "ik", "readouts", "simulation",
                 "pose_requested", "history"):
        getattr(s.events, name).connect(lambda *a, name=name: s.log.append((name, a)))
    s.set_robot(panda)
    return s


def _pin(path):
    pm = pin.buildModelFromUrdf(path)
    return pm, pm.createData()


def test_the_state_imports_no_qt():
    code = ("import sys, app.workspaces.robot.state\n"
            "bad = [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_set_robot_starts_at_the_neutral_pose_inside_the_limits(state, panda):
    assert [e for e, _ in state.log[:4]] == ["robot", "targets", "q", "history"]
    assert state.q.shape == (7,) and np.all(state.q >= state.lower) and np.all(state.q <= state.upper)
    assert state.end_effector == default_end_effector(panda.model) == "panda_hand_tcp"
    assert state.joint_types() == [True] * 7
    assert not state.history.can_undo


def test_set_q_clamps_notifies_and_refuses_a_wrong_length(state):
    state.log.clear()
    state.set_q(state.upper + 1.0)
    np.testing.assert_array_equal(state.q, state.upper)
    assert [e for e, _ in state.log] == ["q"]
    np.testing.assert_array_equal(state.log[0][1][0], state.upper)
    state.log.clear()
    state.set_q(state.upper)            # unchanged: no event
    assert state.log == []
    with pytest.raises(ValueError, match="7 joints"):
        state.set_q(np.zeros(3))


def test_undo_redo_history_of_poses(state):
    a, b, c = state.q.copy(), state.q + 0.1, state.q + 0.2
    state.push_pose(a, b, "random pose")
    np.testing.assert_allclose(state.q, b)
    state.push_pose(b, c, "IK solve", animate=True)
    requested = [args for name, args in state.log if name == "pose_requested"]
    np.testing.assert_allclose(requested[-1][0], c)
    assert requested[-1][1] is True
    state.set_q(c)                        # the page ends its animation there
    assert state.history.undo_text == "IK solve"
    state.undo()
    np.testing.assert_allclose(state.log[-1][1][0], b)
    state.set_q(b)
    state.undo()
    np.testing.assert_allclose(state.log[-1][1][0], a)
    assert not state.history.can_undo and state.history.redo_text == "random pose"
    state.redo()
    np.testing.assert_allclose(state.log[-1][1][0], b)
    state.push_pose(b, a, "reset pose")   # a new change drops the redo branch
    assert not state.history.can_redo and len(state.history) == 2


def test_the_state_owns_the_targets_and_their_edits_are_undoable(state, panda):
    from engine.robots import RobotModel

    ref = RobotModel.from_file(panda.path)          # an independent model for the link pose
    link = "panda_hand_tcp"
    expected = ref.link_pose(torch.as_tensor(state.q), link).numpy()
    state.log.clear()
    spec = state.add_target(link)                    # at the link's current pose
    np.testing.assert_allclose(spec.pose, expected, atol=1e-12)
    assert [e for e, _ in state.log] == ["targets", "history"] and state.history.undo_text == "add target"
    moved = spec.pose.copy()
    moved[:3, 3] += [0.05, 0.0, -0.02]
    state.set_target_pose(link, moved)
    np.testing.assert_array_equal(state.log[-2][1][0][0].pose, moved)     # the targets event carries it
    state.set_target_position_only(link, True)
    state.add_target("panda_link5")
    assert [t.link for t in state.targets] == [link, "panda_link5"]
    state.remove_target("panda_link5")
    # undo walks back through the edits, redo forward
    texts = []
    while state.history.can_undo:
        texts.append(state.history.undo_text)
        state.undo()
    assert texts == ["remove target", "add target", "position only", "move target", "add target"]
    assert state.targets == ()
    state.redo()
    state.redo()
    assert state.target(link) is not None and not state.target(link).position_only
    np.testing.assert_array_equal(state.target(link).pose, moved)
    with pytest.raises(ValueError, match="no target"):
        state.set_target_pose("panda_link3", moved)
    with pytest.raises(ValueError, match="no link named"):
        state.add_target("tail")


def test_a_drag_is_one_undo_step_and_in_follow_mode_holds_the_pose_too(state):
    link = "panda_hand_tcp"
    start = state.add_target(link).pose
    n = len(state.history)
    state.begin_target_edit()
    for k in range(1, 6):                            # the moves of one drag
        T = start.copy()
        T[2, 3] -= 0.01 * k
        state.set_target_pose(link, T)
    assert len(state.history) == n                   # nothing recorded mid-gesture
    state.end_target_edit("move target")
    assert len(state.history) == n + 1 and state.history.undo_text == "move target"
    state.undo()
    np.testing.assert_array_equal(state.target(link).pose, start)
    state.redo()
    np.testing.assert_array_equal(state.target(link).pose, T)
    # follow mode: the drag moved the target and the solves moved the robot: one step for both
    q0 = state.q.copy()
    state.begin_target_edit()
    state.set_target_pose(link, start)
    state.set_q(q0 + 0.05)
    state.end_target_edit("follow targets", old_q=q0)
    assert state.history.undo_text == "follow targets"
    state.log.clear()
    state.undo()
    np.testing.assert_array_equal(state.target(link).pose, T)
    assert [e for e, _ in state.log] == ["history", "targets", "pose_requested"]
    np.testing.assert_allclose(state.log[-1][1][0], q0)
    state.begin_target_edit()                        # a click without a move records nothing
    state.end_target_edit()
    assert state.history.redo_text == "follow targets"


def test_ik_through_the_state_reaches_the_target_by_pinocchio(state, panda):
    pm, pd = _pin(panda.path)
    with pytest.raises(ValueError, match="Add a target"):
        state.ik_request()
    q_goal = state.lower + (state.upper - state.lower) * np.array([0.6, 0.55, 0.45, 0.6, 0.5, 0.55, 0.4])
    pin.framesForwardKinematics(pm, pd, q_goal)
    fid = pm.getFrameId("panda_hand_tcp")
    goal = pd.oMf[fid].homogeneous.copy()
    state.set_targets([TargetSpec("panda_hand_tcp", goal)])
    request = state.ik_request()
    start = state.q.copy()
    out = ik_job(panda.model, request)(NullJobContext())
    assert state.accept_ik(out, start)
    assert state.last_ik is out and describe_ik(out)[1]
    requested = [args for name, args in state.log if name == "pose_requested"][-1]
    pin.framesForwardKinematics(pm, pd, requested[0])
    miss = np.linalg.norm(pd.oMf[fid].translation - goal[:3, 3])
    assert miss <= IKOptions().tol_pos and miss == pytest.approx(out.position_error, abs=1e-9)
    # a result from before another robot was set is dropped
    state.set_robot(panda)
    assert not state.accept_ik(out, start) and state.last_ik is None


def test_readouts_and_simulation_results_land_in_the_state(state, panda):
    pm, pd = _pin(panda.path)
    state.set_q(state.q + 0.1)
    r = dynamics_readouts(panda.model, state.q, state.end_effector, serial=state.generation)(NullJobContext())
    assert state.accept_readouts(r) and state.readouts is r
    np.testing.assert_allclose(r.gravity, pin.computeGeneralizedGravity(pm, pd, state.q), atol=1e-9)
    res = simulate_job(
        panda.model, state.q, np.zeros(7), SimulationOptions("gravity_compensation", duration=0.05)
    )(NullJobContext())
    assert state.accept_simulation(res, state.generation) and state.simulation is res
    assert not state.accept_simulation(res, state.generation - 1)
    with pytest.raises(ValueError, match="dt"):
        simulate_job(panda.model, state.q, np.zeros(7), SimulationOptions(dt=-1.0))


def test_session_state_round_trips_targets(state):
    pose = np.eye(4)
    pose[:3, 3] = [0.3, 0.1, 0.5]
    state.set_targets([TargetSpec("panda_link7", pose, position_only=True)])
    s = state.session_state()
    assert s["robot"] == "panda" and len(s["q"]) == 7
    assert s["targets"] == [{"link": "panda_link7", "pose": pose.tolist(), "position_only": True}]
    with pytest.raises(ValueError, match="no link"):
        state.set_end_effector("nope")


def test_a_floating_robot_stands_and_its_balance_matches_pinocchio():
    from pathlib import Path

    from scipy.spatial.transform import Rotation

    path = Path(__file__).parents[3] / "engine" / "robots" / "mjcf" / "floating.xml"
    loaded = load_robot_job(str(path))(NullJobContext())
    s = RobotState()
    s.set_robot(loaded)
    model = loaded.model
    assert s.floating and s.base_size == 7 and s.q.shape == (model.nq,)
    assert s.lowest_contact_z() == pytest.approx(0.0, abs=1e-9)        # the shin's end on the ground
    # the shin's cylinder is 0.4 m long from the knee: its lowest point on the ground puts the knee there
    knee_z = s.link_poses()["shin"][2, 3]
    assert 0.35 < knee_z <= 0.45
    # the joints move, the base stays; the base moves, the joints stay
    base = s.base_pose()
    s.set_joint_q([-0.3, -0.6])
    np.testing.assert_allclose(s.base_pose(), base, atol=1e-12)
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("xyz", [0.1, 0.2, 0.3]).as_matrix()
    T[:3, 3] = [0.2, -0.1, 0.9]
    s.set_base_pose(T)
    np.testing.assert_allclose(s.base_pose(), T, atol=1e-12)
    np.testing.assert_allclose(s.joint_q, [-0.3, -0.6])
    import mujoco

    mm = mujoco.MjModel.from_xml_path(str(path))
    md = mujoco.MjData(mm)
    md.qpos[:] = np.concatenate([s.q[:3], [s.q[6]], s.q[3:6], s.q[7:]])      # MuJoCo's quaternion: w, x, y, z
    mujoco.mj_forward(mm, md)
    b = s.balance()
    np.testing.assert_allclose(b.com, md.subtree_com[mm.body("torso").id], atol=1e-12)
    np.testing.assert_allclose(b.com_ground, [*b.com[:2], 0.0])
    assert s.contact_links == ("shin",) and not b.inside
    with pytest.raises(ValueError, match="a base \\(7\\) and 2 joints"):
        s.set_q(np.zeros(2))


def test_a_humanoid_reaches_with_a_hand_while_its_feet_stay():
    # whole-body IK from the Robot workspace: TALOS stands, its right hand goes 15 cm forward
    # and 10 cm up; the feet (the held contact links by default) keep their poses, the base moves
    talos = load_robot_job("talos")(NullJobContext())
    s = RobotState()
    s.set_robot(talos)
    assert s.held_links == s.contact_links == ("left_sole_link", "right_sole_link") and s.ik_base == "free"
    hand = "wrist_right_ft_tool_link"
    before = s.link_poses()
    goal = before[hand].copy()
    goal[:3, 3] += [0.15, 0.0, 0.10]
    s.set_targets([TargetSpec(hand, goal, position_only=True)])
    request = s.ik_request()
    assert request.hold == ("left_sole_link", "right_sole_link") and request.base == "free"
    out = ik_job(talos.model, request)(NullJobContext())
    tol = request.options.tol_pos if request.options else 1e-3       # the solver's default: 1 mm
    assert out.converged and out.position_error < tol
    after = s.link_poses(out.q)
    assert np.linalg.norm(after[hand][:3, 3] - goal[:3, 3]) == pytest.approx(out.position_error, abs=1e-9)
    for foot in s.contact_links:   # held to the solver's tolerances (1 mm, 0.01 rad); in practice far tighter
        np.testing.assert_allclose(after[foot][:3, 3], before[foot][:3, 3], atol=1e-4)
        np.testing.assert_allclose(after[foot][:3, :3], before[foot][:3, :3], atol=1e-3)
    assert np.linalg.norm(out.q[:3] - s.q[:3]) > 1e-3                # the base moved to help
    # the base held fixed instead: the feet stay, the base does not move at all
    s.set_ik_base("fixed")
    out = ik_job(talos.model, s.ik_request())(NullJobContext())
    np.testing.assert_allclose(out.q[:7], s.q[:7], atol=1e-12)
    for foot in s.contact_links:
        np.testing.assert_allclose(s.link_poses(out.q)[foot], before[foot], atol=1e-4)
    with pytest.raises(ValueError, match="no such link"):
        s.set_held_links(["left_sole_link", "tail"])
    with pytest.raises(ValueError, match="free' or 'fixed"):
        s.set_ik_base("loose")
    assert s.session_state()["held_links"] == ["left_sole_link", "right_sole_link"]


def test_the_viewer_loads_a_possible_but_inconsistent_inertia_leniently_and_refuses_an_impossible_one():
    from pathlib import Path

    from app.workspaces.robot.robot_jobs import _load_model
    from engine.robots.urdf import URDFError

    corpus = Path(__file__).parents[3] / "engine" / "robots" / "malformed"
    # the default loader keeps an inertia that breaks the triangle inequality: its warning is the note
    model, notes = _load_model(corpus / "triangle_inequality.urdf")
    assert model.dof >= 1 and notes == [f"warning: {model.description.warnings[0]}"]
    assert "triangle inequality: arm" in notes[0]
    # mass 0 with an inertia on a moving link: the viewer retries with strict=False, and the loader's
    # warning line (one, not a second note of the viewer's own) names the link
    model, notes = _load_model(corpus / "zero_mass.urdf")
    assert model.dof >= 1 and len(notes) == 1 and "mass must be positive: arm" in notes[0]
    with pytest.raises(URDFError, match="physically impossible; fix the URDF") as err:
        _load_model(corpus / "negative_mass.urdf")
    assert err.value.impossible and "strict=False" not in str(err.value)
