"""The top-down canvas of the Car planner: metres grid, zoom (wheel) and pan (middle drag),
target poses placed by click-and-drag, the car with its wheels, paths and skid marks."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel

from app.workspaces.car.canvas_legend import CanvasLegend, sample

__all__ = ["CarCanvas", "car_outline", "wheel_outlines"]

TARGET_PICK_RADIUS = 0.18  # m


def _rot(yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


def car_outline(x, y, yaw, length=0.36, width=0.2) -> np.ndarray:
    """The body's closed outline (6, 2) in metres, with a nose."""
    l2, w2 = length / 2, width / 2
    body = np.array([[-l2, -w2], [l2 * 0.8, -w2], [l2, 0.0], [l2 * 0.8, w2], [-l2, w2], [-l2, -w2]])
    return body @ _rot(yaw).T + [x, y]


def wheel_outlines(x, y, yaw, steering, wheelbase=0.26, track=0.2) -> list[np.ndarray]:
    """Four wheel rectangles (5, 2) each: front ones turned by ``steering``."""
    out = []
    R = _rot(yaw)
    for px, py, steer in ((wheelbase / 2, track / 2, steering), (wheelbase / 2, -track / 2, steering),
                          (-wheelbase / 2, track / 2, 0.0), (-wheelbase / 2, -track / 2, 0.0)):
        w = np.array([[-0.035, -0.015], [0.035, -0.015], [0.035, 0.015], [-0.035, 0.015], [-0.035, -0.015]])
        w = w @ _rot(steer).T + [px, py]
        out.append(w @ R.T + [x, y])
    return out


class CarCanvas(pg.PlotWidget):
    """Left press on empty ground starts a target at that point; dragging sets its heading
    (the drag direction); release places it. Left drag on a target moves it. Signals carry
    metres / radians."""

    target_placed = Signal(float, float, float)         # x, y, yaw
    target_moved = Signal(int, float, float, float, float)  # index, old x, old y, new x, new y
    target_selected = Signal(int)
    delete_requested = Signal(int)
    track_point_added = Signal(float, float)             # draw-track mode: a centre-line point

    def __init__(self, parent=None):
        super().__init__(parent=parent)
        self.setObjectName("carCanvas")
        item = self.getPlotItem()
        item.showGrid(x=True, y=True, alpha=0.3)
        item.setAspectLocked(True)
        item.setLabel("bottom", "x", units="m")
        item.setLabel("left", "y", units="m")
        for axis in ("left", "bottom"):
            item.getAxis(axis).enableAutoSIPrefix(False)
        self.getViewBox().setMouseMode(pg.ViewBox.PanMode)
        self.setXRange(-1.5, 4.5)
        self.setYRange(-2.0, 3.0)
        self._targets: list[tuple[float, float, float, int]] = []
        self._target_items: list = []
        self._drag = None            # ("new", x, y) or ("move", index, x0, y0)
        self.mode = "targets"        # or "draw_track": left clicks add centre-line points
        self.draw_points: list[tuple[float, float]] = []
        self.draw_line = pg.PlotDataItem(pen=pg.mkPen("#00bcd4", width=2), symbol="o", symbolSize=6)
        self.addItem(self.draw_line)
        self._preview = pg.PlotDataItem(pen=pg.mkPen("#ffcc00", width=2, style=Qt.PenStyle.DashLine))
        self.addItem(self._preview)
        self.track_left = pg.PlotDataItem(pen=pg.mkPen("#888888", width=2))
        self.track_right = pg.PlotDataItem(pen=pg.mkPen("#888888", width=2))
        self.track_centre = pg.PlotDataItem(pen=pg.mkPen("#555555", width=1, style=Qt.PenStyle.DotLine))
        self.skid = pg.ScatterPlotItem(
            size=5, pen=None, brush=pg.mkBrush(190, 170, 150, 170)
        )  # visible on the dark canvas
        self.nominal = pg.PlotDataItem(pen=pg.mkPen("#ff8c00", width=2), name="nominal")
        self.executed = pg.PlotDataItem(pen=pg.mkPen("#2ca02c", width=2), name="executed")
        self.compare = pg.PlotDataItem(
            pen=pg.mkPen("#9467bd", width=2, style=Qt.PenStyle.DashLine), name="other model"
        )
        self.compare_executed = pg.PlotDataItem(
            pen=pg.mkPen("#17becf", width=2, style=Qt.PenStyle.DashDotLine), name="other model executed"
        )
        self.mpc_plan = pg.PlotDataItem(pen=pg.mkPen("#ff8c00", width=2))
        self.driven = pg.PlotDataItem(pen=pg.mkPen("#2ca02c", width=2), name="driven")
        self.log_path = pg.PlotDataItem(pen=pg.mkPen(150, 150, 150, 110, width=1), name="driving log")
        for it in (
            self.log_path,
            self.track_left,
            self.track_right,
            self.track_centre,
            self.skid,
            self.compare,
            self.compare_executed,
            self.nominal,
            self.executed,
            self.driven,
            self.mpc_plan,
        ):
            self.addItem(it)
        # the legend: a line above the canvas (the page places it), never over the drawing
        self.legend = CanvasLegend()
        # what is drawn in each layer: "plan" (targets, planned and executed paths) or "track" (MPC)
        self.layer = "plan"
        self._legends: dict[str, list] = {"plan": [], "track": []}
        self._layer_items = {"plan": [self.nominal, self.executed, self.compare, self.compare_executed,
                                      self.log_path, self._preview],
                             "track": [self.driven, self.mpc_plan, self.track_left, self.track_right,
                                       self.track_centre]}
        for item in self._layer_items["track"]:
            item.setVisible(False)
        self.car_body = pg.PlotDataItem(pen=pg.mkPen("#1f77b4", width=2), fillLevel=None)
        self.car_wheels = [pg.PlotDataItem(pen=pg.mkPen("#dddddd", width=3)) for _ in range(4)]
        for it in [self.car_body] + self.car_wheels:
            self.addItem(it)
        self.set_car(0.0, 0.0, 0.0, 0.0)
        # what to do first, over the empty canvas (hidden once a target is placed)
        self.hint = QLabel("Press on the ground and drag to place a target pose (the drag sets its heading), "
                           "or pick a Scenario on the right; then Optimise.", self)
        self.hint.setObjectName("canvasHint")
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: #d7dae0; background: rgba(32, 36, 44, 215); padding: 8px; "
                                "border-radius: 4px;")
        self.hint.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._place_hint()

    def _place_hint(self) -> None:
        self.hint.setVisible(self.layer == "plan" and not self._targets)
        width = max(200, min(460, self.width() - 120))
        self.hint.setFixedWidth(width)
        self.hint.adjustSize()
        self.hint.move(70, 16)

    def resizeEvent(self, ev):  # noqa: N802 - Qt API
        super().resizeEvent(ev)
        if hasattr(self, "hint"):
            self._place_hint()

    # -- coordinates ----------------------------------------------------------------------
    def to_metres(self, pos) -> tuple[float, float]:
        p = self.getViewBox().mapSceneToView(
            self.mapToScene(pos.toPoint() if hasattr(pos, "toPoint") else pos)
        )
        return float(p.x()), float(p.y())

    def to_pixels(self, x: float, y: float):
        """View (widget) pixel position of a point in metres (for tests and tools)."""
        scene = self.getViewBox().mapViewToScene(QPointF(x, y))
        return self.mapFromScene(scene)

    # -- drawing ---------------------------------------------------------------------------
    def set_car(self, x, y, yaw, steering=0.0):
        o = car_outline(x, y, yaw)
        self.car_body.setData(o[:, 0], o[:, 1])
        for item, w in zip(self.car_wheels, wheel_outlines(x, y, yaw, steering)):
            item.setData(w[:, 0], w[:, 1])

    def set_targets(self, targets: list[tuple[float, float, float, int]], selected: int = -1):
        """Targets as (x, y, yaw, step): an arrow per target and its step label."""
        for it in self._target_items:
            self.removeItem(it)
        self._target_items = []
        self._targets = list(targets)
        for i, (x, y, yaw, step) in enumerate(targets):
            colour = "#ff4fd8" if i == selected else "#b15cff"
            pts = car_outline(x, y, yaw, 0.3, 0.16)
            body = pg.PlotDataItem(pts[:, 0], pts[:, 1], pen=pg.mkPen(colour, width=2))
            tip = np.array([x, y]) + 0.35 * np.array([math.cos(yaw), math.sin(yaw)])
            arrow = pg.PlotDataItem([x, tip[0]], [y, tip[1]], pen=pg.mkPen(colour, width=2))
            label = pg.TextItem(f"#{i + 1}  step {step}", color=colour, anchor=(0, 1))
            label.setPos(x + 0.1, y + 0.1)
            for it in (body, arrow, label):
                it.setVisible(self.layer == "plan")
                self.addItem(it)
                self._target_items.append(it)
        self._place_hint()
        self.refresh_legend()

    def set_legend(self, entries: list[tuple[pg.PlotDataItem, str]], layer: str | None = None) -> None:
        """The paths of ``layer`` (default: the current one) the legend names, as ``(item, name)``
        pairs; the targets, the track and the car are named when drawn."""
        self._legends[layer or self.layer] = list(entries)
        self.refresh_legend()

    def refresh_legend(self) -> None:
        """Name what the current layer draws: its targets or track, its paths, the car."""
        def drawn(item):
            x, _ = item.getData()
            return x is not None and len(x) > 0

        rows = []
        if self.layer == "plan" and self._targets:
            rows.append(("#b15cff", "▷", "targets"))
        if self.layer == "track" and drawn(self.track_left):
            rows.append((*sample(self.track_left), "track edges"))
            rows.append((*sample(self.track_centre), "centre line"))
        rows += [(*sample(item), name) for item, name in self._legends[self.layer]]
        if self.layer == "plan" and drawn(self.log_path):
            rows.append((*sample(self.log_path), "driving log"))
        if rows:
            rows.append((*sample(self.car_body), "car"))
        self.legend.set_entries(rows)

    def set_layer(self, layer: str) -> None:
        """Show the ``"plan"`` items (targets, plans, executed paths) or the ``"track"`` ones
        (the track, driven path, MPC plan), and fit the view to what the layer shows."""
        self.layer = layer
        for name, items in self._layer_items.items():
            for item in items:
                item.setVisible(name == layer)
        for item in self._target_items:
            item.setVisible(layer == "plan")
        self.refresh_legend()
        self._place_hint()
        self.fit_view()

    def layer_bounds(self) -> tuple[float, float, float, float] | None:
        """(x0, x1, y0, y1) of what the current layer draws (m): its curves, and in the plan layer
        the targets and the car; None when it draws nothing."""
        xs, ys = [], []
        for item in self._layer_items[self.layer]:
            x, y = item.getData()
            if x is not None and len(x):
                xs.append(np.asarray(x, dtype=float))
                ys.append(np.asarray(y, dtype=float))
        if self.layer == "plan":
            for x, y, _, _ in self._targets:
                xs.append(np.array([x - 0.4, x + 0.9]))     # the label sits right of and above the target
                ys.append(np.array([y - 0.4, y + 0.5]))
            if xs:                                          # with them, the car at the origin
                xs.append(np.array([-0.4, 0.4]))
                ys.append(np.array([-0.4, 0.4]))
        if not xs:
            return None
        x, y = np.concatenate(xs), np.concatenate(ys)
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if not len(x) or not len(y):
            return None
        return float(x.min()), float(x.max()), float(y.min()), float(y.max())

    def fit_view(self) -> None:
        """Fit the view to the current layer (the default view when it draws nothing)."""
        b = self.layer_bounds()
        if b is None:
            self.setXRange(-1.5, 4.5)
            self.setYRange(-2.0, 3.0)
            return
        self.getViewBox().setRange(xRange=(b[0], b[1]), yRange=(b[2], b[3]), padding=0.08)

    def show_targets(self) -> None:
        """Fit the view when a target lies outside it: targets that came from a scenario, a file
        or an undo are never off the canvas (a view the user zoomed stays while they are in it)."""
        if self.layer != "plan" or not self._targets:
            return
        (x0, x1), (y0, y1) = self.getViewBox().viewRange()
        if any(not (x0 < x < x1 and y0 < y < y1) for x, y, _, _ in self._targets):
            self.fit_view()

    def legend_names(self) -> list[str]:
        return self.legend.names()

    def target_at(self, x: float, y: float) -> int:
        best, best_d = -1, TARGET_PICK_RADIUS
        for i, (tx, ty, _, _) in enumerate(self._targets):
            d = math.hypot(tx - x, ty - y)
            if d < best_d:
                best, best_d = i, d
        return best

    def set_track(self, left=None, right=None, centre=None):
        for item, data in ((self.track_left, left), (self.track_right, right), (self.track_centre, centre)):
            if data is None:
                item.setData([], [])
            else:
                closed = np.vstack([data, data[:1]])
                item.setData(closed[:, 0], closed[:, 1])
        self.refresh_legend()

    # -- mouse -----------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """``"targets"`` (place / move targets) or ``"draw_track"`` (click centre-line points)."""
        self.mode = mode
        self.draw_points = []
        self.draw_line.setData([], [])

    def mousePressEvent(self, ev):
        if ev.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(ev)
        x, y = self.to_metres(ev.position())
        if self.mode == "draw_track":
            self.draw_points.append((x, y))
            pts = np.asarray(self.draw_points)
            self.draw_line.setData(pts[:, 0], pts[:, 1])
            self.track_point_added.emit(x, y)
            ev.accept()
            return
        hit = self.target_at(x, y)
        if hit >= 0:
            self._drag = ("move", hit, self._targets[hit][0], self._targets[hit][1])
            self.target_selected.emit(hit)
        else:
            self._drag = ("new", x, y)
            self._preview.setData([x, x], [y, y])
        ev.accept()

    def mouseMoveEvent(self, ev):
        if self._drag is None:
            return super().mouseMoveEvent(ev)
        x, y = self.to_metres(ev.position())
        if self._drag[0] == "new":
            self._preview.setData([self._drag[1], x], [self._drag[2], y])
        else:
            i = self._drag[1]
            _, _, yaw, step = self._targets[i]
            targets = list(self._targets)
            targets[i] = (x, y, yaw, step)
            self.set_targets(targets, i)
        ev.accept()

    def mouseReleaseEvent(self, ev):
        if self._drag is None or ev.button() != Qt.MouseButton.LeftButton:
            return super().mouseReleaseEvent(ev)
        x, y = self.to_metres(ev.position())
        drag, self._drag = self._drag, None
        self._preview.setData([], [])
        if drag[0] == "new":
            x0, y0 = drag[1], drag[2]
            dx, dy = x - x0, y - y0
            # a click without a drag keeps the heading along +x
            yaw = math.atan2(dy, dx) if math.hypot(dx, dy) > 0.05 else 0.0
            self.target_placed.emit(x0, y0, yaw)
        else:
            _, i, x0, y0 = drag
            if math.hypot(x - x0, y - y0) > 1e-3:
                self.target_moved.emit(i, x0, y0, x, y)
        ev.accept()

    def keyPressEvent(self, ev):
        if ev.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.delete_requested.emit(-1)
            ev.accept()
            return
        super().keyPressEvent(ev)
