"""Robot simulation and readouts: forward dynamics integrated in time, and the quantities a
viewer shows for one state (end-effector pose, gravity torques, mass matrix, manipulability).

- :func:`simulate`: free fall, gravity compensation or PD to keyframes from a state, with an
  optional constant joint torque and the joints' friction and actuation (:class:`JointTerms`:
  the file's damping and Coulomb friction, or an identified robot's actuation file, in the
  model identification fits); RK4 at a fixed step
  (:func:`engine.integrators.rk4_step_t`), joints held at their limits. A floating-base robot
  (no contacts: it flies freely) is integrated on its configuration manifold: each step runs
  the RK4 in the tangent space at the step's start, ``q = integrate(q_k, delta)``, with
  ``d delta / dt = dexp^-1(v) = v + ad_delta v / 2 + ad_delta^2 v / 12`` on the base's twist
  (Munthe-Kaas' RK4; fourth order), then moves the base by ``exp`` of the step. Ball joints
  (quaternions, :mod:`engine.robots.ball`) are integrated the same way, with ``d delta / dt =
  w + delta x w / 2 + delta x (delta x w) / 12`` on their angular velocity; joint limits hold the
  scalar joints only (a ball's cone is not modelled).
- A robot whose description carries constraints (loop closures, welds, tendon equalities and
  limits: :mod:`engine.robots.constraints`) is integrated with the constrained dynamics (Baumgarte-
  stabilised KKT, :mod:`engine.robots.constrained_dynamics`) and projected back onto the
  constraints after every step, so the loop stays closed to rounding; its joint limits are
  one-sided rows beside the loops (clamping a joint would open them).
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
from engine.robots.constrained_dynamics import (
    check_constraints_hold,
    constrained_forward_dynamics,
    project_state,
)
from engine.robots.constraints import joint_limit_constraints
from engine.robots.gravcomp import gravity_compensation, has_gravity_compensation
from engine.robots.model_build import check_forward_dynamics
from engine.robots.model_coords import limited_coordinates

__all__ = [
    "COULOMB_VELOCITY_SCALE",
    "JointTerms",
    "Readouts",
    "SimulationOptions",
    "SimulationResult",
    "interpolate_keyframes",
    "manipulability",
    "readouts",
    "simulate",
]


def interpolate_keyframes(times: Sequence[float] | np.ndarray, poses: Sequence[np.ndarray], t: float) -> np.ndarray:
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


# v_s of the smooth Coulomb sign tanh(qd / v_s), rad/s (m/s): the identification's default
# (engine.models.joint_friction.COULOMB_VELOCITY_SCALE, a package above this one; a test keeps them equal)
COULOMB_VELOCITY_SCALE = 0.05


@dataclass(frozen=True)
class JointTerms:
    """The joints' friction and actuation a simulation applies: the model identification fits
    (engine/models/joint_friction.py), per movable joint in ``model.joint_names`` order::

        tau_joint = damping qd + coulomb tanh(qd / v_s) + armature qdd + offset    (N m, or N)

    ``damping`` N m s/rad (N s/m), ``coulomb`` N m (N), ``offset`` N m (N), ``armature`` kg m^2
    (kg) *beyond* the model's own (the robot file's armature is already in its mass matrix),
    ``velocity_scale`` v_s rad/s (m/s). Empty tuples are zeros. A true dry friction (MuJoCo's
    ``frictionloss``) sticks; this smooth one lets a joint creep under a torque below ``coulomb``
    at speeds of order ``v_s``, as the identified model does.
    """

    damping: tuple = ()
    coulomb: tuple = ()
    armature: tuple = ()
    offset: tuple = ()
    velocity_scale: float = COULOMB_VELOCITY_SCALE

    @classmethod
    def of_model(cls, model) -> JointTerms:
        """The robot file's own: its joints' damping and Coulomb friction (URDF ``<dynamics damping=
        friction=>``, MJCF ``damping``, ``frictionloss``)."""
        balls = set(getattr(model, "ball_joint_names", ()))
        names = [n for n in model.joint_names for _ in range(3 if n in balls else 1)]    # one per dof
        damping = tuple(float(v) for v in model.joint_damping().detach().cpu().reshape(-1))
        by_name = {j.name: j for j in model.description.joints}
        coulomb = tuple(float(getattr(by_name.get(n), "friction", 0.0) or 0.0) for n in names)
        return cls(damping=damping, coulomb=coulomb if len(coulomb) == len(damping) else ())

    @classmethod
    def with_actuation(cls, model, joints: dict, velocity_scale: float = COULOMB_VELOCITY_SCALE) -> JointTerms:
        """The file's own terms with an actuation file's values (``{joint: {kind: value}}``, as
        ``engine.models.robot_source.read_actuation`` reads them) in their place; its armature
        replaces the file's (the difference is what :class:`JointTerms` adds)."""
        base = cls.of_model(model)
        names = list(model.joint_names)
        by_name = {j.name: j for j in model.description.joints}
        n = len(names)
        vals = {"damping": list(base.damping) or [0.0] * n, "coulomb": list(base.coulomb) or [0.0] * n,
                "armature": [0.0] * n, "offset": [0.0] * n}
        for name, kinds in joints.items():
            i = names.index(name)
            for kind, v in kinds.items():
                if kind == "armature":
                    v = float(v) - float(getattr(by_name.get(name), "armature", 0.0) or 0.0)
                vals[kind][i] = float(v)
        return cls(**{k: tuple(v) for k, v in vals.items()}, velocity_scale=float(velocity_scale))

    def vectors(self, nv: int, device=None) -> dict[str, torch.Tensor]:
        """``{kind: (nv,) float64}``, the joints' values last (a floating base's six rows are 0)."""
        out = {}
        for kind in ("damping", "coulomb", "armature", "offset"):
            v = torch.zeros(nv, dtype=torch.float64)
            vals = getattr(self, kind)
            if len(vals):
                t = _vector(vals, len(vals), f"joint {kind}")
                v[nv - t.numel():] = t
            out[kind] = v.to(device)
        if not self.velocity_scale > 0:
            raise ValueError(f"joint terms: the Coulomb velocity scale v_s must be > 0 rad/s, got "
                             f"{self.velocity_scale!r}")
        return out


@dataclass(frozen=True)
class SimulationOptions:
    """A simulation from a state.

    mode: "free_fall" (tau = 0, plus the file's body gravity compensation, MJCF ``gravcomp``:
    :mod:`engine.robots.gravcomp`), "gravity_compensation" (tau = g(q)) or "pd_keyframes"
    (tau = g(q) + M(q) (kp (q_ref(t) - q) - kd qd), q_ref interpolated from the keyframes:
    a PD on accelerations, so kp (1/s^2) and kd (1/s) mean the same on every joint of every
    robot and a light wrist is not made stiff, which keeps the explicit integration stable).
    duration and dt in s; RK4 steps; ``damping``: apply the joints' friction and actuation
    (:class:`JointTerms`: the robot file's damping and Coulomb friction unless given);
    ``tau``: a constant joint torque (N m or N, one per joint) added in every mode (empty: none).
    ``hold_base``: a floating robot's base is held where it is (its joints move, the base does
    not: the joint rows of ``M a = tau - h`` with zero base acceleration); else it flies freely.
    """

    mode: str = "free_fall"
    duration: float = 2.0
    dt: float = 0.002
    kp: float = 100.0
    kd: float = 20.0
    damping: bool = True
    frame_rate: float = 60.0      # samples kept per second for playback
    tau: tuple = ()
    hold_base: bool = False

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
            raise ValueError(
                f"simulation time step dt = {self.dt} s is longer than the duration {self.duration} s"
            )
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


def _ad(d: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """se(3) bracket of twists [linear, angular]: ``(phi x u + rho x w, phi x w)``."""
    rho, phi, u, w = d[..., :3], d[..., 3:6], v[..., :3], v[..., 3:6]
    return torch.cat(
        [torch.linalg.cross(phi, u) + torch.linalg.cross(rho, w), torch.linalg.cross(phi, w)], -1
    )


def _dexp_inv(delta: torch.Tensor, v: torch.Tensor, floating: bool = True, balls: Sequence[slice] = ()
              ) -> torch.Tensor:
    """``d delta / dt`` for ``q = q_k exp(delta)`` moving at body velocity ``v (nv,)``: on the base's
    rows ``v + ad v / 2 + ad^2 v / 12`` (enough for fourth order), on each ball joint's rows
    (``balls``: their v slices) the same with the cross product; the other joints' rows commute."""
    out = v
    if floating:
        a1 = _ad(delta[:6], v[:6])
        out = torch.cat([v[:6] + 0.5 * a1 + _ad(delta[:6], a1) / 12.0, v[6:]])
    for sl in balls:
        d, w = delta[sl], v[sl]
        c1 = torch.linalg.cross(d, w)
        out = torch.cat([out[:sl.start], w + 0.5 * c1 + torch.linalg.cross(d, c1) / 12.0, out[sl.stop:]])
    return out


def simulate(model, q0, qd0=None, options: SimulationOptions = SimulationOptions(),
             keyframe_times: Sequence[float] = (), keyframe_poses: Sequence[np.ndarray] = (),
             progress: Callable[[float, str], None] | None = None,
             check_cancelled: Callable[[], None] | None = None,
             joint_terms: JointTerms | None = None,
             torque: Callable[[float], torch.Tensor] | None = None) -> SimulationResult:
    """Integrate the robot's forward dynamics (the engine's ABA) from ``q0`` (nq,), ``qd0``
    (nv,; default zero) with RK4; joints are clamped to their limits (velocity zeroed there)
    after every step. ``joint_terms``: the joints' friction and actuation (default: the robot
    file's, :meth:`JointTerms.of_model`; none with ``options.damping`` off). Raises
    FloatingPointError when the state stops being finite. ``torque``: a joint torque (nv,) at time
    ``t`` (s from the start), added to ``options.tau`` (e.g. a log's torques)."""
    options.validate()
    check_forward_dynamics(getattr(model, "name", "robot"), getattr(model, "singular_joints", ()))
    if options.mode == "pd_keyframes" and len(keyframe_times) == 0:
        raise ValueError("PD to keyframes needs at least one keyframe")
    floating = bool(getattr(model, "floating", False))
    nq, n = int(getattr(model, "nq", model.dof)), int(getattr(model, "nv", model.dof))
    dev = getattr(model, "device", torch.device("cpu"))  # the model's device (--device); float64 on all
    held = floating and options.hold_base
    q = _vector(q0, nq, "initial configuration q0")
    qd = torch.zeros(n, dtype=torch.float64) if qd0 is None else _vector(qd0, n, "initial velocities")
    if floating and options.hold_base:
        qd = torch.cat([torch.zeros(6, dtype=torch.float64), qd[6:]])
    q, qd = q.to(dev), qd.to(dev)
    tau_const = (
        torch.zeros(n, dtype=torch.float64) if len(options.tau) == 0 else _vector(options.tau, n, "tau")
    )
    tau_const = tau_const.to(dev)
    balls = [model.joint_coordinates(j)[1] for j in getattr(model, "ball_joint_names", ())]   # their v slices
    manifold = floating or bool(balls)      # q moves by integrate, not by addition
    sq, sv, rows = limited_coordinates(model)
    lo = model.joint_limits.lower.detach().to(torch.float64).to(dev)[rows]
    hi = model.joint_limits.upper.detach().to(torch.float64).to(dev)[rows]
    terms = (joint_terms or JointTerms.of_model(model) if options.damping else JointTerms()).vectors(n, dev)
    damping, coulomb, offset, extra = terms["damping"], terms["coulomb"], terms["offset"], terms["armature"]
    v_s = float(joint_terms.velocity_scale if options.damping and joint_terms else COULOMB_VELOCITY_SCALE)
    armature = bool(extra.any())

    compensated = has_gravity_compensation(model)
    constraints = tuple(getattr(getattr(model, "description", None), "constraints", ()) or ())
    if constraints and held:
        raise ValueError(f"robot {model.name!r} has constraints (loop closures): holding its base is not "
                         "supported; simulate it with the base free")
    if constraints and armature:
        raise ValueError(f"robot {model.name!r} has constraints (loop closures): an armature beyond its file's "
                         "is not supported there; write it into the robot file")
    if constraints:         # the joints' limits are one-sided rows beside the loops (a clamp would open them)
        constraints += joint_limit_constraints(model)
    if constraints:         # start on the constraints (a pose set joint by joint leaves loops open)
        q, qd = project_state(model, constraints, q, qd, iterations=50)
        check_constraints_hold(model, constraints, q)

    def accel(t, q_, qd_):
        tau = tau_const if torque is None else tau_const + torque(t)
        if options.mode != "free_fall":
            tau = tau + model.gravity_torques(q_)   # holds the robot: the file's compensation included
            if options.mode == "pd_keyframes":
                ref = torch.as_tensor(interpolate_keyframes(keyframe_times, keyframe_poses, t), device=dev)
                err = model.difference(q_, ref) if manifold else ref - q_
                a = options.kp * err - options.kd * qd_
                tau = tau + model.mass_matrix(q_) @ a
        elif compensated:                           # the file's body gravcomp, as MuJoCo's passive force
            tau = tau + gravity_compensation(model, q_)
        # the joints' friction and offset (the armature is in the mass matrix below)
        tau = tau - damping * qd_ - coulomb * torch.tanh(qd_ / v_s) - offset
        if held:              # the base held: its acceleration is zero, the joints' rows of M a = tau - h
            M, h = model.mass_matrix(q_) + torch.diag(extra), model.bias_forces(q_, qd_)
            return torch.cat(
                [
                    torch.zeros(6, dtype=q_.dtype, device=q_.device),
                    torch.linalg.solve(M[6:, 6:], (tau - h)[6:]),
                ]
            )
        if constraints:
            return constrained_forward_dynamics(model, constraints, q_, qd_, tau).qdd
        if armature:          # the rotors' inertia on the diagonal: (M + Ia) qdd = tau - h
            return torch.linalg.solve(model.mass_matrix(q_) + torch.diag(extra), tau - model.bias_forces(q_, qd_))
        return model.forward_dynamics(q_, qd_, tau)

    h = float(options.dt)
    steps = max(1, int(np.rint(options.duration / h)))
    every = max(1, int(np.rint(1.0 / (options.frame_rate * h))))
    ts, qs, qds = [0.0], [q.cpu().numpy().copy()], [qd.cpu().numpy().copy()]
    with torch.no_grad():
        for k in range(steps):
            if manifold:      # RK4 in the tangent space at q_k (see the module docstring)
                qk = q

                def field(t, x, qk=qk):
                    delta, v = x[:n], x[n:]
                    return torch.cat([_dexp_inv(delta, v, floating, balls), accel(t, model.integrate(qk, delta), v)])

                x = rk4_step_t(
                    field, k * h, torch.cat([torch.zeros(n, dtype=torch.float64, device=dev), qd]), h
                )
                q, qd = model.integrate(qk, x[:n]), x[n:]
            else:
                x = rk4_step_t(
                    lambda t, x: torch.cat([x[n:], accel(t, x[:n], x[n:])]), k * h, torch.cat([q, qd]), h
                )
                q, qd = x[:n], x[n:]
            qj, vj = q[sq], qd[sv]
            at_limit = (qj <= lo) | (qj >= hi)
            if at_limit.any():
                q, qd = q.clone(), qd.clone()
                q[sq] = torch.clamp(qj, lo, hi)
                qd[sv] = torch.where(at_limit, torch.zeros_like(vj), vj)
            if constraints:
                q, qd = project_state(model, constraints, q, qd)
            x = torch.cat([q, qd])
            if not torch.isfinite(x).all():
                raise FloatingPointError(f"simulation diverged at t = {(k + 1) * h:.3f} s (NaN state); "
                                         f"try a smaller time step")
            if (k + 1) % every == 0 or k + 1 == steps:
                ts.append((k + 1) * h)
                qs.append(q.cpu().numpy().copy())
                qds.append(qd.cpu().numpy().copy())
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
