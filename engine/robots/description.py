"""Immutable description of a robot: what a URDF says, validated, nothing computed.

A :class:`RobotDescription` is produced by :func:`engine.robots.urdf.load_urdf` (or
``parse_urdf_string``) and consumed by :class:`engine.robots.model.RobotModel` (dynamics)
and the 3D viewer (visuals, collisions). All values are plain Python floats and tuples
(SI units: metres, radians, kilograms, kg m^2, N m s/rad), so a description is hashable,
picklable-free, and safe to share between threads.

Frames follow URDF: a joint's child link frame is ``T_parent_link @ origin @ motion(q)``,
where ``motion`` rotates about (revolute, continuous) or translates along (prismatic) the
joint ``axis`` given in the joint frame. An ``Inertial`` holds the mass, the centre of mass
frame (``origin``, in the link frame) and the rotational inertia about the centre of mass
expressed in that frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from engine.robots.constraints import Constraint

__all__ = [
    "MOVABLE_JOINT_TYPES",
    "SUPPORTED_JOINT_TYPES",
    "Collision",
    "Geometry",
    "Inertial",
    "Joint",
    "Limit",
    "Link",
    "Mimic",
    "Origin",
    "RobotDescription",
    "Visual",
    "massless_moving_subtrees",
    "rpy_to_matrix",
]

# "ball": a 3-DoF spherical joint (MJCF ``ball``, Pinocchio's JointModelSpherical); URDF has none.
# Its configuration is a unit quaternion (x, y, z, w) of the child frame in the joint frame, its
# velocity the child's angular velocity in the child frame (rad/s); ``axis`` is unused
MOVABLE_JOINT_TYPES = ("revolute", "continuous", "prismatic", "ball")
SUPPORTED_JOINT_TYPES = MOVABLE_JOINT_TYPES + ("fixed",)


def rpy_to_matrix(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z) to a 3x3 rotation matrix: Rz(y) Ry(p) Rx(r)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


@dataclass(frozen=True)
class Origin:
    """A rigid transform: translation ``xyz`` (m) and roll-pitch-yaw ``rpy`` (rad)."""

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def rotation(self) -> np.ndarray:
        return rpy_to_matrix(self.rpy)

    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous matrix."""
        T = np.eye(4)
        T[:3, :3] = self.rotation()
        T[:3, 3] = self.xyz
        return T


@dataclass(frozen=True)
class Inertial:
    """Mass (kg), centre-of-mass frame in the link frame, inertia (kg m^2) about the CoM.

    ``inertia`` is ``(ixx, ixy, ixz, iyy, iyz, izz)`` in the ``origin`` frame, as in URDF.
    """

    mass: float = 0.0
    origin: Origin = field(default_factory=Origin)
    inertia: tuple[float, float, float, float, float, float] = (0.0,) * 6

    def inertia_matrix(self) -> np.ndarray:
        """3x3 rotational inertia about the CoM, in the ``origin`` frame."""
        ixx, ixy, ixz, iyy, iyz, izz = self.inertia
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)

    def inertia_in_link_frame(self) -> np.ndarray:
        """3x3 rotational inertia about the CoM, with axes of the link frame."""
        R = self.origin.rotation()
        return R @ self.inertia_matrix() @ R.T


@dataclass(frozen=True)
class Geometry:
    """A visual or collision shape. ``kind`` is box | cylinder | sphere | capsule | mesh.

    ``size`` (box, m), ``radius``/``length`` (cylinder, sphere, capsule), ``filename`` (the
    URI as written), ``path`` (the resolved file, or None when it cannot be found) and
    ``scale`` (mesh).
    """

    kind: str
    size: tuple[float, float, float] | None = None
    radius: float | None = None
    length: float | None = None
    filename: str | None = None
    path: str | None = None
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class Visual:
    name: str | None
    origin: Origin
    geometry: Geometry
    rgba: tuple[float, float, float, float] | None = None
    material: str | None = None


@dataclass(frozen=True)
class Collision:
    name: str | None
    origin: Origin
    geometry: Geometry


@dataclass(frozen=True)
class Limit:
    """Joint limits: position (rad or m), velocity (rad/s or m/s), effort (N m or N).

    Missing values are +-inf (continuous joints have no position limits).
    """

    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf


@dataclass(frozen=True)
class Mimic:
    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: Origin = field(default_factory=Origin)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    limit: Limit = field(default_factory=Limit)
    damping: float = 0.0
    friction: float = 0.0
    mimic: Mimic | None = None
    armature: float = 0.0  # rotor inertia (kg m^2 or kg) added to the mass matrix's diagonal, as in MJCF
    # MJCF ``actuatorgravcomp``: the gravity compensation on this joint counts as actuation
    # (MuJoCo's qfrc_actuator) instead of a passive force (qfrc_passive); the total is the same
    actuator_gravcomp: bool = False

    @property
    def movable(self) -> bool:
        return self.type in MOVABLE_JOINT_TYPES


@dataclass(frozen=True)
class Link:
    name: str
    inertial: Inertial | None = None
    visuals: tuple[Visual, ...] = ()
    collisions: tuple[Collision, ...] = ()
    # MJCF body ``gravcomp``: the fraction of this link's weight cancelled by an upward force at
    # its centre of mass (0: none, 1: all); see :mod:`engine.robots.gravcomp`
    gravcomp: float = 0.0


@dataclass(frozen=True)
class RobotDescription:
    """A validated kinematic tree. ``links`` and ``joints`` keep the file's order."""

    name: str
    links: tuple[Link, ...]
    joints: tuple[Joint, ...]
    root: str
    source: str | None = None
    # True: the root link is attached to the world by a free-flyer joint (Pinocchio's
    # JointModelFreeFlyer convention: q = [xyz, quaternion x y z w, joints], v = [v, w in base, joints]).
    floating_base: bool = False
    # the file's gravity (m/s^2, world frame): URDF has none (-9.81 z), MJCF's <option gravity>
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    # what the file holds that this description does not model, one plain line per kind
    # (MJCF tendons, equality constraints, actuators, contacts...): said once in a warning at load,
    # listed by `robot info` and shown by the app
    not_modelled: tuple[str, ...] = ()
    # what the loader accepted although it is not physically consistent (inertials kept as written,
    # joints that move no mass, a mimic joint whose master is absent), one plain line per kind:
    # said once in a warning at load, listed by `robot info` and shown by the app
    warnings: tuple[str, ...] = ()
    # holonomic constraints closing loops in the tree (MJCF <equality connect/weld/tendon>):
    # :mod:`engine.robots.constraints`; forward dynamics and simulation honour them
    # (:mod:`engine.robots.constrained_dynamics`)
    constraints: tuple[Constraint, ...] = ()
    # the kinematic trees of the file when it has several (MJCF: a robot and free objects), largest
    # first, as (name, summary); a user picks one with load_mjcf(path, tree=name)
    trees: tuple[tuple[str, str], ...] = ()

    # name -> object indices, built on first use (a frozen dataclass still has a __dict__, and
    # cached_property writes there, not through __setattr__; not fields: eq, hash, replace ignore them)
    @cached_property
    def _links_by_name(self) -> dict[str, Link]:
        out: dict[str, Link] = {}
        for link in self.links:
            out.setdefault(link.name, link)
        return out

    @cached_property
    def _joints_by_name(self) -> dict[str, Joint]:
        out: dict[str, Joint] = {}
        for joint in self.joints:
            out.setdefault(joint.name, joint)
        return out

    @cached_property
    def _joints_by_child(self) -> dict[str, Joint]:
        out: dict[str, Joint] = {}
        for joint in self.joints:
            out.setdefault(joint.child, joint)
        return out

    def link(self, name: str) -> Link:
        try:
            return self._links_by_name[name]
        except (KeyError, TypeError):
            raise KeyError(f"no link named {name!r} in robot {self.name!r}") from None

    def joint(self, name: str) -> Joint:
        try:
            return self._joints_by_name[name]
        except (KeyError, TypeError):
            raise KeyError(f"no joint named {name!r} in robot {self.name!r}") from None

    def parent_joint(self, link: str) -> Joint | None:
        """The joint whose child is ``link`` (None for the root)."""
        try:
            return self._joints_by_child.get(link)
        except TypeError:
            return None

    @property
    def movable_joints(self) -> tuple[Joint, ...]:
        return tuple(j for j in self.joints if j.movable)

    @property
    def total_mass(self) -> float:
        return float(sum(l.inertial.mass for l in self.links if l.inertial is not None))

    @property
    def base_dir(self) -> Path | None:
        return Path(self.source).parent if self.source else None

    def with_link_inertial(self, link: str, inertial: Inertial | None) -> RobotDescription:
        """A copy with ``link``'s inertial replaced (not validated: use the model's checks)."""
        self.link(link)
        links = tuple(replace(l, inertial=inertial) if l.name == link else l for l in self.links)
        return replace(self, links=links)

    def with_joint_dynamics(self, joint: str, damping: float | None = None,
                            friction: float | None = None) -> RobotDescription:
        """A copy with ``joint``'s damping and/or friction replaced."""
        self.joint(joint)
        joints = tuple(
            replace(j, damping=j.damping if damping is None else float(damping),
                    friction=j.friction if friction is None else float(friction))
            if j.name == joint else j for j in self.joints)
        return replace(self, joints=joints)


def massless_moving_subtrees(
    desc: RobotDescription, limit: int | None = None, links: bool = True
) -> list[tuple[str, tuple[str, ...]]]:
    """The movable joints that move nothing with mass or rotational inertia: ``[(joint name,
    (links it moves...)), ...]`` in file order, at most ``limit`` of them (None: all). The mass
    matrix is singular along such a joint (forward dynamics would divide by zero), so the model
    refuses forward dynamics along them (the URDF loader names them in a warning; ``strict=True``
    refuses them); a prismatic joint also needs mass (rotational inertia alone does not resist a
    translation).

    Linear in the number of links: one depth-first pass numbers the links so that every subtree
    is a contiguous run, and one pass back sums each subtree's mass and inertia from its
    children's sums. Only the reported joints' link lists are built (pass ``limit=1`` when only
    the first is shown, or ``links=False`` for the joint names alone, with empty link tuples: an
    all-massless chain of n links has n nested bad joints).
    """
    children: dict[str, list[str]] = {}
    is_child = set()
    for j in desc.joints:
        children.setdefault(j.parent, []).append(j.child)
        is_child.add(j.child)
    order: list[str] = []                    # depth-first, children in file order
    position: dict[str, int] = {}
    for top in [l.name for l in desc.links if l.name not in is_child] + [j.parent for j in desc.joints]:
        stack = [top]
        while stack:
            name = stack.pop()
            if name in position:
                continue
            position[name] = len(order)
            order.append(name)
            stack.extend(reversed(children.get(name, [])))
    inertial = {l.name: l.inertial for l in desc.links}
    mass = [0.0] * len(order)
    rot = [0.0] * len(order)                 # sum of |inertia entries|: zero iff every inertia is zero
    end = list(range(1, len(order) + 1))     # subtree of order[i] = order[i:end[i]]
    for i in range(len(order) - 1, -1, -1):
        own = inertial.get(order[i])
        if own is not None:
            mass[i] += own.mass
            rot[i] += sum(abs(v) for v in own.inertia)
        for c in children.get(order[i], ()):
            k = position[c]
            if k > i:                        # a child reached first from elsewhere is not in this subtree
                mass[i] += mass[k]
                rot[i] += rot[k]
                end[i] = max(end[i], end[k])
    bad: list[tuple[str, tuple[str, ...]]] = []
    for j in desc.joints:
        if limit is not None and len(bad) >= limit:
            break
        if not j.movable:
            continue
        k = position[j.child]
        if mass[k] <= 0.0 and (j.type == "prismatic" or rot[k] <= 0.0):
            bad.append((j.name, tuple(order[k:end[k]]) if links else ()))
    return bad
