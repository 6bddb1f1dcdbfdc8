"""The Robot workspace's jobs: plain functions of their inputs, no Qt (they run in workers).

- :func:`load_robot_job`: URDF -> engine RobotModel (validated) + the view's geometry.
- :func:`ik_job`: one IK solve with the engine's :func:`~engine.robots.ik.solve_ik`.
- :func:`dynamics_readouts`: end-effector pose, gravity torques, mass matrix, manipulability.
- :func:`simulate_job`: forward dynamics from a state (free fall, gravity compensation, PD
  to keyframes), RK4 at a fixed step, with the URDF's joint damping.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from app.viewer.geometry import GeometryOptions, RobotGeometry, load_robot_geometry

__all__ = [
    "IKOutcome",
    "IKRequest",
    "LoadedRobot",
    "Readouts",
    "SimulationOptions",
    "SimulationResult",
    "dynamics_readouts",
    "ik_job",
    "interpolate_keyframes",
    "load_robot_job",
    "manipulability",
    "simulate_job",
    "slider_limits",
]

log = logging.getLogger(__name__)

UNBOUNDED_RANGE = np.pi   # a continuous joint's slider spans [-pi, pi]


@dataclass
class LoadedRobot:
    """A robot ready to show: the engine model, its geometry and where it came from."""

    source: str                  # what the user asked for (library name or path)
    path: str                    # the URDF file
    model: object                # engine.robots.RobotModel
    geometry: RobotGeometry
    joint_axes: dict             # child link -> (3,) axis in the child frame
    coms: dict                   # link -> (3,) centre of mass in the link frame (m)
    damping: np.ndarray          # (dof,) URDF joint damping (N m s/rad or N s/m)
    notes: list = field(default_factory=list)   # what the viewer accepted leniently, for the user

    @property
    def name(self) -> str:
        return self.model.name


def slider_limits(model) -> tuple[np.ndarray, np.ndarray]:
    """(dof,) lower and upper bounds for joint controls: the URDF limits, +-pi when unbounded."""
    lo = model.joint_limits.lower.detach().cpu().numpy().astype(float).copy()
    hi = model.joint_limits.upper.detach().cpu().numpy().astype(float).copy()
    lo[~np.isfinite(lo)] = -UNBOUNDED_RANGE
    hi[~np.isfinite(hi)] = UNBOUNDED_RANGE
    return lo, hi


def _physically_impossible(reason: str) -> bool:
    """A negative mass, a non-finite or not positive-definite inertia: never accepted leniently
    (a zero mass with an inertia, or a triangle inequality off by rounding, are)."""
    import re

    return bool(re.search(r"mass must be positive, got -", reason)) or "must be finite" in reason \
        or "not positive definite" in reason


def _load_model(RobotModel, path: Path):
    """The engine model of a URDF, strictly validated; a viewer is lenient in two ways the
    engine offers: physically inconsistent inertials (strict=False) and mimic joints
    (mimic='independent') are accepted with a note. Every other URDFError propagates."""
    from engine.robots.urdf import URDFError

    kwargs = {"strict": True, "mimic": "error"}
    notes: list[str] = []
    for _ in range(3):
        try:
            return RobotModel.from_urdf(str(path), dtype=torch.float64, **kwargs), notes
        except URDFError as exc:
            text = str(exc)
            if "strict=False" in text and kwargs["strict"]:
                reason = str(getattr(exc, "reason", text)).split("; load with strict=False")[0]
                if _physically_impossible(reason):  # the same rule as the API: no silent leniency
                    raise URDFError(f"{reason}: physically impossible; fix the URDF", exc.file, exc.element,
                                    exc.line) from None
                kwargs["strict"] = False
                notes.append(f"accepted although physically inconsistent: {exc.element or 'inertial'}: {reason} "
                             "(any others are in the log)")
            elif "mimic='independent'" in text and kwargs["mimic"] == "error":
                kwargs["mimic"] = "independent"
                notes.append("mimic joints are shown as independent joints")
            else:
                raise
    return RobotModel.from_urdf(str(path), dtype=torch.float64, **kwargs), notes


def _warm_up_ik(model) -> None:
    """One tiny solve, so that the solver's first-call set-up is paid while loading and not
    by the first drag of a target."""
    from engine.robots.ik import neutral_configuration, solve_ik

    try:
        q = neutral_configuration(model)
        link = model.link_names[-1]
        goal = model.link_pose(q, link).detach().clone()
        goal[:3, 3] += 1e-2
        solve_ik(model, {link: goal[:3, 3]}, q0=q.clone(), n_starts=1, max_iters=2)
    except Exception as exc:  # noqa: BLE001 - only an optimisation; a real solve reports errors
        log.debug("IK warm-up skipped: %s", exc)


def load_robot_job(source: str, geometry_options: GeometryOptions | None = None):
    """A job (``job(ctx) -> LoadedRobot``) that resolves, validates and loads a robot.

    The engine parses and validates the URDF first, so a bad file fails with the engine's
    URDFError (which names the file, the element and the line) before any mesh is read.
    """

    def job(ctx) -> LoadedRobot:
        from engine.robots import RobotModel
        from engine.robots.library import resolve_robot

        ctx.progress(0.0, f"resolving {source}")
        path = Path(resolve_robot(source))
        ctx.check_cancelled()
        ctx.progress(0.05, f"parsing {path.name}")
        model, notes = _load_model(RobotModel, path)
        ctx.check_cancelled()

        def progress(fraction, message):
            ctx.progress(0.1 + 0.85 * fraction, message)

        geometry = load_robot_geometry(path, geometry_options, progress=progress,
                                       check_cancelled=ctx.check_cancelled)
        desc = model.description
        axes = {j.child: np.asarray(j.axis, dtype=float) for j in desc.joints
                if j.type in ("revolute", "continuous", "prismatic")}
        coms = {l.name: np.asarray(l.inertial.origin.xyz, dtype=float) for l in desc.links
                if l.inertial is not None and l.inertial.mass > 0}
        by_name = {j.name: j for j in desc.joints}
        damping = np.array([float(getattr(by_name.get(n), "damping", 0.0) or 0.0) for n in model.joint_names])
        _warm_up_ik(model)
        ctx.progress(1.0, f"loaded {model.name}: {model.dof} joints, {geometry.triangles} triangles")
        return LoadedRobot(source, str(path), model, geometry, axes, coms, damping, notes)

    return job


# --------------------------------------------------------------------------- IK
@dataclass
class IKRequest:
    """Targets {link: (4, 4) world pose (m)}; ``position_only`` links ignore orientation.

    ``options``: an engine IKOptions (None: its defaults); ``overrides``: fields replaced
    on top of it (follow mode's short solves)."""

    targets: dict
    q0: np.ndarray
    position_only: frozenset = frozenset()
    options: object = None
    overrides: Mapping = field(default_factory=dict)
    serial: int = 0


@dataclass
class IKOutcome:
    """A solve's result: q (dof,) within the limits, errors per target and overall."""

    q: np.ndarray
    converged: bool
    position_error: float       # m, the largest over the targets
    rotation_error: float       # rad, the largest over the pose targets
    residual: float             # sqrt(sum over targets of e_pos^2 + (w_rot e_rot)^2), m
    per_target: dict            # link -> (position error m, rotation error rad or None)
    serial: int = 0


def _rotation_angle(R: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(R) - 1) / 2, -1.0, 1.0)))


def ik_job(model, request: IKRequest):
    """A job that solves IK for all targets at once and measures each target's error."""

    def job(ctx) -> IKOutcome:
        from dataclasses import replace

        from engine.robots.ik import IKOptions, solve_ik

        opts = replace(request.options or IKOptions(), **dict(request.overrides))
        q0 = np.asarray(request.q0, dtype=float)
        before = _target_errors(model, q0, request)
        if _within(before, opts):
            # already there: nothing to solve (and no start to waste)
            return _outcome(q0, True, before, opts, request.serial)
        targets = {}
        for link, T in request.targets.items():
            T = torch.as_tensor(np.asarray(T, dtype=float))
            targets[link] = T[:3, 3] if link in request.position_only else T
        result = solve_ik(model, targets, q0=torch.tensor(q0), ctx=ctx, options=opts)
        q = result.q.detach().cpu().numpy().reshape(-1).astype(float)
        after = _target_errors(model, q, request)
        return _outcome(q, bool(result.converged.reshape(-1)[0]), after, opts, request.serial)

    return job


def _target_errors(model, q: np.ndarray, request: IKRequest) -> dict:
    """{link: (position error m, rotation error rad or None)} of the targets at q."""
    with torch.no_grad():
        poses = model.forward_kinematics(torch.as_tensor(q)).cpu().numpy()
    names = list(model.link_names)
    errors = {}
    for link, T in request.targets.items():
        T = np.asarray(T, dtype=float)
        P = poses[names.index(link)]
        perr = float(np.linalg.norm(P[:3, 3] - T[:3, 3]))
        rerr = None if link in request.position_only else _rotation_angle(P[:3, :3].T @ T[:3, :3])
        errors[link] = (perr, rerr)
    return errors


def _within(errors: dict, opts) -> bool:
    return all(p <= opts.tol_pos and (r is None or opts.position_only or r <= opts.tol_rot)
               for p, r in errors.values())


def _outcome(q, converged: bool, errors: dict, opts, serial: int) -> IKOutcome:
    perr = max(p for p, _ in errors.values())
    rots = [r for _, r in errors.values() if r is not None]
    rerr = max(rots) if rots else 0.0
    residual = float(np.sqrt(sum(p * p + (opts.rotation_weight * (r or 0.0)) ** 2 for p, r in errors.values())))
    return IKOutcome(q=np.asarray(q, float), converged=converged, position_error=perr, rotation_error=rerr,
                     residual=residual, per_target=errors, serial=serial)


# --------------------------------------------------------------------------- dynamics
@dataclass
class Readouts:
    """Dynamics of one state. pose: (4, 4) of ``link``; gravity: (dof,) N m (or N);
    mass_matrix: (dof, dof); manipulability: sqrt(det(J J^T)) of the link's Jacobian
    (translational rows when ``position_only``)."""

    link: str
    q: np.ndarray
    pose: np.ndarray
    gravity: np.ndarray
    mass_matrix: np.ndarray
    manipulability: float
    serial: int = 0


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


def dynamics_readouts(model, q: np.ndarray, link: str, serial: int = 0):
    """A job computing :class:`Readouts` for joint positions ``q`` (dof,)."""

    def job(ctx) -> Readouts:
        qt = torch.as_tensor(np.asarray(q, dtype=float))
        with torch.no_grad():
            pose = model.link_pose(qt, link).cpu().numpy()
            ctx.check_cancelled()
            gravity = model.gravity_torques(qt).cpu().numpy()
            ctx.check_cancelled()
            M = model.mass_matrix(qt).cpu().numpy()
            J = model.jacobian(qt, link).cpu().numpy()
        manip = manipulability(J)
        return Readouts(link, np.asarray(q, float), pose, gravity, M, manip, serial)

    return job


# --------------------------------------------------------------------------- motion
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
    """A simulation from the current state.

    mode: "free_fall" (tau = 0), "gravity_compensation" (tau = g(q)) or "pd_keyframes"
    (tau = g(q) + M(q) (kp (q_ref(t) - q) - kd qd), q_ref interpolated from the keyframes:
    a PD on accelerations, so kp (1/s^2) and kd (1/s) mean the same on every joint of every
    robot and a light wrist is not made stiff, which keeps the explicit integration stable).
    duration and dt in s; RK4 steps; ``damping``: apply the URDF joint damping (tau -= d qd).
    """

    mode: str = "free_fall"
    duration: float = 2.0
    dt: float = 0.002
    kp: float = 100.0
    kd: float = 20.0
    damping: bool = True
    frame_rate: float = 60.0      # samples kept per second for playback

    MODES = ("free_fall", "gravity_compensation", "pd_keyframes")


@dataclass
class SimulationResult:
    """t: (T,) s; q, qd: (T, dof) sampled at ``frame_rate``."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    mode: str


def simulate_job(model, q0: np.ndarray, qd0: np.ndarray, options: SimulationOptions,
                 keyframe_times: Sequence[float] = (), keyframe_poses: Sequence[np.ndarray] = ()):
    """A job integrating forward dynamics (the engine's ABA) with RK4; joints are clamped
    to their limits (velocity zeroed there) after every step."""
    if options.mode not in SimulationOptions.MODES:
        raise ValueError(f"simulation mode {options.mode!r}: expected one of {SimulationOptions.MODES}")
    if options.mode == "pd_keyframes" and len(keyframe_times) == 0:
        raise ValueError("PD to keyframes needs at least one keyframe")

    def job(ctx) -> SimulationResult:
        lo, hi = (model.joint_limits.lower.detach().numpy(), model.joint_limits.upper.detach().numpy())
        damping_vec = torch.as_tensor(np.zeros(model.dof))
        if options.damping:
            damping_vec = model.joint_damping().detach().to(torch.float64).reshape(-1)

        def accel(t, q, qd):
            with torch.no_grad():
                if options.mode == "free_fall":
                    tau = torch.zeros_like(q)
                else:
                    tau = model.gravity_torques(q)
                    if options.mode == "pd_keyframes":
                        ref = torch.as_tensor(interpolate_keyframes(keyframe_times, keyframe_poses, t))
                        a = options.kp * (ref - q) - options.kd * qd
                        tau = tau + model.mass_matrix(q) @ a
                tau = tau - damping_vec * qd
                return model.forward_dynamics(q, qd, tau)

        q = torch.as_tensor(np.asarray(q0, dtype=float))
        qd = torch.as_tensor(np.asarray(qd0, dtype=float))
        steps = int(np.rint(options.duration / options.dt))
        every = max(1, int(np.rint(1.0 / (options.frame_rate * options.dt))))
        ts, qs, qds = [0.0], [q.numpy().copy()], [qd.numpy().copy()]
        h = options.dt
        for k in range(steps):
            t = k * h
            k1q, k1v = qd, accel(t, q, qd)
            k2q, k2v = qd + 0.5 * h * k1v, accel(t + h / 2, q + 0.5 * h * k1q, qd + 0.5 * h * k1v)
            k3q, k3v = qd + 0.5 * h * k2v, accel(t + h / 2, q + 0.5 * h * k2q, qd + 0.5 * h * k2v)
            k4q, k4v = qd + h * k3v, accel(t + h, q + h * k3q, qd + h * k3v)
            q = q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
            qd = qd + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
            qn = q.numpy()
            at_limit = (qn <= lo) | (qn >= hi)
            if at_limit.any():
                q = torch.as_tensor(np.clip(qn, lo, hi))
                qd = torch.where(torch.as_tensor(at_limit), torch.zeros_like(qd), qd)
            if not torch.isfinite(q).all():
                raise FloatingPointError(f"simulation diverged at t = {t + h:.3f} s (NaN state); "
                                         f"try a smaller time step")
            if (k + 1) % every == 0:
                ts.append((k + 1) * h)
                qs.append(q.numpy().copy())
                qds.append(qd.numpy().copy())
            if k % 20 == 0:
                ctx.check_cancelled()
                ctx.progress((k + 1) / steps, f"simulating t = {(k + 1) * h:.2f} s")
        ctx.progress(1.0, "simulation done")
        return SimulationResult(np.array(ts), np.array(qs), np.array(qds), options.mode)

    return job
