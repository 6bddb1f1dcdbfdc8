"""Robot simulation in the engine (engine.robots.simulate) and `python -m engine robot simulate`,
against Pinocchio's ABA integrated by scipy's adaptive Runge-Kutta (an independent integrator)."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
import torch
from scipy.integrate import solve_ivp

from engine.cli import main
from engine.paths import urdf_dir
from engine.robots import RobotModel
from engine.robots.simulate import SimulationOptions, manipulability, readouts, simulate

PANDA = str(urdf_dir() / "panda.urdf")


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf(PANDA)


def _pinocchio_trajectory(q0, qd0, tau, t_eval):
    pm = pin.buildModelFromUrdf(PANDA)
    pd = pm.createData()
    n = pm.nv

    def f(_t, x):
        g = pin.computeGeneralizedGravity(pm, pd, x[:n])
        return np.concatenate([x[n:], pin.aba(pm, pd, x[:n], x[n:], g + tau)])

    sol = solve_ivp(f, (0.0, t_eval[-1]), np.concatenate([q0, qd0]), t_eval=t_eval, rtol=1e-11, atol=1e-12,
                    method="DOP853")
    return sol.y.T[:, :n], sol.y.T[:, n:]


def test_gravity_compensated_motion_with_constant_torque_matches_pinocchio_and_scipy(panda):
    q0 = np.array([0.1, -0.4, 0.2, -1.8, 0.3, 1.6, 0.4])
    qd0 = np.array([0.2, -0.1, 0.3, 0.1, -0.2, 0.1, 0.3])
    tau = np.array([1.0, 3.0, -2.0, 1.0, 0.5, 0.3, 0.2])
    opts = SimulationOptions(
        "gravity_compensation", duration=0.3, dt=1e-3, damping=False, frame_rate=100.0, tau=tuple(tau)
    )
    res = simulate(panda, q0, qd0, opts)
    assert res.t[0] == 0.0 and res.t[-1] == pytest.approx(0.3)
    q_ref, qd_ref = _pinocchio_trajectory(q0, qd0, tau, res.t)
    lo, hi = panda.joint_limits.lower.numpy(), panda.joint_limits.upper.numpy()
    assert ((q_ref > lo) & (q_ref < hi)).all()          # the limits never act: pure dynamics
    np.testing.assert_allclose(res.q, q_ref, atol=1e-8)
    np.testing.assert_allclose(res.qd, qd_ref, atol=1e-7)


def test_gravity_compensation_holds_and_joint_limits_stop_the_fall(panda):
    q0 = np.array([0.0, 0.6, 0.0, -1.5, 0.0, 1.8, 0.7])
    hold = simulate(panda, q0, None, SimulationOptions("gravity_compensation", duration=0.2))
    np.testing.assert_allclose(hold.q[-1], q0, atol=1e-9)
    fall = simulate(panda, q0, None, SimulationOptions("free_fall", duration=1.5, damping=False))
    lo, hi = panda.joint_limits.lower.numpy(), panda.joint_limits.upper.numpy()
    assert (fall.q >= lo - 1e-12).all() and (fall.q <= hi + 1e-12).all()
    stuck = np.isclose(fall.q[-1], lo) | np.isclose(fall.q[-1], hi)
    assert stuck.any() and (fall.qd[-1][stuck] == 0).all()


def test_pd_keyframes_settle_on_the_target(panda):
    q0 = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.8, 0.7])
    goal = q0 + 0.2
    res = simulate(panda, q0, None, SimulationOptions("pd_keyframes", duration=0.8, dt=0.004), [0.0], [goal])
    assert np.abs(res.q[-1] - goal).max() < 0.02


def test_bad_options_are_refused_with_the_field_named(panda):
    q0 = np.zeros(7)
    for opts, words in (
        (SimulationOptions(dt=0.0), "dt"),
        (SimulationOptions(duration=float("nan")), "duration"),
        (SimulationOptions(mode="fly"), "mode"),
        (SimulationOptions(tau=(1.0,)), "tau"),
    ):
        with pytest.raises(ValueError, match=words):
            simulate(panda, q0, None, opts)
    with pytest.raises(ValueError, match="q0"):
        simulate(panda, np.zeros(3), None, SimulationOptions())
    with pytest.raises(ValueError, match="keyframe"):
        simulate(panda, q0, None, SimulationOptions("pd_keyframes"))


def test_readouts_match_pinocchio(panda):
    q = np.array([0.1, -0.4, 0.2, -1.8, 0.3, 1.6, 0.4])
    r = readouts(panda, q, "panda_hand_tcp")
    pm = pin.buildModelFromUrdf(PANDA)
    pd = pm.createData()
    np.testing.assert_allclose(r.gravity, pin.computeGeneralizedGravity(pm, pd, q), atol=1e-9)
    np.testing.assert_allclose(r.mass_matrix, pin.crba(pm, pd, q), atol=1e-9)
    pin.framesForwardKinematics(pm, pd, q)
    fid = pm.getFrameId("panda_hand_tcp")
    np.testing.assert_allclose(r.pose, pd.oMf[fid].homogeneous, atol=1e-9)
    J = pin.computeFrameJacobian(pm, pd, q, fid, pin.LOCAL_WORLD_ALIGNED)
    assert r.manipulability == pytest.approx(np.sqrt(np.linalg.det(J @ J.T)), rel=1e-8)
    assert manipulability(J[:, :2]) == 0.0


def test_cli_simulate_json_and_validation(capsys):
    code = main(["robot", "simulate", "pendulum", "--q0", "0.5", "--duration", "0.5", "--dt", "0.001",
                 "--no-damping", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["joint_names"] == ["theta"] and out["mode"] == "free_fall"
    # the same pendulum by Pinocchio's ABA and scipy
    pm = pin.buildModelFromUrdf(str(urdf_dir() / "pendulum.urdf"))
    pd = pm.createData()
    assert pm.nq == 2           # a continuous joint: Pinocchio's q is (cos, sin)
    sol = solve_ivp(lambda _t, x: [x[1], pin.aba(pm, pd, np.array([np.cos(x[0]), np.sin(x[0])]), x[1:],
                                                 np.zeros(1))[0]], (0, 0.5), [0.5, 0.0],
                    t_eval=out["t"], rtol=1e-11, atol=1e-12, method="DOP853")
    np.testing.assert_allclose(np.asarray(out["q"])[:, 0], sol.y[0], atol=1e-8)
    assert main(["robot", "simulate", "pendulum", "--q0", "1", "2"]) == 2
    assert "--q0 needs 1 values" in capsys.readouterr().err
    assert main(["robot", "simulate", "pendulum", "--dt", "-1"]) == 2
    assert "greater than 0" in capsys.readouterr().err
    assert main(["robot", "simulate", "pendulum", "--duration", "inf"]) == 2
    assert "not a finite number" in capsys.readouterr().err


def test_torch_state_is_not_required(panda):
    """q0 may be a list, an array or a tensor."""
    q = torch.zeros(7, dtype=torch.float64)
    r1 = simulate(panda, q, None, SimulationOptions(duration=0.01, dt=0.005))
    r2 = simulate(panda, [0.0] * 7, None, SimulationOptions(duration=0.01, dt=0.005))
    np.testing.assert_array_equal(r1.q, r2.q)
