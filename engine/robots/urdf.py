"""URDF loading: XML -> validated, immutable :class:`RobotDescription`.

``load_urdf(path)`` and ``parse_urdf_string(xml, base_dir=...)`` parse with lxml (for line
numbers) and yourdfpy (the URDF object model; no scene graph, no meshes), then validate:

- malformed XML, a root that is not ``<robot>``, missing or duplicate names;
- numbers that are not numbers, have the wrong count, or are NaN/inf;
- joints whose parent/child link does not exist, a link with two parents, a joint that
  connects a link to itself, loops, several roots;
- joint types: revolute, continuous, prismatic and fixed are supported; floating and planar
  are refused; mimic joints are kept with their ``<mimic>`` (``mimic="coupled"``, the default:
  the model couples them to their master joint), made ordinary independent joints
  (``mimic="independent"``, Pinocchio's default; the ``<mimic>`` is dropped) or refused
  (``mimic="error"``);
- inertials: mass must be positive (``mass = 0`` with an all-zero inertia is accepted as a
  massless marker link, as published URDFs often do), the rotational inertia must be
  symmetric positive definite and satisfy the triangle inequality (``Ixx + Iyy >= Izz``...
  on the principal moments, to a relative tolerance of 1e-6). Three levels (``strict``):
  the default (None) accepts, with a logged warning, what published files do where the
  physics stays well defined and Pinocchio accepts the file: a point mass (mass > 0, an
  all-zero rotational inertia) or a thin body (mass > 0, a positive semi-definite inertia
  that keeps the triangle inequality), and a root link with mass 0 and an inertia (a fixed
  base never enters the dynamics); ``strict=True`` refuses those too; ``strict=False``
  accepts every finite inertial with a warning (inconsistent ones as given).
- a movable joint that moves nothing with mass or inertia (the mass matrix would be singular)
  is always refused, naming the joint and the links.

Every failure raises :class:`URDFError` (a ``ValueError``) whose message names the file,
the element and, where known, the line. Missing mesh files are logged as warnings only.

``resolve_uri(uri, base_dir)`` resolves ``package://``, ``file://``, absolute and relative
file names through the URDF's folder (and its parents), ``ROS_PACKAGE_PATH``,
``AMENT_PREFIX_PATH`` and installed description packages (example-robot-data under
``site-packages/cmeel.prefix/share``, pybullet_data, diff_robot_data).
"""

from __future__ import annotations

import logging
import math
import os
import re
import site
import sys
from functools import lru_cache
from pathlib import Path
from typing import Literal, cast, overload

import numpy as np
from lxml import etree

from engine.robots.description import (
    MOVABLE_JOINT_TYPES,
    Collision,
    Geometry,
    Inertial,
    Joint,
    Limit,
    Link,
    Mimic,
    Origin,
    RobotDescription,
    Visual,
    massless_moving_subtrees,
)

__all__ = ["URDFError", "check_inertial", "description_package_roots", "load_urdf", "parse_urdf_string",
           "published_quirk", "resolve_uri"]

log = logging.getLogger(__name__)

_TRIANGLE_RTOL = 1e-6
_MIMIC_MODES = ("coupled", "independent", "error")


class URDFError(ValueError):
    """A URDF that cannot be loaded. ``file``, ``element`` and ``line`` say where.

    ``remedy``: the loader options that accept the file anyway (``{"strict": False}``,
    ``{"mimic": "independent"}``), None when none does; ``impossible``: the values are
    physically impossible (a negative mass, a non-finite or not positive-definite inertia)."""

    def __init__(self, message: str, file: str | None = None, element: str | None = None,
                 line: int | None = None, remedy: dict | None = None, impossible: bool = False):
        self.file = file
        self.element = element
        self.line = line
        self.reason = message
        self.remedy = remedy
        self.impossible = impossible
        where = file or "<string>"
        if line is not None:
            where += f", line {line}"
        if element:
            where += f", {element}"
        super().__init__(f"{where}: {message}")


# --------------------------------------------------------------------------- resolving

def _site_dirs() -> list[Path]:
    dirs = []
    try:
        dirs += [Path(p) for p in site.getsitepackages()]
    except AttributeError:  # some embedded interpreters
        pass
    dirs += [Path(p) for p in sys.path if p and p.endswith("site-packages")]
    seen, out = set(), []
    for d in dirs:
        if d not in seen and d.is_dir():
            seen.add(d)
            out.append(d)
    return out


@lru_cache(maxsize=1)
def description_package_roots() -> tuple[Path, ...]:
    """Folders that hold installed robot-description packages (searched by ``resolve_uri``)."""
    roots: list[Path] = []
    for d in _site_dirs():
        for sub in ("cmeel.prefix/share", "cmeel.prefix/share/example-robot-data/robots",
                    "pybullet_data", "diff_robot_data"):
            p = d / sub
            if p.is_dir():
                roots.append(p)
    for var in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):
        for entry in os.environ.get(var, "").split(os.pathsep):
            if entry and (Path(entry) / "share").is_dir():
                roots.append(Path(entry) / "share")
    return tuple(roots)


def _ros_package_path() -> list[Path]:
    return [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]


def _find_package(package: str, base_dir: Path | None) -> list[Path]:
    """Candidate folders for ``package``: base_dir's ancestors, ROS_PACKAGE_PATH, installed."""
    found: list[Path] = []
    if base_dir is not None:
        for anc in [base_dir, *base_dir.parents]:
            if anc.name == package:
                found.append(anc)
            if (anc / package).is_dir():
                found.append(anc / package)
    for entry in _ros_package_path():
        if entry.name == package:
            found.append(entry)
        if (entry / package).is_dir():
            found.append(entry / package)
        # one level of nesting, as catkin workspaces have (src/<repo>/<package>)
        if entry.is_dir():
            try:
                for child in entry.iterdir():
                    if (child / package).is_dir():
                        found.append(child / package)
            except OSError:
                pass
    for root in description_package_roots():
        if (root / package).is_dir():
            found.append(root / package)
    return found


def resolve_uri(uri: str, base_dir: str | Path | None = None) -> Path | None:
    """The file a URDF file name refers to, or None when it cannot be found.

    ``package://pkg/rest``: ``pkg`` is looked up as an ancestor folder of ``base_dir`` (or a
    sibling of one), in ``ROS_PACKAGE_PATH`` and in installed description packages; when
    no package folder holds ``rest``, ``rest`` is also tried relative to ``base_dir`` and
    its parents. ``file://`` and absolute paths are used as they are; relative paths are
    relative to ``base_dir`` (the URDF's folder).
    """
    if not uri:
        return None
    base = Path(base_dir).resolve() if base_dir is not None else None
    if uri.startswith("package://"):
        rest = uri[len("package://"):]
        package, _, relative = rest.partition("/")
        for folder in _find_package(package, base):
            candidate = folder / relative
            if candidate.is_file():
                return candidate
        if base is not None:
            for anc in [base, *base.parents]:
                for candidate in (anc / relative, anc / rest):
                    if candidate.is_file():
                        return candidate
        return None
    uri = uri.removeprefix("file://")
    path = Path(uri)
    if path.is_absolute():
        return path if path.is_file() else None
    if base is not None and (base / path).is_file():
        return base / path
    return None


# --------------------------------------------------------------------------- parsing helpers

class _Ctx:
    """Where we are (the file name, for messages) and how strict the physical checks are."""

    def __init__(self, file: str | None, strict: bool | None = True):
        self.file = file
        self.strict = strict
        self.inertial_elements: dict[str, tuple] = {}   # link -> (<mass>, <inertia>) for messages
        self.accepted: list[tuple[str, str]] = []         # (link, what was accepted): one warning at the end

    def error(self, message: str, el=None, element: str | None = None, **fields) -> URDFError:
        line = getattr(el, "sourceline", None) if el is not None else None
        if element is None and el is not None:
            element = _describe(el)
        return URDFError(message, file=self.file, element=element, line=line, **fields)


def _describe(el) -> str:
    tag = el.tag if isinstance(el.tag, str) else "?"
    name = el.get("name")
    if name is not None:
        return f"<{tag} name={name!r}>"
    parent = el.getparent()
    if parent is not None and isinstance(parent.tag, str):
        return f"<{tag}> in {_describe(parent)}"
    return f"<{tag}>"


# a given default or required=True gives a value; three numbers give a 3-tuple
@overload
def _floats(ctx: _Ctx, el, attr: str, count: Literal[3], default: tuple[float, float, float],
            required: bool = False) -> tuple[float, float, float]: ...
@overload
def _floats(ctx: _Ctx, el, attr: str, count: Literal[3], default: None = None, *,
            required: Literal[True]) -> tuple[float, float, float]: ...
@overload
def _floats(ctx: _Ctx, el, attr: str, count: Literal[3], default: None = None,
            required: bool = False) -> tuple[float, float, float] | None: ...
@overload
def _floats(ctx: _Ctx, el, attr: str, count: Literal[4], default: None = None,
            required: bool = False) -> tuple[float, float, float, float] | None: ...
@overload
def _floats(ctx: _Ctx, el, attr: str, count: int, default: tuple[float, ...] | None = None,
            required: bool = False) -> tuple[float, ...] | None: ...
def _floats(ctx: _Ctx, el, attr: str, count: int, default: tuple[float, ...] | None = None,
            required: bool = False) -> tuple[float, ...] | None:
    """Parse ``count`` finite floats from attribute ``attr`` of ``el``."""
    text = el.get(attr) if el is not None else None
    if text is None:
        if required:
            raise ctx.error(f"missing attribute {attr!r}", el)
        return default
    parts = text.split()
    if len(parts) != count:
        raise ctx.error(f"attribute {attr}={text!r} must hold {count} number(s), found {len(parts)}", el)
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ctx.error(f"attribute {attr}={text!r} is not a number", el) from None
    if not all(math.isfinite(v) for v in values):
        raise ctx.error(f"attribute {attr}={text!r} is not finite (NaN or inf)", el)
    return values


@overload
def _float(ctx, el, attr, default: float, required: bool = False) -> float: ...
@overload
def _float(ctx, el, attr, default: None = None, *, required: Literal[True]) -> float: ...
@overload
def _float(ctx, el, attr, default: None = None, required: bool = False) -> float | None: ...
def _float(ctx, el, attr, default: float | None = None, required: bool = False) -> float | None:
    v = _floats(ctx, el, attr, 1, None, required)
    return default if v is None else v[0]


def _origin(ctx: _Ctx, el) -> Origin:
    o = el.find("origin") if el is not None else None
    if o is None:
        return Origin()
    return Origin(
        xyz=_floats(ctx, o, "xyz", 3, (0.0, 0.0, 0.0)), rpy=_floats(ctx, o, "rpy", 3, (0.0, 0.0, 0.0))
    )


def _name(ctx: _Ctx, el) -> str:
    name = el.get("name")
    if name is None or not name.strip():
        raise ctx.error("missing attribute 'name'", el, element=f"<{el.tag}>")
    return name


# --------------------------------------------------------------------------- elements

def _inertial(ctx: _Ctx, link_el, link_name: str) -> Inertial | None:
    el = link_el.find("inertial")
    if el is None:
        return None
    mass_el = el.find("mass")
    if mass_el is None:
        raise ctx.error(f"link {link_name!r}: <inertial> has no <mass>", el)
    mass = _float(ctx, mass_el, "value", required=True)
    inertia_el = el.find("inertia")
    if inertia_el is None:
        raise ctx.error(f"link {link_name!r}: <inertial> has no <inertia>", el)
    inertia = cast("tuple[float, float, float, float, float, float]", tuple(
        _float(ctx, inertia_el, k, required=True) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    ))
    inertial = Inertial(mass=mass, origin=_origin(ctx, el), inertia=inertia)
    ctx.inertial_elements[link_name] = (mass_el, inertia_el)
    return inertial


def published_quirk(inertial: Inertial, is_root: bool) -> str | None:
    """What a published file does that the default loader accepts (Pinocchio accepts it and
    the physics is well defined), as a phrase for the warning; None when it is not one of them."""
    I = inertial.inertia_matrix()
    mass = inertial.mass
    if mass == 0.0 and is_root and np.any(I):
        return "a root link with mass 0 and a rotational inertia (a fixed base never enters the dynamics)"
    if not mass > 0.0:
        return None
    if not np.any(I):
        return "a point mass (mass > 0, all-zero rotational inertia)"
    eig = np.linalg.eigvalsh(0.5 * (I + I.T))
    tol = _TRIANGLE_RTOL * float(np.abs(eig).sum())
    if np.allclose(I, I.T) and eig[0] >= -tol and eig[0] + eig[1] >= eig[2] - tol:
        return "a thin body (mass > 0, a positive semi-definite rotational inertia)"
    return None


def _check_inertial(ctx: _Ctx, inertial: Inertial, link_name: str, is_root: bool) -> None:
    mass_el, inertia_el = ctx.inertial_elements.get(link_name, (None, None))
    try:
        check_inertial(inertial, link_name, ctx, mass_el, inertia_el)
    except URDFError as exc:
        if ctx.strict is False:
            ctx.accepted.append((link_name, exc.reason))
            return
        quirk = published_quirk(inertial, is_root)
        if quirk is None or ctx.strict:
            hint = ("; load with strict=False to accept it with a warning" if quirk is None else
                    f"; this is {quirk}, which the default loader (strict=None) accepts with a warning")
            raise URDFError(exc.reason + hint, exc.file, exc.element, exc.line, impossible=exc.impossible,
                            remedy={"strict": False} if quirk is None else {"strict": None}) from None
        ctx.accepted.append((link_name, f"{exc.reason}, {quirk}"))


def _check_physics(ctx: _Ctx, desc: RobotDescription, joint_els: dict) -> None:
    """Every inertial (knowing which link is the root), then the moving subtrees' mass."""
    for link in desc.links:
        if link.inertial is not None:
            _check_inertial(ctx, link.inertial, link.name, link.name == desc.root)
    _warn_accepted(ctx)
    for joint, links in massless_moving_subtrees(desc, limit=1):
        shown = ", ".join(repr(n) for n in links[:6]) + (" ..." if len(links) > 6 else "")
        raise ctx.error(f"joint {joint!r} moves links {shown} that have no mass and no inertia, so its "
                        f"acceleration is undefined; give one of them an <inertial> with a mass, or make "
                        f"the joint fixed", joint_els.get(joint), element=f"<joint name={joint!r}>")


def _warn_accepted(ctx: _Ctx) -> None:
    """One warning line for every inertial accepted as written (grouped by what is wrong), not one
    per link: a published robot's five sensor frames with zero inertia are one fact."""
    if not ctx.accepted:
        return
    by_reason: dict[str, list[str]] = {}
    for link, reason in ctx.accepted:
        by_reason.setdefault(reason, []).append(link)
    parts = []
    for reason, links in by_reason.items():
        shown = ", ".join(links[:6]) + (f" and {len(links) - 6} more" if len(links) > 6 else "")
        parts.append(f"{reason}: {shown}")
    n = len(ctx.accepted)
    name = Path(ctx.file).name if ctx.file else "<string>"
    log.warning("%s: %d link inertial%s kept as written (the dynamics use them as given; %s). File: %s",
                name, n, "s" if n != 1 else "", "; ".join(parts), ctx.file or "<string>")


def check_inertial(inertial: Inertial, link_name: str, ctx: _Ctx | None = None, mass_el=None,
                   inertia_el=None) -> None:
    """Raise :class:`URDFError` unless ``inertial`` is physically consistent.

    Positive mass (or mass 0 with a zero inertia: a massless link), a symmetric positive
    definite rotational inertia whose principal moments satisfy the triangle inequality.
    """
    ctx = ctx or _Ctx(None)
    mass = inertial.mass
    if not all(
        math.isfinite(v) for v in (mass, *inertial.inertia, *inertial.origin.xyz, *inertial.origin.rpy)
    ):
        raise ctx.error(
            "inertial values must be finite",
            mass_el,
            element=f"<inertial> of link {link_name!r}",
            impossible=True,
        )
    I = inertial.inertia_matrix()
    massless = mass == 0.0 and not np.any(I)
    if massless:
        return
    if not mass > 0.0:
        raise ctx.error(f"mass must be positive, got {mass:g} "
                        "(a massless link needs mass 0 and an all-zero inertia)", mass_el,
                        element=f"<mass> of link {link_name!r}", impossible=mass < 0.0)
    where = f"<inertia> of link {link_name!r}"
    eig = np.linalg.eigvalsh(I)
    if not eig[0] > 0.0:
        raise ctx.error(
            f"inertia is not positive definite (principal moments {', '.join(f'{e:.6g}' for e in eig)})",
            inertia_el,
            element=where,
            impossible=True,
        )
    tol = _TRIANGLE_RTOL * float(eig.sum())
    if eig[0] + eig[1] < eig[2] - tol:
        raise ctx.error(
            f"inertia breaks the triangle inequality "
            f"(principal moments {eig[0]:.6g} + {eig[1]:.6g} < {eig[2]:.6g})",
            inertia_el,
            element=where,
        )


def _geometry(ctx: _Ctx, owner_el, base_dir: Path | None, link_name: str) -> Geometry:
    g = owner_el.find("geometry")
    if g is None:
        raise ctx.error(f"link {link_name!r}: <{owner_el.tag}> has no <geometry>", owner_el)
    shapes = [c for c in g if isinstance(c.tag, str)]
    if len(shapes) != 1:
        raise ctx.error(f"link {link_name!r}: <geometry> must hold exactly one shape, found {len(shapes)}", g)
    s = shapes[0]
    if s.tag == "box":
        size = _floats(ctx, s, "size", 3, required=True)
        if min(size) < 0:
            raise ctx.error(f"link {link_name!r}: box size must be non-negative", s)
        return Geometry("box", size=size)
    if s.tag in ("cylinder", "capsule"):
        r, length = _float(ctx, s, "radius", required=True), _float(ctx, s, "length", required=True)
        if r < 0 or length < 0:
            raise ctx.error(f"link {link_name!r}: {s.tag} radius and length must be non-negative", s)
        return Geometry(s.tag, radius=r, length=length)
    if s.tag == "sphere":
        r = _float(ctx, s, "radius", required=True)
        if r < 0:
            raise ctx.error(f"link {link_name!r}: sphere radius must be non-negative", s)
        return Geometry("sphere", radius=r)
    if s.tag == "mesh":
        filename = s.get("filename")
        if not filename:
            raise ctx.error(f"link {link_name!r}: <mesh> has no filename", s)
        scale = _floats(ctx, s, "scale", 3, None)
        if scale is None:
            scale1 = (
                _floats(ctx, s, "scale", 1, None)
                if s.get("scale") and len(s.get("scale").split()) == 1
                else None
            )
            scale = (scale1[0],) * 3 if scale1 else (1.0, 1.0, 1.0)
        path = resolve_uri(filename, base_dir)
        fault = _mesh_file_fault(path if path is not None else _plain_path(filename, base_dir))
        if path is None and fault is None:
            log.warning("%s, line %s: mesh %r of link %r not found (resolved via the URDF folder, "
                        "ROS_PACKAGE_PATH and installed description packages)",
                        ctx.file or "<string>", s.sourceline, filename, link_name)
        elif fault is not None:
            log.warning("%s, line %s: mesh %r of link %r %s; the link is drawn without it",
                        ctx.file or "<string>", s.sourceline, filename, link_name, fault)
            path = None
        return Geometry("mesh", filename=filename, path=str(path) if path else None, scale=scale)
    raise ctx.error(f"link {link_name!r}: unknown geometry <{s.tag}>", s)


def _plain_path(filename: str, base_dir: Path | None) -> Path | None:
    """Where a plain or ``file://`` mesh name points (package:// names: None), found or not."""
    if filename.startswith("package://"):
        return None
    p = Path(filename.removeprefix("file://"))
    if p.is_absolute():
        return p
    return base_dir / p if base_dir is not None else None


def _mesh_file_fault(path: Path | None) -> str | None:
    """Why the mesh file at ``path`` cannot be drawn (a folder, not a regular file, unreadable,
    empty), or None (fine, or missing: reported as not found)."""
    import stat

    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return f"is a folder ({path}), not a mesh file"
    if not stat.S_ISREG(st.st_mode):
        return f"is not a regular file ({path})"
    if not os.access(path, os.R_OK):
        return f"cannot be read ({path}: permission denied)"
    if st.st_size == 0:
        return f"is empty ({path}: 0 bytes)"
    return None


def _visual(ctx, el, base_dir, link_name, materials) -> Visual:
    rgba, material = None, None
    m = el.find("material")
    if m is not None:
        material = m.get("name")
        c = m.find("color")
        if c is not None:
            rgba = _floats(ctx, c, "rgba", 4, None)
        elif material in materials:
            rgba = materials[material]
    return Visual(
        name=el.get("name"),
        origin=_origin(ctx, el),
        geometry=_geometry(ctx, el, base_dir, link_name),
        rgba=rgba,
        material=material,
    )


def _link(ctx, el, base_dir, materials) -> Link:
    name = _name(ctx, el)
    return Link(
        name=name,
        inertial=_inertial(ctx, el, name),
        visuals=tuple(_visual(ctx, v, base_dir, name, materials) for v in el.findall("visual")),
        collisions=tuple(
            Collision(name=c.get("name"), origin=_origin(ctx, c), geometry=_geometry(ctx, c, base_dir, name))
            for c in el.findall("collision")
        ),
    )


def _joint(ctx: _Ctx, el, mimic_mode: str) -> Joint:
    name = _name(ctx, el)
    jtype = el.get("type")
    if jtype is None:
        raise ctx.error(f"joint {name!r} has no type", el)
    if jtype in ("floating", "planar"):
        raise ctx.error(f"joint {name!r}: {jtype} joints are not supported (the engine models fixed-base "
                        "trees of revolute, continuous, prismatic and fixed joints)", el)
    if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
        raise ctx.error(f"joint {name!r}: unknown joint type {jtype!r} "
                        "(expected revolute, continuous, prismatic or fixed)", el)
    links = {}
    for role in ("parent", "child"):
        r = el.find(role)
        if r is None or not r.get("link"):
            raise ctx.error(f"joint {name!r} has no <{role} link=...>", el)
        links[role] = r.get("link")
    axis_el = el.find("axis")
    axis = _floats(ctx, axis_el, "xyz", 3, (1.0, 0.0, 0.0)) if axis_el is not None else (1.0, 0.0, 0.0)
    if jtype in MOVABLE_JOINT_TYPES:
        norm = math.sqrt(sum(a * a for a in axis))
        if norm < 1e-12:
            raise ctx.error(f"joint {name!r}: axis is zero", axis_el if axis_el is not None else el)
        axis = cast("tuple[float, float, float]", tuple(a / norm for a in axis))
    limit = Limit()
    lim = el.find("limit")
    if jtype in ("revolute", "prismatic") and lim is None:
        raise ctx.error(
            f"joint {name!r}: a {jtype} joint needs a <limit> (lower, upper, effort, velocity)", el
        )
    if lim is not None:
        lower = _float(ctx, lim, "lower", 0.0 if jtype != "continuous" else -math.inf)
        upper = _float(ctx, lim, "upper", 0.0 if jtype != "continuous" else math.inf)
        if jtype == "continuous":
            lower, upper = -math.inf, math.inf
        effort = _float(ctx, lim, "effort", math.inf)
        velocity = _float(ctx, lim, "velocity", math.inf)
        if lower > upper:
            raise ctx.error(f"joint {name!r}: lower limit {lower:g} is above the upper limit {upper:g}", lim)
        if effort < 0 or velocity < 0:
            raise ctx.error(f"joint {name!r}: effort and velocity limits must be non-negative", lim)
        limit = Limit(lower=lower, upper=upper, velocity=velocity, effort=effort)
    dyn = el.find("dynamics")
    damping = _float(ctx, dyn, "damping", 0.0) if dyn is not None else 0.0
    friction = _float(ctx, dyn, "friction", 0.0) if dyn is not None else 0.0
    # not in the URDF standard: the rotor inertia MJCF calls armature (written back by urdf_export)
    armature = _float(ctx, dyn, "armature", 0.0) if dyn is not None else 0.0
    if damping < 0 or friction < 0 or armature < 0:
        raise ctx.error(f"joint {name!r}: damping, friction and armature must be non-negative", dyn)
    mimic = None
    mim = el.find("mimic")
    if mim is not None:
        if mimic_mode == "error":
            raise ctx.error(
                f"joint {name!r} mimics joint {mim.get('joint')!r}: mimic joints are not supported; "
                "load with mimic='independent' to treat it as an independent joint",
                mim,
                remedy={"mimic": "independent"},
            )
        if not mim.get("joint"):
            raise ctx.error(f"joint {name!r}: <mimic> has no joint", mim)
        if mimic_mode == "coupled":
            mimic = Mimic(joint=mim.get("joint"), multiplier=_float(ctx, mim, "multiplier", 1.0),
                          offset=_float(ctx, mim, "offset", 0.0))
    return Joint(name=name, type=jtype, parent=links["parent"], child=links["child"], origin=_origin(ctx, el),
                 axis=axis, limit=limit, damping=damping, friction=friction, mimic=mimic, armature=armature)


def _check_tree(ctx: _Ctx, links: list[Link], joints: list[Joint], joint_els: dict) -> str:
    names = {l.name for l in links}
    parent_of: dict[str, Joint] = {}
    for j in joints:
        el = joint_els[j.name]
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in names:
                raise ctx.error(
                    f"joint {j.name!r}: {role} link {link!r} is not defined",
                    el.find(role),
                    element=_describe(el),
                )
        if j.parent == j.child:
            raise ctx.error(f"joint {j.name!r} connects link {j.child!r} to itself", el)
        if j.child in parent_of:
            raise ctx.error(
                f"link {j.child!r} has two parents: joints {parent_of[j.child].name!r} and {j.name!r}", el
            )
        parent_of[j.child] = j
    roots = [l.name for l in links if l.name not in parent_of]
    if not roots:
        raise ctx.error("the joints form a loop: every link has a parent, so there is no root link",
                        element="<robot>")
    # loops: walk up from every link until a link already known to reach a root; a walk that
    # revisits a link of its own is a cycle (each link is walked through once: linear)
    reaches_root: set[str] = set()
    for start in names:
        walk, on_walk, link = [start], {start}, start
        while link in parent_of and link not in reaches_root:
            link = parent_of[link].parent
            if link in on_walk:
                j = parent_of[link]
                raise ctx.error(f"the joints form a loop through link {link!r}", joint_els[j.name])
            walk.append(link)
            on_walk.add(link)
        reaches_root.update(walk)
    if len(roots) > 1:
        raise ctx.error(f"the robot has {len(roots)} root links ({', '.join(map(repr, roots[:6]))}); "
                        "a URDF must be a single tree", element="<robot>")
    joint_names = {k.name for k in joints}
    for j in joints:
        if j.mimic is not None and j.mimic.joint not in joint_names:
            raise ctx.error(f"joint {j.name!r} mimics unknown joint {j.mimic.joint!r}", joint_els[j.name])
    return roots[0]


def _yourdfpy_check(ctx: _Ctx, root) -> None:
    """Let yourdfpy parse the tree too (its object model is the reference reading of URDF)."""
    import yourdfpy

    try:
        robot = yourdfpy.URDF._parse_robot(root)
        yourdfpy.URDF(robot=robot, build_scene_graph=False, load_meshes=False)
    except Exception as exc:  # yourdfpy raises assorted types; ours is the only error we let out
        raise ctx.error(f"the URDF object model rejected the file: {exc}", element="<robot>") from None


def _parse(
    data: bytes, file: str | None, base_dir: Path | None, mimic: str, strict: bool | None
) -> RobotDescription:
    ctx = _Ctx(file, strict)
    if mimic not in _MIMIC_MODES:
        raise ValueError(f"mimic must be one of {_MIMIC_MODES}, got {mimic!r}")
    parser = etree.XMLParser(remove_comments=True, resolve_entities=False, no_network=True, huge_tree=False)
    try:
        try:
            root = etree.fromstring(data, parser)
        except etree.XMLSyntaxError as exc:
            # some published files declare <?xml version="0.0"?>; the content is fine
            if "Unsupported version" not in str(exc):
                raise
            root = etree.fromstring(re.sub(rb"^\s*<\?xml[^>]*\?>", b"", data), parser)
    except etree.XMLSyntaxError as exc:
        raise URDFError(f"malformed XML: {exc.msg}", file=file, line=exc.lineno) from None
    except ValueError as exc:
        raise URDFError(f"malformed XML: {exc}", file=file) from None
    if root is None or root.tag != "robot":
        tag = getattr(root, "tag", None)
        raise URDFError(f"the root element must be <robot>, found <{tag}>", file=file,
                        line=getattr(root, "sourceline", None))
    robot_name = root.get("name")
    if not robot_name and strict is False:
        robot_name = Path(file).stem if file else "robot"
        log.warning(
            "%s: <robot> has no name; using %r (accepted: strict=False)", file or "<string>", robot_name
        )
    if not robot_name:
        raise ctx.error("<robot> has no name", root, element="<robot>")
    materials = {}
    for m in root.findall("material"):
        c = m.find("color")
        if m.get("name") and c is not None:
            materials[m.get("name")] = _floats(ctx, c, "rgba", 4, None)
    links: list[Link] = []
    link_lines: dict[str, int] = {}
    for el in root.findall("link"):
        link = _link(ctx, el, base_dir, materials)
        if link.name in link_lines:
            raise ctx.error(
                f"link {link.name!r} is defined twice (first at line {link_lines[link.name]})", el
            )
        link_lines[link.name] = el.sourceline
        links.append(link)
    if not links:
        raise ctx.error("the robot has no links", root, element="<robot>")
    joints: list[Joint] = []
    joint_els: dict[str, etree._Element] = {}
    for el in root.findall("joint"):
        joint = _joint(ctx, el, mimic)
        if joint.name in joint_els:
            raise ctx.error(
                f"joint {joint.name!r} is defined twice (first at line {joint_els[joint.name].sourceline})",
                el,
            )
        joint_els[joint.name] = el
        joints.append(joint)
    root_link = _check_tree(ctx, links, joints, joint_els)
    desc = RobotDescription(
        name=robot_name, links=tuple(links), joints=tuple(joints), root=root_link, source=file
    )
    _check_physics(ctx, desc, joint_els)
    _yourdfpy_check(ctx, root)
    return desc


def load_urdf(path: str | Path, mimic: str = "coupled", strict: bool | None = None) -> RobotDescription:
    """Load and validate the URDF file at ``path`` (raises :class:`URDFError`).

    ``mimic``: "coupled" (default) keeps each mimic joint coupled to its master, "independent"
    makes each an ordinary joint, "error" refuses them.
    ``strict``: None (default) accepts the well-defined quirks of published files with a
    warning (point masses, thin bodies, a root link with mass 0 and an inertia); True refuses
    them; False also accepts physically inconsistent inertials (mass 0 with an inertia on a
    moving link, inertia not positive definite or breaking the triangle inequality) and a
    missing robot name, logged as warnings and kept as given.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise URDFError(f"cannot read the file: {exc.strerror or exc}", file=str(path)) from None
    try:
        return _parse(data, str(path), path.resolve().parent, mimic, strict)
    except URDFError:
        raise
    except RecursionError:
        raise URDFError("the document is nested too deeply", file=str(path)) from None
    except Exception as exc:  # never let anything but URDFError out of the loader
        raise URDFError(f"cannot read the URDF: {type(exc).__name__}: {exc}", file=str(path)) from None


def parse_urdf_string(
    xml: str | bytes,
    base_dir: str | Path | None = None,
    source: str | None = None,
    mimic: str = "coupled",
    strict: bool | None = None,
) -> RobotDescription:
    """Parse and validate URDF text; relative and ``package://`` names resolve from ``base_dir``."""
    data = xml.encode("utf-8") if isinstance(xml, str) else bytes(xml)
    try:
        return _parse(data, source, Path(base_dir).resolve() if base_dir is not None else None, mimic, strict)
    except URDFError:
        raise
    except Exception as exc:
        raise URDFError(f"cannot read the URDF: {type(exc).__name__}: {exc}", file=source) from None
