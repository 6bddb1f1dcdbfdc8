"""MuJoCo MJCF files -> :class:`RobotDescription`, read from MuJoCo's compiled model.

MuJoCo compiles the file (defaults, ``<include>``, ``fromto``, angles in degrees, inertias from
geoms, ...), so what we read is what MuJoCo simulates:

- bodies -> links, with mass, centre of mass and the principal inertia frame (``body_ipos``,
  ``body_iquat``, ``body_inertia``) as the URDF ``<inertial>``;
- hinge joints -> revolute (limited) or continuous, slide joints -> prismatic, with range
  (a joint's ``ref`` is kept: at ``q = ref`` the body is where the file puts it, as in MuJoCo),
  damping, frictionloss and armature (``Joint.armature``); a body without joints is welded to
  its parent (a fixed joint); a body with several joints, or a hinge anchored away from the
  body origin, becomes a chain through massless frames named ``<body>__<joint>`` (URDF joints
  turn about their frame's origin), so every link named after a body has MuJoCo's body frame;
- a free joint on a child of the world body -> ``floating_base=True`` (the world's own geoms,
  such as a floor, are dropped then); a free joint deeper in the tree is refused with a message
  naming it; ball joints load (a quaternion each, :mod:`engine.robots.ball`);
- several kinematic trees (a robot and free objects): without ``tree`` the largest (the robot
  before the objects it handles) and, when it is fixed to the world, the free bodies beside it
  (each as three world slides and a ball joint: MuJoCo's free joint); the one named by ``tree``
  otherwise (:mod:`engine.robots.mjcf_trees`; :func:`load_mjcf_trees` loads each); trees left
  out are named in ``not_modelled``;
- ``<option gravity>`` -> ``RobotDescription.gravity`` (zero with ``<flag gravity="disable">``);
  body ``gravcomp`` -> ``Link.gravcomp`` and joint ``actuatorgravcomp`` ->
  ``Joint.actuator_gravcomp`` (the forces: :mod:`engine.robots.gravcomp`);
- linear ``<equality joint>`` couplings -> mimic joints (:mod:`engine.robots.mjcf_couplings`), in
  a tree with ball joints too and with the free objects kept beside the robot (MuJoCo itself
  refuses a joint equality on a ball joint);
- ``<equality connect|weld>`` and linear fixed-tendon equalities -> ``RobotDescription.constraints``
  (hard holonomic constraints: :mod:`engine.robots.mjcf_constraints`);
- everything else that changes the dynamics (equality constraints, tendons, actuators, springs,
  contacts...) is named in ``RobotDescription.not_modelled`` and once in a warning
  (:mod:`engine.robots.mjcf_inventory`);
- geoms -> visuals (box, sphere, capsule, cylinder, mesh files with their scale; planes,
  height fields and ellipsoids are left to the viewer's ground grid or skipped).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import cast, overload

import numpy as np

from engine.robots.description import (
    Geometry,
    Inertial,
    Joint,
    Limit,
    Link,
    Origin,
    RobotDescription,
    Visual,
    massless_moving_subtrees,
)
from engine.robots.mjcf_constraints import mujoco_constraints, softness_line
from engine.robots.mjcf_couplings import joint_couplings
from engine.robots.mjcf_error import MJCFError
from engine.robots.mjcf_inventory import not_modelled
from engine.robots.mjcf_trees import choose_tree, free_objects, mujoco_trees, other_trees_line

__all__ = ["MJCFError", "compile_mjcf", "load_mjcf", "load_mjcf_trees", "mujoco_gravity", "mujoco_joint_names"]

log = logging.getLogger(__name__)


def _quat_matrix(wxyz) -> np.ndarray:
    """The rotation of a MuJoCo quaternion (w, x, y, z; normalised here), as a 3x3 matrix."""
    w, x, y, z = (float(v) for v in wxyz)
    s = w * w + x * x + y * y + z * z
    if not s > 0.0:
        return np.eye(3)
    s = 2.0 / s
    return np.array([
        [1.0 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
        [s * (x * y + z * w), 1.0 - s * (x * x + z * z), s * (y * z - x * w)],
        [s * (x * z - y * w), s * (y * z + x * w), 1.0 - s * (x * x + y * y)],
    ])


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """The rotation (3, 3) by ``angle`` (rad) about the unit ``axis`` (Rodrigues)."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _T(pos, R) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = np.asarray(pos, dtype=float)
    return T


def _trans(p) -> np.ndarray:
    return _T(p, np.eye(3))


def _rpy(R: np.ndarray) -> tuple[float, float, float]:
    """URDF roll-pitch-yaw of a rotation (R = Rz(y) Ry(p) Rx(r)); at gimbal lock, roll = 0."""
    pitch = math.asin(max(-1.0, min(1.0, -float(R[2, 0]))))
    if math.cos(pitch) > 1e-9:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    return 0.0, pitch, math.atan2(-R[0, 1], R[1, 1])


def _origin(T: np.ndarray) -> Origin:
    return Origin(xyz=cast("tuple[float, float, float]", tuple(float(v) for v in T[:3, 3])),
                  rpy=cast("tuple[float, float, float]", tuple(float(v) for v in _rpy(T[:3, :3]))))


@overload
def _name(m, kind: str, i: int, fallback: str) -> str: ...
@overload
def _name(m, kind: str, i: int, fallback: None) -> str | None: ...
def _name(m, kind: str, i: int, fallback: str | None) -> str | None:
    import mujoco

    obj = {"body": mujoco.mjtObj.mjOBJ_BODY, "joint": mujoco.mjtObj.mjOBJ_JOINT,
           "geom": mujoco.mjtObj.mjOBJ_GEOM}[kind]
    name = mujoco.mj_id2name(m, obj, i)
    return name if name else fallback


def _geom_visual(m, g: int, shift: np.ndarray, model_dir: Path) -> Visual | None:
    import mujoco

    t = int(m.geom_type[g])
    size = m.geom_size[g]
    G = mujoco.mjtGeom
    T = shift @ _T(m.geom_pos[g], _quat_matrix(m.geom_quat[g]))
    if t == G.mjGEOM_BOX:
        geom = Geometry("box", size=cast("tuple[float, float, float]", tuple(float(2 * s) for s in size)))
    elif t == G.mjGEOM_SPHERE:
        geom = Geometry("sphere", radius=float(size[0]))
    elif t == G.mjGEOM_CAPSULE:
        geom = Geometry("capsule", radius=float(size[0]), length=float(2 * size[1]))
    elif t == G.mjGEOM_CYLINDER:
        geom = Geometry("cylinder", radius=float(size[0]), length=float(2 * size[1]))
    elif t == G.mjGEOM_MESH:
        mesh = int(m.geom_dataid[g])
        adr = int(m.mesh_pathadr[mesh])
        if adr < 0:
            log.warning("MJCF geom %d: mesh %d has no file; skipped in the view", g, mesh)
            return None
        rel = bytes(m.paths[adr:]).split(b"\0", 1)[0].decode()
        path = Path(rel) if Path(rel).is_absolute() else (model_dir / rel)
        # MuJoCo re-centres a mesh on its inertial frame: compiled = R^T (scale * file - p)
        T = T @ np.linalg.inv(_T(m.mesh_pos[mesh], _quat_matrix(m.mesh_quat[mesh])))
        geom = Geometry("mesh", filename=rel, path=str(path.resolve()) if path.is_file() else None,
                        scale=cast("tuple[float, float, float]", tuple(float(s) for s in m.mesh_scale[mesh])))
    else:
        return None
    mat = int(m.geom_matid[g])
    rgba = m.mat_rgba[mat] if mat >= 0 else m.geom_rgba[g]
    return Visual(name=_name(m, "geom", g, None), origin=_origin(T), geometry=geom,
                  rgba=cast("tuple[float, float, float, float]", tuple(float(v) for v in rgba)))


_MAX_INCLUDES = 200
_MAX_MESH_BYTES = 2 ** 31 - 1          # MuJoCo refuses files over 2 GB


def _mesh_assets(path: Path) -> list[tuple[str, str, Path, int | None, str]]:
    """``(mesh name, file as written, file resolved, line, source file)`` of every ``<mesh
    file=...>`` in ``path`` and the files it ``<include>``s, resolved as MuJoCo does: relative to
    ``<compiler meshdir>`` (else ``assetdir``), itself relative to the main file's folder."""
    from lxml import etree

    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True, huge_tree=False)
    model_dir = path.resolve().parent
    meshdir: str | None = None
    meshes = []
    pending, seen = [path], set[str]()
    while pending and len(seen) < _MAX_INCLUDES:
        current = pending.pop(0)
        key = str(current.resolve())
        if key in seen:
            continue
        seen.add(key)
        root = etree.parse(str(current), parser).getroot()
        for el in root.iter(tag=etree.Element):
            if el.tag == "compiler":
                meshdir = el.get("meshdir") or (el.get("assetdir") if meshdir is None else meshdir)
            elif el.tag == "include" and el.get("file"):
                pending.append(model_dir / el.get("file"))
            elif el.tag == "mesh" and el.get("file") and el.getparent() is not None \
                    and el.getparent().tag == "asset":
                meshes.append((el.get("name"), el.get("file"), el.sourceline, str(current)))
    out = []
    for name, file, line, source in meshes:
        resolved = Path(file) if Path(file).is_absolute() else model_dir / (meshdir or "") / file
        out.append((name or Path(file).stem, file, resolved, line, source))
    return out


def _bodies_using_mesh(path: Path, mesh: str) -> list[str]:
    """Names of the bodies whose geoms use ``mesh`` in the main file (for messages)."""
    from lxml import etree

    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True, huge_tree=False)
    root = etree.parse(str(path), parser).getroot()
    out = []
    for geom in root.iter("geom"):
        if geom.get("mesh") == mesh:
            body = geom.getparent()
            out.append(body.get("name") or f"<{body.tag}> at line {body.sourceline}")
    return out


def check_mesh_files(path: str | Path) -> None:
    """Raise :class:`MJCFError` naming the mesh, its file and the bodies that use it when a
    ``<mesh file>`` is missing, a folder, unreadable, empty or over MuJoCo's 2 GB (MuJoCo's
    own message for a folder is "file is empty ... over 2GB"). A file this cannot parse is
    left to MuJoCo's compiler, which names the fault."""
    import os
    import stat

    path = Path(path)
    try:
        meshes = _mesh_assets(path)
    except Exception:  # noqa: BLE001 - malformed XML, unreadable include: MuJoCo's message says it
        return
    for name, file, resolved, line, source in meshes:
        try:
            st = os.stat(resolved)
            fault = None
        except FileNotFoundError:
            fault = "does not exist"
        except OSError as exc:
            fault = f"cannot be read ({exc.strerror or exc})"
        if fault is None:
            if stat.S_ISDIR(st.st_mode):
                fault = "is a folder, not a mesh file"
            elif not stat.S_ISREG(st.st_mode):
                fault = "is not a regular file (a pipe or a device)"
            elif not os.access(resolved, os.R_OK):
                fault = "cannot be read (permission denied)"
            elif st.st_size == 0:
                fault = "is empty (0 bytes)"
            elif st.st_size > _MAX_MESH_BYTES:
                fault = f"is {st.st_size / 2 ** 30:.1f} GB; MuJoCo reads mesh files up to 2 GB"
        if fault is None:
            continue
        try:
            bodies = _bodies_using_mesh(path, name)
        except Exception:  # noqa: BLE001
            bodies = []
        used = f", used by body {', '.join(map(repr, bodies[:3]))}" if bodies else ""
        raise MJCFError(f"mesh {name!r}{used}: file {file!r} ({resolved}) {fault}; fix the path in <mesh "
                        f"file=...> (relative to the model's folder and <compiler meshdir>)", file=source,
                        element=f"<mesh name={name!r}>", line=line)


def load_mjcf(path: str | Path, tree: str | None = None, mimic: str = "coupled") -> RobotDescription:
    """Compile an MJCF file with MuJoCo and describe the result (see the module docstring).

    ``tree``: which kinematic tree to load when the file holds several (``"world"``: the bodies
    fixed to the world; a free body's name: that body and what hangs from it); None: the
    largest, the others named in ``not_modelled`` and the load warning. ``mimic``: ``"coupled"`` maps linear
    ``<equality joint>`` couplings onto mimic joints (:mod:`engine.robots.mjcf_couplings`),
    ``"independent"`` leaves them out (listed as not modelled), ``"error"`` refuses them."""
    return describe_mujoco_model(compile_mjcf(path), path, tree=tree, mimic=mimic)


def load_mjcf_trees(path: str | Path, mimic: str = "coupled") -> dict[str, RobotDescription]:
    """Every kinematic tree of an MJCF file, each as its own description, largest first
    (``{tree name: description}``; see :mod:`engine.robots.mjcf_trees`)."""
    m = compile_mjcf(path)
    names = _body_names(m, path)
    return {t.name: describe_mujoco_model(m, path, tree=t.name, mimic=mimic)
            for t in mujoco_trees(m, names, _free_bodies(m, names, path))}


def compile_mjcf(path: str | Path):
    """The ``mujoco.MjModel`` of an MJCF file; MJCFError naming the file when it cannot be compiled."""
    path = Path(path)
    try:
        import mujoco
    except ImportError:  # pragma: no cover - a declared dependency
        raise MJCFError(
            "reading MJCF files needs the 'mujoco' package: pip install mujoco", file=str(path)
        ) from None
    if not path.is_file():
        raise MJCFError("no such MJCF file", file=str(path))
    check_mesh_files(path)
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except Exception as exc:  # mujoco raises ValueError with the compiler's message
        said = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())   # one line
        raise MJCFError(f"MuJoCo could not compile the file: {said}", file=str(path)) from None


def _body_names(m, path) -> list[str]:
    names = [_name(m, "body", b, f"body{b}") for b in range(m.nbody)]
    if len(set(names)) != len(names):
        raise MJCFError("two bodies share a name", file=str(path))
    return names


def _free_bodies(m, names: list[str], path) -> list[int]:
    """The bodies with a free joint (children of the world body: MJCFError otherwise)."""
    import mujoco

    free = [b for b in range(1, m.nbody)
            if any(m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE
                   for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]))]
    for b in free:
        if m.body_parentid[b] != 0:
            raise MJCFError("a free joint is only supported on a child of the world body (the floating base)",
                            file=str(path), element=f"<body name={names[b]!r}>")
    return free


def mujoco_joint_names(m, names: list[str]) -> list[str]:
    """The name each MuJoCo joint gets in the description (its own, else ``<body>__joint<k>``,
    ``k`` counting the body's joints that are not free), ``m.njnt`` entries."""
    import mujoco

    out = []
    for b in range(m.nbody):
        k = 0
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                out.append(_name(m, "joint", j, f"{names[b]}__free"))
            else:
                out.append(_name(m, "joint", j, f"{names[b]}__joint{k}"))
                k += 1
    return out


def mujoco_gravity(m) -> tuple[float, float, float]:
    """The compiled model's gravity (m/s^2): ``<option gravity>``, zero when ``<flag gravity="disable">``."""
    import mujoco

    if int(m.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY):
        return (0.0, 0.0, 0.0)
    return cast("tuple[float, float, float]", tuple(float(g) for g in m.opt.gravity))


def describe_mujoco_model(m, path: str | Path, tree: str | None = None, mimic: str = "coupled") -> RobotDescription:
    """The :class:`RobotDescription` of one kinematic tree of a compiled ``mujoco.MjModel``
    (``path``: for messages; ``tree`` and ``mimic``: see :func:`load_mjcf`)."""
    import mujoco

    path = Path(path)
    J = mujoco.mjtJoint
    model_dir = path.resolve().parent
    names = _body_names(m, path)
    joint_names = mujoco_joint_names(m, names)

    def err(message, element=None):
        return MJCFError(message, file=str(path), element=element)

    free = _free_bodies(m, names, path)
    trees = mujoco_trees(m, names, free)
    chosen = choose_tree(trees, tree, names, path)
    floating = chosen.floating
    root_body = chosen.root
    if mimic not in ("coupled", "independent", "error"):
        raise ValueError(f"mimic must be 'coupled', 'independent' or 'error', not {mimic!r}")
    objects = free_objects(trees, chosen, tree)         # free bodies kept beside a fixed robot
    kept = set(chosen.bodies).union(*(t.bodies for t in objects))
    kept_joints = {j for j in range(m.njnt) if int(m.jnt_bodyid[j]) in kept}
    coupled, coupled_eqs = joint_couplings(m, joint_names, kept_joints)
    if mimic == "error" and coupled:
        jn = joint_names[next(iter(coupled))]
        raise err(f"joint {jn!r} is coupled to {coupled[next(iter(coupled))].joint!r} by an <equality joint>; "
                  "load with mimic='coupled' or 'independent'", f"<joint name={jn!r}>")
    if mimic == "independent":
        coupled, coupled_eqs = {}, set()
    if floating and m.body_geomnum[0]:
        log.info("%s: the world body's geoms (floor...) are left to the viewer's ground", path)

    links, joints = [], []
    for b in range(m.nbody):
        if b not in kept:
            continue
        body_joints = [j for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])
                       if m.jnt_type[j] != J.mjJNT_FREE]
        shift = np.eye(4)
        inertial = None
        if m.body_mass[b] > 0 or np.any(m.body_inertia[b]):
            Ti = shift @ _T(m.body_ipos[b], _quat_matrix(m.body_iquat[b]))
            I = m.body_inertia[b]
            inertial = Inertial(mass=float(m.body_mass[b]), origin=_origin(Ti),
                                inertia=(float(I[0]), 0.0, 0.0, float(I[1]), 0.0, float(I[2])))
        visuals = []
        if not (floating and b == 0):
            for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]):
                v = _geom_visual(m, g, shift, model_dir)
                if v is not None:
                    visuals.append(v)
        links.append(Link(name=names[b], inertial=inertial, visuals=tuple(visuals),
                          gravcomp=float(m.body_gravcomp[b])))
        if b == 0 or b == root_body:
            continue
        if any(b == t.root for t in objects):
            joints += _free_object_joints(m, b, names, joint_names[int(m.body_jntadr[b])], links)
            continue
        parent = int(m.body_parentid[b])
        T_pb = _T(m.body_pos[b], _quat_matrix(m.body_quat[b]))
        if not body_joints:
            joints.append(Joint(name=f"{names[b]}__weld", type="fixed", parent=names[parent], child=names[b],
                                origin=_origin(T_pb)))
            continue
        prev_link, prev_anchor, T_prev = names[parent], None, T_pb
        for k, j in enumerate(body_joints):
            jname = joint_names[j]
            hinge = m.jnt_type[j] == J.mjJNT_HINGE
            ball = m.jnt_type[j] == J.mjJNT_BALL     # about its anchor; q: a quaternion, qpos0 the identity
            p = np.asarray(m.jnt_pos[j], float) if hinge or ball else np.zeros(3)
            origin = (T_prev if prev_anchor is None else _trans(-prev_anchor)) @ _trans(p)
            axis = np.asarray(m.jnt_axis[j], float) / np.linalg.norm(m.jnt_axis[j])
            ref = 0.0 if ball else float(m.qpos0[m.jnt_qposadr[j]])   # the file's pose is at q = ref, not at 0
            if ref:
                origin = origin @ (_T(np.zeros(3), _axis_angle(axis, -ref)) if hinge else _trans(-ref * axis))
            last = k == len(body_joints) - 1
            child = names[b] if last and not np.any(p) else f"{names[b]}__{jname}"
            if child != names[b]:
                links.append(Link(name=child))
            limited = bool(m.jnt_limited[j]) and not ball     # a ball's range (a cone) is not modelled
            lo, hi = (
                (float(m.jnt_range[j][0]), float(m.jnt_range[j][1])) if limited else (-math.inf, math.inf)
            )
            dof = int(m.jnt_dofadr[j])
            jtype = "ball" if ball else ("revolute" if limited else "continuous") if hinge else "prismatic"
            joints.append(Joint(name=jname, type=jtype, parent=prev_link, child=child, origin=_origin(origin),
                                axis=cast("tuple[float, float, float]", tuple(float(a) for a in axis)),
                                limit=Limit(lower=lo, upper=hi), damping=float(m.dof_damping[dof]),
                                friction=float(m.dof_frictionloss[dof]), armature=float(m.dof_armature[dof]),
                                actuator_gravcomp=bool(m.jnt_actgravcomp[j]), mimic=coupled.get(j)))
            prev_link, prev_anchor = child, p
            if last and child != names[b]:        # back from the hinge's anchor to the body frame
                joints.append(Joint(name=f"{names[b]}__frame", type="fixed", parent=child, child=names[b],
                                    origin=_origin(_trans(-p))))
    constraints, constraint_eqs = mujoco_constraints(m, names, joint_names, kept, kept_joints)
    missing = tuple(other_trees_line(trees, chosen, objects) + softness_line(constraints)
                    + not_modelled(m, kept, skip_equalities=coupled_eqs | constraint_eqs))
    if missing:
        log.warning("%s: not modelled: %s", path, "; ".join(missing))
    desc = RobotDescription(name=_model_name(m, path), links=tuple(links), joints=tuple(joints),
                            root=names[root_body], source=str(path), floating_base=floating,
                            gravity=mujoco_gravity(m), not_modelled=missing, constraints=constraints,
                            trees=tuple((t.name, t.summary()) for t in trees) if len(trees) > 1 else ())
    bad = massless_moving_subtrees(desc, limit=1)
    if bad:
        joint, moved = bad[0]
        raise err(f"joint {joint!r} moves bodies {', '.join(map(repr, moved[:6]))} that have no mass and no "
                  f"inertia", f"<joint name={joint!r}>")
    return desc


def _free_object_joints(m, b: int, names: list[str], jname: str, links: list) -> list[Joint]:
    """A free body ``b`` kept beside a fixed robot: slides ``<joint>_x``, ``_y``, ``_z`` along the
    world axes from the body's initial position, then the ball ``<joint>`` turning it from its
    initial orientation (massless frames ``<body>__x``, ``__y``, ``__z`` between). This is MuJoCo's
    free joint: its ``qpos[:3]`` = initial position + the slides, its quaternion = initial
    quaternion times the ball's, its velocity (world linear, body angular) = the slides' and the
    ball's; ``q = 0`` is where the file puts the body. Appends the frames to ``links``."""
    d = int(m.jnt_dofadr[m.body_jntadr[b]])
    frames = [f"{names[b]}__{a}" for a in "xyz"]
    links.extend(Link(name=f) for f in frames)
    parents = [names[0]] + frames[:2]
    origins = [_trans(m.body_pos[b]), np.eye(4), np.eye(4)]
    out = [Joint(name=f"{jname}_{a}", type="prismatic", parent=p, child=f, origin=_origin(T),
                 axis=cast("tuple[float, float, float]", tuple(float(x) for x in np.eye(3)[i])),
                 damping=float(m.dof_damping[d + i]), friction=float(m.dof_frictionloss[d + i]),
                 armature=float(m.dof_armature[d + i]))
           for i, (a, p, f, T) in enumerate(zip("xyz", parents, frames, origins))]
    out.append(Joint(name=jname, type="ball", parent=frames[2], child=names[b],
                     origin=_origin(_T(np.zeros(3), _quat_matrix(m.body_quat[b]))),
                     damping=float(m.dof_damping[d + 3]), friction=float(m.dof_frictionloss[d + 3]),
                     armature=float(m.dof_armature[d + 3])))
    return out


def _model_name(m, path: Path) -> str:
    """The ``<mujoco model="...">`` name (the first string of MuJoCo's name buffer), else the file's stem."""
    name = bytes(m.names).split(b"\0", 1)[0].decode(errors="replace")
    return name or path.stem
