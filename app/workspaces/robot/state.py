"""The Robot workspace's state, without Qt: what the user has loaded, posed, targeted, solved
and simulated, with the undo history of poses (napari's ``components`` layer, at our scale).

The page observes a :class:`RobotState` through plain callbacks (``state.events.q.connect``)
and forwards user gestures to its methods; tests drive it directly. Results are the engine's
dataclasses (IKOutcome from the jobs, Readouts and SimulationResult from engine.robots.simulate).

Events (each ``connect(callback)`` / ``disconnect(callback)``):

- ``robot(loaded)``: a robot was set (q is its neutral pose, history empty).
- ``q(q)``: the joint positions changed (``(dof,)``, SI units, inside the limits).
- ``end_effector(link)``, ``targets(targets)``, ``ik(outcome)``, ``readouts(readouts)``,
  ``simulation(result)``: the named value changed.
- ``pose_requested(q, animate)``: undo/redo/an IK solution asks the view to go to q (the page
  animates and then calls :meth:`RobotState.set_q`).
- ``history()``: undo/redo availability or texts changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from app.workspaces.robot.robot_jobs import IKOutcome, IKRequest, LoadedRobot, slider_limits
from engine.robots.ik import neutral_configuration
from engine.robots.simulate import Readouts, SimulationResult

__all__ = ["Event", "PoseChange", "PoseHistory", "RobotState", "TargetSpec", "default_end_effector",
           "describe_ik"]

log = logging.getLogger(__name__)

END_EFFECTOR_HINTS = ("tcp", "end_effector", "ee_link", "tool", "grasp", "hand", "flange", "tip")


class Event:
    """A plain observer list: ``connect(cb)``, ``disconnect(cb)``, ``emit(*args)``."""

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        for cb in list(self._callbacks):
            cb(*args)


class _Events:
    def __init__(self) -> None:
        for name in ("robot", "q", "end_effector", "targets", "ik", "readouts", "simulation",
                     "pose_requested", "history"):
            setattr(self, name, Event())


@dataclass(frozen=True)
class TargetSpec:
    """An IK target: a link, its world pose (4, 4) and whether only the position counts."""

    link: str
    pose: np.ndarray
    position_only: bool = False


@dataclass(frozen=True)
class PoseChange:
    """One undoable change of the joint positions (a solve, a reset, a random pose, a drag)."""

    old_q: np.ndarray
    new_q: np.ndarray
    text: str
    animate: bool = False


class PoseHistory:
    """A linear undo history of :class:`PoseChange` (a new change drops the redo branch)."""

    def __init__(self) -> None:
        self._changes: list[PoseChange] = []
        self._index = 0          # changes[:index] are done

    def push(self, change: PoseChange) -> None:
        del self._changes[self._index:]
        self._changes.append(change)
        self._index += 1

    def clear(self) -> None:
        self._changes.clear()
        self._index = 0

    @property
    def can_undo(self) -> bool:
        return self._index > 0

    @property
    def can_redo(self) -> bool:
        return self._index < len(self._changes)

    @property
    def undo_text(self) -> str:
        return self._changes[self._index - 1].text if self.can_undo else ""

    @property
    def redo_text(self) -> str:
        return self._changes[self._index].text if self.can_redo else ""

    def undo(self) -> PoseChange | None:
        if not self.can_undo:
            return None
        self._index -= 1
        return self._changes[self._index]

    def redo(self) -> PoseChange | None:
        if not self.can_redo:
            return None
        self._index += 1
        return self._changes[self._index - 1]

    def __len__(self) -> int:
        return len(self._changes)


def default_end_effector(model) -> str:
    """The tool of an arm: the deepest link named like one (tcp, ee_link, tool, hand...),
    else the deepest link of the tree (the last one on a tie)."""
    desc = model.description
    parent = {j.child: j.parent for j in desc.joints}

    def depth(link):
        d = 0
        while link in parent:
            link = parent[link]
            d += 1
        return d

    links = list(model.link_names)
    for hint in END_EFFECTOR_HINTS:
        named = [l for l in links if hint in l.lower()]
        if named:
            return max(reversed(named), key=depth)
    return max(reversed(links), key=depth)


def describe_ik(out: IKOutcome) -> tuple[str, bool]:
    """A sentence for the user about a solve, and whether every target was reached."""
    parts = []
    for link, (perr, rerr) in out.per_target.items():
        r = "" if rerr is None else f", {np.degrees(rerr):.2f}°"
        parts.append(f"{link}: {1000 * perr:.2f} mm{r}")
    detail = "; ".join(parts)
    if out.converged:
        return f"Reached: {detail}", True
    return (f"Out of reach: the closest pose within the joint limits misses the target"
            f"{'s' if len(out.per_target) > 1 else ''} ({detail})."), False


class RobotState:
    """The Robot workspace without widgets (see the module docstring for its events)."""

    def __init__(self) -> None:
        self.events = _Events()
        self.robot: LoadedRobot | None = None
        self.generation = 0            # bumps with every robot; stale job results are dropped
        self.q = np.zeros(0)
        self.lower = self.upper = np.zeros(0)
        self.neutral = np.zeros(0)
        self.end_effector = ""
        self.targets: tuple[TargetSpec, ...] = ()
        self.last_ik: IKOutcome | None = None
        self.readouts: Readouts | None = None
        self.simulation: SimulationResult | None = None
        self.history = PoseHistory()

    # ------------------------------------------------------------------ robot
    @property
    def model(self):
        return None if self.robot is None else self.robot.model

    def set_robot(self, loaded: LoadedRobot) -> None:
        """Show a loaded robot at its neutral pose (clamped into the limits); history, targets
        and results are cleared."""
        self.generation += 1
        self.robot = loaded
        model = loaded.model
        self.lower, self.upper = slider_limits(model)
        self.neutral = np.clip(neutral_configuration(model).numpy(), self.lower, self.upper)
        self.q = self.neutral.copy()
        self.end_effector = default_end_effector(model) if model.link_names else ""
        self.targets = ()
        self.last_ik = self.readouts = self.simulation = None
        self.history.clear()
        self.events.robot.emit(loaded)
        self.events.q.emit(self.q)
        self.events.history.emit()

    def joint_types(self) -> list[bool]:
        """For each joint of q: True when it turns (revolute, continuous), False when it slides."""
        by_name = {j.name: j for j in self.model.description.joints}
        return [by_name[n].type in ("revolute", "continuous") for n in self.model.joint_names]

    # ------------------------------------------------------------------ pose
    def set_q(self, q) -> None:
        """Joint positions q (dof,), SI units, clamped into the limits."""
        if self.robot is None:
            return
        q = np.asarray(q, dtype=float).reshape(-1)
        if q.shape != self.lower.shape:
            raise ValueError(f"{self.robot.name} has {self.lower.size} joints, got {q.size} values")
        q = np.clip(q, self.lower, self.upper)
        if np.array_equal(q, self.q):
            return
        self.q = q
        self.events.q.emit(self.q.copy())

    def link_poses(self, q=None) -> dict:
        """{link: (4, 4) world pose} at q (default: the current pose)."""
        q = self.q if q is None else q
        with torch.no_grad():
            poses = self.model.forward_kinematics(torch.as_tensor(np.asarray(q, float))).numpy()
        return dict(zip(self.model.link_names, poses))

    def link_pose(self, link: str, q=None) -> np.ndarray:
        q = self.q if q is None else q
        with torch.no_grad():
            return self.model.link_pose(torch.as_tensor(np.asarray(q, float)), link).numpy()

    def extent(self) -> float:
        """The robot's size at the current pose (m, at least 0.1): spread of its link origins."""
        pts = np.array([T[:3, 3] for T in self.link_poses().values()])
        return float(max(np.ptp(pts, axis=0).max(), 0.1))

    def push_pose(self, old_q, new_q, text: str, animate: bool = False) -> None:
        """Record a pose change in the history; with ``animate`` the view is asked to go to
        ``new_q`` (a change made without animation is already shown)."""
        change = PoseChange(np.array(old_q, float), np.array(new_q, float), text, animate)
        self.history.push(change)
        self.events.history.emit()
        if animate:
            self.events.pose_requested.emit(change.new_q, True)
        else:
            self.set_q(change.new_q)

    def undo(self) -> None:
        change = self.history.undo()
        if change is not None:
            self.events.history.emit()
            self.events.pose_requested.emit(change.old_q, False)

    def redo(self) -> None:
        change = self.history.redo()
        if change is not None:
            self.events.history.emit()
            self.events.pose_requested.emit(change.new_q, change.animate)

    # ------------------------------------------------------------------ targets and IK
    def set_end_effector(self, link: str) -> None:
        if link and self.model is not None and link not in self.model.link_names:
            raise ValueError(f"{self.robot.name} has no link {link!r}")
        if link != self.end_effector:
            self.end_effector = link
            self.events.end_effector.emit(link)

    def set_targets(self, targets) -> None:
        """The IK targets (TargetSpec, or anything with link, pose and position_only)."""
        self.targets = tuple(TargetSpec(t.link, np.array(t.pose, float), bool(t.position_only)) for t in targets)
        self.events.targets.emit(self.targets)

    def ik_request(self, options=None, overrides=None) -> IKRequest:
        """The request for a solve of every target from the current pose; ValueError when
        there is nothing to solve."""
        if self.robot is None:
            raise ValueError("No robot is loaded.")
        if not self.targets:
            raise ValueError("Add a target first (pick an end effector, then Add target).")
        if self.model.dof == 0:
            raise ValueError("This robot has no joints to move.")
        return IKRequest(targets={t.link: t.pose for t in self.targets}, q0=self.q.copy(),
                         position_only=frozenset(t.link for t in self.targets if t.position_only),
                         options=options, overrides=dict(overrides or {}), serial=self.generation)

    def accept_ik(self, out: IKOutcome, start_q=None) -> bool:
        """A solve's result: recorded and, from ``start_q`` (an Optimise), an undoable animated
        move; without ``start_q`` (follow mode) the pose is set at once. False when stale."""
        if out.serial != self.generation:
            return False
        self.last_ik = out
        self.events.ik.emit(out)
        if start_q is None:
            self.set_q(out.q)
        else:
            self.push_pose(start_q, out.q, "IK solve", animate=True)
        return True

    # ------------------------------------------------------------------ readouts and simulation
    def accept_readouts(self, r: Readouts) -> bool:
        if r.serial != self.generation:
            return False
        self.readouts = r
        self.events.readouts.emit(r)
        return True

    def accept_simulation(self, result: SimulationResult, generation: int) -> bool:
        if generation != self.generation:
            return False
        self.simulation = result
        self.events.simulation.emit(result)
        return True

    # ------------------------------------------------------------------ sessions
    def session_state(self) -> dict:
        return {
            "robot": self.robot.source if self.robot else None,
            "q": self.q.tolist() if self.robot else None,
            "targets": [{"link": t.link, "pose": t.pose.tolist(), "position_only": t.position_only}
                        for t in self.targets],
        }
