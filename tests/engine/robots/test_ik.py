"""Inverse kinematics, checked with Pinocchio's forward kinematics (an independent reference)."""

from __future__ import annotations

import math
import threading

import numpy as np
import pinocchio as pin
import pytest
import torch
from scipy.spatial.transform import Rotation

from engine.jobs import JobCancelled, ThreadJobContext
from engine.robots.ik import IKOptions, neutral_configuration, rotation_error_vector, solve_ik
from engine.robots.library import load_robot, resolve_robot

FINGERTIPS = ["link_3.0_tip", "link_7.0_tip", "link_11.0_tip", "link_15.0_tip"]


@pytest.fixture(scope="module")
def panda():
    model = load_robot("panda")
    return model, pin.buildModelFromUrdf(str(resolve_robot("panda")))


@pytest.fixture(scope="module")
def allegro():
    return load_robot("allegro-right"), pin.buildModelFromUrdf(str(resolve_robot("allegro-right")))


def _pin_fk(pm, model, q, frames):
    """World poses (T, 4, 4) of frames by Pinocchio; q in the engine's joint order."""
    names = list(pm.names[1:])
    qp = np.array([float(q[model.joint_names.index(n)]) for n in names])
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, qp)
    return np.stack([data.oMf[pm.getFrameId(f)].homogeneous for f in frames])


def _pin_jacobian(pm, model, q, frame):
    names = list(pm.names[1:])
    qp = np.array([float(q[model.joint_names.index(n)]) for n in names])
    data = pm.createData()
    pin.computeJointJacobians(pm, data, qp)
    pin.updateFramePlacements(pm, data)
    J = pin.getFrameJacobian(pm, data, pm.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
    out = np.zeros((6, model.dof))
    for k, n in enumerate(names):
        out[:, model.joint_names.index(n)] = J[:, k]
    return out


def _random_q(model, n, seed):
    g = torch.Generator().manual_seed(seed)
    lim = model.joint_limits
    lo, hi = lim.lower.clamp(-math.pi, math.pi), lim.upper.clamp(-math.pi, math.pi)
    return lo + torch.rand(n, model.dof, generator=g, dtype=torch.float64) * (hi - lo)


@pytest.mark.parametrize(
    "robot, links", [("panda", ["panda_hand_tcp", "panda_link4"]), ("allegro", FINGERTIPS)]
)
def test_the_kinematics_ik_uses_match_pinocchio(robot, links, panda, allegro):
    """IK's kinematics: the model's frame_jacobians (every backend), and the joints that move
    the targets (the other columns are zero in Pinocchio's Jacobian)."""
    model, pm = panda if robot == "panda" else allegro
    q = _random_q(model, 6, seed=3)
    active = model.joints_moving(links)
    for grad in (False, True):      # the compiled kernels, then the torch backend
        poses, J = model.frame_jacobians(q.clone().requires_grad_(grad), links)
        assert poses.shape == (6, len(links), 4, 4) and J.shape == (6, len(links), 6, model.dof)
        for b in range(6):
            np.testing.assert_allclose(poses[b].detach().numpy(), _pin_fk(pm, model, q[b], links), atol=1e-12)
            ref = np.stack([_pin_jacobian(pm, model, q[b], link) for link in links])
            np.testing.assert_allclose(J[b].detach().numpy(), ref, atol=1e-12)
            idle = [k for k in range(model.dof) if k not in active]
            assert np.all(ref[:, :, idle] == 0) and np.all(np.abs(ref[:, :, active]).sum((0, 1)) > 0)


def test_rotation_error_vector_matches_scipy():
    rng = np.random.default_rng(0)
    rotvecs = [rng.normal(size=3) for _ in range(20)]
    rotvecs += [np.array([math.pi, 0, 0]), np.array([0, -math.pi + 1e-9, 0]),
                np.array([1, 1, 1]) / math.sqrt(3) * (math.pi - 1e-10), np.zeros(3), np.array([1e-9, 0, 0])]
    rotvecs = [
        r if np.linalg.norm(r) <= math.pi else r / np.linalg.norm(r) * (2 * math.pi - np.linalg.norm(r)) * -1
        for r in rotvecs
    ]
    R = torch.tensor(Rotation.from_rotvec(np.array(rotvecs)).as_matrix())
    vec, angle = rotation_error_vector(R)
    ref = Rotation.from_matrix(R.numpy()).as_rotvec()
    np.testing.assert_allclose(angle.numpy(), np.linalg.norm(ref, axis=-1), atol=1e-7)
    # at pi, +axis and -axis are the same rotation
    same = Rotation.from_rotvec(vec.numpy()).as_matrix()
    np.testing.assert_allclose(same, R.numpy(), atol=1e-6)


def test_panda_pose_targets_batch(panda):
    model, pm = panda
    q_true = _random_q(model, 24, seed=7)
    frames = ["panda_hand_tcp"]
    targets = torch.tensor(np.stack([_pin_fk(pm, model, q, frames)[0] for q in q_true]))
    res = solve_ik(model, {"panda_hand_tcp": targets}, seed=1)
    assert res.q.shape == (24, 7) and res.converged.shape == (24,)
    assert bool(res.converged.all())
    lim = model.joint_limits
    assert bool(((res.q >= lim.lower) & (res.q <= lim.upper)).all())
    for b in range(24):
        T = _pin_fk(pm, model, res.q[b], frames)[0]
        assert np.linalg.norm(T[:3, 3] - targets[b, :3, 3].numpy()) <= 1e-3
        R_err = targets[b, :3, :3].numpy() @ T[:3, :3].T
        assert np.linalg.norm(Rotation.from_matrix(R_err).as_rotvec()) <= 1e-2
    assert float(res.position_error.max()) <= 1e-3 and float(res.rotation_error.max()) <= 1e-2


def test_tighter_tolerances_and_position_only(panda):
    model, pm = panda
    q_true = _random_q(model, 8, seed=11)
    pos = torch.tensor(np.stack([_pin_fk(pm, model, q, ["panda_link7"])[0][:3, 3] for q in q_true]))
    res = solve_ik(model, {"panda_link7": pos}, tol_pos=1e-6)
    assert bool(res.converged.all())
    assert float(res.rotation_error.max()) == 0.0
    for b in range(8):
        np.testing.assert_allclose(
            _pin_fk(pm, model, res.q[b], ["panda_link7"])[0][:3, 3], pos[b].numpy(), atol=1e-6
        )
    # a pose target with position_only=True ignores the orientation
    pose = torch.eye(4, dtype=torch.float64).repeat(8, 1, 1)
    pose[:, :3, 3] = pos
    res2 = solve_ik(model, {"panda_link7": pose}, position_only=True)
    assert bool(res2.converged.all())


def test_allegro_four_fingertips_at_once(allegro):
    model, pm = allegro
    q_true = _random_q(model, 8, seed=5)
    tips = torch.tensor(np.stack([_pin_fk(pm, model, q, FINGERTIPS)[:, :3, 3] for q in q_true]))  # (8, 4, 3)
    res = solve_ik(model, {link: tips[:, t] for t, link in enumerate(FINGERTIPS)})
    assert bool(res.converged.all())
    for b in range(8):
        np.testing.assert_allclose(
            _pin_fk(pm, model, res.q[b], FINGERTIPS)[:, :3, 3], tips[b].numpy(), atol=1e-3
        )


def test_unreachable_target_reports_failure(panda):
    model, pm = panda
    far = torch.tensor([3.0, 0.0, 0.5], dtype=torch.float64)  # the Panda reaches ~0.85 m
    res = solve_ik(model, {"panda_hand_tcp": far}, n_starts=3)
    assert res.q.shape == (7,) and not bool(res.converged)
    assert float(res.position_error) > 1.5 and float(res.residual) > 1.5
    reached = _pin_fk(pm, model, res.q, ["panda_hand_tcp"])[0][:3, 3]
    np.testing.assert_allclose(np.linalg.norm(reached - far.numpy()), float(res.position_error), rtol=1e-9)


def test_joint_limits_are_respected():
    """The planar arm's elbow stops at +-150 deg: a point 0.1 m from the shoulder needs ~169 deg."""
    model = load_robot("planar_2link")
    target = torch.tensor([0.1, 0.0, 0.0], dtype=torch.float64)
    res = solve_ik(model, {"tool": target})
    assert not bool(res.converged)
    assert abs(float(res.q[1])) <= 2.6179938779914944 + 1e-12
    assert abs(float(res.q[1])) == pytest.approx(2.6179938779914944)  # it pushes against the stop
    # a reachable one converges, within the limits
    res = solve_ik(model, {"tool": torch.tensor([0.3, 0.0, 0.5], dtype=torch.float64)})
    assert bool(res.converged)


def test_batch_broadcasting_q0_and_neutral(panda):
    model, pm = panda
    q0 = neutral_configuration(model)
    assert float(q0[3]) == pytest.approx(0.5 * (-3.0718 - 0.0698))
    target = torch.tensor(_pin_fk(pm, model, q0 + 0.1, ["panda_hand_tcp"])[0]).expand(2, 3, 4, 4)
    res = solve_ik(model, {"panda_hand_tcp": target}, q0=q0)
    assert res.q.shape == (2, 3, 7) and res.converged.shape == (2, 3) and bool(res.converged.all())
    assert int(res.starts.max()) == 1  # a near target converges from the first start


def test_multi_start_rescues_hard_targets(panda):
    model, pm = panda
    q_true = _random_q(model, 48, seed=2)
    targets = torch.tensor(np.stack([_pin_fk(pm, model, q, ["panda_hand_tcp"])[0] for q in q_true]))
    one = solve_ik(model, {"panda_hand_tcp": targets}, n_starts=1)
    many = solve_ik(model, {"panda_hand_tcp": targets})
    assert int(one.converged.sum()) < 48          # some targets defeat a single start...
    assert bool(many.converged.all())              # ...and restarts solve them
    assert int(many.starts.max()) > 1


def test_cancellation_and_progress(panda):
    model, _ = panda
    updates = []
    cancel = threading.Event()
    ctx = ThreadJobContext(on_progress=updates.append, cancel_event=cancel, min_interval=0.0)
    target = torch.tensor([0.4, 0.2, 0.5], dtype=torch.float64)
    solve_ik(model, {"panda_hand_tcp": target}, ctx=ctx)
    assert updates and updates[-1].fraction == 1.0
    cancel.set()
    with pytest.raises(JobCancelled):
        solve_ik(model, {"panda_hand_tcp": torch.tensor([3.0, 0.0, 0.0], dtype=torch.float64)}, ctx=ctx)


def test_bad_input(panda):
    model, _ = panda
    with pytest.raises(ValueError, match="no link named 'nope'"):
        solve_ik(model, {"nope": torch.zeros(3)})
    with pytest.raises(ValueError, match=r"\(\.\.\., 4, 4\) or \(\.\.\., 3\)"):
        solve_ik(model, {"panda_hand_tcp": torch.zeros(2)})
    with pytest.raises(ValueError, match="NaN"):
        solve_ik(model, {"panda_hand_tcp": torch.tensor([float("nan"), 0.0, 0.0])})
    with pytest.raises(ValueError, match="no targets"):
        solve_ik(model, {})
    with pytest.raises(ValueError, match="q0 has 3"):
        solve_ik(model, {"panda_hand_tcp": torch.zeros(3)}, q0=torch.zeros(3))
    with pytest.raises(TypeError, match="unknown option"):
        solve_ik(model, {"panda_hand_tcp": torch.zeros(3)}, bogus=1)
    assert IKOptions().tol_pos == 1e-3 and IKOptions().tol_rot == 1e-2


def test_options_refuse_values_that_make_no_sense():
    """IKOptions checks every number when it is made (the CLI flags, the GUI and solve_ik share it)."""
    bad = {"max_iters": 0, "tol_pos": -1.0, "tol_rot": float("nan"), "damping": float("inf"), "mu_init": 1e30,
           "mu_down": 1.0, "mu_up": 0.5, "mu_min": 0.0, "mu_max": 1e-4, "rotation_weight": float("nan"),
           "max_step": 0.0, "n_starts": 0, "stall_window": -1}
    for name, value in bad.items():
        with pytest.raises(ValueError, match=f"{name} \\(--{name.replace('_', '-')}\\)"):
            IKOptions(**{name: value})
    IKOptions(max_iters=1, stall_window=0, damping=0.0)          # the edges that are meaningful pass
    model = load_robot("planar_2link")
    with pytest.raises(ValueError, match="max_iters"):
        solve_ik(model, {"tool": torch.tensor([0.5, 0.0, 0.5], dtype=torch.float64)}, max_iters=0)
