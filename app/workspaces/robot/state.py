"""The Robot workspace's state, without Qt: what the user has loaded, posed, targeted, solved
and simulated, with the undo history of poses (napari's ``components`` layer, at our scale).

The page observes a :class:`RobotState` through plain callbacks (``state.events.q.connect``)
and forwards user gestures to its methods; tests drive it directly. Results are the engine's
dataclasses (IKOutcome from the jobs, Readouts and SimulationResult from engine.robots.simulate).

Events (each ``connect(callback)`` / ``disconnect(callback)``):

- ``robot(loaded)``: a robot was set (q is its neutral pose, no targets, history empty).
- ``q(q)``: the joint positions changed (``(dof,)``, SI units, inside the limits).
- ``targets(targets)``: the IK targets changed (a tuple of TargetSpec): the state owns them, the
  view's gizmos show them and edit them through :meth:`RobotState.set_target_pose`.
- ``end_effector(link)``, ``ik(outcome)``, ``readouts(readouts)``,
  ``simulation(result)``: the named value changed.
- ``pose_requested(q, animate)``: undo/redo/an IK solution asks the view to go to q (the page
  animates and then calls :meth:`RobotState.set_q`).
- ``history()``: undo/redo availability or texts changed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np
import torch
from scipy.spatial.transform import Rotation

from app.widgets.events import Events
from app.widgets.undo import UndoHistory
from app.workspaces.robot.robot_jobs import LoadedRobot, slider_limits
from engine.robots.balance import Balance, balance, contact_points, default_contact_links
from engine.robots.constraints import constraint_marks
from engine.robots.end_effector import default_end_effector
from engine.robots.ik import neutral_configuration
from engine.robots.ik_outcome import IKOutcome, IKRequest
from engine.robots.model_coords import joint_configuration, joint_positions, limited_coordinates
from engine.robots.simulate import Readouts, SimulationResult

__all__ = ["RobotChange", "RobotState", "TargetSpec", "describe_ik"]

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class TargetSpec:
    """An IK target: a link, its world pose (4, 4) and whether only the position counts."""

    link: str
    pose: np.ndarray
    position_only: bool = False


@dataclass(frozen=True)
class RobotChange:
    """One undoable change of the pose (a solve, a reset, a random pose, a drag), of the targets
    (added, moved, removed) or of both (a drag in follow mode); None: that part did not change."""

    text: str
    old_q: np.ndarray | None = None
    new_q: np.ndarray | None = None
    old_targets: tuple | None = None
    new_targets: tuple | None = None
    animate: bool = False


def _quat_matrix(x, y, z, w) -> np.ndarray:
    return Rotation.from_quat([x, y, z, w]).as_matrix()


def _same_targets(a, b) -> bool:
    return len(a) == len(b) and all(x.link == y.link and x.position_only == y.position_only
                                    and np.array_equal(x.pose, y.pose) for x, y in zip(a, b))


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
        self.events = Events("robot", "q", "end_effector", "targets", "ik", "readouts", "simulation",
                             "pose_requested", "history")
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
        self.history = UndoHistory()
        self._edit_start: tuple | None = None     # the targets when a gesture began (begin_target_edit)
        self.contact_links: tuple[str, ...] = ()
        self._foot_points: dict = {}
        self.held_links: tuple[str, ...] = ()       # a floating robot's IK keeps these links where they are
        self.ik_base = "free"                          # ... with its base "free" or "fixed"

    # ------------------------------------------------------------------ robot
    @property
    def model(self):
        return None if self.robot is None else self.robot.model

    @property
    def floating(self) -> bool:
        """True for a floating-base robot: q = [base xyz, base quaternion x y z w, joints]."""
        return self.model is not None and bool(getattr(self.model, "floating", False))

    @property
    def base_size(self) -> int:
        """Entries of q before the joints: 7 for a floating base, else 0."""
        return 7 if self.floating else 0

    @property
    def nv(self) -> int:
        return int(getattr(self.model, "nv", self.model.dof))

    @property
    def joint_q(self) -> np.ndarray:
        """The joints' positions (dof,), without the base: one per slider (a ball joint: its
        rotation vector, rad; :func:`engine.robots.model_coords.joint_positions`)."""
        return self.slider_q(self.q)

    def slider_q(self, q) -> np.ndarray:
        """The joint sliders' values (dof,) at a configuration q (nq,)."""
        qj = torch.as_tensor(np.asarray(q, dtype=float)[self.base_size:])
        return joint_positions(self.model, qj).numpy().copy()

    def full_q(self, joint_q) -> np.ndarray:
        """The configuration with the current base and the given joint positions (dof,: the
        sliders' values, a ball joint's rotation vector turned into its quaternion)."""
        q = self.q.copy()
        x = torch.as_tensor(np.asarray(joint_q, dtype=float).reshape(-1))
        q[self.base_size:] = joint_configuration(self.model, x).numpy()
        return q

    def slider_names(self) -> list[str]:
        """One name per joint slider (dof,): the joint's, a ball joint's three ``name rx/ry/rz``."""
        balls = set(getattr(self.model, "ball_joint_names", ()))
        return [f"{n} {a}" if n in balls else n for n in self.model.joint_names
                for a in (("rx", "ry", "rz") if n in balls else ("",))]

    def set_joint_q(self, joint_q) -> None:
        """Move the joints (dof,), the base staying where it is."""
        self.set_q(self.full_q(joint_q))

    def _standing(self, joints) -> np.ndarray:
        """A floating robot's neutral configuration with these joints, standing on the ground
        plane: base unrotated above the origin, the lowest point of its feet (else its lowest
        link origin) at z = 0."""
        model = self.model
        q = np.asarray(model.neutral().detach().cpu().numpy(), dtype=float).copy()
        q[7:] = joint_configuration(model, torch.as_tensor(np.asarray(joints, dtype=float))).numpy()
        z = self.lowest_contact_z(q)
        if z is None:
            with torch.no_grad():
                z = float(model.forward_kinematics(torch.as_tensor(q)).numpy()[:, 2, 3].min())
        q[2] -= z
        return q

    def _contact_points(self, q=None) -> list:
        feet = {l: self._foot_points[l] for l in self.contact_links if l in self._foot_points}
        return contact_points(self.model, self.q if q is None else q, feet)

    def lowest_contact_z(self, q=None) -> float | None:
        """Height (m) of the lowest point of the contact links' feet at q (None: no contact links)."""
        pts = self._contact_points(q)
        return float(min(p[:, 2].min() for p in pts)) if pts else None

    def set_robot(self, loaded: LoadedRobot) -> None:
        """Show a loaded robot at its neutral pose (clamped into the limits; a floating robot
        standing on the ground); history, targets and results are cleared."""
        self.generation += 1
        self.robot = loaded
        model = loaded.model
        self.lower, self.upper = slider_limits(model)
        if self.floating:       # legged robots and humanoids stand in their published standing pose
            self.contact_links = default_contact_links(model)
            self._foot_points = self._contact_geometry(loaded)
            joints = np.zeros(model.dof) if loaded.standing is None else loaded.standing  # none: joints at 0
            self.neutral = self._standing(np.clip(joints, self.lower, self.upper))
        else:                   # an arm: the middle of its limits (well conditioned, not stretched)
            joints = np.clip(neutral_configuration(model).numpy(), self.lower, self.upper)
            self.neutral = joint_configuration(model, torch.as_tensor(joints)).numpy()
        self.q = self.neutral.copy()
        self.end_effector = default_end_effector(model) if model.link_names else ""
        if not self.floating:
            self.contact_links, self._foot_points = (), {}
        self.held_links, self.ik_base = tuple(self.contact_links), "free"     # feet stay where they stand
        self.targets = ()
        self.last_ik = self.readouts = self.simulation = None
        self.history.clear()
        self._edit_start = None
        self.events.robot.emit(loaded)
        self.events.targets.emit(self.targets)
        self.events.q.emit(self.q)
        self.events.history.emit()

    def joint_types(self) -> list[bool]:
        """For each joint slider: True when it turns (revolute, continuous, a ball's three), False
        when it slides."""
        by_name = {j.name: j for j in self.model.description.joints}
        return [by_name[n].type in ("revolute", "continuous", "ball") for n in self.model.joint_names
                for _ in range(3 if by_name[n].type == "ball" else 1)]

    # ------------------------------------------------------------------ pose
    def set_q(self, q) -> None:
        """The configuration q (nq,: the joints' positions, after the base's 7 numbers for a
        floating robot), SI units, joints clamped into the limits, base quaternion normalised."""
        if self.robot is None:
            return
        q = np.asarray(q, dtype=float).reshape(-1).copy()
        b = self.base_size
        nq = int(getattr(self.model, "nq", b + self.lower.size))
        if q.shape != (nq,):
            n = nq - b
            n_text = (f"{n} joint coordinates (4 per ball joint)" if getattr(self.model, "ball_joint_names", ())
                      else f"{n} joints")
            what = f"a base (7) and {n_text}" if b else n_text
            raise ValueError(f"{self.robot.name} has {what}, got {q.size} values")
        sq, _, rows = limited_coordinates(self.model)
        q[sq] = np.clip(q[sq], self.lower[rows], self.upper[rows])
        if b:
            q[3:7] /= np.linalg.norm(q[3:7]) or 1.0
        for name in getattr(self.model, "ball_joint_names", ()):      # unit quaternions (x y z w)
            s = self.model.joint_coordinates(name)[0]
            q[s] /= np.linalg.norm(q[s]) or 1.0
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

    def constraint_marks(self, q=None) -> list:
        """The robot's constraints as drawn at q (default: the current pose): the engine's
        ConstraintMark of one configuration, as numpy (points (k, 3), frames (2, 3, 3) or None,
        violation a float); [] without constraints."""
        constraints = getattr(self.model.description, "constraints", ()) if self.robot is not None else ()
        if not constraints:
            return []
        q = self.q if q is None else q
        with torch.no_grad():
            marks = constraint_marks(self.model, constraints, torch.as_tensor(np.asarray(q, float)))
        return [replace(m, points=m.points[0].numpy(), violation=float(m.violation[0]),
                        frames=None if m.frames is None else m.frames[0].numpy(),
                        value=None if m.value is None else float(m.value[0])) for m in marks]

    def extent(self) -> float:
        """The robot's size at the current pose (m, at least 0.1): spread of its link origins."""
        pts = np.array([T[:3, 3] for T in self.link_poses().values()])
        return float(max(np.ptp(pts, axis=0).max(), 0.1))

    def push_pose(self, old_q, new_q, text: str, animate: bool = False) -> None:
        """Record a pose change in the history; with ``animate`` the view is asked to go to
        ``new_q`` (a change made without animation is already shown)."""
        change = RobotChange(text, np.array(old_q, float), np.array(new_q, float), animate=animate)
        self.history.push(change)
        self.events.history.emit()
        if animate:
            self.events.pose_requested.emit(change.new_q, True)
        else:
            self.set_q(change.new_q)

    def clear_history(self) -> None:
        self.history.clear()
        self.events.history.emit()

    def undo(self) -> None:
        change = self.history.undo()
        if change is not None:
            self.events.history.emit()
            if change.old_targets is not None:
                self._apply_targets(change.old_targets)
            if change.old_q is not None:
                self.events.pose_requested.emit(change.old_q, False)

    def redo(self) -> None:
        change = self.history.redo()
        if change is not None:
            self.events.history.emit()
            if change.new_targets is not None:
                self._apply_targets(change.new_targets)
            if change.new_q is not None:
                self.events.pose_requested.emit(change.new_q, change.animate)

    # ------------------------------------------------------------------ a floating base
    def base_pose(self) -> np.ndarray:
        """The floating base's world pose (4, 4) (identity for a fixed base)."""
        T = np.eye(4)
        if self.floating:
            x, y, z, w = self.q[3:7]
            T[:3, :3] = _quat_matrix(x, y, z, w)
            T[:3, 3] = self.q[:3]
        return T

    def set_base_pose(self, T) -> None:
        """Move a floating base to the world pose ``T`` (4, 4), the joints staying as they are."""
        if not self.floating:
            raise ValueError(f"{self.robot.name} has a fixed base")
        T = np.asarray(T, dtype=float)
        q = self.q.copy()
        q[:3] = T[:3, 3]
        q[3:7] = Rotation.from_matrix(T[:3, :3]).as_quat()        # x, y, z, w
        self.set_q(q)

    def base_link(self) -> str:
        """The link a floating base moves (the root of the link tree)."""
        return self.model.link_names[0]

    def base_drag_request(self, T, start_q, options=None, overrides=None) -> IKRequest | None:
        """Moving a floating base to ``T`` (4, 4) with links held ("keep in place"): whole-body
        IK with the base link's target at ``T`` and each held link's target at its pose in
        ``start_q`` (the drag's start: the feet stay put, the legs bend; solved from the current
        q, a warm start). None when no link is held (the base then moves rigidly)."""
        if not self.floating:
            raise ValueError(f"{self.robot.name} has a fixed base")
        base = self.base_link()
        held = [link for link in self.held_links if link != base]
        if not held:
            return None
        start = self.link_poses(np.asarray(start_q, dtype=float))
        targets = {base: np.asarray(T, dtype=float)}
        targets.update({link: start[link] for link in held})
        # a leg of fewer than 6 joints (a quadruped's point foot) cannot keep the foot's
        # orientation too once the base turns: its position is held
        point = frozenset(link for link in held if self._chain_joints(link) < 6)
        return IKRequest(targets=targets, q0=self.q.copy(), position_only=point, options=options,
                         overrides=dict(overrides or {}), serial=self.generation, hold=(), base="free")

    def _chain_joints(self, link: str) -> int:
        """How many moving joints lie between the base and ``link``."""
        by_child = {j.child: j for j in self.model.description.joints}
        n = 0
        while link in by_child:
            j = by_child[link]
            n += j.type not in ("fixed",)
            link = j.parent
        return n

    def drag_base(self, T, start_q, options=None, overrides=None) -> None:
        """A drag of the base gizmo to ``T`` that began at ``start_q``, solved here (the page
        solves the same request in a job): the held links stay where they were, or without
        held links the robot moves rigidly (:meth:`set_base_pose`)."""
        request = self.base_drag_request(T, start_q, options, overrides)
        if request is None:
            self.set_base_pose(T)
            return
        from engine.robots.ik_outcome import solve_targets

        self.set_q(solve_targets(self.model, request).q)

    def _contact_geometry(self, loaded) -> dict:
        """{contact link: (k, 4) points of its foot in its frame, homogeneous}: the vertices of
        its mesh, or of the nearest ancestor through fixed joints that has one (a sole frame on
        an ankle); its origin when there is none."""
        desc = loaded.model.description
        parent = {j.child: j for j in desc.joints}
        meshes = getattr(loaded.geometry, "links", {}) or {}
        out = {}
        for link in self.contact_links:
            T, name, pts = np.eye(4), link, None
            while pts is None:
                g = meshes.get(name)
                part = None if g is None else (g.collision if g.collision is not None else g.visual)
                if part is not None:
                    v = np.asarray(part.vertices, float)[:: max(1, len(part.vertices) // 1500)]
                    pts = np.linalg.solve(T, np.column_stack([v, np.ones(len(v))]).T).T
                    break
                j = parent.get(name)
                if j is None or j.movable:
                    break
                T = j.origin.matrix() @ T          # pose of `link` in the parent's frame
                name = j.parent
            out[link] = pts if pts is not None else np.array([[0.0, 0.0, 0.0, 1.0]])
        return out

    def set_contact_links(self, links) -> None:
        unknown = [l for l in links if l not in self.model.link_names]
        if unknown:
            raise ValueError(f"{self.robot.name} has no link {unknown[0]!r}")
        self.contact_links = tuple(links)
        self._foot_points = self._contact_geometry(self.robot)
        self.events.q.emit(self.q.copy())

    def balance(self) -> Balance | None:
        """The centre of mass, its ground projection and the support polygon of
        ``contact_links`` at the current pose (None for a fixed base or no contact links)."""
        if not self.floating or not self.contact_links:
            return None
        return balance(self.model, self.q, {l: self._foot_points[l] for l in self.contact_links
                                            if l in self._foot_points})

    # ------------------------------------------------------------------ targets and IK
    def set_end_effector(self, link: str) -> None:
        if link and self.model is not None and link not in self.model.link_names:
            raise ValueError(f"{self.robot.name} has no link {link!r}")
        if link != self.end_effector:
            self.end_effector = link
            self.events.end_effector.emit(link)

    @staticmethod
    def _specs(targets) -> tuple[TargetSpec, ...]:
        return tuple(TargetSpec(t.link, np.array(t.pose, float), bool(t.position_only)) for t in targets)

    def _apply_targets(self, targets: tuple) -> None:
        self.targets = targets
        self.events.targets.emit(self.targets)

    def _edit_targets(self, targets, text: str | None) -> None:
        """Make ``targets`` the targets; an undoable step named ``text`` (None: not recorded, a
        gesture under way: :meth:`end_target_edit` records it)."""
        new = self._specs(targets)
        if _same_targets(new, self.targets):
            return
        old = self.targets
        self._apply_targets(new)
        if text is not None and self._edit_start is None:
            self.history.push(RobotChange(text, old_targets=old, new_targets=new))
            self.events.history.emit()

    def target(self, link: str) -> TargetSpec | None:
        """The target on ``link`` (None when it has none)."""
        return next((t for t in self.targets if t.link == link), None)

    def _check_link(self, link: str) -> None:
        if self.model is None or link not in self.model.link_names:
            raise ValueError(f"no link named {link!r} in this robot")

    def set_targets(self, targets, text: str | None = "edit targets") -> None:
        """The IK targets (TargetSpec, or anything with link, pose and position_only), as one
        undoable step named ``text`` (None: not recorded)."""
        self._edit_targets(targets, text)

    def add_target(self, link: str, pose=None, position_only: bool = False) -> TargetSpec:
        """Add (or replace) the target of ``link`` at ``pose`` (4, 4) (default: the link's
        current pose); undoable. ValueError for a link the robot does not have."""
        self._check_link(link)
        pose = self.link_pose(link) if pose is None else np.asarray(pose, float)
        spec = TargetSpec(link, np.array(pose, float), bool(position_only))
        self._edit_targets([t for t in self.targets if t.link != link] + [spec], "add target")
        return self.target(link)

    def remove_target(self, link: str) -> None:
        """Remove the target of ``link`` (undoable; nothing when it has none)."""
        self._edit_targets([t for t in self.targets if t.link != link], "remove target")

    def clear_targets(self) -> None:
        self._edit_targets((), "clear targets")

    def set_target_pose(self, link: str, pose, text: str | None = "move target") -> None:
        """Move the target of ``link`` to ``pose`` (4, 4, world, m); undoable as ``text`` (None,
        or inside :meth:`begin_target_edit`/:meth:`end_target_edit`: one step for the gesture)."""
        if self.target(link) is None:
            raise ValueError(f"no target on link {link!r}")
        self._edit_targets(
            [
                TargetSpec(t.link, np.array(pose, float), t.position_only) if t.link == link else t
                for t in self.targets
            ],
            text,
        )

    def set_target_position_only(self, link: str, position_only: bool) -> None:
        """Whether only the position of ``link``'s target counts (undoable)."""
        if self.target(link) is None:
            raise ValueError(f"no target on link {link!r}")
        self._edit_targets(
            [TargetSpec(t.link, t.pose, bool(position_only)) if t.link == link else t for t in self.targets],
            "position only" if position_only else "position and orientation",
        )

    def begin_target_edit(self) -> None:
        """A gesture (a gizmo drag) begins: its target moves are one undo step (end_target_edit)."""
        self._edit_start = self.targets

    def end_target_edit(self, text: str = "move target", old_q=None) -> None:
        """The gesture ends: one undoable step from the targets when it began to now; with
        ``old_q`` (follow mode) the pose change since then joins the same step."""
        start, self._edit_start = self._edit_start, None
        if start is None:
            return
        moved = not _same_targets(start, self.targets)
        posed = old_q is not None and not np.array_equal(np.asarray(old_q, float), self.q)
        if not (moved or posed):
            return
        self.history.push(RobotChange(text, np.array(old_q, float) if posed else None,
                                      self.q.copy() if posed else None,
                                      start if moved else None, self.targets if moved else None))
        self.events.history.emit()

    def set_held_links(self, links) -> None:
        """The links a floating robot's IK keeps in place (feet, a hand on a rail...); ValueError
        for a link the robot does not have."""
        links = tuple(dict.fromkeys(links))
        if self.model is not None:
            unknown = [l for l in links if l not in self.model.link_names]
            if unknown:
                raise ValueError(f"{', '.join(unknown)}: no such link in {self.model.name!r}")
        self.held_links = links

    def set_ik_base(self, base: str) -> None:
        """A floating robot's base during IK: "free" (it moves with the solve) or "fixed"."""
        if base not in ("free", "fixed"):
            raise ValueError(f"the base is 'free' or 'fixed', not {base!r}")
        self.ik_base = base

    def ik_request(self, options=None, overrides=None) -> IKRequest:
        """The request for a solve of every target from the current pose; ValueError when
        there is nothing to solve."""
        if self.robot is None:
            raise ValueError("No robot is loaded.")
        if not self.targets:
            raise ValueError("Add a target first (pick an end effector, then Add target).")
        if self.model.dof == 0:
            raise ValueError("This robot has no joints to move.")
        targets = {t.link: t.pose for t in self.targets}
        hold = tuple(l for l in self.held_links if l not in targets) if self.floating else ()
        return IKRequest(targets=targets, q0=self.q.copy(),
                         position_only=frozenset(t.link for t in self.targets if t.position_only),
                         options=options, overrides=dict(overrides or {}), serial=self.generation,
                         hold=hold, base=self.ik_base if self.floating else "free")

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
            "xacro_args": dict(self.robot.xacro_args) if self.robot else {},
            "tree": self.robot.tree if self.robot else None,    # an MJCF scene's chosen kinematic tree
            "q": self.q.tolist() if self.robot else None,
            "targets": [{"link": t.link, "pose": t.pose.tolist(), "position_only": t.position_only}
                        for t in self.targets],
            "held_links": list(self.held_links),
            "ik_base": self.ik_base,
        }
