"""The rigid-body ghost of a robot with ball joints (engine.data.log_replay.rollout_ghost): a log
written by MuJoCo (the ball chain, its balls passive, the hinge and slide driven by smooth
torques) is replayed from its quaternion columns, and the ghost rolled out from a logged state
under the logged torques follows MuJoCo's motion; a wrong robot drifts."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from engine.data.log_replay import ReplayMapping, make_replay, rollout_ghost
from engine.logs import read_log
from engine.robots import RobotModel

BALL_CHAIN = Path(__file__).parents[1] / "robots" / "mjcf" / "ball_chain.xml"


def _torques(t: float) -> tuple[float, float]:
    return 0.4 * np.sin(3.0 * t) + 0.2, 0.3 * np.cos(5.0 * t)       # elbow N m, thumb N


@pytest.fixture(scope="module")
def mujoco_log(tmp_path_factory):
    m = mujoco.MjModel.from_xml_path(str(BALL_CHAIN))
    m.opt.timestep = 2e-4
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    d = mujoco.MjData(m)
    d.qpos[:4] = [0.98, 0.1, -0.15, 0.05]          # MuJoCo's ball: w x y z
    d.qpos[:4] /= np.linalg.norm(d.qpos[:4])
    d.qvel[:] = [0.3, -0.2, 0.5, 0.4, 0.1, -0.3, 0.2, 0.05]
    elbow, thumb = (m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in ("elbow", "thumb"))
    rows, every = [], 25                            # logged at 200 Hz
    for k in range(int(1.0 / m.opt.timestep) + 1):
        t = k * m.opt.timestep
        te, tt = _torques(t)
        if k % every == 0:
            rows.append([t, *d.qpos, te, tt])
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[elbow], d.qfrc_applied[thumb] = te, tt
        mujoco.mj_step(m, d)
    cols = ["time", "shoulder_qw", "shoulder_qx", "shoulder_qy", "shoulder_qz", "elbow",
            "wrist_qw", "wrist_qx", "wrist_qy", "wrist_qz", "thumb", "elbow_tau", "thumb_tau"]
    path = tmp_path_factory.mktemp("ball_log") / "ball_chain.csv"
    np.savetxt(path, np.array(rows), delimiter=",", header=",".join(cols), comments="")
    return path


def test_ball_robot_ghost_follows_mujoco(mujoco_log):
    robot = RobotModel.from_file(BALL_CHAIN)
    table = read_log(mujoco_log)
    rmap = ReplayMapping.auto(table, robot)
    assert set(rmap.balls) == {"shoulder", "wrist"} and rmap.joints == ["elbow", "thumb"]
    replay = make_replay(table, rmap, robot)
    assert replay.tau is not None
    ghost = rollout_ghost(robot, replay, t0=0.2, horizon=0.3)
    assert ghost.t.shape == (61,) and ghost.t[0] == pytest.approx(0.2)
    assert ghost.q.shape == (61, robot.dof) == ghost.error.shape
    # on the manifold (the quaternions stay unit) the rotation vectors follow MuJoCo's to 5e-4 rad over
    # 0.3 s, 1e-4 over the first 50 ms: what is left is the log's (200 Hz samples, the starting
    # velocity by central differences, the torques interpolated between samples)
    assert np.abs(ghost.error).max() < 5e-4
    assert np.abs(ghost.error[:10]).max() < 1e-4
    # a heavier forearm under the same torques drifts away from the log
    heavy = robot.with_link_params(mass={"fore": 2.1})
    drift = rollout_ghost(heavy, replay, t0=0.2, horizon=0.3)
    assert drift.rms.max() > 100 * ghost.rms.max()
