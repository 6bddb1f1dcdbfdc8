"""Static balance of a floating robot: its support polygon and whether the centre of mass
projects inside it.

``balance(model, q, feet)`` takes the contact links' points in their own frames (a foot's mesh
vertices, or its origin), places them with forward kinematics at ``q``, keeps each foot's
sole (its points within ``SOLE_DEPTH`` of its lowest one), and returns the convex hull of the
soles on the ground with the centre of mass and its projection. Metres, world frame, z up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["FOOT_HINTS", "SOLE_DEPTH", "Balance", "balance", "contact_points", "default_contact_links",
           "inside_polygon", "support_polygon"]

FOOT_HINTS = ("foot", "feet", "sole", "toe", "ankle")
SOLE_DEPTH = 0.01      # m: a foot's points this close to its lowest one touch the ground


@dataclass(frozen=True)
class Balance:
    """A floating robot's balance at one pose: the centre of mass (3,) in the world, its
    projection on the ground (3,), the support polygon of the contact links' soles on the
    ground ((k, 3), counter-clockwise, k >= 1) and whether the projection lies inside it."""

    com: np.ndarray
    com_ground: np.ndarray
    support: np.ndarray
    inside: bool


def default_contact_links(model) -> tuple[str, ...]:
    """Links a floating robot stands on: leaf links named like feet, else every leaf link."""
    parents = {j.parent for j in model.description.joints}
    leaves = [l for l in model.link_names if l not in parents]
    named = [l for l in leaves if any(h in l.lower() for h in FOOT_HINTS)]
    return tuple(named or leaves)


def _cross2(a, b) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def support_polygon(points: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise, Andrew's monotone chain) of points ``(n, 2 or 3)``
    projected on the ground: ``(k, 3)`` with z = 0 (k <= 2 when the points are that few)."""
    pts = np.unique(np.round(np.asarray(points, float)[:, :2], 12), axis=0)
    if len(pts) <= 2:
        hull = pts
    else:
        pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]

        def half(seq):
            out = []
            for p in seq:
                while len(out) >= 2 and _cross2(out[-1] - out[-2], p - out[-2]) <= 0:
                    out.pop()
                out.append(p)
            return out
        lower, upper = half(pts), half(pts[::-1])
        hull = np.array(lower[:-1] + upper[:-1])
    return np.column_stack([hull, np.zeros(len(hull))])


def inside_polygon(point: np.ndarray, polygon: np.ndarray) -> bool:
    """Whether ``point`` (2 or 3,) lies inside (or on) the counter-clockwise ``polygon``
    ``(k, 2 or 3)`` seen from above; False for fewer than three vertices."""
    if len(polygon) < 3:
        return False
    p = np.asarray(point, float)
    a, b = polygon[:, :2], np.roll(polygon[:, :2], -1, axis=0)
    cross = (b[:, 0] - a[:, 0]) * (p[1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (p[0] - a[:, 0])
    return bool(np.all(cross >= 0))


def contact_points(model, q, feet: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The feet's points in the world at ``q`` (nq,): one ``(k, 3)`` array per link of ``feet``
    ({link: (k, 3) or homogeneous (k, 4) points in the link's frame}), in ``feet``'s order."""
    if not feet:
        return []
    with torch.no_grad():
        poses = model.forward_kinematics(torch.as_tensor(np.asarray(q, float))).cpu().numpy()
    index = {l: i for i, l in enumerate(model.link_names)}
    out = []
    for link, pts in feet.items():
        pts = np.asarray(pts, float)
        T = poses[index[link]]
        out.append(pts[:, :3] @ T[:3, :3].T + T[:3, 3])
    return out


def balance(model, q, feet: Mapping[str, np.ndarray]) -> Balance | None:
    """The centre of mass, its ground projection and the support polygon of the soles of
    ``feet`` (see :func:`contact_points`) at ``q``; None without feet."""
    world = contact_points(model, q, feet)
    if not world:
        return None
    with torch.no_grad():
        com = model.center_of_mass(torch.as_tensor(np.asarray(q, float))).cpu().numpy().astype(float)
    soles = [w[w[:, 2] <= w[:, 2].min() + SOLE_DEPTH] for w in world]
    support = support_polygon(np.concatenate(soles))
    ground = np.array([com[0], com[1], 0.0])
    return Balance(com, ground, support, inside_polygon(ground, support))
