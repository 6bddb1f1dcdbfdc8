"""The robot a model or an identification starts from: a library name, or a URDF, xacro or MJCF
path, split into its rigid body and its per-joint friction and actuation.

:func:`load_rigid_body` loads the robot (:func:`engine.robots.library.load_robot`) and returns a
:class:`RigidBodyStart`: ``model``, a :class:`~engine.robots.model.RobotModel` whose movable
joints carry no damping, friction or armature (the rigid body alone), and ``friction``, those
per-joint values (``{kind: (n,) floats}`` in the model's joint order, kinds of
:data:`~engine.models.joint_friction.FRICTION_KINDS`) for a
:class:`~engine.models.joint_friction.JointFriction`, so nothing is counted twice.

Where the values come from: URDF ``<dynamics damping= friction=>`` (``friction`` is the Coulomb
friction, N m), our URDF extension ``<dynamics armature=>`` (MJCF: ``damping``,
``frictionloss``, ``armature``), and the *actuation file* beside the robot file, which takes
precedence: ``<robot file stem>.actuation.json``::

    {"format": "lagrange-joint-actuation", "version": 1,
     "coulomb_velocity_scale": 0.05,                 # v_s of tanh(qd / v_s), rad/s
     "joints": {"joint1": {"damping": 0.3,           # N m s/rad
                           "coulomb": 0.2,           # N m
                           "armature": 0.01,         # kg m^2
                           "offset": -0.05}, ...}}   # N m

URDF has no field for a torque offset or for the smooth sign's velocity scale (and only our
loader reads the armature attribute), so identification writes this file beside the URDF it
saves (:func:`write_actuation`) and every load through here reads it back. A joint the file
does not name keeps the robot file's values; a name that is not a movable joint is refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from engine.io import atomic_write_text
from engine.models.joint_friction import COULOMB_VELOCITY_SCALE, FRICTION_KINDS

if TYPE_CHECKING:
    from engine.robots.model import RobotModel

__all__ = ["ACTUATION_FORMAT", "RigidBodyStart", "actuation_path", "actuation_terms", "load_rigid_body",
           "read_actuation",
           "split_rigid_body", "write_actuation"]

ACTUATION_FORMAT = "lagrange-joint-actuation"


def actuation_path(robot_file: str | Path) -> Path:
    """The actuation file beside a robot file: ``arm.urdf`` -> ``arm.actuation.json``."""
    p = Path(robot_file)
    return p.with_name(p.name.split(".")[0] + ".actuation.json")


@dataclass
class RigidBodyStart:
    """A robot split for learning (module doc): ``model`` the rigid body, ``friction`` the
    per-joint starting values ``{kind: [n floats]}``, ``velocity_scale`` v_s (rad/s),
    ``path`` the robot file, ``notes`` plain sentences (e.g. which actuation file was read)."""

    model: RobotModel
    friction: dict[str, list[float]]
    velocity_scale: float
    path: Path
    notes: list[str] = field(default_factory=list)


def read_actuation(path: str | Path, joint_names: list[str]) -> tuple[dict[str, dict[str, float]], float]:
    """``({joint: {kind: value}}, v_s)`` from an actuation file; ``ValueError`` naming the file
    and the field for anything malformed (no pickle, plain JSON)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable actuation file ({exc}); fix or delete it") from None
    if not isinstance(data, dict) or data.get("format") != ACTUATION_FORMAT:
        raise ValueError(f"{path}: 'format' must be {ACTUATION_FORMAT!r}; this is not an actuation file")
    v_s = data.get("coulomb_velocity_scale", COULOMB_VELOCITY_SCALE)
    if not isinstance(v_s, (int, float)) or not math.isfinite(v_s) or v_s <= 0:
        raise ValueError(f"{path}: 'coulomb_velocity_scale' must be a positive number (rad/s), got {v_s!r}")
    joints = data.get("joints")
    if not isinstance(joints, dict):
        raise ValueError(f"{path}: 'joints' must map joint names to {{kind: value}}")
    out: dict[str, dict[str, float]] = {}
    for name, values in joints.items():
        if name not in joint_names:
            raise ValueError(f"{path}: joint {name!r} is not a movable joint of the robot "
                             f"({', '.join(joint_names)}); rename or remove it")
        if not isinstance(values, dict):
            raise ValueError(f"{path}: joints[{name!r}] must be an object of {', '.join(FRICTION_KINDS)}")
        out[name] = {}
        for kind, v in values.items():
            if kind not in FRICTION_KINDS:
                raise ValueError(f"{path}: joints[{name!r}]: unknown kind {kind!r}; expected "
                                 f"{', '.join(FRICTION_KINDS)}")
            if not isinstance(v, (int, float)) or not math.isfinite(v) or (kind != "offset" and v < 0):
                raise ValueError(f"{path}: joints[{name!r}][{kind!r}] must be a finite number"
                                 f"{'' if kind == 'offset' else ' >= 0'}, got {v!r}")
            out[name][kind] = float(v)
    return out, float(v_s)


def actuation_terms(model, robot_file: str | Path, notes: list[str]):
    """The :class:`~engine.robots.simulate.JointTerms` of the actuation file beside ``robot_file``
    (an identified robot's damping, Coulomb friction, armature and offset), so that a simulation
    of it is the identified model; None without one. A malformed file is one line in ``notes``
    (the robot file's own terms are used then); a file found adds a line naming it."""
    from engine.robots.simulate import JointTerms

    side = actuation_path(robot_file)
    if not side.is_file():
        return None
    try:
        joints, v_s = read_actuation(side, list(model.joint_names))
    except ValueError as exc:
        notes.append(f"not simulated with its actuation file: {exc}")
        return None
    notes.append(f"simulated with the joint friction and actuation of {side.name}")
    return JointTerms.with_actuation(model, joints, v_s)


def write_actuation(path: str | Path, joint_names: list[str], values: dict[str, list[float]],
                    velocity_scale: float) -> Path:
    """Write an actuation file (atomic) for ``joint_names`` with ``values`` ``{kind: [n floats]}``."""
    joints = {name: {k: float(values[k][i]) for k in FRICTION_KINDS if k in values}
              for i, name in enumerate(joint_names)}
    doc = {"format": ACTUATION_FORMAT, "version": 1, "coulomb_velocity_scale": float(velocity_scale),
           "units": {"damping": "N m s/rad (N s/m prismatic)", "coulomb": "N m (N)",
                     "armature": "kg m^2 (kg)", "offset": "N m (N)",
                     "coulomb_velocity_scale": "rad/s (m/s)"},
           "model": "tau_joint = damping qd + coulomb tanh(qd / v_s) + armature qdd + offset",
           "joints": joints}
    return atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def load_rigid_body(source: str | Path, dtype: torch.dtype = torch.float64, device="cpu") -> RigidBodyStart:
    """Load ``source`` (library name or URDF / xacro / MJCF path) split as the module doc says.

    Raises ``ValueError`` naming the robot when it cannot be found or loaded.
    """
    from engine.robots.library import load_robot, resolve_robot

    path = resolve_robot(source)
    full = load_robot(source, dtype=dtype, device=device)
    if getattr(full.description, "floating_base", False):
        raise ValueError(f"robot {source!r} ({path}) has a floating base; learning its dynamics from a joint "
                         "log needs a fixed-base robot")
    model, friction = split_rigid_body(full)
    names = list(full.joint_names)
    notes = []
    v_s = COULOMB_VELOCITY_SCALE
    side = actuation_path(path)
    if side.is_file():
        per_joint, v_s = read_actuation(side, names)
        for name, vals in per_joint.items():
            for kind, v in vals.items():
                friction[kind][names.index(name)] = v
        notes.append(f"joint friction and actuation read from {side}")
    return RigidBodyStart(model=model, friction=friction, velocity_scale=v_s, path=path, notes=notes)


def split_rigid_body(full):
    """``(rigid, friction)``: a copy of the :class:`~engine.robots.model.RobotModel` ``full``
    (current values, learned ones included) whose movable joints carry no damping, friction or
    armature, and those values ``{kind: [dof floats]}`` in its joint order (offset 0)."""
    from engine.robots.model import RobotModel

    names = list(full.joint_names)
    desc = full.current_description()
    joints = {j.name: j for j in desc.joints}
    friction = {
        "damping": [float(v) for v in full.joint_damping().detach().cpu()],
        "coulomb": [float(joints[n].friction) for n in names],
        "armature": [float(joints[n].armature) for n in names],
        "offset": [0.0] * len(names),
    }
    stripped = replace(desc, joints=tuple(
        replace(j, damping=0.0, friction=0.0, armature=0.0) if j.name in names else j for j in desc.joints))
    rigid = RobotModel.from_description(stripped, dtype=full.dtype, device=full.device,
                                        gravity=tuple(float(g) for g in full.gravity.detach().cpu()))
    return rigid, friction
