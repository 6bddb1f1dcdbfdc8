"""The 3D viewer: geometry loading (primitives, meshes, colours, missing meshes, decimation)
and the GL view (rendering, projection vs. pixels, picking, gizmo dragging, screenshots).

GL tests run in a real window on the Xvfb display that pytest-xvfb starts.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import trimesh
from PySide6.QtCore import QCoreApplication, QEvent, QPointF, Qt
from PySide6.QtGui import QImage, QMouseEvent

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)



from app.viewer.geometry import PLACEHOLDER_SIZE, GeometryOptions, load_robot_geometry  # noqa: E402  (after the GL attribute)

ERD = Path(trimesh.__file__).resolve().parents[1] / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
PANDA_ERD = ERD / "panda_description" / "urdf" / "panda.urdf"

URDF = """<?xml version="1.0"?>
<robot name="shapes">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base">
    <visual><origin xyz="0 0 0.15"/><geometry><box size="0.1 0.2 0.3"/></geometry><material name="red"/></visual>
  </link>
  <link name="arm">
    <visual><origin xyz="0.5 0 0" rpy="0 1.5707963267948966 0"/>
      <geometry><cylinder radius="0.05" length="0.4"/></geometry>
      <material name="blue"><color rgba="0 0 1 1"/></material></visual>
    <visual><origin xyz="0.8 0 0"/><geometry><sphere radius="0.07"/></geometry><material name="red"/></visual>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
  </link>
  <link name="tool">
    <visual><geometry><mesh filename="meshes/part.stl" scale="2 2 2"/></geometry></visual>
  </link>
  <link name="broken">
    <visual><geometry><mesh filename="meshes/does_not_exist.stl"/></geometry></visual>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="1 0 0"/></joint>
  <joint name="j3" type="fixed"><parent link="base"/><child link="broken"/></joint>
</robot>
"""


@pytest.fixture
def shapes_urdf(tmp_path) -> Path:
    (tmp_path / "meshes").mkdir()
    trimesh.creation.box(extents=[0.01, 0.02, 0.03]).export(tmp_path / "meshes" / "part.stl")
    path = tmp_path / "shapes.urdf"
    path.write_text(URDF)
    return path


def _bounds(part):
    return part.vertices.min(0), part.vertices.max(0)


def test_primitives_meshes_colours_and_missing_mesh(shapes_urdf, caplog):
    with caplog.at_level(logging.WARNING):
        g = load_robot_geometry(shapes_urdf, GeometryOptions(max_triangles=None))
    assert set(g.links) == {"base", "arm", "tool", "broken"}
    lo, hi = _bounds(g.links["base"].visual)
    np.testing.assert_allclose(lo, [-0.05, -0.1, 0.0], atol=1e-6)
    np.testing.assert_allclose(hi, [0.05, 0.1, 0.3], atol=1e-6)
    np.testing.assert_allclose(np.unique(g.links["base"].visual.colors, axis=0), [[1, 0, 0, 1]])
    # cylinder along x after the 90 deg pitch (0.3..0.7), then the sphere (0.73..0.87)
    arm = g.links["arm"].visual
    lo, hi = _bounds(arm)
    np.testing.assert_allclose([lo[0], hi[0]], [0.3, 0.87], atol=1e-3)
    np.testing.assert_allclose([lo[1], hi[1]], [-0.07, 0.07], atol=2e-3)
    colours = {tuple(c) for c in np.unique(arm.colors, axis=0)}
    assert colours == {(0.0, 0.0, 1.0, 1.0), (1.0, 0.0, 0.0, 1.0)}
    # the sphere's welded vertex normals are radial (analytic normal of a sphere)
    centre = np.array([0.8, 0.0, 0.0])
    on_sphere = np.abs(np.linalg.norm(arm.vertices - centre, axis=1) - 0.07) < 1e-4
    radial = (arm.vertices[on_sphere] - centre) / 0.07
    assert np.min(np.sum(radial * arm.normals[on_sphere], axis=1)) > 0.97
    # mesh file (relative path) with its scale
    lo, hi = _bounds(g.links["tool"].visual)
    np.testing.assert_allclose(hi - lo, [0.02, 0.04, 0.06], atol=1e-6)
    assert g.links["arm"].collision is not None and g.links["base"].collision is None
    # missing mesh: a placeholder box and a warning naming the file
    lo, hi = _bounds(g.links["broken"].visual)
    np.testing.assert_allclose(hi - lo, [PLACEHOLDER_SIZE] * 3, atol=1e-6)
    assert any("does_not_exist.stl" in w for w in g.warnings)
    assert any("does_not_exist.stl" in r.getMessage() for r in caplog.records)


def test_dae_materials_and_decimation_budget():
    full = load_robot_geometry(PANDA_ERD, GeometryOptions(max_triangles=None, load_collision=False))
    assert full.triangles == full.source_triangles > 100_000
    # link0.dae carries several materials: their diffuse colours, read with pycollada itself
    import collada
    dae = collada.Collada(str(PANDA_ERD.parents[1] / "meshes" / "visual" / "link0.dae"))
    diffuse = {tuple(np.round(np.asarray(m.effect.diffuse[:3], float), 2)) for m in dae.materials
               if isinstance(m.effect.diffuse, tuple)}
    shown = {
        tuple(np.round(c[:3].astype(float), 2))
        for c in np.unique(full.links["panda_link0"].visual.colors, axis=0)
    }
    assert len(diffuse) >= 2 and diffuse <= shown
    budget = 20_000
    small = load_robot_geometry(PANDA_ERD, GeometryOptions(max_triangles=budget, load_collision=False))
    assert small.source_triangles == full.triangles
    assert small.triangles <= 1.05 * budget
    for name, g in full.links.items():
        if g.visual is None:
            continue
        lo_f, hi_f = _bounds(g.visual)
        lo_s, hi_s = _bounds(small.links[name].visual)
        assert np.abs(lo_f - lo_s).max() < 0.01 and np.abs(hi_f - hi_s).max() < 0.01, name


# ----------------------------------------------------------------------------- GL view
@pytest.fixture
def view(qtbot):
    from app.viewer.scene import RobotView
    v = RobotView()
    v.resize(480, 360)
    qtbot.addWidget(v)
    v.show()
    qtbot.waitExposed(v)
    return v


def _pixels(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGBA8888)
    arr = np.frombuffer(img.constBits(), np.uint8, img.sizeInBytes())
    return arr.reshape(img.height(), img.bytesPerLine() // 4, 4)[:, :img.width(), :3].astype(int)


def _posed(g):
    base = np.eye(4)
    arm = np.eye(4)
    arm[:3, 3] = [0, 0, 0.3]
    tool = arm.copy()
    tool[:3, 3] += [1, 0, 0]
    return {"base": base, "arm": arm, "tool": tool, "broken": base}


def test_view_draws_robot_where_projection_says(view, shapes_urdf):
    empty = _pixels(view.screenshot())
    g = load_robot_geometry(shapes_urdf)
    view.set_robot(g)
    view.set_link_poses(_posed(g))
    view.fit_to_robot()
    shown = _pixels(view.screenshot())
    assert np.abs(shown - empty).sum(axis=2).astype(bool).mean() > 0.01   # the robot is drawn
    # the centre of the red box projects onto red pixels, per the view's own projection
    (x, y), = view.project(np.array([[0.0, 0.0, 0.15]]))[0]
    r, gg, b = shown[int(np.rint(y)), int(np.rint(x))]
    assert r > 60 and r > 2 * gg and r > 2 * b
    assert view.link_at(x, y) == "base"
    (x, y), = view.project(np.array([[0.8, 0.0, 0.3]]))[0]     # the sphere on the arm
    assert view.link_at(x, y) == "arm"
    # moving a link moves its pixels: the arm turned by 90 degrees about z
    turned = _posed(g)
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    turned["arm"][:3, :3] = Rz
    view.set_link_poses({"arm": turned["arm"]})
    (x2, y2), = view.project(np.array([[0.0, 0.8, 0.3]]))[0]
    assert view.link_at(x2, y2) == "arm"
    assert np.abs(_pixels(view.screenshot()) - shown).sum() > 0


def test_overlays_and_screenshot(view, shapes_urdf, tmp_path):
    g = load_robot_geometry(shapes_urdf)
    view.set_robot(g, joint_axes={"arm": np.array([0, 0, 1.0])}, coms={"arm": np.array([0.5, 0, 0])})
    view.set_link_poses(_posed(g))
    view.fit_to_robot()
    before = _pixels(view.screenshot())
    for name in ("frames", "joint_axes", "com", "collision"):
        view.set_overlay(name, True)
        assert view.overlay_visible(name)
    after = _pixels(view.screenshot())
    assert np.abs(after - before).sum() > 0
    with pytest.raises(ValueError, match="unknown overlay"):
        view.set_overlay("nope", True)
    out = tmp_path / "shot.png"
    view.save_screenshot(str(out))
    img = QImage(str(out))
    assert img.width() >= view.width() and img.height() >= view.height()


def _mouse(view, kind, x, y, buttons):
    ev = QMouseEvent(kind, QPointF(x, y), view.mapToGlobal(QPointF(x, y)),
                     Qt.MouseButton.LeftButton if kind != QEvent.Type.MouseMove else Qt.MouseButton.NoButton,
                     buttons, Qt.KeyboardModifier.NoModifier)
    QCoreApplication.sendEvent(view, ev)


def test_gizmo_translate_and_rotate_by_dragging(view, qtbot):
    from app.viewer.gizmo import TargetGizmo
    view.setCameraPosition(distance=1.5, elevation=25, azimuth=30)
    start = np.eye(4)
    start[:3, 3] = [0.1, 0.0, 0.2]
    gizmo = TargetGizmo(pose=start, size=0.2)
    view.add_gizmo(gizmo)
    seen = []
    gizmo.pose_changed.connect(seen.append)
    # grab the x arrow near its tip and drag 40 px along its screen direction
    (p0, tip), _ = view.project(np.array([start[:3, 3], start[:3, 3] + [0.18, 0, 0]]))
    direction = (tip - p0) / np.linalg.norm(tip - p0)
    end = tip + 40 * direction
    left = Qt.MouseButton.LeftButton
    _mouse(view, QEvent.Type.MouseButtonPress, *tip, left)
    _mouse(view, QEvent.Type.MouseMove, *end, left)
    _mouse(view, QEvent.Type.MouseButtonRelease, *end, Qt.MouseButton.NoButton)
    assert seen, "dragging the arrow moved nothing"
    pose = gizmo.pose
    moved = pose[:3, 3] - start[:3, 3]
    assert moved[0] > 0.01 and abs(moved[1]) < 1e-9 and abs(moved[2]) < 1e-9
    np.testing.assert_allclose(pose[:3, :3], np.eye(3), atol=1e-12)
    # the moved tip projects where the mouse was released (the drag follows the cursor)
    (tip_now,), _ = view.project(np.array([pose[:3, 3] + [0.18, 0, 0]]))
    assert np.linalg.norm(tip_now - end) < 3.0
    # rotate about z: grab the z ring and drag around the centre; stays a rotation about z
    ring = gizmo._ring_points(2, 36) @ pose[:3, :3].T + pose[:3, 3]
    pts, _ = view.project(ring)
    grab = next(p for p in pts if (gizmo.handle_at(view, *p) or ("",))[0] == "rz")
    (c,), _ = view.project(pose[None, :3, 3])
    rel = grab - c
    turned = c + np.array(
        [rel[0] * np.cos(0.5) - rel[1] * np.sin(0.5), rel[0] * np.sin(0.5) + rel[1] * np.cos(0.5)]
    )
    assert gizmo.handle_at(view, *grab)[0] == "rz"
    _mouse(view, QEvent.Type.MouseButtonPress, *grab, left)
    _mouse(view, QEvent.Type.MouseMove, *turned, left)
    _mouse(view, QEvent.Type.MouseButtonRelease, *turned, Qt.MouseButton.NoButton)
    R = gizmo.pose[:3, :3]
    np.testing.assert_allclose(R[:, 2], [0, 0, 1], atol=1e-9)
    assert abs(np.arctan2(R[1, 0], R[0, 0])) > 0.1
    np.testing.assert_allclose(gizmo.pose[:3, 3], pose[:3, 3], atol=1e-12)


@pytest.mark.parametrize("quadric", [True, False])
def test_decimation_keeps_the_shape(shapes_urdf, monkeypatch, quadric):
    import sys
    if not quadric:     # the fallback when fast_simplification is not installed
        monkeypatch.setitem(sys.modules, "fast_simplification", None)
    full = load_robot_geometry(shapes_urdf, GeometryOptions(max_triangles=None, sphere_subdivisions=4))
    small = load_robot_geometry(shapes_urdf, GeometryOptions(max_triangles=600, sphere_subdivisions=4))
    arm_full, arm = full.links["arm"].visual, small.links["arm"].visual
    assert arm.triangles < 0.5 * arm_full.triangles
    assert small.triangles <= 600 + 200 * len(small.links)      # each link keeps at least 200
    lo_f, hi_f = _bounds(arm_full)
    lo, hi = _bounds(arm)
    assert np.abs(lo - lo_f).max() < 0.01 and np.abs(hi - hi_f).max() < 0.01
    # colours survive: the red sphere stays red, the blue cylinder blue
    sphere = np.linalg.norm(arm.vertices - [0.8, 0, 0], axis=1) < 0.05
    assert np.all(arm.colors[sphere][:, 0] > 0.9)


def test_inertia_box_reproduces_the_inertia_and_is_drawn(view):
    from scipy.spatial.transform import Rotation

    from app.viewer.geometry import inertia_box

    # a uniform box 0.4 x 0.1 x 0.2 m of 3 kg, turned and shifted in the link frame
    dims, m = np.array([0.4, 0.1, 0.2]), 3.0
    R = Rotation.from_euler("xyz", [0.3, -0.7, 1.1]).as_matrix()
    I_box = (
        m
        / 12
        * np.diag([dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[1] ** 2])
    )
    T, ext = inertia_box(m, [0.1, 0.2, 0.3], R @ I_box @ R.T)
    np.testing.assert_allclose(sorted(ext), sorted(dims), atol=1e-12)
    # the returned box, by trimesh's own mass properties, has the same inertia about its centre
    box = trimesh.creation.box(extents=ext)
    box.density = m / box.volume
    Rb = T[:3, :3]
    np.testing.assert_allclose(Rb @ box.moment_inertia @ Rb.T, R @ I_box @ R.T, atol=1e-12)
    np.testing.assert_allclose(T[:3, 3], [0.1, 0.2, 0.3])
    assert np.linalg.det(Rb) == pytest.approx(1.0)
    assert inertia_box(0.0, np.zeros(3), np.eye(3)) is None
    # a point mass is a box of size zero (drawn as a tiny cube)
    assert np.allclose(inertia_box(1.0, np.zeros(3), np.zeros((3, 3)))[1], 0)
    # in the view: follows the link, toggled as an overlay
    from app.viewer.geometry import LinkGeometry, MeshPart, RobotGeometry

    part = MeshPart(
        np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]], np.float32),
        np.array([[0, 1, 2]], np.uint32),
        np.ones((3, 4), np.float32),
    )
    g = RobotGeometry(name="r", path="")
    g.links["a"] = LinkGeometry("a", part, None)
    view.set_robot(g, inertia_boxes={"a": (T, ext)})
    assert not view.overlay_visible("inertia")
    view.set_overlay("inertia", True)
    pose = np.eye(4)
    pose[:3, 3] = [1.0, 2.0, 0.5]
    view.set_link_poses({"a": pose})
    np.testing.assert_allclose(view.inertia_box_poses()["a"], pose @ T)


def test_pressing_the_gizmo_centre_moves_it_in_the_view_plane(view):
    """Seen from the side (elevation 0, azimuth 0: along -x), the x ring is edge-on and its screen
    line passes through the centre; a press a few pixels off the centre dot along that line used
    to grab the ring and rotate. Now it translates in the view plane and keeps the orientation."""
    from app.viewer.gizmo import TargetGizmo
    view.setCameraPosition(distance=1.5, elevation=0, azimuth=0)
    start = np.eye(4)
    start[:3, 3] = [0.0, 0.0, 0.3]
    gizmo = TargetGizmo(pose=start, size=0.2)
    view.add_gizmo(gizmo)
    (c,), _ = view.project(start[None, :3, 3])
    for offset in ((0, 0), (0, 4), (4, 0), (-3, -3)):
        press = c + offset
        assert gizmo.handle_at(view, *press)[0] == "free", offset
    press = c + (0, 4)
    end = press + (30, -20)
    left = Qt.MouseButton.LeftButton
    _mouse(view, QEvent.Type.MouseButtonPress, *press, left)
    _mouse(view, QEvent.Type.MouseMove, *end, left)
    _mouse(view, QEvent.Type.MouseButtonRelease, *end, Qt.MouseButton.NoButton)
    pose = gizmo.pose
    np.testing.assert_allclose(pose[:3, :3], np.eye(3), atol=1e-12)       # not rotated
    (now,), _ = view.project(pose[None, :3, 3])
    np.testing.assert_allclose(now - c, end - press, atol=1.5)              # followed the cursor
    # the depth along the view direction did not change (the view plane)
    assert abs((pose[:3, 3] - start[:3, 3]) @ view.camera_axes()[2]) < 1e-9
    # the arrows and rings still grab away from the centre
    (tip,), _ = view.project(np.array([pose[:3, 3] + [0, 0.18, 0]]))
    assert gizmo.handle_at(view, *tip)[0] == "y"


def test_orbiting_turns_gently_and_stays_above_the_floor(view):
    from app.viewer.scene import MIN_ELEVATION, ORBIT_DEG_PER_PX
    view.setCameraPosition(distance=2.0, elevation=20, azimuth=30)
    left = Qt.MouseButton.LeftButton
    _mouse(view, QEvent.Type.MouseButtonPress, 200, 150, left)
    _mouse(view, QEvent.Type.MouseMove, 300, 150, left)          # 100 px to the right
    assert view.opts["azimuth"] == pytest.approx(30 - 100 * ORBIT_DEG_PER_PX)
    assert ORBIT_DEG_PER_PX * 100 <= 45                          # a sweep across the view: under 1/8 turn
    _mouse(view, QEvent.Type.MouseMove, 300, 160, left)          # 10 px down: the camera rises
    assert view.opts["elevation"] == pytest.approx(20 + 10 * ORBIT_DEG_PER_PX)
    _mouse(view, QEvent.Type.MouseMove, 300, -2000, left)        # far up: it would go under the floor
    _mouse(view, QEvent.Type.MouseButtonRelease, 300, -2000, Qt.MouseButton.NoButton)
    assert view.opts["elevation"] == pytest.approx(MIN_ELEVATION)
    assert view.camera_position()[2] > view.opts["center"].z()    # above the point it looks at
    # the sensitivity is a setting of the view
    view.orbit_deg_per_px = 1.0
    _mouse(view, QEvent.Type.MouseButtonPress, 200, 150, left)
    _mouse(view, QEvent.Type.MouseMove, 210, 150, left)
    _mouse(view, QEvent.Type.MouseButtonRelease, 210, 150, Qt.MouseButton.NoButton)
    assert view.opts["azimuth"] == pytest.approx(30 - 100 * ORBIT_DEG_PER_PX - 10)
    # without the ground grid the camera may look from below
    view.grid.setVisible(False)
    view.orbit(0, -60)
    assert view.opts["elevation"] < 0
