"""Robot simulation and readouts: forward dynamics integrated in time, and the quantities a
viewer shows for one state (end-effector pose, gravity torques, mass matrix, manipulability).

- :func:`simulate`: free fall, gravity compensation or PD to keyframes from a state, with an
  optional constant joint torque and the URDF's joint damping; RK4 at a fixed step
  (:func:`engine.integrators.rk4_step_t`), joints held at their limits.
- :func:`readouts`: :class:`Readouts` of one state.

Both are plain functions (no Qt, no stored state); the CLI (``python -m engine robot
simulate``) and the app's Robot workspace call them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engine.integrators import rk4_step_t

__all__ = [
    "Readouts",
    "SimulationOptions",
    "SimulationResult",
    "interpolate_keyframes",
    "manipulability",
    "readouts",
    "simulate",
]


def interpolate_keyframes(times: Sequence[float], poses: Sequence[np.ndarray], t: float) -> np.ndarray:
    """Joint-space linear interpolation of keyframes (times ascending, s) at time t (s)."""
    times = np.asarray(times, dtype=float)
    Q = np.asarray(poses, dtype=float)
    if len(times) == 0:
        raise ValueError("no keyframes")
    if len(times) == 1 or t <= times[0]:
        return Q[0].copy()
    if t >= times[-1]:
        return Q[-1].copy()
    i = int(np.searchsorted(times, t, side="right")) - 1
    s = (t - times[i]) / max(times[i + 1] - times[i], 1e-12)
    return (1 - s) * Q[i] + s * Q[i + 1]


@dataclass(frozen=True)
class SimulationOptions:
    """A simulation from a state.

    mode: "free_fall" (tau = 0), "gravity_compensation" (tau = g(q)) or "pd_keyframes"
    (tau = g(q) + M(q) (kp (q_ref(t) - q) - kd qd), q_ref interpolated from the keyframes:
    a PD on accelerations, so kp (1/s^2) and kd (1/s) mean the same on every joint of every
    robot and a light wrist is not made stiff, which keeps the explicit integration stable).
    duration and dt in s; RK4 steps; ``damping``: apply the URDF joint damping (tau -= d qd);
    ``tau``: a constant joint torque (N m or N, one per joint) added in every mode (empty: none).
    """

    mode: str = "free_fall"
    duration: float = 2.0
    dt: float = 0.002
    kp: float = 100.0
    kd: float = 20.0
    damping: bool = True
    frame_rate: float = 60.0      # samples kept per second for playback
    tau: tuple = ()

    MODES = ("free_fall", "gravity_compensation", "pd_keyframes")

    def validate(self) -> None:
        """Raise ValueError naming the field when a value cannot be simulated."""
        if self.mode not in self.MODES:
            raise ValueError(f"simulation mode {self.mode!r}: expected one of {', '.join(self.MODES)}")
        for name in ("duration", "dt", "frame_rate"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"simulation {name} must be a positive finite number, got {v!r}")
        for name in ("kp", "kd"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"simulation {name} must be a finite number >= 0, got {v!r}")
        if self.dt > self.duration:
            raise ValueError(f"simulation time step dt = {self.dt} s is longer than the duration {self.duration} s")
        if not all(math.isfinite(float(v)) for v in self.tau):
            raise ValueError("simulation tau: every joint torque must be a finite number")


@dataclass
class SimulationResult:
    """t: (T,) s; q, qd: (T, dof) sampled at ``frame_rate``; the final state is always kept."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    mode: str

    def to_dict(self) -> dict:
        return {"mode": self.mode, "t": self.t.tolist(), "q": self.q.tolist(), "qd": self.qd.tolist()}


def _vector(value, n: int, what: str) -> torch.Tensor:
    v = torch.as_tensor(np.asarray(value, dtype=float).reshape(-1))
    if v.numel() != n:
        raise ValueError(f"{what} needs {n} values (one per joint), got {v.numel()}")
    if not torch.isfinite(v).all():
        raise ValueError(f"{what} holds a value that is not a finite number")
    return v


def simulate(model, q0, qd0=None, options: SimulationOptions = SimulationOptions(),
             keyframe_times: Sequence[float] = (), keyframe_poses: Sequence[np.ndarray] = (),
             progress: Callable[[float, str], None] | None = None,
             check_cancelled: Callable[[], None] | None = None) -> SimulationResult:
    """Integrate the robot's forward dynamics (the engine's ABA) from ``q0`` (dof,), ``qd0``
    (dof,; default zero) with RK4; joints are clamped to their limits (velocity zeroed there)
    after every step. Raises FloatingPointError when the state stops being finite."""
    options.validate()
    if options.mode == "pd_keyframes" and len(keyframe_times) == 0:
        raise ValueError("PD to keyframes needs at least one keyframe")
    n = model.dof
    q = _vector(q0, n, "initial joint positions q0")
    qd = torch.zeros(n, dtype=torch.float64) if qd0 is None else _vector(qd0, n, "initial joint velocities")
    tau_const = torch.zeros(n, dtype=torch.float64) if len(options.tau) == 0 else _vector(options.tau, n, "tau")
    lo = model.joint_limits.lower.detach().to(torch.float64).cpu()
    hi = model.joint_limits.upper.detach().to(torch.float64).cpu()
    damping = torch.zeros(n, dtype=torch.float64)
    if options.damping:
        damping = model.joint_damping().detach().to(torch.float64).reshape(-1)

    def field(t, x):
        q_, qd_ = x[:n], x[n:]
        tau = tau_const
        if options.mode != "free_fall":
            tau = tau + model.gravity_torques(q_)
            if options.mode == "pd_keyframes":
                ref = torch.as_tensor(interpolate_keyframes(keyframe_times, keyframe_poses, t))
                a = options.kp * (ref - q_) - options.kd * qd_
                tau = tau + model.mass_matrix(q_) @ a
        tau = tau - damping * qd_
        return torch.cat([qd_, model.forward_dynamics(q_, qd_, tau)])

    h = float(options.dt)
    steps = max(1, int(np.rint(options.duration / h)))
    every = max(1, int(np.rint(1.0 / (options.frame_rate * h))))
    x = torch.cat([q, qd])
    ts, qs, qds = [0.0], [q.numpy().copy()], [qd.numpy().copy()]
    with torch.no_grad():
        for k in range(steps):
            x = rk4_step_t(field, k * h, x, h)
            q, qd = x[:n], x[n:]
            at_limit = (q <= lo) | (q >= hi)
            if at_limit.any():
                q = torch.clamp(q, lo, hi)
                qd = torch.where(at_limit, torch.zeros_like(qd), qd)
                x = torch.cat([q, qd])
            if not torch.isfinite(x).all():
                raise FloatingPointError(f"simulation diverged at t = {(k + 1) * h:.3f} s (NaN state); "
                                         f"try a smaller time step")
            if (k + 1) % every == 0 or k + 1 == steps:
                ts.append((k + 1) * h)
                qs.append(q.numpy().copy())
                qds.append(qd.numpy().copy())
            if k % 20 == 0:
                if check_cancelled is not None:
                    check_cancelled()
                if progress is not None:
                    progress((k + 1) / steps, f"simulating t = {(k + 1) * h:.2f} s")
    if progress is not None:
        progress(1.0, "simulation done")
    return SimulationResult(np.array(ts), np.array(qs), np.array(qds), options.mode)


# --------------------------------------------------------------------------- readouts
@dataclass
class Readouts:
    """Dynamics of one state. pose: (4, 4) of ``link``; gravity: (dof,) N m (or N);
    mass_matrix: (dof, dof); manipulability: sqrt(det(J J^T)) of the link's Jacobian
    (translational rows when fewer than six joints move it)."""

    link: str
    q: np.ndarray
    pose: np.ndarray
    gravity: np.ndarray
    mass_matrix: np.ndarray
    manipulability: float
    serial: int = 0

    def to_dict(self) -> dict:
        return {"link": self.link, "q": self.q.tolist(), "pose": self.pose.tolist(),
                "gravity": self.gravity.tolist(), "mass_matrix": self.mass_matrix.tolist(),
                "manipulability": self.manipulability}


def manipulability(J: np.ndarray) -> float:
    """Yoshikawa's measure sqrt(det(J J^T)) over the joints that move the link; with fewer
    than 6 of them (a finger of a hand), over the translational rows only."""
    J = np.asarray(J, float)
    moving = np.linalg.norm(J, axis=0) > 1e-12
    Jm = J[:, moving]
    if Jm.shape[1] < 6:
        Jm = Jm[:3]
    if Jm.shape[1] < Jm.shape[0]:
        return 0.0
    return float(np.sqrt(max(np.linalg.det(Jm @ Jm.T), 0.0)))


def readouts(model, q, link: str, serial: int = 0,
             check_cancelled: Callable[[], None] | None = None) -> Readouts:
    """:class:`Readouts` of joint positions ``q`` (dof,) for ``link``."""
    if link not in model.link_names:
        raise ValueError(f"robot {model.name!r} has no link {link!r}")
    qt = torch.as_tensor(np.asarray(q, dtype=float))
    with torch.no_grad():
        pose = model.link_pose(qt, link).cpu().numpy()
        if check_cancelled is not None:
            check_cancelled()
        gravity = model.gravity_torques(qt).cpu().numpy()
        if check_cancelled is not None:
            check_cancelled()
        M = model.mass_matrix(qt).cpu().numpy()
        J = model.jacobian(qt, link).cpu().numpy()
    return Readouts(link, np.asarray(q, float), pose, gravity, M, manipulability(J), serial)
