"""A joint log on a robot: the replay of what the robot did, and a model's ghost beside it.

::

    table = read_log("run.csv")
    rmap = ReplayMapping.auto(table, robot)             # names matched, units guessed
    replay = make_replay(table, rmap, robot)            # t (N,), q (N, dof) in SI, robot joint order
    ghost = rollout_ghost(robot, replay, t0=1.0, horizon=0.5)   # or a learned model
    ghost.q, ghost.error                                 # (K, dof) each

A :class:`ReplayMapping` is a :class:`~engine.logs.mapping.LogMapping` (columns and units) plus
the robot joint of each position column, the base pose columns of a floating-base robot, the
four quaternion columns of each ball joint and the episode to read; it is JSON
(``to_dict``/``from_dict``) so a session keeps it.

Ball joints (:mod:`engine.robots.ball`): a log gives each one's orientation as four columns
``qw qx qy qz`` (found by :meth:`ReplayMapping.auto` as ``<joint>_qw``... or ``<joint>_w``...);
in the replay's ``q`` (one entry per joint velocity coordinate, as the Robot workspace's
sliders) it is the rotation vector (rad), its ``qd`` the angular velocity in the child frame
(central differences on the rotation group), and :meth:`LogReplay.configuration` gives the
robot's ``q`` with the quaternion back (exact at the samples; between them the rotation
vectors are interpolated).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engine.integrators import get_stepper
from engine.logs.errors import LogError
from engine.logs.joint_match import match_joints
from engine.logs.mapping import LogMapping, apply_mapping
from engine.logs.reader import episodes, select_episode
from engine.logs.table import LogTable
from engine.robots.ball import difference_balls
from engine.robots.model import RobotModel
from engine.robots.model_coords import joint_configuration, joint_positions, limited_coordinates

__all__ = ["GhostRollout", "LogReplay", "ReplayMapping", "make_replay", "rollout_ghost"]


@dataclass
class ReplayMapping:
    """How a log drives a robot. ``mapping``: columns and units (its ``q``, ``qd`` and ``u``
    lists in the order of ``joints``); ``joints``: the robot joint of each ``mapping.q``
    column; ``base``: the columns x y z (m) [qw qx qy qz] of a floating base's world pose,
    or empty; ``episode``: the episode to play from a file of several episodes (None: the
    first; see :mod:`engine.logs.episodes`)."""

    mapping: LogMapping
    joints: list[str]
    base: list[str] = field(default_factory=list)
    episode: int | None = None
    notes: list[str] = field(default_factory=list)
    balls: dict[str, list[str]] = field(default_factory=dict)     # ball joint -> [qw, qx, qy, qz] columns

    def __post_init__(self):
        if len(self.joints) != len(self.mapping.q):
            raise LogError(
                f"{len(self.joints)} joints for {len(self.mapping.q)} position columns", column="joints"
            )
        if len(set(self.joints)) != len(self.joints):
            raise LogError("a joint is mapped twice", column="joints")
        if len(self.base) not in (0, 3, 7):
            raise LogError("base pose: give x y z, or x y z qw qx qy qz columns", column="base")
        for joint, cols in self.balls.items():
            if len(cols) != 4:
                raise LogError(f"ball joint {joint!r}: give its qw qx qy qz columns", column="balls")
            if joint in self.joints:
                raise LogError(f"ball joint {joint!r} is mapped as a position column too", column="joints")

    @classmethod
    def auto(cls, table: LogTable, robot: RobotModel) -> ReplayMapping:
        """Match the table's columns to the robot's joints by name (see engine.logs.joint_match)."""
        limits = robot.joint_limits
        _, _, rows = limited_coordinates(robot)
        balls = _ball_columns(table.columns, list(getattr(robot, "ball_joint_names", ())))
        scalar = [j for j in robot.joint_names if j not in getattr(robot, "ball_joint_names", ())]
        lim = (np.stack([limits.lower.cpu().numpy(), limits.upper.cpu().numpy()], -1)[rows] if scalar
               else None)
        revolute = [robot.description.joint(j).type in ("revolute", "continuous") for j in scalar]
        floating = bool(getattr(robot, "floating", False))
        taken = {c for cols in balls.values() for c in cols}
        columns = [c for c in table.columns if c not in taken]
        m = match_joints(columns, scalar, data=table.data, limits=lim, revolute=revolute,
                         floating_base=floating)
        have = episodes(table)
        episode = have[0] if len(have) > 1 else None   # episodes restart their clocks: one at a time
        return cls(mapping=m.mapping, joints=m.joints, base=m.base, episode=episode, notes=list(m.notes),
                   balls=balls)

    def to_dict(self) -> dict:
        return {"mapping": self.mapping.to_dict(), "joints": list(self.joints), "base": list(self.base),
                "episode": self.episode, "balls": {k: list(v) for k, v in self.balls.items()}}

    @classmethod
    def from_dict(cls, d: dict, *, source: str | None = None) -> ReplayMapping:
        if not isinstance(d, dict) or "mapping" not in d or "joints" not in d:
            raise LogError("a replay mapping is a JSON object with 'mapping' and 'joints'", path=source)
        return cls(mapping=LogMapping.from_dict(d["mapping"], source=source), joints=list(d["joints"]),
                   base=list(d.get("base") or []), episode=d.get("episode"),
                   balls={str(k): list(v) for k, v in (d.get("balls") or {}).items()})

    @classmethod
    def load(cls, path: str | os.PathLike, robot: RobotModel | None = None) -> ReplayMapping:
        """A replay mapping file, or a plain LogMapping file whose q columns are the robot's
        joints in order (the files the model lab saves)."""
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise LogError(f"cannot read the mapping ({exc})", path=path) from None
        if isinstance(d, dict) and "joints" in d:
            return cls.from_dict(d, source=str(path))
        mapping = LogMapping.load(path)
        if robot is None:
            raise LogError("a plain mapping needs the robot to name the joints", path=path)
        if len(mapping.q) > robot.dof:
            raise LogError(f"{len(mapping.q)} position columns for a robot with {robot.dof} joints",
                           path=path, column="q")
        return cls(mapping=mapping, joints=list(robot.joint_names[: len(mapping.q)]))


@dataclass
class LogReplay:
    """A log on a robot, in SI units and robot joint order.

    ``t`` (N,) s from 0; ``q`` (N, dof) (joints without a column hold 0); ``qd`` (N, dof): logged
    or central differences (``qd_logged`` says which); ``tau`` (N, dof) or None; ``u`` (N, nu)
    the mapped controls as logged (what a learned model of this log takes); ``base`` (N, 7)
    x y z qw qx qy qz or None; ``mapped`` (dof,) bool. ``episode``: the episode played of a
    file of ``n_episodes`` (None and 0 for a file without an episode column).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray | None
    u: np.ndarray
    base: np.ndarray | None
    joint_names: list[str]
    mapped: np.ndarray
    qd_logged: bool = False
    source: str = ""
    t_offset: float = 0.0
    notes: list[str] = field(default_factory=list)
    episode: int | None = None
    n_episodes: int = 0
    coordinate_names: list[str] = field(default_factory=list)   # per q column; empty: joint_names

    @property
    def column_names(self) -> list[str]:
        """The name of each column of ``q`` (dof,): a joint's, a ball joint's three ``name rx/ry/rz``."""
        return self.coordinate_names or self.joint_names

    @property
    def n(self) -> int:
        return int(self.t.shape[0])

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0]) if self.n else 0.0

    @property
    def dt(self) -> float:
        """Median sample period (s)."""
        return float(np.median(np.diff(self.t))) if self.n > 1 else 0.0

    def index_at(self, time: float) -> int:
        """The last sample at or before ``time`` (clamped)."""
        return int(np.clip(np.searchsorted(self.t, time, side="right") - 1, 0, self.n - 1))

    def sample(self, times, what: str = "q") -> np.ndarray:
        """Linear interpolation of ``q``/``qd``/``tau``/``u``/``base`` at ``times`` (K,) -> (K, k), clamped."""
        values = getattr(self, what)
        if values is None:
            raise ValueError(f"the log has no {what}")
        times = np.clip(np.asarray(times, dtype=np.float64), self.t[0], self.t[-1])
        out = np.stack([np.interp(times, self.t, values[:, j]) for j in range(values.shape[1])], -1) \
            if values.shape[1] else np.zeros((times.shape[0], 0))
        if what == "base" and out.shape[1] == 7:
            out[:, 3:] /= np.linalg.norm(out[:, 3:], axis=1, keepdims=True)
        return out

    def base_transforms(self, times) -> np.ndarray | None:
        """World poses of the base (K, 4, 4) at ``times``, or None for a fixed base."""
        if self.base is None:
            return None
        b = self.sample(times, "base")
        T = np.tile(np.eye(4), (b.shape[0], 1, 1))
        T[:, :3, 3] = b[:, :3]
        w, x, y, z = b[:, 3], b[:, 4], b[:, 5], b[:, 6]
        T[:, :3, :3] = np.stack([
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)
        return T

    def configuration(self, robot: RobotModel, times) -> np.ndarray:
        """The robot's configuration (K, nq) at ``times``: for a floating base Pinocchio's
        ``[x y z, qx qy qz qw, joints]`` (the base at the origin when the log has no pose)."""
        q = self.sample(times, "q")
        if getattr(robot, "ball_joint_names", None):       # rotation vectors -> quaternions
            q = joint_configuration(robot, torch.as_tensor(q)).numpy()
        if not getattr(robot, "floating", False):
            return q
        b = (
            self.sample(times, "base")
            if self.base is not None
            else np.tile([0, 0, 0, 1.0, 0, 0, 0], (q.shape[0], 1))
        )
        return np.concatenate([b[:, :3], b[:, 4:7], b[:, 3:4], q], axis=1)

    def link_poses(self, robot: RobotModel, times) -> np.ndarray:
        """World poses of every link (K, n_links, 4, 4) at ``times``, base pose included."""
        q = torch.as_tensor(self.configuration(robot, times), dtype=robot.dtype, device=robot.device)
        with torch.no_grad():
            T = robot.forward_kinematics(q).cpu().numpy()
        if getattr(robot, "floating", False):
            return T
        B = self.base_transforms(times)      # a fixed-base model carried by a logged base pose
        return T if B is None else B[:, None] @ T


def _dense(values: np.ndarray, t: np.ndarray, name: str, source: str) -> np.ndarray:
    """Fill NaN gaps (sparse multi-topic logs) by interpolation over the finite samples."""
    out = values.copy()
    for j in range(out.shape[1]):
        ok = np.isfinite(out[:, j])
        if not ok.any():
            raise LogError("the column has no values", path=source or None, column=name)
        if not ok.all():
            out[:, j] = np.interp(t, t[ok], out[ok, j])
    return out


def _ball_columns(columns: list[str], balls: list[str]) -> dict[str, list[str]]:
    """Each ball joint's four quaternion columns ``[qw, qx, qy, qz]`` named ``<joint>_qw`` (or
    ``.qw``, ``/qw``, ``_w``...), where all four are there."""
    out: dict[str, list[str]] = {}
    lower = {c.lower(): c for c in columns}
    for joint in balls:
        for sep in ("_", ".", "/", ":"):
            for fields_ in (("qw", "qx", "qy", "qz"), ("w", "x", "y", "z"), ("quat_w", "quat_x", "quat_y", "quat_z")):
                names = [f"{joint}{sep}{f}".lower() for f in fields_]
                if all(n in lower for n in names):
                    out[joint] = [lower[n] for n in names]
                    break
            if joint in out:
                break
    return out


def make_replay(table: LogTable, rmap: ReplayMapping, robot: RobotModel) -> LogReplay:
    """The replay of ``table`` on ``robot`` under ``rmap`` (SI units, robot joint order; a ball
    joint's entries its rotation vector, see the module docstring)."""
    f = int(robot.nv) - int(robot.dof)
    index = {j: robot.joint_coordinates(j)[1].start - f for j in robot.joint_names}
    unknown = [j for j in list(rmap.joints) + list(rmap.balls) if j not in index]
    if unknown:
        raise LogError(f"the robot {robot.name!r} has no joint {unknown[0]!r}", path=table.source or None,
                       column="joints")
    have = episodes(table)
    episode_note, episode = [], None
    if len(have) > 1 or rmap.episode is not None:
        episode = have[0] if rmap.episode is None else int(rmap.episode)
        table = select_episode(table, episode)
        if len(have) > 1:
            episode_note = [f"episode {episode} ({have.index(episode) + 1} of {len(have)} episodes, "
                            f"{have[0]} .. {have[-1]}): choose another with --episode K or the episode box"]
    m = apply_mapping(table, rmap.mapping)
    t = m.t
    keep = np.isfinite(t)
    if table.sparse:  # rows of any topic carrying one of the mapped columns
        cols = np.concatenate([m.q] + ([m.qd] if m.qd is not None else []), axis=1)
        keep &= np.isfinite(cols).any(axis=1)
    if keep.sum() < 2:
        raise LogError(
            "fewer than two samples with a time", path=table.source or None, column=rmap.mapping.time
        )
    order = np.flatnonzero(keep)[np.argsort(t[keep], kind="stable")]
    t = t[order]
    uniq = np.concatenate([[True], np.diff(t) > 0])
    order, t = order[uniq], t[uniq]
    src = table.source
    n, dof = t.shape[0], robot.dof
    ids = [index[j] for j in rmap.joints]
    q = np.zeros((n, dof))
    q[:, ids] = _dense(m.q[order], t, "q", src)
    mapped = np.zeros(dof, dtype=bool)
    mapped[ids] = True
    if m.qd is not None:
        qd = np.zeros((n, dof))
        qd[:, ids] = _dense(m.qd[order], t, "qd", src)
    else:
        qd = np.gradient(q, t, axis=0)
    tau = None
    if m.u.shape[1] == len(ids) and m.u.shape[1]:
        tau = np.zeros((n, dof))
        tau[:, ids] = _dense(m.u[order], t, "u", src)
    u = _dense(m.u[order], t, "u", src) if m.u.shape[1] else np.zeros((n, 0))
    for joint, quat_cols in rmap.balls.items():
        _ball_replay(robot, joint, index[joint], [table.column(c)[m.rows][order] for c in quat_cols], t, src, q,
                     qd, mapped)
    base = None
    if rmap.base:
        b = np.stack([table.column(c)[m.rows][order] for c in rmap.base], 1)
        b = _dense(b, t, "base", src)
        if b.shape[1] == 3:
            b = np.concatenate([b, np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))], 1)
        for k, c in enumerate(rmap.base[:3]):
            b[:, k] *= _factor(rmap.mapping, c)
        base = b
    t0 = float(t[0])
    notes = list(rmap.notes) + episode_note + (
        [] if m.qd is not None else ["velocities: central differences of the positions"]
    )
    return LogReplay(t=t - t0, q=q, qd=qd, tau=tau, u=u, base=base, joint_names=list(robot.joint_names),
                     mapped=mapped, qd_logged=m.qd is not None, source=src, t_offset=t0, notes=notes,
                     episode=episode, n_episodes=len(have), coordinate_names=_coordinate_names(robot))


def _coordinate_names(robot) -> list[str]:
    """One name per joint velocity coordinate; empty for a robot without ball joints."""
    balls = set(getattr(robot, "ball_joint_names", ()))
    if not balls:
        return []
    return [f"{n} {a}" if n in balls else n for n in robot.joint_names
            for a in (("rx", "ry", "rz") if n in balls else ("",))]


def _ball_replay(robot, joint: str, k: int, columns: list, t, src: str, q, qd, mapped) -> None:
    """Write one ball joint's logged quaternion (columns qw qx qy qz) into ``q[:, k:k + 3]`` as its
    rotation vector and its angular velocity (child frame; central differences on the rotation
    group) into ``qd[:, k:k + 3]``; ``mapped`` marks the three."""
    wxyz = _dense(np.stack(columns, 1), t, f"{joint} quaternion", src)
    norm = np.linalg.norm(wxyz, axis=1, keepdims=True)
    if not np.all(norm > 1e-9):
        raise LogError(f"ball joint {joint!r}: a quaternion of zero length", path=src or None, column=joint)
    quat = torch.as_tensor(np.concatenate([wxyz[:, 1:], wxyz[:, :1]], 1) / norm)       # x y z w
    one = _OneBall()
    q[:, k:k + 3] = joint_positions(one, quat).numpy()
    i0 = np.maximum(np.arange(len(t)) - 1, 0)
    i1 = np.minimum(np.arange(len(t)) + 1, len(t) - 1)
    w = difference_balls(quat[i0], quat[i1], (0,), (0,)).numpy()
    qd[:, k:k + 3] = w / (t[i1] - t[i0])[:, None]
    mapped[k:k + 3] = True


class _OneBall:
    """A stand-in model with a single ball joint (for :func:`joint_positions` on one quaternion)."""

    nq, nv, dof, joint_names, ball_joint_names = 4, 3, 3, ["ball"], ["ball"]

    @staticmethod
    def joint_coordinates(_name):
        return slice(0, 4), slice(0, 3)


def _factor(mapping: LogMapping, column: str) -> float:
    from engine.logs.units import unit_factor

    return unit_factor(mapping.unit(column), field=f"units[{column!r}]")


@dataclass
class GhostRollout:
    """A model rolled out from the logged state at ``t0``: ``t`` (K,) s on the log's clock,
    ``q``/``qd`` (K, dof) predicted (joints the model does not cover hold the log's values),
    ``q_log`` (K, dof) the log at the same times, ``error`` = q - q_log (K, dof), ``rms``
    (dof,) and ``model`` (a short name)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    q_log: np.ndarray
    error: np.ndarray
    rms: np.ndarray
    model: str = ""


def _rigid_rollout(
    robot: RobotModel, replay: LogReplay, t0: float, steps: int, h: float, integrator: str, ctx=None
):
    stepper = get_stepper(integrator)
    times = t0 + h * np.arange(steps + 1)
    tau = replay.sample(times, "tau") if replay.tau is not None else np.zeros((steps + 1, robot.dof))
    tau_t = torch.as_tensor(tau, dtype=robot.dtype, device=robot.device)
    n = robot.dof

    def f(x, u):
        return torch.cat([x[..., n:], robot.forward_dynamics(x[..., :n], x[..., n:], u, damping=True)], -1)

    x = torch.as_tensor(np.concatenate([replay.sample([t0], "q"), replay.sample([t0], "qd")], 1),
                        dtype=robot.dtype, device=robot.device)
    xs = [x]
    with torch.no_grad():
        for k in range(steps):
            if ctx is not None and k % 10 == 0:
                ctx.check_cancelled()
                ctx.progress(k / steps, f"ghost step {k}/{steps}")
            x = stepper(f, x, tau_t[k:k + 1], h)
            xs.append(x)
    X = torch.cat(xs, 0).cpu().numpy()
    return times, X[:, :n], X[:, n:]


def _ball_rollout(robot: RobotModel, replay: LogReplay, t0: float, steps: int, h: float, ctx=None):
    """The rigid-body ghost of a robot with ball joints: :func:`engine.robots.simulate.simulate`'s
    RK4 on the configuration manifold (the quaternions stay unit) from the logged state at ``t0``,
    driven by the logged torques interpolated linearly in time, with the joint damping (the ghost's
    of the other robots). Returns ``(times, q, qd)`` in the replay's coordinates (a ball's rotation
    vector and child-frame angular velocity)."""
    from engine.robots.simulate import JointTerms, SimulationOptions, simulate

    q0 = replay.configuration(robot, [t0])[0]
    qd0 = replay.sample([t0], "qd")[0]
    dev = robot.device

    def torque(t: float) -> torch.Tensor:
        if replay.tau is None:
            return torch.zeros(robot.dof, dtype=torch.float64, device=dev)
        return torch.as_tensor(replay.sample([t0 + t], "tau")[0], dtype=torch.float64, device=dev)

    options = SimulationOptions(mode="free_fall", duration=steps * h, dt=h, frame_rate=1.0 / h)
    progress = (lambda f, msg: ctx.progress(f, f"ghost: {msg}")) if ctx is not None else None
    damping = JointTerms(damping=JointTerms.of_model(robot).damping)
    sim = simulate(robot, q0, qd0, options, torque=torque, joint_terms=damping, progress=progress,
                   check_cancelled=ctx.check_cancelled if ctx is not None else None)
    q = joint_positions(robot, torch.as_tensor(sim.q)).numpy()
    return t0 + sim.t, q, sim.qd


def _learned_rollout(model, replay: LogReplay, t0: float, steps: int):
    h = float(model.h)
    ids = np.flatnonzero(replay.mapped)
    n = int(model.n)
    if n != ids.size:
        raise ValueError(f"the model has {n} joints but the log maps {ids.size}; "
                         "choose a model trained on this log's joints")
    m = int(model.spec.control_dim)
    if replay.u.shape[1] != m:
        raise ValueError(f"the model takes {m} controls but the log maps {replay.u.shape[1]}; "
                         "map the same control columns it was trained on")
    times = t0 + h * np.arange(-1, steps + 2)
    q = replay.sample(times, "q")[:, ids]
    qd = replay.sample(times, "qd")[:, ids]
    u = replay.sample(times, "u")
    param = next(iter(model.parameters()), None)
    dtype = param.dtype if param is not None else torch.float32
    x = torch.as_tensor(np.concatenate([q, qd], 1)[None, :2], dtype=dtype)
    uu = torch.as_tensor(u[None, : steps + 2], dtype=dtype)
    qp, qdp = model.rollout(x, uu, steps)
    full_q = replay.sample(times[1:steps + 2], "q")
    full_qd = replay.sample(times[1:steps + 2], "qd")
    full_q[1:, ids] = qp[0].detach().cpu().double().numpy()
    full_qd[1:, ids] = qdp[0].detach().cpu().double().numpy()
    return times[1:steps + 2], full_q, full_qd


def rollout_ghost(model, replay: LogReplay, t0: float, horizon: float, *, integrator: str = "rk4",
                  h: float | None = None, ctx=None) -> GhostRollout:
    """Roll ``model`` out from the logged state at ``t0`` for ``horizon`` seconds.

    ``model``: a :class:`RobotModel` (the rigid-body or identified model: forward dynamics
    with the joint damping, driven by the logged torques held over each step, integrated by
    ``engine.integrators`` with step ``h``, default the log's sample period), or a learned
    dynamics model (anything with ``rollout(x, u, steps)``, ``h``, ``n`` and ``spec``, as in
    ``engine.models``: its own step, the log's mapped controls). Returns a :class:`GhostRollout`
    whose ``error`` is the prediction minus the log. ``ctx``: an optional job context
    (progress, cancellation every 10 rigid-body steps).
    """
    if replay.n < 2:
        raise ValueError("the log has fewer than two samples")
    t0 = float(np.clip(t0, replay.t[0], replay.t[-1]))
    horizon = float(max(horizon, 0.0))
    if isinstance(model, RobotModel):
        if getattr(model, "floating", False):
            raise ValueError(
                "the rigid-body ghost of a floating-base robot needs the base's velocity and "
                "contacts, which a joint log does not give; choose a learned model of the joints"
            )
        if list(model.joint_names) != list(replay.joint_names):
            raise ValueError("the rigid-body model's joints differ from the replayed robot's")
        step = float(h or replay.dt)
        steps = max(1, int(round(horizon / step)))
        if getattr(model, "ball_joint_names", None):
            times, q, qd = _ball_rollout(model, replay, t0, steps, step, ctx)
        else:
            times, q, qd = _rigid_rollout(model, replay, t0, steps, step, integrator, ctx)
        name = f"{model.name} (rigid body)"
    elif hasattr(model, "rollout") and hasattr(model, "spec"):
        steps = max(1, int(round(horizon / float(model.h))))
        times, q, qd = _learned_rollout(model, replay, t0, steps)
        name = getattr(model, "name", "") or type(model).__name__
    else:
        raise TypeError("the ghost needs a RobotModel or a learned dynamics model")
    q_log = replay.sample(times, "q")
    err = q - q_log
    return GhostRollout(t=times, q=q, qd=qd, q_log=q_log, error=err,
                        rms=np.sqrt(np.mean(err ** 2, axis=0)), model=name)
