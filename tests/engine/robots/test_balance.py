"""Support polygon and balance of a floating robot (engine/robots/balance.py), checked with scipy's
convex hull and MuJoCo's centre of mass (independent references)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from engine.robots.balance import (
    balance,
    contact_points,
    default_contact_links,
    inside_polygon,
    support_polygon,
)

FLOATING = Path(__file__).parent / "mjcf" / "floating.xml"


def test_support_polygon_is_scipys_convex_hull():
    rng = np.random.default_rng(3)
    pts = np.column_stack([rng.normal(size=(30, 2)), rng.uniform(0, 0.1, 30)])
    poly = support_polygon(pts)
    hull = ConvexHull(pts[:, :2])
    assert len(poly) == len(hull.vertices) and np.all(poly[:, 2] == 0)
    assert {tuple(np.round(p, 12)) for p in poly[:, :2]} == {
        tuple(np.round(p, 12)) for p in pts[hull.vertices, :2]
    }
    x, y = poly[:, 0], poly[:, 1]          # counter-clockwise: positive area, scipy's
    assert 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y) == pytest.approx(hull.volume)
    inner = hull.equations                  # scipy: a x + b y + c <= 0 inside
    for p in rng.normal(scale=1.5, size=(200, 2)):
        expected = bool(np.all(inner[:, :2] @ p + inner[:, 2] <= 0))
        assert inside_polygon(p, poly) == expected
    assert len(support_polygon(pts[:2])) == 2 and not inside_polygon(np.zeros(3), support_polygon(pts[:2]))


def test_balance_of_a_floating_robot_matches_mujoco():
    import mujoco
    import torch

    from engine.robots import RobotModel

    model = RobotModel.from_file(str(FLOATING), dtype=torch.float64)
    assert default_contact_links(model) == ("shin",)
    q = model.neutral().numpy().copy()
    q[:3] = [0.1, -0.2, 0.9]
    q[7:] = [0.3, -0.5]
    # a square "sole" 4 cm under the shin's frame and one point higher up (not part of the sole)
    sole = np.array([[0.05, 0.05, -0.4], [-0.05, 0.05, -0.4], [-0.05, -0.05, -0.4], [0.05, -0.05, -0.4],
                     [0.0, 0.0, 0.0]])
    mm = mujoco.MjModel.from_xml_path(str(FLOATING))
    md = mujoco.MjData(mm)
    md.qpos[:] = np.concatenate([q[:3], [q[6]], q[3:6], q[7:]])      # MuJoCo's quaternion: w, x, y, z
    mujoco.mj_forward(mm, md)
    b = balance(model, q, {"shin": sole})
    np.testing.assert_allclose(b.com, md.subtree_com[mm.body("torso").id], atol=1e-12)
    np.testing.assert_allclose(b.com_ground, [*b.com[:2], 0.0])
    R, p = md.xmat[mm.body("shin").id].reshape(3, 3), md.xpos[mm.body("shin").id]
    world = sole @ R.T + p
    np.testing.assert_allclose(contact_points(model, q, {"shin": sole})[0], world, atol=1e-12)
    low = world[world[:, 2] <= world[:, 2].min() + 0.01]
    assert 1 <= len(low) <= 4                     # the origin, 0.4 m up, is never in the sole
    np.testing.assert_allclose(b.support, support_polygon(low))
    assert b.inside == inside_polygon(b.com_ground, b.support)
    assert balance(model, q, {}) is None
