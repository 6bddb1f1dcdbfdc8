"""The log replay and the model ghost (engine/data/log_replay.py, engine/logs/joint_match.py).

References: scipy's solve_ivp on the pendulum's analytic equation (urdf/pendulum.urdf's
comment: qdd = 3 g / (2 l) sin q + 3 u / (m l^2)), pandas/numpy reading of the shipped Panda
log, scipy's Rotation for base quaternions.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from engine.data.log_replay import LogReplay, ReplayMapping, make_replay, rollout_ghost
from engine.logs import LogError, LogMapping, read_log
from engine.logs.joint_match import match_joints
from engine.paths import resources_dir, urdf_dir
from engine.robots.library import load_robot, resolve_robot
from engine.robots.model import RobotModel

PANDA_LOG = resources_dir() / "logs" / "panda_joints.csv"
G, L, M = 9.81, 1.0, 1.0


def _pendulum_log(path, h=0.01, T=2.0):
    """The pendulum under a piecewise-constant torque, integrated by scipy, logged in degrees and ms."""
    n = int(round(T / h))
    u = 0.6 * np.sin(2.0 * np.arange(n + 1) * h)
    x = np.array([0.3, -0.2])
    xs = [x]
    for k in range(n):
        sol = solve_ivp(lambda _t, s, uk=u[k]: [s[1], 1.5 * G / L * math.sin(s[0]) + 3.0 * uk / (M * L * L)],
                        (0.0, h), x, rtol=1e-12, atol=1e-12)
        x = sol.y[:, -1]
        xs.append(x)
    xs = np.array(xs)
    t = np.arange(n + 1) * h
    pd.DataFrame(
        {
            "time_ms": t * 1e3,
            "Theta_Pos_deg": np.degrees(xs[:, 0]),
            "theta_vel": np.degrees(xs[:, 1]),
            "theta_torque": u,
        }
    ).to_csv(path, index=False)
    return t, xs, u


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    path = tmp_path_factory.mktemp("pend") / "pend.csv"
    t, xs, u = _pendulum_log(path)
    robot = RobotModel.from_urdf(urdf_dir() / "pendulum.urdf")
    table = read_log(path)
    rmap = ReplayMapping.auto(table, robot)
    return robot, make_replay(table, rmap, robot), rmap, (t, xs, u)


def test_pendulum_log_matched_by_name_in_si(pendulum):
    robot, replay, rmap, (t, xs, u) = pendulum
    assert rmap.joints == ["theta"]
    assert rmap.mapping.time == "time_ms" and rmap.mapping.units["time_ms"] == "ms"
    assert rmap.mapping.units["Theta_Pos_deg"] == "deg"
    assert rmap.mapping.units["theta_vel"] == "deg/s"   # follows the positions' degrees
    np.testing.assert_allclose(replay.t, t, atol=1e-9)
    np.testing.assert_allclose(replay.q[:, 0], xs[:, 0], atol=1e-9)
    np.testing.assert_allclose(replay.qd[:, 0], xs[:, 1], atol=1e-9)
    np.testing.assert_allclose(replay.tau[:, 0], u, atol=1e-12)


def test_rigid_ghost_follows_scipy(pendulum):
    robot, replay, _, (t, xs, _) = pendulum
    ghost = rollout_ghost(robot, replay, t0=0.5, horizon=1.0)
    k0 = 50
    assert ghost.t[0] == pytest.approx(0.5) and ghost.t.shape == (101,)
    np.testing.assert_allclose(ghost.q[:, 0], xs[k0:k0 + 101, 0], atol=1e-7)
    np.testing.assert_allclose(ghost.qd[:, 0], xs[k0:k0 + 101, 1], atol=1e-6)
    assert np.abs(ghost.error).max() < 1e-7


def test_wrong_model_ghost_drifts_and_error_is_its_difference(pendulum):
    robot, replay, _, (t, xs, _) = pendulum
    heavy = robot.with_link_params(
        mass={"rod": 2.0}
    )  # same gravity torque per mass, inertia doubled: u acts half
    ghost = rollout_ghost(heavy, replay, t0=0.0, horizon=1.5)
    np.testing.assert_allclose(ghost.error[:, 0], ghost.q[:, 0] - xs[: ghost.t.size, 0], atol=1e-9)
    assert ghost.rms[0] > 1e-3


def test_learned_model_ghost_follows_scipy(pendulum):
    from engine.models.base import ModelSpec
    from engine.models.registry import build_model
    from engine.systems import get_system

    robot, replay, _, (t, xs, _) = pendulum
    spec = ModelSpec.for_system(get_system("pendulum"), 0.01, robot_perturb=0.0)
    model = build_model("robot-rk4", spec)
    ghost = rollout_ghost(model, replay, t0=0.3, horizon=0.5)
    np.testing.assert_allclose(ghost.t, 0.3 + 0.01 * np.arange(51), atol=1e-12)
    np.testing.assert_allclose(ghost.q[:, 0], xs[30:81, 0], atol=1e-6)
    with pytest.raises(ValueError, match="controls"):
        replay2 = LogReplay(**{**replay.__dict__, "u": np.zeros((replay.n, 2))})
        rollout_ghost(model, replay2, 0.3, 0.1)


def test_renamed_degree_copy_of_the_panda_log_replays_like_the_original(tmp_path):
    robot = load_robot("panda")
    df = pd.read_csv(PANDA_LOG, comment="#")
    out = pd.DataFrame({"stamp_ms": df.t * 1000.0})
    for i in range(7):
        out[f"/joint_states/position/panda_joint{i + 1}"] = np.degrees(df[f"q{i + 1}"])
        out[f"Joint{i + 1}Velocity"] = np.degrees(df[f"qd{i + 1}"])
        out[f"J{i + 1}_effort_Nm"] = df[f"tau{i + 1}"]
    path = tmp_path / "renamed.csv"
    out[list(out.columns)[::-1]].to_csv(path, index=False)   # columns in another order too
    table = read_log(path)
    rmap = ReplayMapping.auto(table, robot)
    assert rmap.joints == robot.joint_names
    replay = make_replay(table, rmap, robot)
    q_ref = df[[f"q{i + 1}" for i in range(7)]].to_numpy()
    np.testing.assert_allclose(replay.q, q_ref, atol=1e-9)
    np.testing.assert_allclose(replay.qd, df[[f"qd{i + 1}" for i in range(7)]].to_numpy(), atol=1e-9)
    np.testing.assert_allclose(replay.tau, df[[f"tau{i + 1}" for i in range(7)]].to_numpy(), atol=1e-12)
    np.testing.assert_allclose(replay.t, df.t.to_numpy() - df.t[0], atol=1e-9)
    # cursor sampling and poses
    assert replay.index_at(1.234) == 123
    poses = replay.link_poses(robot, [1.0])
    ref = robot.forward_kinematics(torch.as_tensor(q_ref[100])).numpy()
    np.testing.assert_allclose(poses[0], ref, atol=1e-12)


def test_numbered_columns_map_in_order_and_missing_joints_hold_zero():
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    cols = ["timestamp"] + [f"observation.state[{i}]" for i in range(7)]
    m = match_joints(cols, joints)
    assert m.mapping.q == cols[1:] and m.joints == joints and m.mapping.time == "timestamp"
    m2 = match_joints(["t", "q2", "q5"], joints)
    assert m2.joints == ["panda_joint2", "panda_joint5"]
    assert any("held at 0" in n for n in m2.notes)
    with pytest.raises(LogError, match="no column matches"):
        match_joints(["t", "voltage", "temperature"], joints)
    # a UR arm: joint names without "joint" in the log; an RTDE record with set points left out
    ur = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
          "wrist_3_joint"]
    short = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
    m3 = match_joints(["time"] + [f"{n}_{r}" for r in ("eff", "vel", "pos") for n in short[::-1]], ur)
    assert m3.mapping.q == [f"{n}_pos" for n in short] and m3.mapping.u == [f"{n}_eff" for n in short]
    assert m3.mapping.qd == [f"{n}_vel" for n in short] and m3.joints == ur
    rtde = ["timestamp"] + [f"{k}_{i}" for k in ("target_q", "actual_q", "actual_qd") for i in range(6)]
    m4 = match_joints(rtde, ur)
    assert m4.mapping.q == [f"actual_q_{i}" for i in range(6)] and m4.mapping.qd == [
        f"actual_qd_{i}" for i in range(6)
    ]


def test_floating_base_pose_moves_every_link(tmp_path):
    fixed = load_robot("panda")
    robot = RobotModel.from_urdf(resolve_robot("panda"), floating_base=True)
    n = 50
    t = np.linspace(0, 1, n)
    quat = Rotation.from_euler("zyx", np.stack([t, 0.3 * t, -0.2 * t], 1)).as_quat()  # x y z w
    cols = {"t": t, "base_pos_x": t, "base_pos_y": 2 * t, "base_pos_z": 0.5 + 0 * t,
            "base_quat_w": quat[:, 3], "base_quat_x": quat[:, 0], "base_quat_y": quat[:, 1],
            "base_quat_z": quat[:, 2]}
    for i in range(7):
        cols[f"q{i + 1}"] = 0.1 * (i + 1) * t
    pd.DataFrame(cols).to_csv(tmp_path / "fb.csv", index=False)
    table = read_log(tmp_path / "fb.csv")
    rmap = ReplayMapping.auto(table, robot)
    assert rmap.base == [
        "base_pos_x",
        "base_pos_y",
        "base_pos_z",
        "base_quat_w",
        "base_quat_x",
        "base_quat_y",
        "base_quat_z",
    ]
    assert rmap.joints == robot.joint_names
    replay = make_replay(table, rmap, robot)
    poses = replay.link_poses(robot, t[[10, 40]])
    carried = make_replay(table, rmap, fixed).link_poses(
        fixed, t[[10, 40]]
    )  # a fixed model carried by the base
    for k, i in enumerate((10, 40)):
        B = np.eye(4)
        B[:3, :3] = Rotation.from_quat(quat[i]).as_matrix()
        B[:3, 3] = [t[i], 2 * t[i], 0.5]
        fk = fixed.forward_kinematics(torch.as_tensor(replay.q[i])).numpy()
        np.testing.assert_allclose(poses[k], B @ fk, atol=1e-9)
        np.testing.assert_allclose(carried[k], B @ fk, atol=1e-9)
    with pytest.raises(ValueError, match="floating-base"):
        rollout_ghost(robot, replay, 0.2, 0.1)


def test_replay_mapping_round_trips_and_rejects_bad_input(pendulum, tmp_path):
    robot, _, rmap, _ = pendulum
    again = ReplayMapping.from_dict(rmap.to_dict())
    assert again.to_dict() == rmap.to_dict()
    with pytest.raises(LogError, match="joints"):
        ReplayMapping(LogMapping(time="t", q=["a", "b"]), joints=["theta"])
    # a plain LogMapping file names the robot's joints in order
    path = tmp_path / "m.json"
    LogMapping(time="time_ms", q=["Theta_Pos_deg"], units={"Theta_Pos_deg": "deg", "time_ms": "ms"}).save(
        path
    )
    loaded = ReplayMapping.load(path, robot)
    assert loaded.joints == ["theta"]


def test_episode_column_selects_rows(tmp_path):
    robot = RobotModel.from_urdf(urdf_dir() / "pendulum.urdf")
    ep = np.repeat([0, 1, 2], 10)
    ts = np.tile(np.arange(10) * 0.1, 3)
    pd.DataFrame({"timestamp": ts, "episode_index": ep, "theta": ep * 1.0 + ts}).to_csv(tmp_path / "e.csv",
                                                                                        index=False)
    table = read_log(tmp_path / "e.csv")
    rmap = ReplayMapping.auto(table, robot)
    assert rmap.episode == 0                      # one episode at a time, the first by default
    first = make_replay(table, rmap, robot)
    assert first.n == 10 and (first.episode, first.n_episodes) == (0, 3)
    assert any("1 of 3 episodes" in n for n in first.notes)
    rmap.episode = None       # a mapping without an episode (a saved plain mapping) plays the first too
    np.testing.assert_allclose(make_replay(table, rmap, robot).q, first.q)
    rmap.episode = 1
    replay = make_replay(table, rmap, robot)
    assert replay.n == 10 and replay.episode == 1
    np.testing.assert_allclose(replay.q[:, 0], 1.0 + np.arange(10) * 0.1)
    rmap.episode = 7
    with pytest.raises(LogError, match="no episode 7"):
        make_replay(table, rmap, robot)


def test_ghost_reports_progress_and_cancels(pendulum):
    from engine.jobs import JobCancelled, ThreadJobContext

    robot, replay, _, _ = pendulum
    updates = []
    ctx = ThreadJobContext(on_progress=updates.append, min_interval=0.0)
    rollout_ghost(robot, replay, 0.0, 0.5, ctx=ctx)
    assert len(updates) == 5 and updates[-1].fraction == pytest.approx(0.8)
    ctx.cancel()
    with pytest.raises(JobCancelled):
        rollout_ghost(robot, replay, 0.0, 0.5, ctx=ctx)
