"""RobotView: the reusable 3D robot scene (pyqtgraph.opengl).

One GLMeshItem per link (its visuals merged on load, see :mod:`app.viewer.geometry`) whose
transform is set from the link's world pose each frame: nothing is re-uploaded while the
robot moves or the camera orbits. Overlays: link frames, joint axes, centres of mass and
collision geometry, each toggled on and off; the constraints (``constraints``:
:mod:`app.viewer.constraints_layer`, View > Show Constraints). Target gizmos (:class:`TargetGizmo`) are
dragged with the left mouse button; elsewhere the left button orbits, the middle button
(or Ctrl+left) pans, the wheel zooms, and a click without a drag picks a link
(``link_clicked``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from math import radians, tan

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL
from pyqtgraph import Vector
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QImage

from app.viewer import orbit_speed
from app.viewer.constraints_layer import ConstraintsLayer
from app.viewer.geometry import MeshPart, RobotGeometry, _part_from_trimesh
from app.viewer.gizmo import TargetGizmo, matrix_to_qt
from app.viewer.shaders import robot_shader

log = logging.getLogger(__name__)


__all__ = ["RobotView"]

OVERLAYS = ("visual", "frames", "joint_axes", "com", "collision", "inertia")
INERTIA_RGBA = (0.95, 0.55, 0.1, 0.45)
CLICK_SLOP_PX = 4
# fit_to_robot's elevation (degrees): the user's kept within [min, max], else the default
FIT_ELEVATION = (5.0, 22.0, 80.0)
# orbiting with the left button: degrees per pixel of mouse motion (pyqtgraph's own is 1.0,
# which turns the view half round across a laptop-sized view), and the lowest elevation while
# the ground grid shows (degrees: the camera stays above the floor)
ORBIT_DEG_PER_PX = orbit_speed.DEFAULT       # the user's choice: View > Orbit Speed (orbit_speed.py)
MIN_ELEVATION = 2.0


def _meshdata(part: MeshPart, colors: np.ndarray | None = None) -> gl.MeshData:
    md = gl.MeshData(vertexes=part.vertices, faces=part.faces,
                     vertexColors=part.colors if colors is None else colors)
    if part.normals is None:
        part.compute_normals()
    # pyqtgraph computes vertex normals in a Python loop; hand it ours (vectorised, made in the job)
    md._vertexNormals = part.normals
    return md


# opaque meshes: depth-tested, back faces culled (halves the software rasteriser's work;
# URDF meshes are closed and wound outwards, and a flipped one only loses its back side)
OPAQUE_CULLED = {GL.GL_DEPTH_TEST: True, GL.GL_BLEND: False, GL.GL_CULL_FACE: True}
OPAQUE_TWO_SIDED = {GL.GL_DEPTH_TEST: True, GL.GL_BLEND: False, GL.GL_CULL_FACE: False}


def _mesh_item(part: MeshPart, translucent: bool = False, cull: bool = True) -> gl.GLMeshItem:
    md = _meshdata(part)
    options = "translucent" if translucent else (OPAQUE_CULLED if cull else OPAQUE_TWO_SIDED)
    return gl.GLMeshItem(meshdata=md, smooth=True, computeNormals=True, shader=robot_shader(),
                         glOptions=options)


_SLOTS: dict = {}
_SLOTS_KEY: tuple = ()


def _program_slots() -> dict[str, tuple[object, str]]:
    """Every place pyqtgraph caches a compiled GL program: ShaderProgram.prog and the
    ``_shaderProgram`` class attribute of its items (recomputed when shaders are added)."""
    global _SLOTS, _SLOTS_KEY
    from pyqtgraph.opengl import shaders as pg_shaders
    key = tuple(pg_shaders.ShaderProgram.names)
    if key == _SLOTS_KEY:
        return _SLOTS
    slots = {f"shader:{name}": (program, "prog") for name, program in pg_shaders.ShaderProgram.names.items()}
    for name in dir(gl):
        cls = getattr(gl, name)
        if isinstance(cls, type) and "_shaderProgram" in vars(cls):
            slots[f"item:{name}"] = (cls, "_shaderProgram")
    _SLOTS, _SLOTS_KEY = slots, key
    return slots


class RobotView(gl.GLViewWidget):
    """A GL widget showing one robot, a ground grid, overlays and target gizmos.

    ``set_robot(geometry, joint_axes=None, coms=None)`` builds the GL items (UI thread);
    ``set_link_poses({link: (4, 4)})`` moves them. Signals: ``link_clicked(str)``,
    ``gizmo_pressed(object)`` (the TargetGizmo grabbed).
    """

    link_clicked = Signal(str)
    gizmo_pressed = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setBackgroundColor((38, 41, 48))
        self.setMinimumSize(200, 150)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)   # keys (arrows orbit) and shortcuts
        orbit_speed.register(self)                        # sets orbit_deg_per_px, follows the menu
        self.grid = gl.GLGridItem(size=Vector(4, 4, 1), color=(255, 255, 255, 60))
        self.grid.setSpacing(0.1, 0.1, 1)
        self.addItem(self.grid)
        self.world_axes = gl.GLLinePlotItem(
            pos=np.array([[0, 0, 0], [0.15, 0, 0], [0, 0, 0], [0, 0.15, 0], [0, 0, 0], [0, 0, 0.15]]),
            color=np.repeat(np.array([[1, .3, .3, 1], [.3, 1, .3, 1], [.3, .5, 1, 1]]), 2, axis=0),
            width=2, mode="lines")
        self.addItem(self.world_axes)
        self.geometry_data: RobotGeometry | None = None
        self._visual: dict[str, gl.GLMeshItem] = {}
        self._collision: dict[str, gl.GLMeshItem] = {}
        self._frames: dict[str, gl.GLLinePlotItem] = {}
        self._axes: dict[str, gl.GLLinePlotItem] = {}
        self._com_item: gl.GLScatterPlotItem | None = None
        self._coms: dict[str, np.ndarray] = {}
        self._inertia: dict[str, gl.GLMeshItem] = {}          # link -> its equivalent inertia box
        self._inertia_local: dict[str, np.ndarray] = {}      # link -> the box's pose in the link frame
        self._balance_items: list = []                       # CoM, its drop line, the support polygon
        self._poses: dict[str, np.ndarray] = {}
        self._bounds_local: dict[str, np.ndarray] = {}
        self._ray_meshes: dict[str, object] = {}
        self._highlight: set[str] = set()
        self._show = {"visual": True, "frames": False, "joint_axes": False, "com": False, "collision": False,
                      "inertia": False}
        self.gizmos: list[TargetGizmo] = []
        self._active_gizmo: TargetGizmo | None = None
        self._press: QPointF | None = None
        self._moved = False
        self._programs: dict[str, int | None] = {}
        self._auto_fit = False            # framed by fit_to_robot and not moved by the user since
        self.constraints = ConstraintsLayer(self)     # loop closures, welds, tendons (View > Show Constraints)
        self.reset_camera()

    # ----------------------------------------------------------------- robot
    def clear_robot(self) -> None:
        for items in (self._visual, self._collision, self._frames, self._axes, self._inertia):
            for item in items.values():
                self.removeItem(item)
            items.clear()
        self._inertia_local = {}
        for item in self._balance_items:
            self.removeItem(item)
        self._balance_items = []
        if self._com_item is not None:
            self.removeItem(self._com_item)
            self._com_item = None
        self._coms = {}
        self._poses = {}
        self._bounds_local = {}
        self._ray_meshes = {}
        self.geometry_data = None
        self.constraints.clear()
        self.update()

    def set_robot(self, geometry: RobotGeometry, joint_axes: Mapping[str, np.ndarray] | None = None,
                  coms: Mapping[str, np.ndarray] | None = None, frame_size: float | None = None,
                  inertia_boxes: Mapping[str, tuple] | None = None) -> None:
        """Replace the shown robot. ``joint_axes``: {child link: (3,) axis in that link's
        frame}; ``coms``: {link: (3,) centre of mass in the link frame}; ``inertia_boxes``:
        {link: (T (4, 4) in the link frame, extents (3,))} (see geometry.inertia_box); metres."""
        self.clear_robot()
        self.geometry_data = geometry
        all_v = [g.visual.vertices for g in geometry.links.values() if g.visual is not None]
        extent = float(np.ptp(np.concatenate(all_v), axis=0).max()) if all_v else 0.5
        size = frame_size or max(0.03, 0.08 * extent)
        self.constraints.axis_size = size
        for name, g in geometry.links.items():
            if g.visual is not None:
                item = _mesh_item(g.visual)
                self._visual[name] = item
                self.addItem(item)
                v = g.visual.vertices
                self._bounds_local[name] = np.array([v.min(0), v.max(0)], dtype=float)
            if g.collision is not None:
                item = _mesh_item(g.collision, translucent=True)
                item.setVisible(self._show["collision"])
                self._collision[name] = item
                self.addItem(item)
            frame = gl.GLLinePlotItem(
                pos=np.array([[0, 0, 0], [size, 0, 0], [0, 0, 0], [0, size, 0], [0, 0, 0], [0, 0, size]]),
                color=np.repeat(np.array([[1, .2, .2, 1], [.2, 1, .2, 1], [.3, .5, 1, 1]]), 2, axis=0),
                width=2, mode="lines")
            frame.setGLOptions("additive")
            frame.setVisible(self._show["frames"])
            self._frames[name] = frame
            self.addItem(frame)
        for name, axis in (joint_axes or {}).items():
            a = np.asarray(axis, dtype=float)
            a = a / (np.linalg.norm(a) or 1.0)
            item = gl.GLLinePlotItem(pos=np.stack([-size * a, size * a]),
                                     color=(1.0, 0.9, 0.2, 1.0), width=3, mode="lines")
            item.setGLOptions("additive")
            item.setVisible(self._show["joint_axes"])
            self._axes[name] = item
            self.addItem(item)
        self._coms = {k: np.asarray(v, dtype=float) for k, v in (coms or {}).items()}
        if self._coms:
            self._com_item = gl.GLScatterPlotItem(pos=np.zeros((len(self._coms), 3)),
                                                  color=(1.0, 0.3, 0.9, 1.0), size=9, pxMode=True)
            self._com_item.setGLOptions("additive")
            self._com_item.setVisible(self._show["com"])
            self.addItem(self._com_item)
        self.set_inertia_boxes(inertia_boxes or {})
        identity = {name: np.eye(4) for name in geometry.links}
        self.set_link_poses(identity)

    def set_inertia_boxes(self, boxes: Mapping[str, tuple]) -> None:
        """Replace the inertia boxes ({link: (T in the link frame, extents)}), e.g. after an
        identification changed the parameters; shown with the "inertia" overlay."""
        import trimesh

        for item in self._inertia.values():
            self.removeItem(item)
        self._inertia, self._inertia_local = {}, {}
        for name, (T, extents) in boxes.items():
            box = trimesh.creation.box(extents=np.maximum(np.asarray(extents, dtype=float), 1e-4))
            item = _mesh_item(_part_from_trimesh(box, INERTIA_RGBA), translucent=True)
            item.setVisible(self._show["inertia"])
            self._inertia[name] = item
            self._inertia_local[name] = np.asarray(T, dtype=float)
            self.addItem(item)
            if name in self._poses:
                item.setTransform(matrix_to_qt(self._poses[name] @ self._inertia_local[name]))
        self.update()

    def set_balance(self, com=None, com_ground=None, support=None, inside: bool = True) -> None:
        """A floating robot's balance: the centre of mass (3,), a line down to its ground
        projection (3,) and the support polygon ((k, 3), closed here); None hides them. Green
        when the projection lies inside the polygon, red outside."""
        if com is None:
            for item in self._balance_items:
                item.setVisible(False)
            self.update()
            return
        color = (0.2, 1.0, 0.4, 1.0) if inside else (1.0, 0.3, 0.3, 1.0)
        if not self._balance_items:
            self._balance_items = [gl.GLScatterPlotItem(pos=np.zeros((1, 3)), size=14, pxMode=True),
                                   gl.GLLinePlotItem(pos=np.zeros((2, 3)), width=2, mode="lines"),
                                   gl.GLLinePlotItem(pos=np.zeros((2, 3)), width=3, mode="line_strip")]
            for item in self._balance_items:
                item.setGLOptions("additive")
                self.addItem(item)
        dot, drop, polygon = self._balance_items
        dot.setData(pos=np.asarray(com, float).reshape(1, 3), color=color)
        drop.setData(pos=np.stack([np.asarray(com, float), np.asarray(com_ground, float)]), color=color)
        pts = np.asarray(support, float).reshape(-1, 3)
        polygon.setData(pos=np.vstack([pts, pts[:1]]) + [0, 0, 1e-3], color=color)
        for item in self._balance_items:
            item.setVisible(True)
        self.update()

    def inertia_box_poses(self) -> dict[str, np.ndarray]:
        """{link: world pose (4, 4) of its inertia box} as shown."""
        return {k: self._poses.get(k, np.eye(4)) @ T for k, T in self._inertia_local.items()}

    def set_link_poses(self, poses: Mapping[str, np.ndarray]) -> None:
        """Move every link to its world pose ((4, 4), metres); unknown links are ignored."""
        for name, T in poses.items():
            T = np.asarray(T, dtype=float)
            self._poses[name] = T
            m = None
            for items in (self._visual, self._collision, self._frames, self._axes):
                item = items.get(name)
                if item is not None:
                    if m is None:
                        m = matrix_to_qt(T)
                    item.setTransform(m)
            box = self._inertia.get(name)
            if box is not None:
                box.setTransform(matrix_to_qt(T @ self._inertia_local[name]))
        if self._com_item is not None and self._coms:
            pts = [self._poses.get(k, np.eye(4)) @ np.append(c, 1.0) for k, c in self._coms.items()]
            self._com_item.setData(pos=np.array(pts)[:, :3])
        self.update()

    def link_poses(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self._poses.items()}

    # ----------------------------------------------------------------- overlays
    def set_overlay(self, name: str, visible: bool) -> None:
        """Show or hide one of OVERLAYS: visual, frames, joint_axes, com, collision, inertia."""
        if name not in self._show:
            raise ValueError(f"unknown overlay {name!r}; expected one of {OVERLAYS}")
        self._show[name] = bool(visible)
        items = {"visual": self._visual, "frames": self._frames, "joint_axes": self._axes,
                 "collision": self._collision, "inertia": self._inertia}.get(name)
        if items is not None:
            for item in items.values():
                item.setVisible(visible)
        elif name == "com" and self._com_item is not None:
            self._com_item.setVisible(visible)
        self.update()

    def overlay_visible(self, name: str) -> bool:
        return self._show[name]

    def set_highlight(self, links) -> None:
        """Tint the given links (e.g. the chosen end effectors)."""
        links = set(links)
        if links == self._highlight:
            return
        for name in self._highlight | links:
            item = self._visual.get(name)
            g = self.geometry_data.links.get(name) if self.geometry_data else None
            if item is None or g is None or g.visual is None:
                continue
            colors = g.visual.colors
            if name in links:
                colors = colors * 0.55 + np.array([1.0, 0.75, 0.1, 1.0], np.float32) * 0.45
            item.setMeshData(meshdata=_meshdata(g.visual, colors.astype(np.float32)))
        self._highlight = links
        self.update()

    # ----------------------------------------------------------------- camera
    def reset_camera(self) -> None:
        """The default view: from the front-right, slightly above, framing the robot (or
        the origin from 2.2 m when no robot is shown)."""
        self.opts["fov"] = 60
        self.setCameraPosition(pos=Vector(0, 0, 0.4), distance=2.2, elevation=22, azimuth=35)
        if self._bounds_local:
            self.fit_to_robot()

    def robot_bounds(self) -> np.ndarray | None:
        """(2, 3) world-frame min/max corners of the posed visual geometry, or None."""
        pts = []
        for name, (lo, hi) in self._bounds_local.items():
            T = self._poses.get(name, np.eye(4))
            corners = np.array(
                [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
            )
            pts.append(corners @ T[:3, :3].T + T[:3, 3])
        if not pts:
            return None
        pts = np.concatenate(pts)
        return np.array([pts.min(0), pts.max(0)])

    def fit_to_robot(self) -> None:
        """Frame the robot whatever its size and orientation: centre the camera on the bounding
        box of the posed links (forward kinematics at the shown q), at a distance where the box's
        enclosing sphere fits the view's narrower field of view, looking from above the ground
        plane (z = 0): the elevation stays the user's when the camera is then above the ground,
        and rises (or the camera backs off) when the robot hangs below it (an acrobot, a
        pendulum). Until the user moves the camera, the frame follows the view's size."""
        b = self.robot_bounds()
        if b is None:
            return
        center = b.mean(0)
        radius = max(float(np.linalg.norm(b[1] - b[0])) / 2, 0.05)
        aspect = max(self.width(), 1) / max(self.height(), 1)
        half_fov = radians(self.opts["fov"]) / 2
        vertical = min(half_fov, np.arctan(tan(half_fov) / aspect))
        distance = 1.15 * radius / np.sin(vertical)
        elevation = float(self.opts["elevation"])
        if not FIT_ELEVATION[0] <= elevation <= FIT_ELEVATION[2]:
            elevation = FIT_ELEVATION[1]
        clearance = 0.1 * radius              # the camera's height above the ground, at least
        need = (clearance - center[2]) / distance
        if need > np.sin(radians(elevation)):
            elevation = float(np.degrees(np.arcsin(min(need, np.sin(radians(FIT_ELEVATION[2]))))))
        distance = max(distance, (clearance - center[2]) / np.sin(radians(elevation)))
        self.setCameraPosition(pos=Vector(*center), distance=distance, elevation=elevation)
        self.grid.setSize(max(2.0, 4 * radius), max(2.0, 4 * radius), 1)
        spacing = 0.1 if radius > 0.3 else 0.02
        self.grid.setSpacing(spacing, spacing, 1)
        self._auto_fit = True

    def resizeEvent(self, ev):  # noqa: N802 - Qt name
        super().resizeEvent(ev)
        if getattr(self, "_auto_fit", False):        # framed by fit_to_robot, not moved since
            self.fit_to_robot()

    def wheelEvent(self, ev):  # noqa: N802 - Qt name
        self._auto_fit = False
        super().wheelEvent(ev)

    def camera_position(self) -> np.ndarray:
        p = self.cameraPosition()
        return np.array([p.x(), p.y(), p.z()])

    def camera_axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World (right, up, forward) unit vectors of the camera."""
        V = np.array(self.viewMatrix().data(), dtype=float).reshape(4, 4).T
        R = V[:3, :3]
        return R[0], R[1], -R[2]

    def _mvp(self) -> np.ndarray:
        w, h = max(self.width(), 1), max(self.height(), 1)
        P = np.array(self.projectionMatrix((0, 0, w, h), (0, 0, w, h)).data(), dtype=float).reshape(4, 4).T
        V = np.array(self.viewMatrix().data(), dtype=float).reshape(4, 4).T
        return P @ V

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World points (N, 3) -> widget pixels (N, 2) and a mask of points in front of the camera."""
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        clip = np.c_[pts, np.ones(len(pts))] @ self._mvp().T
        ok = clip[:, 3] > 1e-9
        ndc = clip[:, :2] / np.where(ok, clip[:, 3], 1.0)[:, None]
        x = (ndc[:, 0] + 1) * 0.5 * self.width()
        y = (1 - ndc[:, 1]) * 0.5 * self.height()
        return np.stack([x, y], axis=1), ok

    def ray(self, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
        """The world ray (origin (3,), unit direction (3,)) through widget pixel (x, y)."""
        inv = np.linalg.inv(self._mvp())
        ndc_x = 2 * x / max(self.width(), 1) - 1
        ndc_y = 1 - 2 * y / max(self.height(), 1)
        near = inv @ np.array([ndc_x, ndc_y, -1, 1.0])
        far = inv @ np.array([ndc_x, ndc_y, 1, 1.0])
        near, far = near[:3] / near[3], far[:3] / far[3]
        d = far - near
        return near, d / np.linalg.norm(d)

    def link_at(self, x: float, y: float) -> str | None:
        """The link whose visual geometry is first hit by the ray through pixel (x, y)."""
        if self.geometry_data is None:
            return None
        import trimesh
        origin, direction = self.ray(x, y)
        best, best_d = None, np.inf
        for name, g in self.geometry_data.links.items():
            if g.visual is None or name not in self._poses:
                continue
            T = self._poses[name]
            R, p = T[:3, :3], T[:3, 3]
            o = (origin - p) @ R
            d = direction @ R
            lo, hi = self._bounds_local[name]
            with np.errstate(divide="ignore", invalid="ignore"):
                t1, t2 = (lo - o) / d, (hi - o) / d
            tmin = np.nanmax(np.minimum(t1, t2))
            tmax = np.nanmin(np.maximum(t1, t2))
            if not tmax >= max(tmin, 0) or tmin > best_d:
                continue
            mesh = self._ray_meshes.get(name)
            if mesh is None:
                mesh = trimesh.Trimesh(g.visual.vertices, g.visual.faces, process=False)
                self._ray_meshes[name] = mesh
            hits, _, _ = mesh.ray.intersects_location([o], [d], multiple_hits=False)
            if len(hits):
                dist = float(np.min(np.linalg.norm(hits - o, axis=1)))
                if dist < best_d:
                    best, best_d = name, dist
        return best

    # ----------------------------------------------------------------- gizmos
    def add_gizmo(self, gizmo: TargetGizmo) -> None:
        self.gizmos.append(gizmo)
        for item in gizmo.items():
            self.addItem(item)
        self.update()

    def remove_gizmo(self, gizmo: TargetGizmo) -> None:
        if gizmo in self.gizmos:
            self.gizmos.remove(gizmo)
            for item in gizmo.items():
                self.removeItem(item)
            self.update()

    def gizmo_at(self, x: float, y: float) -> tuple[TargetGizmo, str] | None:
        """The gizmo and handle under widget point (x, y): the nearest handle, a gizmo with
        ``pick_last`` (a floating base's own) only where no other gizmo has one (a target on
        the base sits on the same spot and must stay grabbable)."""
        best = None
        for g in self.gizmos:
            hit = g.handle_at(self, x, y)
            if hit:
                key = (bool(getattr(g, "pick_last", False)), hit[1])
                if best is None or key < best[2]:
                    best = (g, hit[0], key)
        return None if best is None else (best[0], best[1])

    # ----------------------------------------------------------------- mouse
    def mousePressEvent(self, ev):
        self._auto_fit = False                       # the user frames the view from now on
        pos = ev.position()
        self._press = QPointF(pos)
        self._moved = False
        if ev.button() == Qt.MouseButton.LeftButton and not (
            ev.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            hit = self.gizmo_at(pos.x(), pos.y())
            if hit is not None:
                gizmo, handle = hit
                self._active_gizmo = gizmo
                gizmo.begin_drag(self, handle, pos.x(), pos.y())
                self.gizmo_pressed.emit(gizmo)
                ev.accept()
                return
        super().mousePressEvent(ev)

    def mouseMoveEvent(self, ev):
        pos = ev.position()
        if (
            self._press is not None
            and (abs(pos.x() - self._press.x()) + abs(pos.y() - self._press.y())) > CLICK_SLOP_PX
        ):
            self._moved = True
        if self._active_gizmo is not None:
            self._active_gizmo.drag(self, pos.x(), pos.y())
            self.update()
            ev.accept()
            return
        if ev.buttons() == Qt.MouseButton.LeftButton and not (
            ev.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            last = getattr(self, "mousePos", pos)      # pyqtgraph's last mouse position
            self.mousePos = QPointF(pos)
            scale = self.orbit_deg_per_px
            self.orbit(-(pos.x() - last.x()) * scale, (pos.y() - last.y()) * scale)
            ev.accept()
            return
        super().mouseMoveEvent(ev)

    def orbit(self, azim, elev):
        """Turn the camera about its centre by ``azim`` and ``elev`` degrees; while the ground grid
        shows, the elevation stays at least MIN_ELEVATION (the camera never goes under the floor)."""
        super().orbit(azim, elev)
        if self.grid.visible() and self.opts["elevation"] < MIN_ELEVATION:
            self.opts["elevation"] = MIN_ELEVATION
            self.update()

    def mouseReleaseEvent(self, ev):
        if self._active_gizmo is not None:
            self._active_gizmo.end_drag()
            self._active_gizmo = None
        elif ev.button() == Qt.MouseButton.LeftButton and not self._moved and self._press is not None:
            name = self.link_at(ev.position().x(), ev.position().y())
            if name is not None:
                self.link_clicked.emit(name)
        self._press = None
        super().mouseReleaseEvent(ev)

    # ----------------------------------------------------------------- GL context
    def _swap_programs(self, load: bool) -> None:
        """Keep pyqtgraph's shader programs per GL context.

        pyqtgraph caches one compiled program per shader globally, which is only valid in
        the context it was compiled in; with several views (or a view created after another
        was destroyed, without shared contexts) that id is invalid. Each view keeps its own.
        """
        for key, (owner, attr) in _program_slots().items():
            if load:
                setattr(owner, attr, self._programs.get(key))
            else:
                self._programs[key] = getattr(owner, attr)

    def initializeGL(self):
        self._swap_programs(load=True)
        try:
            super().initializeGL()
        finally:
            self._swap_programs(load=False)

    def paintGL(self):
        self._swap_programs(load=True)
        try:
            super().paintGL()
        finally:
            self._swap_programs(load=False)

    # ----------------------------------------------------------------- output
    def screenshot(self) -> QImage:
        """The current frame as a QImage (renders the scene into the framebuffer)."""
        return self.grabFramebuffer()

    def save_screenshot(self, path: str) -> None:
        """Write the current frame as a PNG; raises OSError when it cannot be written."""
        img = self.screenshot()
        if not img.save(str(path), "PNG"):
            raise OSError(f"could not write screenshot to {path}")
