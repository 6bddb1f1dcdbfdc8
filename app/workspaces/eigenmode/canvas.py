"""The double pendulum canvas: drag the links to set a configuration, click to set the tip's target."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPoint, QPointF, Qt, Signal

from app.workspaces.eigenmode.state import fk
from engine.systems.double_pendulum import DoublePendulumParams, reach

__all__ = ["PendulumCanvas", "fk"]


class _InteractiveViewBox(pg.ViewBox):
    """A view box that turns drags on the links into configurations and clicks into targets."""

    def __init__(self, canvas: PendulumCanvas):
        super().__init__(lockAspect=True, enableMenu=False)
        self.canvas = canvas
        self._dragging: int | None = None
        self.setMouseEnabled(False, False)

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            p = self.mapSceneToView(ev.scenePos())
            ev.accept()
            self.canvas.targetClicked.emit(float(p.x()), float(p.y()))
        else:
            ev.ignore()

    def mouseDragEvent(self, ev, axis=None):
        if ev.button() != Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        if ev.isStart():
            start = self.mapSceneToView(ev.buttonDownScenePos())
            self._dragging = self.canvas.link_at(np.array([start.x(), start.y()]))
            if self._dragging is None:
                ev.ignore()
                return
        if self._dragging is None:
            ev.ignore()
            return
        ev.accept()
        p = self.mapSceneToView(ev.scenePos())
        self.canvas.drag_link(self._dragging, np.array([p.x(), p.y()]))
        if ev.isFinish():
            self._dragging = None


class PendulumCanvas(pg.PlotWidget):
    """Shows the pendulum at ``q``, the target, the reachable annulus, the orbit's tip path.

    Signals: ``configurationDragged(q1, q2)`` while a link is dragged, ``targetClicked(x, y)``.
    """

    configurationDragged = Signal(float, float)
    targetClicked = Signal(float, float)

    def __init__(self, plant: DoublePendulumParams = DoublePendulumParams(), parent=None):
        self._vb = None
        vb = _InteractiveViewBox(self)
        super().__init__(parent=parent, viewBox=vb)
        self._vb = vb
        vb.canvas = self
        self.plant = plant
        self.q = np.zeros(2)
        self.setBackground("w")
        self.showGrid(x=True, y=True, alpha=0.2)
        self.setLabel("bottom", "x (m)")
        self.setLabel("left", "y (m)")
        r = plant.l1 + plant.l2
        self.setXRange(-r - 0.2, r + 0.2, padding=0)
        self.setYRange(-r - 0.2, r + 0.2, padding=0)
        self.annulus_outer = self.plot(pen=pg.mkPen((120, 170, 120), width=1, style=Qt.PenStyle.DashLine))
        self.annulus_inner = self.plot(pen=pg.mkPen((120, 170, 120), width=1, style=Qt.PenStyle.DashLine))
        self.annulus_fill = pg.FillBetweenItem(
            self.annulus_outer, self.annulus_inner, brush=pg.mkBrush(140, 200, 140, 40)
        )
        self.addItem(self.annulus_fill)
        self.orbit_tip = self.plot(pen=pg.mkPen((230, 120, 30), width=2))
        self.orbit_elbow = self.plot(pen=pg.mkPen((230, 170, 110), width=1))
        self.ghost = self.plot(pen=pg.mkPen((150, 150, 220), width=2, style=Qt.PenStyle.DotLine),
                               symbol="o", symbolSize=8, symbolBrush=(150, 150, 220))
        self.links = self.plot(pen=pg.mkPen((40, 60, 140), width=5), symbol="o", symbolSize=[8, 16, 16],
                               symbolBrush=[(30, 30, 30), (40, 60, 140), (200, 40, 40)])
        self.target_item = pg.ScatterPlotItem(
            size=18, symbol="x", pen=pg.mkPen((200, 0, 0), width=3), brush=None
        )
        self.addItem(self.target_item)
        self.label = pg.TextItem("", color=(60, 60, 60), anchor=(0, 0))
        self.addItem(self.label)
        self.label.setPos(-r - 0.15, r + 0.15)
        self.set_plant(plant)

    # --- model --------------------------------------------------------------------------------
    def set_plant(self, plant: DoublePendulumParams) -> None:
        self.plant = plant
        r_in, r_out = reach(plant)
        th = np.linspace(0, 2 * np.pi, 181)
        self.annulus_outer.setData(r_out * np.cos(th), r_out * np.sin(th))
        self.annulus_inner.setData(r_in * np.cos(th), r_in * np.sin(th))
        self.set_configuration(self.q)

    def set_configuration(self, q) -> None:
        self.q = np.asarray(q, dtype=float).copy()
        elbow, tip = fk(self.q, self.plant)
        self.links.setData([0.0, elbow[0], tip[0]], [0.0, elbow[1], tip[1]])

    def set_ghost(self, q) -> None:
        """A second, dotted pendulum (e.g. the perturbed start); ``None`` hides it."""
        if q is None:
            self.ghost.setData([], [])
            return
        elbow, tip = fk(q, self.plant)
        self.ghost.setData([0.0, elbow[0], tip[0]], [0.0, elbow[1], tip[1]])

    def set_target(self, xy) -> None:
        self.target_item.setData([float(xy[0])], [float(xy[1])])

    def set_orbit(self, tip: np.ndarray | None, elbow: np.ndarray | None = None) -> None:
        if tip is None or len(tip) == 0:
            self.orbit_tip.setData([], [])
            self.orbit_elbow.setData([], [])
            return
        self.orbit_tip.setData(tip[:, 0], tip[:, 1])
        if elbow is not None:
            self.orbit_elbow.setData(elbow[:, 0], elbow[:, 1])

    def set_text(self, text: str) -> None:
        self.label.setText(text)

    # --- interaction --------------------------------------------------------------------------
    def link_at(self, point: np.ndarray, tolerance: float = 0.3) -> int | None:
        """Which link (1 or 2) is within ``tolerance`` m of ``point``; None if neither."""
        elbow, tip = fk(self.q, self.plant)

        def seg_dist(a, b):
            ab = b - a
            t = np.clip(np.dot(point - a, ab) / max(np.dot(ab, ab), 1e-12), 0, 1)
            return float(np.linalg.norm(point - (a + t * ab)))

        d1, d2 = seg_dist(np.zeros(2), elbow), seg_dist(elbow, tip)
        if min(d1, d2) > tolerance:
            return None
        # prefer link 2 near its far half, link 1 otherwise
        return 2 if d2 <= d1 else 1

    def drag_link(self, link: int, point: np.ndarray) -> None:
        q = self.q.copy()
        if link == 1:
            q[0] = math.atan2(point[0], -point[1])
        else:
            elbow, _ = fk(q, self.plant)
            d = point - elbow
            absolute = math.atan2(d[0], -d[1])
            q[1] = math.remainder(absolute - q[0], 2 * math.pi)
        self.set_configuration(q)
        self.configurationDragged.emit(float(q[0]), float(q[1]))

    def view_to_widget(self, x: float, y: float) -> QPoint:
        """Viewport pixel position of the view point (x, y) (for scripted input and tests)."""
        scene = self._vb.mapViewToScene(QPointF(x, y))
        return self.mapFromScene(scene)
