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
  (``mimic="error"``); a ``<mimic>`` naming a joint the file does not define is dropped (the
  joint independent, as in Pinocchio's mimic=False model) with a warning naming both joints;
- inertials: mass must be positive (``mass = 0`` with an all-zero inertia is accepted as a
  massless marker link, as published URDFs often do), the rotational inertia must be
  symmetric positive definite and satisfy the triangle inequality (``Ixx + Iyy >= Izz``...
  on the principal moments, to a relative tolerance of 1e-6). Three levels (``strict``):
  the default (None) loads what Pinocchio and PyBullet load where the mass is positive, with
  one warning per file naming the links: a point mass, a thin body, a root link with mass 0
  and an inertia, and a rotational inertia that is not positive definite or breaks the
  triangle inequality (kept as written); ``strict=True`` refuses all of them;
  ``strict=False`` also accepts a negative mass, mass 0 with an inertia on a moving link and
  a missing robot name, as warnings, values kept as given;
- a movable joint that moves nothing with mass or inertia (the mass matrix is singular along
  it): named in a warning (the model refuses forward dynamics and simulation, naming it;
  kinematics, inverse dynamics and the mass matrix are defined), refused by ``strict=True``.

What the loader accepted is also kept in ``RobotDescription.warnings`` (one line per kind),
which ``robot info`` lists and the app shows.

Every failure raises :class:`URDFError` (a ``ValueError``) whose message names the file,
the element and, where known, the line. Missing mesh files are logged as warnings only.

``resolve_uri(uri, base_dir)`` resolves ``package://``, ``file://``, absolute and relative
file names through the URDF's folder (and its parents), ``ROS_PACKAGE_PATH``,
``AMENT_PREFIX_PATH`` and installed description packages (example-robot-data under
``site-packages/cmeel.prefix/share``, pybullet_data, diff_robot_data).

The loader's parts: :mod:`engine.robots.urdf_xml` (the error, the parse context, attribute
readers), :mod:`engine.robots.urdf_elements` (``<link>`` and ``<joint>``),
:mod:`engine.robots.urdf_checks` (tree, inertials, lenient acceptance) and
:mod:`engine.robots.urdf_paths` (``resolve_uri``, mesh files); this module reads the document
and is the public entry point (every public name of the parts is importable from here).
"""


from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from lxml import etree

from engine.robots.description import Joint, Link, RobotDescription
from engine.robots.urdf_checks import (
    _check_physics,
    _check_tree,
    _yourdfpy_check,
    check_inertial,
    published_quirk,
)
from engine.robots.urdf_elements import _joint, _link
from engine.robots.urdf_paths import description_package_roots, resolve_uri
from engine.robots.urdf_xml import URDFError, _Ctx, _floats

__all__ = ["URDFError", "check_inertial", "description_package_roots", "load_urdf", "parse_urdf_string",
           "published_quirk", "resolve_uri"]

log = logging.getLogger(__name__)

_MIMIC_MODES = ("coupled", "independent", "error")


def _parse(data: bytes, file: str | None, base_dir: Path | None, mimic: str,
           strict: bool | None) -> RobotDescription:
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
    if not robot_name and root.find("link") is None:
        raise ctx.error("the file holds no robot: <robot> has no name and no <link> (Pinocchio refuses it "
                        "too)", root, element="<robot>")
    if not robot_name and strict is False:
        robot_name = Path(file).stem if file else "robot"
        log.warning("%s: <robot> has no name; using %r (accepted: strict=False)", file or "<string>",
                    robot_name)
    if not robot_name:
        raise ctx.error("<robot> has no name", root, element="<robot>")
    materials = {}
    for m in root.findall("material"):
        c = m.find("color")
        if m.get("name") and c is not None:
            materials[m.get("name")] = _floats(ctx, c, "rgba", 4, None)
    links: list[Link] = []
    link_lines: dict[str, int | None] = {}   # name -> line of its <link>
    for el in root.findall("link"):
        link = _link(ctx, el, base_dir, materials)
        if link.name in link_lines:
            raise ctx.error(f"link {link.name!r} is defined twice (first at line {link_lines[link.name]})",
                            el)
        link_lines[link.name] = el.sourceline
        links.append(link)
    if not links:
        raise ctx.error("the robot has no links", root, element="<robot>")
    joints: list[Joint] = []
    joint_els: dict[str, Any] = {}   # name -> its <joint> element
    for el in root.findall("joint"):
        joint = _joint(ctx, el, mimic)
        if joint.name in joint_els:
            first = joint_els[joint.name].sourceline
            raise ctx.error(f"joint {joint.name!r} is defined twice (first at line {first})", el)
        joint_els[joint.name] = el
        joints.append(joint)
    root_link = _check_tree(ctx, links, joints, joint_els)
    desc = RobotDescription(name=robot_name, links=tuple(links), joints=tuple(joints), root=root_link,
                            source=file)
    _check_physics(ctx, desc, joint_els)
    _yourdfpy_check(ctx, root)
    return replace(desc, warnings=tuple(ctx.warnings)) if ctx.warnings else desc


def load_urdf(path: str | Path, mimic: str = "coupled", strict: bool | None = None) -> RobotDescription:
    """Load and validate the URDF file at ``path`` (raises :class:`URDFError`).

    ``mimic``: "coupled" (default) keeps each mimic joint coupled to its master, "independent"
    makes each an ordinary joint, "error" refuses them.
    ``strict``: None (default) loads what Pinocchio loads where the mass is positive (point
    masses, thin bodies, a root link with mass 0 and an inertia, rotational inertias that are not
    positive definite or break the triangle inequality, joints that move no mass, a mimic joint
    whose master is absent), each named once in a warning and in the description's ``warnings``;
    True refuses them; False also accepts a negative mass, mass 0 with an inertia on a moving
    link and a missing robot name, kept as given.
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


def parse_urdf_string(xml: str | bytes, base_dir: str | Path | None = None, source: str | None = None,
                      mimic: str = "coupled", strict: bool | None = None) -> RobotDescription:
    """Parse and validate URDF text; relative and ``package://`` names resolve from ``base_dir``."""
    data = xml.encode("utf-8") if isinstance(xml, str) else bytes(xml)
    try:
        return _parse(data, source, Path(base_dir).resolve() if base_dir is not None else None, mimic, strict)
    except URDFError:
        raise
    except Exception as exc:
        raise URDFError(f"cannot read the URDF: {type(exc).__name__}: {exc}", file=source) from None
