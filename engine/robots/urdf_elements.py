"""The URDF loader's element parsers: ``<link>`` (inertial, visuals, collisions and their
geometry) and ``<joint>`` (type, links, axis, limits, dynamics, mimic) -> the immutable
records of :mod:`engine.robots.description`, each fault named by element and line. Part of
:func:`engine.robots.urdf.load_urdf`.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from engine.robots.description import (
    MOVABLE_JOINT_TYPES,
    Collision,
    Geometry,
    Inertial,
    Joint,
    Limit,
    Link,
    Mimic,
    Visual,
)
from engine.robots.urdf_paths import _mesh_file_fault, _plain_path, resolve_uri
from engine.robots.urdf_xml import _Ctx, _float, _floats, _name, _origin

log = logging.getLogger("engine.robots.urdf")  # the loader's one logger, whichever part writes


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
    ixx, ixy, ixz, iyy, iyz, izz = (_float(ctx, inertia_el, k, required=True)
                                    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    inertial = Inertial(mass=mass, origin=_origin(ctx, el), inertia=(ixx, ixy, ixz, iyy, iyz, izz))
    ctx.inertial_elements[link_name] = (mass_el, inertia_el)
    return inertial


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
        text = s.get("scale")
        if text is not None and len(text.split()) == 1:  # one number scales all three axes
            scale = (_float(ctx, s, "scale", required=True),) * 3
        else:
            scale = _floats(ctx, s, "scale", 3, (1.0, 1.0, 1.0))
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
    return Visual(name=el.get("name"), origin=_origin(ctx, el),
                  geometry=_geometry(ctx, el, base_dir, link_name), rgba=rgba, material=material)


def _link(ctx, el, base_dir, materials) -> Link:
    name = _name(ctx, el)
    return Link(
        name=name,
        inertial=_inertial(ctx, el, name),
        visuals=tuple(_visual(ctx, v, base_dir, name, materials) for v in el.findall("visual")),
        collisions=tuple(Collision(name=c.get("name"), origin=_origin(ctx, c),
                                   geometry=_geometry(ctx, c, base_dir, name))
                         for c in el.findall("collision")),
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
        axis = tuple(a / norm for a in axis)
    limit = Limit()
    lim = el.find("limit")
    if jtype in ("revolute", "prismatic") and lim is None:
        raise ctx.error(f"joint {name!r}: a {jtype} joint needs a <limit> (lower, upper, effort, "
                        "velocity)", el)
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
            raise ctx.error(f"joint {name!r} mimics joint {mim.get('joint')!r}: mimic joints are not "
                            "supported; load with mimic='independent' to treat it as an independent joint",
                            mim,
                            remedy={"mimic": "independent"})
        if not mim.get("joint"):
            raise ctx.error(f"joint {name!r}: <mimic> has no joint", mim)
        if mimic_mode == "coupled":
            mimic = Mimic(joint=mim.get("joint"), multiplier=_float(ctx, mim, "multiplier", 1.0),
                          offset=_float(ctx, mim, "offset", 0.0))
    return Joint(name=name, type=jtype, parent=links["parent"], child=links["child"], origin=_origin(ctx, el),
                 axis=axis, limit=limit, damping=damping, friction=friction, mimic=mimic, armature=armature)
