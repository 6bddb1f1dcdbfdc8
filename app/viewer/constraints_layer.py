"""The 3D view's constraints layer: loop closures, welds and tendon couplings/limits drawn on the robot.

For each constraint (the engine's :func:`engine.robots.constraints.constraint_marks`, one
configuration):

- a connect: its two anchor points (one on each body) as dots and the segment between them (its
  length is the constraint's violation, normally ~0);
- a weld: the same, plus both frames' axes (red x, green y, blue z; the second frame's shorter);
- a tendon equality or limit: a dot on each coupled joint and a line through them;

each labelled with its name (a tendon's with its length, a violated one's with its violation),
coloured by its violation: green (a tendon: blue) within :data:`TOLERANCE` (m or rad), red beyond.
Drawn over the meshes (no depth test), so anchors inside a body stay visible.

View > Show Constraints turns the layer on and off in every 3D view; the choice is kept in the
app's QSettings under :data:`SETTINGS_KEY` (on by default) and applied to the views open and to
those opened later (as :mod:`app.viewer.orbit_speed`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pyqtgraph.opengl as gl
import shiboken6
from OpenGL import GL
from PySide6.QtGui import QAction, QColor, QFont

__all__ = ["SETTINGS_KEY", "TOLERANCE", "ConstraintsLayer", "DrawnMark", "add_show_constraints_action",
           "load", "register", "set_shown", "shown"]

SETTINGS_KEY = "view/show_constraints"
TOLERANCE = 1e-3                 # m or rad: green within, red beyond
OK_RGBA = (0.25, 1.0, 0.45, 1.0)
BAD_RGBA = (1.0, 0.25, 0.25, 1.0)
TENDON_RGBA = (0.35, 0.85, 1.0, 1.0)     # a satisfied tendon's dots and line (told apart from loops)
LABEL_POINTS = 9
DRAWN_LAST = 10                          # GL depth value: after the meshes, which would cover the marks
# no depth test (anchors inside a body stay visible), plain alpha blending (additive would wash
# the colours out to white over a light mesh)
OVER_EVERYTHING = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: True, GL.GL_CULL_FACE: False,
                   "glBlendFunc": (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)}

_shown = True
_layers: weakref.WeakSet = weakref.WeakSet()


@dataclass
class DrawnMark:
    """One constraint as drawn: ``points (k, 3)`` (m), ``frames (2, 3, 3)`` or None, ``violation``,
    ``value`` a tendon's length (None for a connect or weld)."""

    name: str
    kind: str
    points: np.ndarray
    violation: float
    frames: np.ndarray | None = None
    value: float | None = None

    @property
    def satisfied(self) -> bool:
        return bool(self.violation <= TOLERANCE)


def _colour(mark: DrawnMark) -> tuple:
    if not mark.satisfied:
        return BAD_RGBA
    return TENDON_RGBA if mark.kind.startswith("tendon") else OK_RGBA


class ConstraintsLayer:
    """The constraints drawn in one :class:`~app.viewer.scene.RobotView` (``set_marks`` each pose)."""

    def __init__(self, view, axis_size: float = 0.05):
        self.view = view
        self.axis_size = axis_size
        self.marks: list[DrawnMark] = []
        self.visible = _shown
        self.dots = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), size=11, pxMode=True)
        self.lines = gl.GLLinePlotItem(pos=np.zeros((2, 3)), width=3, mode="lines")
        self.axes = gl.GLLinePlotItem(pos=np.zeros((2, 3)), width=2, mode="lines")
        self.labels: list[gl.GLTextItem] = []
        for item in (self.lines, self.axes, self.dots):
            item.setGLOptions(OVER_EVERYTHING)
            item.setDepthValue(DRAWN_LAST)
            item.setVisible(False)
            view.addItem(item)
        _layers.add(self)

    # ------------------------------------------------------------------ data
    def clear(self) -> None:
        self.set_marks([])

    def set_marks(self, marks) -> None:
        """Draw ``marks`` (DrawnMark, or anything with name, kind, points, violation, frames)."""
        self.marks = [m if isinstance(m, DrawnMark) else DrawnMark(
            m.name, m.kind, np.asarray(m.points, float), float(m.violation), m.frames,
            None if getattr(m, "value", None) is None else float(m.value)) for m in marks]
        dots, dot_rgba, seg, seg_rgba, ax, ax_rgba = [], [], [], [], [], []
        for m in self.marks:
            rgba = _colour(m)
            pts = np.asarray(m.points, float).reshape(-1, 3)
            dots.extend(pts)
            dot_rgba.extend([rgba] * len(pts))
            for a, b in zip(pts[:-1], pts[1:]):
                seg.extend([a, b])
                seg_rgba.extend([rgba, rgba])
            if m.frames is not None:
                for origin, R, size in ((pts[0], m.frames[0], self.axis_size),
                                        (pts[1], m.frames[1], 0.6 * self.axis_size)):
                    for k, axis_rgba in enumerate(((1, .25, .25, 1), (.25, 1, .25, 1), (.35, .55, 1, 1))):
                        ax.extend([origin, origin + size * np.asarray(R)[:, k]])
                        ax_rgba.extend([axis_rgba, axis_rgba])
        for item, pos, rgba in ((self.dots, dots, dot_rgba), (self.lines, seg, seg_rgba), (self.axes, ax, ax_rgba)):
            if pos:
                item.setData(pos=np.asarray(pos, float), color=np.asarray(rgba, float))
            item.setVisible(bool(pos) and self.visible)
        self._set_labels()
        self.view.update()

    def _set_labels(self) -> None:
        while len(self.labels) > len(self.marks):
            self.view.removeItem(self.labels.pop())
        while len(self.labels) < len(self.marks):
            label = gl.GLTextItem(font=QFont("Sans Serif", LABEL_POINTS))
            label.setDepthValue(DRAWN_LAST)
            self.labels.append(label)
            self.view.addItem(label)
        placed: list[np.ndarray] = []
        for label, m in zip(self.labels, self.marks):
            pts = np.asarray(m.points, float).reshape(-1, 3)
            at = pts.mean(0) if len(pts) else np.zeros(3)
            # labels of nearby constraints (a gripper's coupling and its limit) stacked upwards
            near = sum(1 for p in placed if np.linalg.norm(p[:2] - at[:2]) < self.axis_size)
            placed.append(at)
            at = at + [0.0, 0.0, 0.6 * self.axis_size * near]
            r, g, b, _ = _colour(m)
            text = m.name if m.value is None else f"{m.name} = {m.value:.3g}"     # a tendon: its length
            if not m.satisfied:
                text += f" ({m.violation:.2g} off)"
            label.setData(pos=at + [0.0, 0.0, 0.2 * self.axis_size], text=text,
                          color=QColor.fromRgbF(r, g, b, 1.0))
            label.setVisible(self.visible)

    # ------------------------------------------------------------------ showing
    def set_visible(self, on: bool) -> None:
        self.visible = bool(on)
        self.set_marks(self.marks)

    def shown_items(self) -> list:
        """The GL items now visible (tests, screenshots)."""
        return [i for i in (self.dots, self.lines, self.axes, *self.labels) if i.visible()]


def shown() -> bool:
    return _shown


def register(layer: ConstraintsLayer) -> None:
    """A layer that follows View > Show Constraints (layers register themselves when made)."""
    _layers.add(layer)
    layer.set_visible(_shown)


def set_shown(on: bool) -> None:
    global _shown
    _shown = bool(on)
    for layer in list(_layers):
        if shiboken6.isValid(layer.view):        # a closed view's layer waits for the collector
            layer.set_visible(_shown)


def load(settings) -> bool:
    """The stored choice (on when none), applied."""
    value = settings.value(SETTINGS_KEY, True)
    on = value if isinstance(value, bool) else str(value).lower() not in ("false", "0", "no")
    set_shown(on)
    return on


def add_show_constraints_action(menu, settings, status=None) -> QAction:
    """Add the checkable "Show Constraints" to ``menu`` (the View menu); loads and applies the stored choice."""
    action = QAction("Show &Constraints (3D view)", menu)
    action.setObjectName("showConstraints")
    action.setCheckable(True)
    action.setChecked(load(settings))
    action.setStatusTip("Draw loop closures, welds and tendon couplings and limits on the robot, "
                        "green when they hold, red when violated")

    def toggled(on: bool) -> None:
        settings.setValue(SETTINGS_KEY, bool(on))
        set_shown(on)
        if status is not None:
            status(f"Constraints {'shown' if on else 'hidden'} in the 3D view")

    action.toggled.connect(toggled)
    menu.addAction(action)
    return action
