"""Simulation of a floating robot without contacts (engine.robots.simulate on the configuration
manifold) against Pinocchio's free-flyer ABA integrated by scipy's DOP853 on (position,
quaternion, joints, velocities), on an MJCF file with a free root joint and joint armature."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from engine.robots import RobotModel
from engine.robots.simulate import SimulationOptions, simulate

FLOATING = Path(__file__).parent / "mjcf" / "floating.xml"


def _reference(pm, q0, v0, t_eval):
    pd = pm.createData()
    nq = pm.nq

    def f(_t, x):
        q, v = x[:nq].copy(), x[nq:]
        q[3:7] /= np.linalg.norm(q[3:7])
        R = Rotation.from_quat(q[3:7]).as_matrix()
        w = v[3:6]
        qx, qy, qz, qw = q[3:7]
        # d/dt of (x, y, z, w) for q_dot = 1/2 q (x) (w, 0), body angular velocity
        dquat = 0.5 * np.array([qw * w[0] + qy * w[2] - qz * w[1],
                                qw * w[1] + qz * w[0] - qx * w[2],
                                qw * w[2] + qx * w[1] - qy * w[0],
                                -qx * w[0] - qy * w[1] - qz * w[2]])
        dq = np.concatenate([R @ v[:3], dquat, v[6:]])
        return np.concatenate([dq, pin.aba(pm, pd, q, v, np.zeros(pm.nv))])

    sol = solve_ivp(f, (0.0, t_eval[-1]), np.concatenate([q0, v0]), t_eval=t_eval, rtol=1e-12, atol=1e-12,
                    method="DOP853")
    return sol.y.T[:, :nq], sol.y.T[:, nq:]


def test_free_flight_matches_pinocchio_integrated_by_scipy():
    model = RobotModel.from_file(FLOATING)
    assert model.floating and model.nq == 9 and model.nv == 8
    pm = pin.buildModelFromMJCF(str(FLOATING))
    assert list(pm.names)[2:] == model.joint_names
    q0 = model.neutral().numpy().copy()
    q0[:3] = [0.1, -0.2, 1.5]
    q0[3:7] = Rotation.from_euler("xyz", [0.2, -0.1, 0.4]).as_quat()
    q0[7:] = [-0.4, -0.8]
    v0 = np.array([0.3, -0.2, 0.5, 1.5, -0.7, 2.0, 0.8, -0.6])
    res = simulate(model, q0, v0, SimulationOptions("free_fall", duration=0.4, dt=1e-3, damping=False,
                                                    frame_rate=50.0))
    q_ref, v_ref = _reference(pm, q0, v0, res.t)
    np.testing.assert_allclose(res.q[:, :3], q_ref[:, :3], atol=1e-8)
    for k in range(len(res.t)):
        R = Rotation.from_quat(res.q[k, 3:7]).as_matrix()
        R_ref = Rotation.from_quat(q_ref[k, 3:7] / np.linalg.norm(q_ref[k, 3:7])).as_matrix()
        np.testing.assert_allclose(R, R_ref, atol=1e-8)
    np.testing.assert_allclose(res.q[:, 7:], q_ref[:, 7:], atol=1e-8)
    np.testing.assert_allclose(res.qd, v_ref, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(res.q[:, 3:7], axis=1), 1.0, atol=1e-12)


def test_free_flight_converges_at_fourth_order():
    model = RobotModel.from_file(FLOATING)
    q0 = model.neutral().numpy().copy()
    q0[3:7] = Rotation.from_euler("xyz", [0.5, 0.3, -0.2]).as_quat()
    v0 = np.array([0.0, 0.0, 0.0, 4.0, -3.0, 5.0, 2.0, -1.0])          # a fast tumble
    opts = dict(mode="free_fall", duration=0.2, damping=False, frame_rate=5.0)
    ref = simulate(model, q0, v0, SimulationOptions(dt=1e-4, **opts))
    errs = []
    for dt in (0.004, 0.002):
        r = simulate(model, q0, v0, SimulationOptions(dt=dt, **opts))
        errs.append(np.abs(r.qd[-1] - ref.qd[-1]).max())
    assert errs[0] / errs[1] == pytest.approx(16, rel=0.35)


def test_base_held_moves_like_the_fixed_base_robot():
    """Holding the floating base equals the same robot with a fixed base at that pose."""
    from dataclasses import replace

    model = RobotModel.from_file(FLOATING)
    q0 = model.neutral().numpy().copy()
    q0[:3] = [0.0, 0.0, 1.0]
    q0[3:7] = Rotation.from_euler("xyz", [0.3, 0.0, 0.0]).as_quat()
    q0[7:] = [-0.2, -0.5]
    opts = SimulationOptions(
        "free_fall", duration=0.3, dt=1e-3, damping=False, hold_base=True, frame_rate=50.0
    )
    held = simulate(model, q0, None, opts)
    np.testing.assert_allclose(held.q[:, :7], np.tile(q0[:7], (len(held.t), 1)), atol=1e-15)
    # the fixed-base robot: the torso welded to the world at the same pose (gravity turned into the torso frame)
    desc = replace(model.description, floating_base=False)
    R = Rotation.from_quat(q0[3:7]).as_matrix()
    fixed = RobotModel.from_description(desc, gravity=tuple(R.T @ np.array([0.0, 0.0, -9.81])))
    ref = simulate(fixed, q0[7:], None, replace(opts, hold_base=False))
    np.testing.assert_allclose(held.q[:, 7:], ref.q, atol=1e-10)


def test_cli_free_fall_of_a_quadruped_drops_by_half_g_t_squared(capsys):
    """No contacts: the whole robot falls at g, its joints do not move relative to each other."""
    import json

    from engine.cli import main

    assert (
        main(["robot", "simulate", "solo12", "--duration", "0.2", "--dt", "0.002", "--no-damping", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    q, t = np.asarray(out["q"]), np.asarray(out["t"])
    assert q.shape[1] == 7 + 12 and len(out["joint_names"]) == 12
    np.testing.assert_allclose(q[:, 2] - q[0, 2], -0.5 * 9.81 * t**2, atol=1e-9)
    np.testing.assert_allclose(q[:, 7:], np.tile(q[0, 7:], (len(t), 1)), atol=1e-9)
    assert main(["robot", "simulate", "solo12", "--q0", "0", "0"]) == 2
    assert "--q0 needs 19 values (a floating base first" in capsys.readouterr().err
