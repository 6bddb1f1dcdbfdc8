"""The robot library: robots shipped in ``urdf/`` and those of installed description packages.

Sources, in the order they are listed (an earlier name wins over a later one):

- ``shipped``: every ``*.urdf`` in :func:`engine.paths.urdf_dir` (name = file stem,
  e.g. ``panda``, ``pendulum``, ``double_pendulum``);
- ``example-robot-data``: the fixed-base arms and hands of the ``example-robot-data``
  package (``panda-erd``, ``ur5``, ``allegro-right``, ``talos-left-arm``...), then its
  legged robots and humanoids with a floating base (``solo12``, ``anymal-c``, ``go2``,
  ``talos``, ``g1``, ``icub``...);
- ``pybullet_data``: ``iiwa-bullet``, ``panda-bullet``, ``xarm6-bullet``;
- ``diff_robot_data``: the robots of the differentiable-robot-model paper
  (``iiwa7-drm``, ``panda-drm``, ``allegro-left-drm``, ``fetch-arm-drm``...);
- ``ros``: ``<package>/<stem>`` for every ``urdf/*.urdf`` or ``robots/*.urdf`` of the
  packages found on ``ROS_PACKAGE_PATH``.

Some published files need loader options (a moving link with mass 0 and an inertia accepted
with ``strict=False``, a floating base); each entry carries them and
:func:`load_robot` applies them. Mimic joints load coupled to their masters, as the files
say (a gripper's fingers move together; Pinocchio's ``mimic=True`` model).

Aliases point at the first available of several names (``iiwa``, ``allegro``, ``ur``).
Names are matched case-insensitively, with ``_`` and ``-`` equivalent.

The double pendulum's joint spring cannot be written in URDF; shipped files declare
springs in comments, ``<!-- lagrange:spring joint="joint2" stiffness="0.5" rest="0.0" -->``,
read by :func:`joint_springs`.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import site
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from engine.paths import urdf_dir

__all__ = [
    "RobotEntry", "RobotNotFoundError", "JointSpring", "list_robots", "resolve_robot",
    "load_robot", "robot_entry", "joint_springs", "example_robot_data_dir", "SHIPPED_TITLES",
]


class RobotNotFoundError(ValueError):
    """A robot name that is neither in the library nor an existing URDF file."""


@dataclass(frozen=True)
class RobotEntry:
    """One robot of the library: ``name`` (what to type), ``title`` (what to show),
    ``path`` (the URDF file), ``source`` (shipped | example-robot-data | pybullet_data |
    diff_robot_data | ros)."""

    name: str
    title: str
    path: Path
    source: str
    load_options: tuple = ()

    @property
    def options(self) -> dict:
        """Loader options this file needs (``strict=False``, ``floating_base=True``)."""
        return dict(self.load_options)

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "path": str(self.path), "source": self.source,
                "load_options": self.options}


@dataclass(frozen=True)
class JointSpring:
    """A linear joint spring: torque = -stiffness (q - rest) (N m/rad or N/m)."""

    joint: str
    stiffness: float
    rest: float = 0.0


SHIPPED_TITLES = {
    "panda": "Franka Emika Panda, 7 DoF (primitive shapes, published inertial values)",
    "pendulum": "Pendulum, uniform rod m = l = 1 (SyMo)",
    "cartpole": "Cart-pole (SyMo / Gym conventions)",
    "acrobot": "Acrobot, torque on the elbow only (SyMo / Gym Acrobot-v1)",
    "double_pendulum": "Double pendulum with joint spring k2 = 0.5 (eigenmodes paper)",
    "planar_2link": "Planar 2-link arm (vertical plane)",
}

# (name, title, path relative to example-robot-data's robots/ folder): fixed-base arms and hands.
_ERD_ROBOTS = (
    (
        "panda-erd",
        "Franka Emika Panda with its gripper (example-robot-data, meshes; coupled mimic fingers)",
        "panda_description/urdf/panda.urdf",
    ),
    ("ur3", "Universal Robots UR3", "ur_description/urdf/ur3_robot.urdf"),
    ("ur5", "Universal Robots UR5", "ur_description/urdf/ur5_robot.urdf"),
    ("ur10", "Universal Robots UR10", "ur_description/urdf/ur10_robot.urdf"),
    (
        "ur5-limited",
        "Universal Robots UR5, joint-limited",
        "ur_description/urdf/ur5_joint_limited_robot.urdf",
    ),
    (
        "allegro-right",
        "Allegro hand, right (16 DoF tree)",
        "allegro_hand_description/urdf/allegro_right_hand.urdf",
    ),
    (
        "allegro-left",
        "Allegro hand, left (16 DoF tree)",
        "allegro_hand_description/urdf/allegro_left_hand.urdf",
    ),
    ("kinova", "Kinova Gen2 arm", "kinova_description/robots/kinova.urdf"),
    ("xarm7", "UFactory xArm 7", "xarm_description/urdf/xarm7.urdf"),
    ("z1", "Unitree Z1 arm", "z1_description/urdf/z1.urdf"),
    ("so100", "SO-100 arm", "so_arm_description/urdf/so100.urdf"),
    ("so101", "SO-101 arm", "so_arm_description/urdf/so101.urdf"),
    ("talos-left-arm", "TALOS left arm", "talos_data/robots/talos_left_arm.urdf"),
    (
        "double-pendulum-erd",
        "Double pendulum (example-robot-data)",
        "double_pendulum_description/urdf/double_pendulum.urdf",
    ),
    ("asr-twodof", "ASR two-DoF arm", "asr_twodof_description/urdf/TwoDofs.urdf"),
    ("finger-edu", "TriFinger-edu single finger", "finger_edu_description/robots/finger_edu.urdf"),
    (
        "baxter",
        "Rethink Baxter (fixed base, two arms, coupled mimic grippers)",
        "baxter_description/urdf/baxter.urdf",
    ),
)

# Legged robots and humanoids of example-robot-data, with a floating base (free-flyer joint,
# q = [base xyz, base quaternion xyzw, joints]). Inertias that are numerically non-positive (a
# base link, sensor frames) or break the triangle inequality (camera links) load by default with a
# warning, as Pinocchio loads them; strict=False where a moving link has mass 0 and an inertia.
_FB, _MASS0 = ('floating_base', True), ('strict', False)
_ERD_LEGGED = (
    ("solo8", "Solo-8 quadruped (floating base)", "solo_description/robots/solo.urdf", (_FB,)),
    ("solo12", "Solo-12 quadruped (floating base)", "solo_description/robots/solo12.urdf", (_FB,)),
    (
        "anymal-b",
        "ANYmal B quadruped (floating base)",
        "anymal_b_simple_description/robots/anymal.urdf",
        (_FB,),
    ),
    (
        "anymal-c",
        "ANYmal C quadruped (floating base)",
        "anymal_c_simple_description/urdf/anymal.urdf",
        (_FB,),
    ),
    (
        "anymal-kinova",
        "ANYmal B with a Kinova arm (floating base)",
        "anymal_b_simple_description/robots/anymal-kinova.urdf",
        (_FB,),
    ),
    ("go1", "Unitree Go1 quadruped (floating base)", "go1_description/urdf/go1.urdf", (_FB,)),
    ("go2", "Unitree Go2 quadruped (floating base)", "go2_description/urdf/go2.urdf", (_FB,)),
    ("a1", "Unitree A1 quadruped (floating base)", "a1_description/urdf/a1.urdf", (_FB,)),
    ("b1", "Unitree B1 quadruped (floating base)", "b1_description/urdf/b1.urdf", (_FB,)),
    ("b1-z1", "Unitree B1 with a Z1 arm (floating base)", "b1_description/urdf/b1-z1.urdf", (_FB,)),
    (
        "hyq",
        "IIT HyQ quadruped (floating base)",
        "hyq_description/robots/hyq_no_sensors.urdf",
        (_FB,),
    ),
    ("laikago", "Unitree Laikago quadruped (floating base)", "laikago_description/urdf/laikago.urdf", (_FB,)),
    ("bolt", "Bolt biped (floating base)", "bolt_description/robots/bolt.urdf", (_FB, _MASS0)),
    (
        "talos",
        "PAL TALOS humanoid, no hands (floating base)",
        "talos_data/robots/talos_reduced.urdf",
        (_FB,),
    ),
    (
        "talos-full",
        "PAL TALOS humanoid with grippers, coupled mimic fingers (floating base)",
        "talos_data/robots/talos_full_v2.urdf",
        (_FB,),
    ),
    (
        "g1",
        "Unitree G1 humanoid, 29 DoF (floating base)",
        "g1_description/urdf/g1_29dof_rev_1_0.urdf",
        (_FB,),
    ),
    (
        "g1-hands",
        "Unitree G1 humanoid with hands, 43 DoF (floating base)",
        "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
        (_FB,),
    ),
    ("icub", "iCub humanoid (floating base)", "icub_description/robots/icub.urdf", (_FB,)),
    (
        "icub-reduced",
        "iCub humanoid, reduced (floating base)",
        "icub_description/robots/icub_reduced.urdf",
        (_FB,),
    ),
    (
        "simple-humanoid",
        "Simple humanoid (floating base)",
        "simple_humanoid_description/urdf/simple_humanoid.urdf",
        (_FB,),
    ),
    ("human", "Human body model, 36 DoF (floating base)", "human_description/robots/human.urdf", (_FB,)),
)

_PYBULLET_ROBOTS = (
    ("iiwa-bullet", "KUKA LBR iiwa 14 (pybullet_data)", "kuka_iiwa/model.urdf"),
    ("panda-bullet", "Franka Emika Panda (pybullet_data)", "franka_panda/panda.urdf", (('strict', False),)),
    ("xarm6-bullet", "UFactory xArm 6 (pybullet_data)", "xarm/xarm6_robot.urdf"),
)

_DRM_ROBOTS = (
    ("iiwa7-drm", "KUKA LBR iiwa 7 (differentiable-robot-model)", "kuka_iiwa/urdf/iiwa7.urdf"),
    (
        "panda-drm",
        "Franka Emika Panda, no gripper (differentiable-robot-model)",
        "panda_description/urdf/panda_no_gripper.urdf",
    ),
    (
        "allegro-left-drm",
        "Allegro hand, left (differentiable-robot-model)",
        "allegro/urdf/allegro_hand_description_left.urdf",
    ),
    (
        "fetch-arm-drm",
        "Fetch arm, no gripper (differentiable-robot-model)",
        "fetch_description/urdf/fetch_arm_no_gripper.urdf",
    ),
    ("jaco-drm", "Kinova Jaco (differentiable-robot-model)", "kinova_description/urdf/jaco_clean.urdf"),
    (
        "trifinger-drm",
        "TriFinger-edu (differentiable-robot-model)",
        "trifinger_edu_description/trifinger_edu.urdf",
    ),
    ("2link-drm", "Two-link robot (differentiable-robot-model)", "2link_robot.urdf"),
)

# alias -> candidates, the first available wins
_ALIASES = {
    "iiwa": ("iiwa7-drm", "iiwa-bullet"),
    "allegro": ("allegro-right", "allegro-left", "allegro-left-drm"),
    "ur": ("ur5",),
    "franka": ("panda",),
    "anymal": ("anymal-c", "anymal-b"),
}


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _site_dirs() -> list[Path]:
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # pragma: no cover - some embedded interpreters
        pass
    dirs += [p for p in sys.path if p]
    seen, out = set(), []
    for d in dirs:
        p = Path(d)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


@cache
def example_robot_data_dir() -> Path | None:
    """The ``robots/`` folder of example-robot-data, or None when it is not installed.

    ``$EXAMPLE_ROBOT_DATA_MODEL_DIR`` (example-robot-data's own variable) wins; otherwise the
    cmeel prefix of the installed wheel.
    """
    env = os.environ.get("EXAMPLE_ROBOT_DATA_MODEL_DIR")
    if env and Path(env).is_dir():
        return Path(env)
    for d in _site_dirs():
        robots = d / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if robots.is_dir():
            return robots
    return None


def _package_dir(module: str) -> Path | None:
    """Folder of an installed data package, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _table(base: Path | None, table, source: str) -> Iterable[RobotEntry]:
    if base is None:
        return
    for name, title, rel, *options in table:
        path = base / rel
        if path.is_file():
            yield RobotEntry(name, title, path, source, options[0] if options else ())


def _shipped() -> Iterable[RobotEntry]:
    try:
        folder = urdf_dir()
    except FileNotFoundError:
        return
    for path in sorted(folder.glob("*.urdf")):
        yield RobotEntry(path.stem, SHIPPED_TITLES.get(path.stem, path.stem.replace("_", " ")),
                         path, "shipped")


def _ros_packages() -> Iterable[RobotEntry]:
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if not entry or not Path(entry).is_dir():
            continue
        root = Path(entry)
        packages = [root] if (root / "package.xml").is_file() else sorted(
            p.parent for p in root.glob("*/package.xml"))
        if not packages:  # a folder of packages without package.xml files
            packages = sorted(p for p in root.iterdir() if p.is_dir())
        for pkg in packages:
            for sub in ("urdf", "robots"):
                for path in sorted((pkg / sub).glob("*.urdf")):
                    yield RobotEntry(f"{pkg.name}/{path.stem}", f"{path.stem} ({pkg.name}, ROS package)",
                                     path, "ros")


def list_robots() -> list[RobotEntry]:
    """Every robot the library can find on this machine (shipped ones first).

    Cheap: scans folders only, parses no URDF. Call again to see new ``ROS_PACKAGE_PATH``
    entries.
    """
    entries: list[RobotEntry] = []
    seen: set[str] = set()
    sources = (
        _shipped(),
        _table(example_robot_data_dir(), _ERD_ROBOTS, "example-robot-data"),
        _table(example_robot_data_dir(), _ERD_LEGGED, "example-robot-data"),
        _table(_package_dir("pybullet_data"), _PYBULLET_ROBOTS, "pybullet_data"),
        _table(_package_dir("diff_robot_data"), _DRM_ROBOTS, "diff_robot_data"),
        _ros_packages(),
    )
    for source in sources:
        for entry in source:
            key = _norm(entry.name)
            if key not in seen:
                seen.add(key)
                entries.append(entry)
    return entries


def _lookup(name: str, entries: list[RobotEntry]) -> RobotEntry | None:
    by_name = {_norm(e.name): e for e in entries}
    key = _norm(name)
    if key in by_name:
        return by_name[key]
    for candidate in _ALIASES.get(key, ()):
        if _norm(candidate) in by_name:
            return by_name[_norm(candidate)]
    return None


def resolve_robot(name_or_path) -> Path:
    """The robot file of a library name (``panda``, ``ur5``...) or of a path to a URDF, xacro
    or MJCF file.

    Raises :class:`RobotNotFoundError` (a ValueError) naming close library names when the
    argument is neither.
    """
    text = str(name_or_path).strip()
    if not text:
        raise RobotNotFoundError("empty robot name: give a library name (see `robot list`) or a URDF path")
    entries = list_robots()
    if not isinstance(name_or_path, Path):
        entry = _lookup(text, entries)
        if entry is not None:
            return entry.path
    path = Path(text).expanduser()
    if path.is_file():
        return path.resolve()
    if path.is_dir():
        raise RobotNotFoundError(f"{path}: is a folder, not a robot file (URDF, xacro or MJCF)")
    names = [e.name for e in entries] + list(_ALIASES)
    close = difflib.get_close_matches(_norm(text), [_norm(n) for n in names], n=5, cutoff=0.5)
    close_names = [n for n in names if _norm(n) in close]
    hint = f"; did you mean {', '.join(close_names)}?" if close_names else ""
    looks_like_path = path.suffix.lower() in (".urdf", ".xml", ".xacro", ".mjcf") or os.sep in text
    what = "no such robot file" if looks_like_path else "unknown robot"
    raise RobotNotFoundError(
        f"{what}: {text!r}{hint} (library: {', '.join(e.name for e in entries[:12])}"
        f"{', ...' if len(entries) > 12 else ''}; `python -m engine robot list` shows all)")


def robot_entry(name_or_path) -> RobotEntry | None:
    """The library entry of a name (or of a path that is a library file), else None."""
    entries = list_robots()
    entry = _lookup(str(name_or_path), entries) if not isinstance(name_or_path, Path) else None
    if entry is None:
        try:
            path = resolve_robot(name_or_path)
        except RobotNotFoundError:
            return None
        entry = next((e for e in entries if e.path.resolve() == path), None)
    return entry


def load_robot(name_or_path, **kwargs):
    """A :class:`RobotModel` of a library name or a URDF, xacro or MJCF path.

    ``kwargs`` go to ``RobotModel.from_file`` (dtype, device, mimic, strict, xacro_args,
    gravity, floating_base), over the entry's own loader options.
    """
    from engine.robots.model import RobotModel

    path = resolve_robot(name_or_path)
    entry = robot_entry(name_or_path)
    options = dict(entry.options) if entry is not None else {}
    options.update(kwargs)
    return RobotModel.from_file(path, **options)


_SPRING = re.compile(r"<!--\s*lagrange:spring\s+([^>]*?)\s*-->", re.S)
_ATTR = re.compile(r"(\w+)\s*=\s*\"([^\"]*)\"")


def joint_springs(name_or_path) -> dict[str, JointSpring]:
    """Joint springs declared in a URDF's ``<!-- lagrange:spring ... -->`` comments.

    Returns ``{joint name: JointSpring}`` (empty when the file declares none). A malformed
    declaration raises ValueError naming the file.
    """
    path = resolve_robot(name_or_path)
    if path.name.lower().endswith((".xacro", ".mjcf")):
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")
    springs: dict[str, JointSpring] = {}
    line, counted = 1, 0  # lines counted up to ``counted`` (once over the text, not per spring)
    for match in _SPRING.finditer(text):
        attrs = dict(_ATTR.findall(match.group(1)))
        line += text.count("\n", counted, match.start())
        counted = match.start()
        try:
            joint = attrs["joint"]
            stiffness = float(attrs["stiffness"])
            rest = float(attrs.get("rest", 0.0))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path}:{line}: malformed lagrange:spring comment ({exc}); expected "
                             '<!-- lagrange:spring joint="NAME" stiffness="K" rest="Q0" -->') from None
        springs[joint] = JointSpring(joint, stiffness, rest)
    return springs
