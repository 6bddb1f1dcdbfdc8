"""The Robot workspace's state with ball joints (MJCF ``ball``): one slider per velocity
coordinate, a ball's three sliders its rotation vector (rad), q holding its unit quaternion."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from app.workspaces.robot.robot_jobs import load_robot_job
from app.workspaces.robot.state import RobotState
from engine.jobs import NullJobContext

MJCF = Path(__file__).parents[3] / "engine" / "robots" / "mjcf"


@pytest.mark.parametrize("name", ["ball_chain.xml", "ball_floating.xml", "ball_coupled.xml"])
def test_sliders_and_configuration_of_ball_joints(name):
    loaded = load_robot_job(str(MJCF / name))(NullJobContext())
    model = loaded.model
    s = RobotState()
    s.set_robot(loaded)
    assert s.q.shape == (model.nq,) and s.joint_q.shape == (model.dof,) == s.lower.shape
    names = s.slider_names()
    assert len(names) == model.dof == len(s.joint_types())
    ball = model.ball_joint_names[0]
    assert names[names.index(f"{ball} rx"):][:3] == [f"{ball} rx", f"{ball} ry", f"{ball} rz"]
    # a ball's sliders: its rotation vector; moving them gives the rotation exp(r)
    x = s.joint_q
    sl = model.joint_coordinates(ball)[1]
    f = 6 if model.floating else 0
    r = np.array([0.3, -0.2, 0.5])
    x[sl.start - f:sl.stop - f] = r
    s.set_joint_q(x)
    np.testing.assert_allclose(s.joint_q, x, atol=1e-12)
    quat = s.q[model.joint_coordinates(ball)[0]]
    angle = np.linalg.norm(r)
    np.testing.assert_allclose(quat, [*(np.sin(angle / 2) * r / angle), np.cos(angle / 2)], atol=1e-12)
    # set_q keeps quaternions unit and the poses follow the engine's
    q = s.q.copy()
    q[model.joint_coordinates(ball)[0]] *= 2.0
    s.set_q(q)
    np.testing.assert_allclose(s.q[model.joint_coordinates(ball)[0]], quat, atol=1e-12)
    poses = s.link_poses()
    with torch.no_grad():
        ref = model.forward_kinematics(torch.as_tensor(s.q)).numpy()
    np.testing.assert_allclose(poses[model.link_names[-1]], ref[-1], atol=1e-12)
    with pytest.raises(ValueError, match="joint coordinates"):
        s.set_q(np.zeros(model.nq - 1))


def test_the_workspace_shows_a_ball_robot_and_its_sliders_turn_the_ball(qtbot, tmp_path):
    """In a real window: the MJCF floating robot with two ball joints loads, its joints panel has
    one slider per velocity coordinate, dragging a ball's rx slider turns the ball (unit
    quaternion), the readouts follow and a short simulation plays."""
    from tests.app.workspaces.robot.test_robot_workspace import LOAD_MS, Env

    env = Env(qtbot, tmp_path)
    try:
        page = env.page()
        path = str(MJCF / "ball_floating.xml")
        page.load_robot(path)
        qtbot.waitUntil(lambda: page.robot is not None and page.robot.path == path or bool(env.errors),
                        timeout=LOAD_MS)
        assert not env.errors, env.errors
        model = page.robot.model
        names = page.state.slider_names()
        i = names.index("hip rx")
        assert len(page.joints._sliders) == model.dof
        before = page.q[model.joint_coordinates("hip")[0]].copy()
        slider = page.joints.slider(i)
        slider.setValue(slider.value() + 300)
        quat = page.q[model.joint_coordinates("hip")[0]]
        assert not np.allclose(quat, before) and abs(np.linalg.norm(quat) - 1.0) < 1e-12
        qtbot.waitUntil(lambda: page.dynamics.readouts is not None, timeout=30_000)
        from engine.robots.simulate import SimulationOptions

        page.simulate(SimulationOptions(mode="free_fall", duration=0.05, dt=0.005))
        qtbot.waitUntil(lambda: page.state.simulation is not None, timeout=120_000)
        assert page.state.simulation.q.shape[1] == model.nq
    finally:
        env.runner.cancel_all()
        env.runner.wait_for_done(60_000)


def test_log_replay_state_plays_a_log_of_ball_quaternions(tmp_path):
    """The workspace's log replay (Qt-free state) on the ball chain: a log with each ball's
    qw qx qy qz columns is matched, plotted per coordinate (rx/ry/rz) and shows the logged poses;
    a remap from the mapping dialog keeps the ball columns."""
    from app.workspaces.robot.log_replay_state import LogReplayState
    from engine.robots import RobotModel

    model = RobotModel.from_file(MJCF / "ball_chain.xml")
    t = np.linspace(0.0, 1.0, 21)
    rows = []
    for ti in t:
        q = model.neutral().numpy()
        for name in model.ball_joint_names:
            s = model.joint_coordinates(name)[0]
            axis = np.array([1.0, 2.0, -1.0]) / np.sqrt(6.0)
            q[s] = [*(np.sin(0.4 * ti) * axis), np.cos(0.4 * ti)]
        q[model.joint_coordinates("elbow")[0]] = 0.3 * ti
        rows.append(q)
    rows = np.array(rows)
    cols = ["time", "shoulder_qw", "shoulder_qx", "shoulder_qy", "shoulder_qz", "elbow",
            "wrist_qw", "wrist_qx", "wrist_qy", "wrist_qz", "thumb"]
    data = np.column_stack([t, rows[:, [3, 0, 1, 2]], rows[:, 4], rows[:, [8, 5, 6, 7]], np.zeros(21)])
    path = tmp_path / "log.csv"
    np.savetxt(path, data, delimiter=",", header=",".join(cols), comments="")
    s = LogReplayState()
    s.set_robot(model)
    replay = s.open_file(path)
    assert replay.mapped.all() and s.rmap.balls["wrist"] == cols[6:10]
    labels = s.series()["q"][2]
    assert labels[:3] == ["shoulder rx", "shoulder ry", "shoulder rz"] and labels[3] == "elbow"
    poses = s.link_poses_at(0.5)
    with torch.no_grad():
        ref = model.forward_kinematics(torch.as_tensor(rows[10])).numpy()
    np.testing.assert_allclose(poses["hand"], ref[model.link_names.index("hand")], atol=1e-12)
    s.set_mapping(s.rmap.mapping)                  # as the mapping dialog hands it back
    assert s.rmap.balls["shoulder"] == cols[1:5] and s.replay.mapped.all()
    # the rigid-body ghost of the ball robot: rolled out on the manifold, its poses drawn at the end
    s.set_ghost_model("rigid")
    s.horizon = 0.2
    s.cursor = 0.3
    ghost = s.compute_ghost()
    assert ghost.q.shape == (ghost.t.size, model.dof) and np.isfinite(ghost.q).all()
    assert ghost.t[0] == pytest.approx(0.3) and ghost.t[-1] == pytest.approx(0.5, abs=0.06)
    ends = s.ghost_link_poses()
    assert ends is not None and np.isfinite(ends["hand"]).all()


def test_log_replay_of_a_ball_model_with_coupled_joints_maps_the_independent_columns(tmp_path):
    """ball_coupled.xml (two balls, three joints coupled by <equality joint>): the log holds the
    independent joints only (a ball's qw qx qy qz); they are matched to their coordinates and the
    poses shown are the engine's, the coupled fingers and tip placed by their couplings."""
    from app.workspaces.robot.log_replay_state import LogReplayState
    from engine.robots import RobotModel

    model = RobotModel.from_file(MJCF / "ball_coupled.xml")
    assert model.mimic_joint_names == ["flag", "right", "tip"]
    t = np.linspace(0.0, 1.0, 11)
    rows = []
    for ti in t:
        q = model.neutral().numpy()
        for k, name in enumerate(model.ball_joint_names):
            axis = np.array([1.0, 2.0 - k, -1.0]) / np.linalg.norm([1.0, 2.0 - k, -1.0])
            q[model.joint_coordinates(name)[0]] = [*(np.sin(0.4 * ti) * axis), np.cos(0.4 * ti)]
        for c, name in enumerate(("yaw", "elbow", "left")):
            q[model.joint_coordinates(name)[0]] = (0.3 - 0.1 * c) * ti
        rows.append(q)
    rows = np.array(rows)
    cols = ["time", "yaw", "shoulder_qw", "shoulder_qx", "shoulder_qy", "shoulder_qz", "elbow",
            "wrist_qw", "wrist_qx", "wrist_qy", "wrist_qz", "left"]
    data = np.column_stack([t, rows[:, 0], rows[:, [4, 1, 2, 3]], rows[:, 5], rows[:, [9, 6, 7, 8]], rows[:, 10]])
    path = tmp_path / "log.csv"
    np.savetxt(path, data, delimiter=",", header=",".join(cols), comments="")
    s = LogReplayState()
    s.set_robot(model)
    replay = s.open_file(path)
    assert replay.mapped.all() and s.rmap.balls == {"shoulder": cols[2:6], "wrist": cols[7:11]}
    labels = s.series()["q"][2]
    assert labels == ["yaw", "shoulder rx", "shoulder ry", "shoulder rz", "elbow", "wrist rx", "wrist ry",
                      "wrist rz", "left"]
    poses = s.link_poses_at(0.5)
    with torch.no_grad():
        ref = model.forward_kinematics(torch.as_tensor(rows[5])).numpy()
    for link in ("tip", "right", "flag", "hand"):
        np.testing.assert_allclose(poses[link], ref[model.link_names.index(link)], atol=1e-12)
