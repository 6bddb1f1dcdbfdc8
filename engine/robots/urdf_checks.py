"""The URDF loader's checks on what it read: the tree (names, parents, loops, one root, mimic
masters), the inertials (with the published quirks the default loader accepts, and one warning
for what it accepted) and the moving subtrees' mass; yourdfpy's reading as a second opinion.
Part of :func:`engine.robots.urdf.load_urdf`; :func:`check_inertial` also checks the values
``RobotModel.with_link_params`` puts in.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from engine.robots.description import Inertial, Joint, Link, RobotDescription, massless_moving_subtrees
from engine.robots.urdf_xml import URDFError, _Ctx, _describe

log = logging.getLogger("engine.robots.urdf")  # the loader's one logger, whichever part writes

_TRIANGLE_RTOL = 1e-6


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


def inconsistent_inertia(inertial: Inertial) -> str | None:
    """A positive mass with a rotational inertia that is not positive definite or breaks the triangle
    inequality, as a phrase for the warning (the default loader keeps it as written, as Pinocchio and
    PyBullet do); None otherwise."""
    if not inertial.mass > 0.0:
        return None
    eig = np.linalg.eigvalsh(inertial.inertia_matrix())
    if not eig[0] > 0.0:
        return "a rotational inertia that is not positive definite"
    if eig[0] + eig[1] < eig[2] - _TRIANGLE_RTOL * float(eig.sum()):
        return "a rotational inertia that breaks the triangle inequality"
    return None


def _check_inertial(ctx: _Ctx, inertial: Inertial, link_name: str, is_root: bool) -> None:
    mass_el, inertia_el = ctx.inertial_elements.get(link_name, (None, None))
    try:
        check_inertial(inertial, link_name, ctx, mass_el, inertia_el)
    except URDFError as exc:
        quirk = published_quirk(inertial, is_root) or inconsistent_inertia(inertial)
        if ctx.strict is False:
            ctx.accepted.append((link_name, quirk or re.split(r" \(|, ", exc.reason)[0]))
            return
        if quirk is None or ctx.strict:
            hint = ("; load with strict=False to accept it with a warning" if quirk is None else
                    f"; this is {quirk}, which the default loader (strict=None) accepts with a warning")
            raise URDFError(exc.reason + hint, exc.file, exc.element, exc.line, impossible=exc.impossible,
                            remedy={"strict": False} if quirk is None else {"strict": None}) from None
        ctx.accepted.append((link_name, quirk))


def _check_physics(ctx: _Ctx, desc: RobotDescription, joint_els: dict) -> None:
    """Every inertial (knowing which link is the root), then the moving subtrees' mass: a joint that
    moves no mass is refused by ``strict=True`` and otherwise named in a warning (the model refuses
    forward dynamics along it; kinematics and inverse dynamics are defined)."""
    for link in desc.links:
        if link.inertial is not None:
            _check_inertial(ctx, link.inertial, link.name, link.name == desc.root)
    _warn_accepted(ctx)
    if ctx.strict:
        for joint, links in massless_moving_subtrees(desc, limit=1):
            shown = ", ".join(repr(n) for n in links[:6]) + (" ..." if len(links) > 6 else "")
            raise ctx.error(f"joint {joint!r} moves links {shown} that have no mass and no inertia, so its "
                            f"acceleration is undefined; give one of them an <inertial> with a mass, or make "
                            f"the joint fixed (the default loader, strict=None, loads it with a warning)",
                            joint_els.get(joint), element=f"<joint name={joint!r}>", remedy={"strict": None})
        return
    # a coupled mimic joint's row is folded into its master's: only independent joints make M singular
    bad = [j for j, _ in massless_moving_subtrees(desc, links=False) if desc.joint(j).mimic is None]
    if bad:
        _warn(ctx, f"{_names(bad)} move{'s' if len(bad) == 1 else ''} no mass or inertia (the mass matrix "
                   "is singular along them): forward dynamics and simulation are refused; kinematics, "
                   "inverse dynamics and the mass matrix are defined")


def _names(joints: list[str], kind: str = "joint") -> str:
    """``joint 'a'`` or ``joints 'a', 'b' and 3 more``."""
    shown = ", ".join(repr(j) for j in joints[:8]) + (f" and {len(joints) - 8} more" if len(joints) > 8 else "")
    return f"{kind}{'s' if len(joints) != 1 else ''} {shown}"


def _warn(ctx: _Ctx, line: str) -> None:
    """One accepted fault: a line of the description's ``warnings`` and of the log (naming the file)."""
    ctx.warnings.append(line)
    name = Path(ctx.file).name if ctx.file else "<string>"
    log.warning("%s: %s. File: %s", name, line, ctx.file or "<string>")


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
    them = "them" if n != 1 else "it"
    _warn(ctx, f"{n} link inertial{'s' if n != 1 else ''} kept as written (the dynamics use {them} as given; "
               f"{'; '.join(parts)})")


def check_inertial(inertial: Inertial, link_name: str, ctx: _Ctx | None = None, mass_el=None,
                   inertia_el=None) -> None:
    """Raise :class:`URDFError` unless ``inertial`` is physically consistent.

    Positive mass (or mass 0 with a zero inertia: a massless link), a symmetric positive
    definite rotational inertia whose principal moments satisfy the triangle inequality.
    """
    ctx = ctx or _Ctx(None)
    mass = inertial.mass
    values = (mass, *inertial.inertia, *inertial.origin.xyz, *inertial.origin.rpy)
    if not all(math.isfinite(v) for v in values):
        raise ctx.error("inertial values must be finite", mass_el,
                        element=f"<inertial> of link {link_name!r}", impossible=True)
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
        raise ctx.error(f"inertia is not positive definite "
                        f"(principal moments {', '.join(f'{e:.6g}' for e in eig)})", inertia_el,
                        element=where, impossible=True)
    tol = _TRIANGLE_RTOL * float(eig.sum())
    if eig[0] + eig[1] < eig[2] - tol:
        raise ctx.error(f"inertia breaks the triangle inequality "
                        f"(principal moments {eig[0]:.6g} + {eig[1]:.6g} < {eig[2]:.6g})", inertia_el,
                        element=where)


def _check_tree(ctx: _Ctx, links: list[Link], joints: list[Joint], joint_els: dict) -> str:
    names = {l.name for l in links}
    parent_of: dict[str, Joint] = {}
    for j in joints:
        el = joint_els[j.name]
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in names:
                raise ctx.error(f"joint {j.name!r}: {role} link {link!r} is not defined", el.find(role),
                                element=_describe(el))
        if j.parent == j.child:
            raise ctx.error(f"joint {j.name!r} connects link {j.child!r} to itself", el)
        if j.child in parent_of:
            raise ctx.error(f"link {j.child!r} has two parents: joints {parent_of[j.child].name!r} and "
                            f"{j.name!r}", el)
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
    orphans = []
    for i, j in enumerate(joints):
        if j.mimic is not None and j.mimic.joint not in joint_names:
            if ctx.strict:
                raise ctx.error(f"joint {j.name!r} mimics unknown joint {j.mimic.joint!r} (the default loader, "
                                "strict=None, loads it as an independent joint with a warning)",
                                joint_els[j.name], remedy={"strict": None})
            orphans.append(f"{j.name!r} mimics {j.mimic.joint!r}")
            joints[i] = replace(j, mimic=None)
    if orphans:
        shown = ", ".join(orphans[:8]) + (f" and {len(orphans) - 8} more" if len(orphans) > 8 else "")
        _warn(ctx, f"mimic joint{'s' if len(orphans) != 1 else ''} whose master the file does not define, "
                   f"loaded as independent joints (as Pinocchio's mimic=False model): {shown}")
    return roots[0]


def _yourdfpy_check(ctx: _Ctx, root) -> None:
    """Let yourdfpy parse the tree too (its object model is the reference reading of URDF)."""
    import yourdfpy

    try:
        robot = yourdfpy.URDF._parse_robot(root)
        yourdfpy.URDF(robot=robot, build_scene_graph=False, load_meshes=False)
    except Exception as exc:  # yourdfpy raises assorted types; ours is the only error we let out
        raise ctx.error(f"the URDF object model rejected the file: {exc}", element="<robot>") from None
