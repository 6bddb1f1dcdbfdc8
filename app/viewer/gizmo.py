"""A target-pose gizmo: three arrows (translate), three rings (rotate) and a centre handle.

The gizmo is a set of GL items under one parent whose transform is the target pose. The
:class:`~app.viewer.scene.RobotView` asks :meth:`TargetGizmo.handle_at` which handle is
under the mouse and forwards the drag (widget pixels) to :meth:`TargetGizmo.drag`, which
turns it into a new pose with the camera's projection and emits ``pose_changed``.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QMatrix4x4

__all__ = ["TargetGizmo", "matrix_to_qt", "rotation_about"]

AXIS_COLORS = ((0.95, 0.25, 0.25, 1.0), (0.3, 0.85, 0.3, 1.0), (0.3, 0.5, 1.0, 1.0))
HANDLE_PICK_PX = 9.0
CENTRE_PICK_PX = 9.0      # the centre dot (14 px across) and a little around it: always "free"
# drawn last and over the robot, so a target inside the arm can still be grabbed
ON_TOP = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: True, GL.GL_CULL_FACE: False,
          "glBlendFunc": (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)}


def matrix_to_qt(T: np.ndarray) -> QMatrix4x4:
    """A (4, 4) homogeneous numpy matrix as a QMatrix4x4 (row-major constructor)."""
    return QMatrix4x4(*np.asarray(T, dtype=float).reshape(16).tolist())


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    """(3, 3) rotation by ``angle`` radians about unit ``axis`` (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    a = a / (np.linalg.norm(a) or 1.0)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


class _Group(gl.GLGraphicsItem.GLGraphicsItem):
    """An invisible parent item: only its transform matters."""

    def paint(self):
        pass


class TargetGizmo(QObject):
    """One draggable target pose. ``pose`` is a (4, 4) world transform (metres).

    Signals: ``pose_changed(object)`` with the new (4, 4) pose while dragging or when set
    by code with ``emit=True``; ``drag_finished()`` when the mouse is released.
    ``rotate`` False hides the rings (position-only targets).
    """

    pose_changed = Signal(object)
    drag_finished = Signal()

    def __init__(self, pose: np.ndarray | None = None, size: float = 0.12,
                 color=(1.0, 0.85, 0.1, 1.0), rotate: bool = True, label: str = ""):
        super().__init__()
        self.size = float(size)
        self.label = label
        self.color = color
        self._pose = np.eye(4) if pose is None else np.array(pose, dtype=float)
        self._rotate = rotate
        self.pick_last = False      # True: the view picks this gizmo only where no other one is hit
        self.root = _Group()
        self.root.setDepthValue(10)
        self._build()
        self._apply()
        self._drag = None

    # ---------------------------------------------------------------- geometry
    def _ring_points(self, axis: int, n: int = 48) -> np.ndarray:
        t = np.linspace(0, 2 * np.pi, n + 1)
        r = 0.75 * self.size
        u, v = [(1, 2), (2, 0), (0, 1)][axis]
        pts = np.zeros((n + 1, 3))
        pts[:, u] = r * np.cos(t)
        pts[:, v] = r * np.sin(t)
        return pts

    def _arrow_points(self) -> tuple[np.ndarray, np.ndarray]:
        pos = np.zeros((6, 3))
        for i in range(3):
            pos[2 * i + 1, i] = self.size
        return pos, np.repeat(np.array(AXIS_COLORS), 2, axis=0)

    def _rings_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The three rings as segment pairs (mode 'lines'), one colour per ring."""
        segs, cols = [], []
        for i in range(3):
            pts = self._ring_points(i)
            segs.append(np.stack([pts[:-1], pts[1:]], axis=1).reshape(-1, 3))
            cols.append(np.repeat(np.array([AXIS_COLORS[i]]), segs[-1].shape[0], axis=0))
        return np.concatenate(segs), np.concatenate(cols)

    def _build(self) -> None:
        # two line items and one point: few GL items, since each costs a draw call per frame
        pos, col = self._arrow_points()
        self._arrows = gl.GLLinePlotItem(pos=pos, color=col, width=4, mode="lines")
        pos, col = self._rings_points()
        self._rings = gl.GLLinePlotItem(pos=pos, color=col, width=2, mode="lines")
        for item in (self._arrows, self._rings):
            item.setGLOptions(ON_TOP)
            item.setDepthValue(10)
            item.setParentItem(self.root)
        self._rings.setVisible(self._rotate)
        self._center = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), color=self.color, size=14, pxMode=True)
        self._center.setGLOptions(ON_TOP)
        self._center.setDepthValue(11)
        self._center.setParentItem(self.root)

    def set_size(self, size: float) -> None:
        self.size = float(size)
        pos, col = self._arrow_points()
        self._arrows.setData(pos=pos, color=col)
        pos, col = self._rings_points()
        self._rings.setData(pos=pos, color=col)

    def set_rotate_enabled(self, enabled: bool) -> None:
        self._rotate = bool(enabled)
        self._rings.setVisible(self._rotate)

    def set_color(self, color) -> None:
        self.color = color
        self._center.setData(color=color)

    def items(self) -> list:
        return [self.root]

    # ---------------------------------------------------------------- pose
    @property
    def pose(self) -> np.ndarray:
        return self._pose.copy()

    def set_pose(self, pose: np.ndarray, emit: bool = False) -> None:
        self._pose = np.array(pose, dtype=float)
        self._apply()
        if emit:
            self.pose_changed.emit(self.pose)

    def _apply(self) -> None:
        self.root.setTransform(matrix_to_qt(self._pose))
        self.root.update()

    # ---------------------------------------------------------------- picking
    def _handle_samples(self) -> dict[str, np.ndarray]:
        """World points along each handle (for screen-space picking)."""
        R, p = self._pose[:3, :3], self._pose[:3, 3]
        out = {"free": p[None, :]}
        s = np.linspace(0.25, 1.0, 12)[:, None]
        for i, name in enumerate("xyz"):
            out[name] = p + s * self.size * R[:, i]
            if self._rotate:
                out["r" + name] = self._ring_points(i, 36) @ R.T + p
        return out

    def handle_at(self, view, x: float, y: float) -> tuple[str, float] | None:
        """The handle within a few pixels of widget point (x, y), and its pixel distance.

        A press on the centre dot moves the target in the view plane ("free"), even where a
        ring seen edge-on or an arrow seen end-on passes through the centre on the screen (the
        centre press used to rotate the target then)."""
        best = None
        for name, pts in self._handle_samples().items():
            scr, ok = view.project(pts)
            if not ok.any():
                continue
            d = np.hypot(scr[ok, 0] - x, scr[ok, 1] - y).min()
            if name == "free" and d <= CENTRE_PICK_PX:
                return name, float(d)
            limit = HANDLE_PICK_PX * (1.6 if name == "free" else 1.0)
            if d <= limit and (best is None or d < best[1]):
                best = (name, float(d))
        return best

    # ---------------------------------------------------------------- dragging
    # Dragging is exact: the handle follows the cursor's ray. Translation along an axis
    # uses the point of the axis line closest to the ray; free translation and rotation
    # intersect the ray with a plane (through the target, facing the camera / normal to
    # the rotation axis).
    def begin_drag(self, view, handle: str, x: float, y: float) -> None:
        self._drag = {"handle": handle, "pose": self._pose.copy(), "anchor": None}
        self._drag["anchor"] = self._drag_parameter(view, x, y)

    def _drag_parameter(self, view, x: float, y: float):
        d = self._drag
        T0 = d["pose"]
        R0, p0 = T0[:3, :3], T0[:3, 3]
        o, v = view.ray(x, y)
        h = d["handle"]
        if h in ("x", "y", "z"):
            u = R0[:, "xyz".index(h)]
            w0 = p0 - o
            b, dd, e = u @ v, u @ w0, v @ w0
            denom = 1.0 - b * b
            if denom < 1e-9:        # axis seen end-on: no motion along it
                return None
            return (b * e - dd) / denom
        normal = view.camera_axes()[2] if h == "free" else R0[:, "xyz".index(h[1])]
        denom = normal @ v
        if abs(denom) < 1e-9:
            return None
        hit = o + ((p0 - o) @ normal) / denom * v
        if h == "free":
            return hit
        rel = hit - p0
        u1 = R0[:, ("xyz".index(h[1]) + 1) % 3]
        u2 = np.cross(normal, u1)
        return np.arctan2(rel @ u2, rel @ u1)

    def drag(self, view, x: float, y: float) -> None:
        d = self._drag
        if d is None or d["anchor"] is None:
            return
        value = self._drag_parameter(view, x, y)
        if value is None:
            return
        T0 = d["pose"]
        R0, p0 = T0[:3, :3], T0[:3, 3]
        T = T0.copy()
        h = d["handle"]
        if h == "free":
            T[:3, 3] = p0 + (value - d["anchor"])
        elif h in ("x", "y", "z"):
            T[:3, 3] = p0 + (value - d["anchor"]) * R0[:, "xyz".index(h)]
        else:
            angle = (value - d["anchor"] + np.pi) % (2 * np.pi) - np.pi
            T[:3, :3] = rotation_about(R0[:, "xyz".index(h[1])], angle) @ R0
        self.set_pose(T, emit=True)

    def end_drag(self) -> None:
        if self._drag is not None:
            self._drag = None
            self.drag_finished.emit()

    @property
    def dragging(self) -> bool:
        return self._drag is not None
