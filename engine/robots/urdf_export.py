"""Write a robot as URDF: identified (learned) masses, centres of mass, inertias and joint damping
written back, everything else kept.

:func:`save_urdf` takes a :class:`RobotModel` (its current values, learned ones included: see
``RobotModel.current_description``) or a :class:`RobotDescription`:

- when the robot came from a URDF file, that file is edited: each link's ``<inertial>`` and
  each joint's ``<dynamics damping>`` are replaced, visuals, collisions, materials, meshes,
  limits, comments and extra tags stay as written; a mesh name that would not find its file
  from the new file's folder (a relative name, a ``package://`` of a source tree) is made absolute;
- otherwise (xacro, MJCF, a description built in code) a URDF is generated from the description
  (links, joints, inertials, visuals and collisions with absolute mesh paths).

Joint armature (MJCF's rotor inertia, which URDF lacks) is written as an extra ``armature``
attribute of ``<dynamics>``, which our loader reads and other URDF readers ignore.

Numbers are written with 17 significant digits, so the file loads back to the same float64
model. The save is atomic (a temporary file, then a rename).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import cast

from lxml import etree

from engine.io import atomic_write_bytes
from engine.robots.description import Geometry, Inertial, Origin, RobotDescription

__all__ = ["description_to_urdf", "save_urdf"]


def _num(v: float) -> str:
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"cannot write a non-finite number ({v}) to URDF")
    return repr(0.0 if v == 0 else v)


def _nums(vs) -> str:
    return " ".join(_num(v) for v in vs)


def _origin_el(parent, origin: Origin) -> None:
    etree.SubElement(parent, "origin", xyz=_nums(origin.xyz), rpy=_nums(origin.rpy))


def _inertial_el(inertial: Inertial):
    el = etree.Element("inertial")
    _origin_el(el, inertial.origin)
    etree.SubElement(el, "mass", value=_num(inertial.mass))
    ixx, ixy, ixz, iyy, iyz, izz = inertial.inertia
    etree.SubElement(el, "inertia", ixx=_num(ixx), ixy=_num(ixy), ixz=_num(ixz), iyy=_num(iyy), iyz=_num(iyz),
                     izz=_num(izz))
    return el


def _geometry_el(parent, g: Geometry) -> bool:
    geom = etree.SubElement(parent, "geometry")
    if g.kind == "box":
        etree.SubElement(geom, "box", size=_nums(g.size))
    elif g.kind in ("cylinder", "capsule"):   # URDF has no capsule: its cylinder part is drawn
        etree.SubElement(geom, "cylinder", radius=_num(cast(float, g.radius)), length=_num(cast(float, g.length)))
    elif g.kind == "sphere":
        etree.SubElement(geom, "sphere", radius=_num(cast(float, g.radius)))
    elif g.kind == "mesh":
        name = g.path or g.filename
        if not name:
            return False
        etree.SubElement(geom, "mesh", filename=str(name), scale=_nums(g.scale))
    else:
        return False
    return True


def description_to_urdf(desc: RobotDescription) -> bytes:
    """A URDF document of a description (every link, joint, inertial, visual and collision)."""
    ball = next((j.name for j in desc.joints if j.type == "ball"), None)
    if ball is not None:
        raise ValueError(f"joint {ball!r} is a ball joint, which URDF cannot express; keep the robot as MJCF")
    robot = etree.Element("robot", name=desc.name)
    if desc.floating_base:
        robot.append(etree.Comment(f" {desc.root} is a floating base: load with floating_base=True "))
    for link in desc.links:
        el = etree.SubElement(robot, "link", name=link.name)
        if link.inertial is not None:
            el.append(_inertial_el(link.inertial))
        for tag, items in (("visual", link.visuals), ("collision", link.collisions)):
            for item in items:
                sub = etree.Element(tag)
                if item.name:
                    sub.set("name", item.name)
                _origin_el(sub, item.origin)
                if not _geometry_el(sub, item.geometry):
                    continue
                rgba = getattr(item, "rgba", None)
                if tag == "visual" and rgba is not None:
                    mat = etree.SubElement(sub, "material", name=f"{link.name}_{len(el)}")
                    etree.SubElement(mat, "color", rgba=_nums(rgba))
                el.append(sub)
    for j in desc.joints:
        el = etree.SubElement(robot, "joint", name=j.name, type=j.type)
        _origin_el(el, j.origin)
        etree.SubElement(el, "parent", link=j.parent)
        etree.SubElement(el, "child", link=j.child)
        if j.type != "fixed":
            etree.SubElement(el, "axis", xyz=_nums(j.axis))
            lim: dict[str, str] = {}
            if j.type != "continuous" and math.isfinite(j.limit.lower) and math.isfinite(j.limit.upper):
                lim.update(lower=_num(j.limit.lower), upper=_num(j.limit.upper))
            lim["effort"] = _num(j.limit.effort) if math.isfinite(j.limit.effort) else "1e9"
            lim["velocity"] = _num(j.limit.velocity) if math.isfinite(j.limit.velocity) else "1e9"
            if j.type == "continuous" or "lower" in lim:
                etree.SubElement(el, "limit", **lim)
            elif j.type == "revolute":     # an unlimited hinge (MJCF): continuous in URDF terms
                el.set("type", "continuous")
                etree.SubElement(el, "limit", **lim)
            else:
                etree.SubElement(el, "limit", lower="-1e9", upper="1e9", **lim)
            if j.damping or j.friction or j.armature:
                dyn = etree.SubElement(el, "dynamics", damping=_num(j.damping), friction=_num(j.friction))
                if j.armature:     # an extension attribute (URDF has no rotor inertia); our loader reads it
                    dyn.set("armature", _num(j.armature))
            if j.mimic is not None:
                etree.SubElement(el, "mimic", joint=j.mimic.joint, multiplier=_num(j.mimic.multiplier),
                                 offset=_num(j.mimic.offset))
    return etree.tostring(robot, pretty_print=True, xml_declaration=True, encoding="utf-8")


def _edit_original(desc: RobotDescription, source: Path, out_dir: Path) -> bytes:
    from engine.robots.urdf import resolve_uri

    parser = etree.XMLParser(remove_comments=False, resolve_entities=False, no_network=True)
    tree = etree.parse(str(source), parser)
    root = tree.getroot()
    links = {l.name: l for l in desc.links}
    joints = {j.name: j for j in desc.joints}
    for el in root.findall("link"):
        link = links.get(el.get("name"))
        if link is None:
            continue
        old = el.find("inertial")
        if link.inertial is None:
            if old is not None:
                el.remove(old)
            continue
        new = _inertial_el(link.inertial)
        if old is not None:
            new.tail = old.tail
            el.replace(old, new)
        else:
            el.insert(0, new)
    for el in root.findall("joint"):
        j = joints.get(el.get("name"))
        if j is None or j.type == "fixed":
            continue
        dyn = el.find("dynamics")
        if dyn is None and (j.damping or j.friction or j.armature):
            dyn = etree.SubElement(el, "dynamics")
        if dyn is not None:
            dyn.set("damping", _num(j.damping))
            dyn.set("friction", _num(j.friction))
            if j.armature:
                dyn.set("armature", _num(j.armature))
    src_dir = source.resolve().parent
    if src_dir != out_dir.resolve():
        for mesh in root.iter("mesh"):
            name = mesh.get("filename") or ""
            before = resolve_uri(name, src_dir)
            if before is None:
                continue
            after = resolve_uri(name, out_dir)
            if after is None or after.resolve() != before.resolve():   # the name would not find the mesh
                mesh.set("filename", str(before.resolve()))
    return etree.tostring(tree, xml_declaration=True, encoding="utf-8")


def save_urdf(model_or_description, path: str | os.PathLike) -> Path:
    """Write the robot (a RobotModel with its current, e.g. identified, values, or a
    RobotDescription) as a URDF at ``path``; returns the path. See the module docstring."""
    desc = model_or_description
    if not isinstance(desc, RobotDescription):
        desc = model_or_description.current_description()
    path = Path(path)
    if path.suffix.lower() != ".urdf":
        raise ValueError(f'{path}: a URDF file name must end in ".urdf"')
    out_dir = path.resolve().parent
    if not out_dir.is_dir():
        raise ValueError(f"{path}: the folder {out_dir} does not exist")
    source = Path(desc.source) if desc.source else None
    if source is not None and source.suffix.lower() == ".urdf" and source.is_file():
        data = _edit_original(desc, source, out_dir)
    else:
        data = description_to_urdf(desc)
    atomic_write_bytes(path, data)   # the umask's mode; a full disk is a DiskFullError, the old file kept
    return path
