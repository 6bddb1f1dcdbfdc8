"""The log replay of the Robot workspace without widgets: a joint log on the shown robot.

:class:`LogReplayState` holds the robot model, the loaded log (a ``LogTable``), its
:class:`~engine.data.log_replay.ReplayMapping` (kept with the session: ``to_dict`` /
``from_dict``), the replay, the time cursor and the player (play, pause, speed, step, loop a
range), and the model ghost (a model rolled out from the cursor for a horizon). Every change is
announced on ``events`` (plain callbacks, no Qt) so a panel, a test or a script can observe it:

- ``replay(LogReplay | None)``: a log was opened, remapped or closed;
- ``cursor(float)``: the cursor moved (s, log time from 0);
- ``playing(bool)``; ``loop(tuple | None)``;
- ``ghost(GhostRollout | None)``: a ghost was computed or cleared;
- ``message(str)``: a plain sentence for the status line.

:meth:`show_log` is the public entry the Model lab calls ("Show on robot").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.widgets.events import Events
from engine.data.log_replay import GhostRollout, LogReplay, ReplayMapping, make_replay, rollout_ghost
from engine.logs import LogError, LogMapping
from engine.logs.joint_match import match_joints
from engine.logs.reader import ReadOptions, read_log

__all__ = ["LogReplayState", "SPEEDS"]

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)


class LogReplayState:
    """A joint log replayed on a robot (see the module doc)."""

    def __init__(self) -> None:
        self.events = Events("replay", "cursor", "playing", "loop", "ghost", "message")
        self.robot = None               # engine RobotModel
        self.table = None               # engine LogTable
        self.path = ""
        self.rmap: ReplayMapping | None = None
        self.replay: LogReplay | None = None
        self.cursor = 0.0
        self.playing = False
        self.speed = 1.0
        self.loop: tuple[float, float] | None = None
        self.horizon = 1.0
        self.ghost_model = None         # RobotModel or a learned dynamics model
        self.ghost_name = ""
        self.ghost: GhostRollout | None = None
        self.ghost_follows_cursor = False

    # ------------------------------------------------------------------ robot and log
    def set_robot(self, model) -> None:
        """The robot to replay on (an engine RobotModel); an open log is matched to it again."""
        self.robot = model
        self.ghost = None
        if self.ghost_model is not None and not _is_learned(self.ghost_model):
            self.ghost_model = None
        if self.table is not None and model is not None:
            keep = (
                self.rmap
                if self.rmap is not None and set(self.rmap.joints) <= set(model.joint_names)
                else None
            )
            try:
                self._apply(keep or ReplayMapping.auto(self.table, model))
            except LogError as exc:
                self.rmap, self.replay = None, None
                self.events.replay.emit(None)
                self.events.message.emit(f"The log does not fit {model.name}: {exc}")

    def open_table(self, table, rmap: ReplayMapping | None = None) -> LogReplay:
        """Replay a loaded ``LogTable``; ``rmap`` None matches its columns to the joints by name."""
        if self.robot is None:
            raise LogError("load a robot first, then open its log")
        self.table = table
        self.path = table.source
        self.ghost = None
        self._apply(rmap or ReplayMapping.auto(table, self.robot))
        return self.replay

    def open_file(self, path, rmap: ReplayMapping | None = None, ctx=None) -> LogReplay:
        """Read ``path`` (any log format) and replay it (blocking; the panel reads in a job)."""
        options = ReadOptions(episode=rmap.episode if rmap is not None else None)
        return self.open_table(read_log(path, ctx, options), rmap)

    def show_log(self, source, mapping=None, model=None, model_name: str = "") -> LogReplay:
        """The Model lab's "Show on robot": ``source`` a log path or a LogTable, ``mapping`` a
        LogMapping (its q columns are matched to the joints by name, else taken in joint order)
        or a ReplayMapping or None (matched by name), ``model`` an optional model for the ghost."""
        table = read_log(source) if isinstance(source, str | Path) else source
        rmap = self.replay_mapping_for(table, mapping) if mapping is not None else None
        replay = self.open_table(table, rmap)
        if model is not None:
            self.set_ghost_model(model, model_name)
        return replay

    def replay_mapping_for(self, table, mapping) -> ReplayMapping:
        """A ReplayMapping from a LogMapping (as the mapping dialog gives): its q columns
        matched to the robot's joints by name where they all match, else in joint order."""
        if isinstance(mapping, ReplayMapping):
            return mapping
        if not isinstance(mapping, LogMapping):
            raise LogError("a mapping is a LogMapping or a ReplayMapping")
        balls = set(getattr(self.robot, "ball_joint_names", ()))      # their quaternion columns: self.rmap.balls
        names = [n for n in self.robot.joint_names if n not in balls]
        if len(mapping.q) > len(names):
            raise LogError(f"{len(mapping.q)} position columns for {self.robot.name}'s {len(names)} joints",
                           column="q")
        joints = names[: len(mapping.q)]
        try:
            m = match_joints(mapping.q, names)
            if sorted(m.mapping.q) == sorted(mapping.q):
                joints = [m.joints[m.mapping.q.index(c)] for c in mapping.q]
        except LogError:
            pass
        episode = self.rmap.episode if self.rmap is not None else None
        return ReplayMapping(
            mapping=mapping, joints=joints, base=self.rmap.base if self.rmap else [], episode=episode,
            balls=dict(self.rmap.balls) if self.rmap else {},
        )

    def set_mapping(self, mapping) -> None:
        """Remap the open log (a LogMapping from the mapping dialog, or a ReplayMapping)."""
        if self.table is None:
            raise LogError("open a log first")
        self._apply(self.replay_mapping_for(self.table, mapping))

    def set_episode(self, episode: int | None) -> None:
        if self.rmap is None:
            return
        rmap = ReplayMapping(self.rmap.mapping, list(self.rmap.joints), list(self.rmap.base), episode,
                             balls=dict(self.rmap.balls))
        self._apply(rmap)

    def _apply(self, rmap: ReplayMapping) -> None:
        replay = make_replay(self.table, rmap, self.robot)
        self.rmap, self.replay = rmap, replay
        self.ghost = None
        self.loop = None
        self.cursor = float(replay.t[0])
        self.events.replay.emit(replay)
        self.events.loop.emit(None)
        self.events.ghost.emit(None)
        self.events.cursor.emit(self.cursor)
        self.events.message.emit(
            f"{Path(self.path).name or 'log'}: {replay.n} samples, {replay.duration:.2f} s; "
            + "; ".join(replay.notes[-2:])
        )

    def close(self) -> None:
        self.pause()
        self.table = self.rmap = self.replay = self.ghost = None
        self.path = ""
        self.events.replay.emit(None)
        self.events.ghost.emit(None)

    # ------------------------------------------------------------------ cursor and player
    @property
    def t_range(self) -> tuple[float, float]:
        if self.replay is None:
            return (0.0, 0.0)
        return float(self.replay.t[0]), float(self.replay.t[-1])

    def set_cursor(self, t: float) -> None:
        """Move the cursor (s), clamped to the log."""
        if self.replay is None:
            return
        lo, hi = self.t_range
        t = float(min(max(t, lo), hi))
        if t == self.cursor:
            return
        self.cursor = t
        self.events.cursor.emit(t)
        if self.ghost_follows_cursor and self.ghost_model is not None:
            self.compute_ghost()

    def step(self, n: int = 1) -> None:
        """Move the cursor ``n`` samples (negative: back)."""
        if self.replay is None:
            return
        i = self.replay.index_at(self.cursor + 1e-9)
        i = int(np.clip(i + n, 0, self.replay.n - 1))
        self.set_cursor(float(self.replay.t[i]))

    def play(self) -> None:
        if self.replay is None or self.playing:
            return
        if self.loop is None and self.cursor >= self.t_range[1]:
            self.set_cursor(self.t_range[0])      # play again from the start
        self.playing = True
        self.events.playing.emit(True)

    def pause(self) -> None:
        if self.playing:
            self.playing = False
            self.events.playing.emit(False)

    def toggle_play(self) -> None:
        self.pause() if self.playing else self.play()

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError(f"the speed must be positive, got {speed}")
        self.speed = float(speed)

    def set_loop(self, start: float | None, end: float | None = None) -> None:
        """Loop the range ``start .. end`` (s) while playing; ``None`` plays to the end once."""
        if start is None or self.replay is None:
            self.loop = None
        else:
            lo, hi = self.t_range
            a, b = sorted((float(np.clip(start, lo, hi)), float(np.clip(end, lo, hi))))
            self.loop = (a, b) if b > a else None
        self.events.loop.emit(self.loop)

    def advance(self, wall_seconds: float) -> None:
        """Play on for ``wall_seconds`` of wall time (the panel's timer calls this)."""
        if not self.playing or self.replay is None:
            return
        t = self.cursor + wall_seconds * self.speed
        if self.loop is not None:
            a, b = self.loop
            if t > b or t < a:
                t = a + (t - a) % (b - a) if t > b else a
        elif t >= self.t_range[1]:
            self.set_cursor(self.t_range[1])
            self.pause()
            return
        self.set_cursor(t)

    # ------------------------------------------------------------------ what to draw
    def q_at(self, t: float | None = None) -> np.ndarray:
        """Joint positions (dof,) at ``t`` (default: the cursor)."""
        return self.replay.sample([self.cursor if t is None else t], "q")[0]

    def link_poses_at(self, t: float | None = None) -> dict[str, np.ndarray]:
        """{link: (4, 4) world pose} of the logged robot at ``t`` (default: the cursor)."""
        T = self.replay.link_poses(self.robot, [self.cursor if t is None else t])[0]
        return dict(zip(self.robot.link_names, T))

    def ghost_link_poses(self, t: float | None = None) -> dict[str, np.ndarray] | None:
        """The ghost's link poses at ``t`` (default: the end of its horizon), or None."""
        if self.ghost is None:
            return None
        g = self.ghost
        t = g.t[-1] if t is None else float(np.clip(t, g.t[0], g.t[-1]))
        q = np.stack([np.interp(t, g.t, g.q[:, j]) for j in range(g.q.shape[1])])
        ghost = LogReplay(t=np.array([0.0, 1.0]), q=np.stack([q, q]), qd=np.zeros((2, q.size)), tau=None,
                          u=np.zeros((2, 0)), base=None if self.replay.base is None else
                          np.repeat(self.replay.sample([g.t[0]], "base"), 2, axis=0),
                          joint_names=self.replay.joint_names, mapped=self.replay.mapped)
        return dict(zip(self.robot.link_names, ghost.link_poses(self.robot, [0.0])[0]))   # at the logged base

    def series(self) -> dict[str, tuple[np.ndarray, np.ndarray, list[str]]]:
        """Plot data: ``{"q" | "qd" | "tau": (t (N,), values (N, k), labels)}`` of the mapped joints."""
        if self.replay is None:
            return {}
        r = self.replay
        ids = np.flatnonzero(r.mapped)
        names = [r.column_names[i] for i in ids]
        out = {"q": (r.t, r.q[:, ids], names), "qd": (r.t, r.qd[:, ids], names)}
        if r.tau is not None:
            out["tau"] = (r.t, r.tau[:, ids], names)
        return out

    # ------------------------------------------------------------------ ghost
    def set_ghost_model(self, model, name: str = "") -> None:
        """The model for the ghost: "rigid" (the robot's own rigid-body model), an engine
        RobotModel (an identified one) or a learned dynamics model; None removes the ghost."""
        if isinstance(model, str) and model == "rigid":
            model = self.robot
            name = name or "rigid body (URDF)"
        self.ghost_model = model
        self.ghost_name = name or (
            "" if model is None else getattr(model, "name", "") or type(model).__name__
        )
        self.ghost = None
        self.events.ghost.emit(None)

    def set_horizon(self, seconds: float) -> None:
        if not seconds > 0:
            raise ValueError(f"the horizon must be positive, got {seconds}")
        self.horizon = float(seconds)

    def ghost_job(self, t0: float | None = None):
        """A job ``job(ctx) -> GhostRollout`` from the cursor (or ``t0``); the model and the log
        are read-only inside it."""
        if self.ghost_model is None or self.replay is None:
            raise ValueError("choose a model for the ghost and open a log first")
        model, replay, horizon = self.ghost_model, self.replay, self.horizon
        t0 = self.cursor if t0 is None else float(t0)

        def job(ctx):
            return rollout_ghost(model, replay, t0, horizon, ctx=ctx)

        job.__name__ = f"ghost from {t0:.2f} s"
        return job

    def accept_ghost(self, ghost: GhostRollout | None) -> None:
        self.ghost = ghost
        self.events.ghost.emit(ghost)
        if ghost is not None:
            worst = float(np.max(ghost.rms)) if ghost.rms.size else 0.0
            self.events.message.emit(
                f"Ghost ({self.ghost_name}) from {ghost.t[0]:.2f} s for {self.horizon:g} s: "
                f"largest rms joint error {worst:.3g}"
            )

    def compute_ghost(self) -> GhostRollout:
        """The ghost computed here and now (scripts and tests; the panel uses :meth:`ghost_job`)."""
        from engine.jobs import NullJobContext

        ghost = self.ghost_job()(NullJobContext())
        self.accept_ghost(ghost)
        return ghost

    # ------------------------------------------------------------------ session
    def to_dict(self) -> dict:
        """What a session keeps: the log's path, its mapping, the cursor, player and ghost settings."""
        return {"path": self.path or None, "mapping": self.rmap.to_dict() if self.rmap else None,
                "cursor": self.cursor, "speed": self.speed, "loop": list(self.loop) if self.loop else None,
                "horizon": self.horizon,
                "ghost": "rigid" if self.ghost_model is not None and self.ghost_model is self.robot else None}

    def from_dict(self, d: dict | None) -> None:
        """Restore :meth:`to_dict` (the robot must be set; the log is read again from its path)."""
        from app.session_fields import finite_list, session_float

        if not d:
            return
        if not isinstance(d, dict):
            raise ValueError("the log replay's part of the session is not an object")
        where = "log replay session"            # every number is checked before anything is applied
        speed = session_float(d, "speed", 0.01, 100.0, 1.0, where)
        horizon = session_float(d, "horizon", 0.01, 60.0, 1.0, where, unit="s")
        cursor = session_float(d, "cursor", -1e9, 1e9, 0.0, where, unit="s")
        loop = finite_list(d, "loop", 2, where) if d.get("loop") else None
        if loop is not None and len(loop) != 2:
            raise ValueError(f"{where} 'loop': expected [start, end] in seconds")
        self.speed, self.horizon = speed, horizon
        path = d.get("path")
        if path and self.robot is not None:
            if not isinstance(path, str):
                raise ValueError(f"{where} 'path': expected a file name")
            rmap = ReplayMapping.from_dict(d["mapping"]) if d.get("mapping") else None
            self.open_file(path, rmap)
            if loop:
                self.set_loop(*loop)
            self.set_cursor(cursor)
            if d.get("ghost") == "rigid":
                self.set_ghost_model("rigid")


def _is_learned(model) -> bool:
    return hasattr(model, "rollout") and hasattr(model, "spec")
