"""Stacked time plots that share one time axis and one time cursor.

:class:`LinkedPlots` holds named plots (``add_plot("q", "position", "rad")``) stacked in one
``GraphicsLayoutWidget``; their time axes are linked (zoom or pan one, all follow to the same
range; pyqtgraph's ``setXLink`` would align pixels instead, off by the axes' widths).
Each plot has a draggable vertical cursor line; dragging any moves all and emits
``cursor_moved(float)``; :meth:`set_cursor` moves them without emitting. Hovering shows a
crosshair and a readout of every curve's value at that time. Curves: :meth:`set_curves` (solid,
one per column), :meth:`set_overlay` (dashed: a model's prediction or error). Export:
:meth:`export` to ``.png``/``.svg`` (the whole stack) or ``.csv`` (every curve's samples).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from app.widgets.plots import color, export_figure

__all__ = ["LinkedPlots"]

PLOT_MIN_HEIGHT = 90       # px: a plot's axis label ("velocity [rad/s]") and ticks whole
TIME_AXIS_HEIGHT = 32      # px: the time axis's label under the lowest plot


class LinkedPlots(QWidget):
    """Plots sharing a time axis and a cursor (see the module doc)."""

    cursor_moved = Signal(float)
    region_changed = Signal(object)     # (start, end) dragged on a plot

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("linkedPlots")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.layout_widget = pg.GraphicsLayoutWidget()
        self.layout_widget.setBackground("#1e2026")
        # the stack is never squeezed below its plots' height (their labels and time axes whole):
        # when the room is short it scrolls, and the window keeps its size
        self.scroll = QScrollArea()
        self.scroll.setObjectName("linkedPlotsScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.layout_widget)
        self.scroll.setMinimumHeight(PLOT_MIN_HEIGHT + TIME_AXIS_HEIGHT)
        layout.addWidget(self.scroll, 1)
        self.readout = QLabel("", objectName="plotReadout")
        self.readout.setTextFormat(Qt.TextFormat.RichText)
        # one value per curve can be a long line: it wraps, and never asks the window for its width
        self.readout.setWordWrap(True)
        self.readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.readout.setMinimumWidth(1)
        layout.addWidget(self.readout)
        self.plots: dict[str, pg.PlotItem] = {}
        self.cursors: dict[str, pg.InfiniteLine] = {}
        self._crosshair: dict[str, tuple[pg.InfiniteLine, pg.InfiniteLine]] = {}
        self._curves: dict[str, dict[str, pg.PlotDataItem]] = {}
        self._data: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._units: dict[str, str] = {}
        self._cursor = 0.0
        self._moving = False
        self._syncing = False
        self._region: tuple[float, float] | None = None
        self._regions: dict[str, pg.LinearRegionItem] = {}
        self.layout_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)

    # ------------------------------------------------------------------ plots
    def add_plot(self, key: str, title: str, unit: str = "") -> pg.PlotItem:
        """A new plot under the others (its x axis linked to the first)."""
        if key in self.plots:
            return self.plots[key]
        row = len(self.plots)
        item = self.layout_widget.addPlot(row=row, col=0)
        item.showGrid(x=True, y=True, alpha=0.25)
        item.setDownsampling(auto=True, mode="peak")   # long logs: draw what the pixels can show
        item.setClipToView(True)
        item.setLabel("left", f"{title} [{unit}]" if unit else title)
        item.getAxis("left").enableAutoSIPrefix(False)
        item.getAxis("left").setWidth(64)      # one width: linked time axes line up to the pixel
        item.getAxis("bottom").enableAutoSIPrefix(False)
        for other in self.plots.values():      # the time label under the lowest plot only
            other.setLabel("bottom", "")
        item.setLabel("bottom", "t [s]")
        if self.plots:   # the same time range, exactly (setXLink maps through pixels, which differ by axes)
            item.setXRange(*self.x_range(), padding=0)
        item.sigXRangeChanged.connect(lambda _vb, rng, k=key: self._sync_x(k, rng))
        cursor = pg.InfiniteLine(pos=self._cursor, angle=90, movable=True, pen=pg.mkPen("#ffd166", width=2),
                                 hoverPen=pg.mkPen("#ffe599", width=3))
        cursor.setZValue(10)
        cursor.sigPositionChanged.connect(lambda line, k=key: self._on_cursor_dragged(k, line))
        item.addItem(cursor, ignoreBounds=True)
        vline = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen((200, 200, 200, 90), style=Qt.PenStyle.DotLine)
        )
        hline = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen((200, 200, 200, 90), style=Qt.PenStyle.DotLine)
        )
        for line in (vline, hline):
            line.setVisible(False)
            item.addItem(line, ignoreBounds=True)
        self.plots[key] = item
        self.cursors[key] = cursor
        if self._region is not None:
            self._add_region(key)
        item.setMinimumHeight(PLOT_MIN_HEIGHT)
        self._crosshair[key] = (vline, hline)
        self._curves[key] = {}
        self._units[key] = unit
        self._fit_height()
        return item

    def _fit_height(self) -> None:
        """The stack's least height: every plot's, and the time axis under the lowest."""
        self.layout_widget.setMinimumHeight(PLOT_MIN_HEIGHT * len(self.plots) + TIME_AXIS_HEIGHT
                                            if self.plots else 0)

    def remove_plot(self, key: str) -> None:
        item = self.plots.pop(key, None)
        if item is None:
            return
        self.layout_widget.removeItem(item)
        self.cursors.pop(key)
        self._regions.pop(key, None)
        self._crosshair.pop(key)
        self._units.pop(key, None)
        for name in self._curves.pop(key):
            self._data.pop((key, name), None)
        if self.plots:                         # the time label moves to the lowest plot left
            list(self.plots.values())[-1].setLabel("bottom", "t [s]")
        self._fit_height()

    def clear(self) -> None:
        for key in list(self.plots):
            self.remove_plot(key)

    def set_curves(self, key: str, t, values, labels, prefix: str = "") -> None:
        """One solid curve per column of ``values`` (N, k) against ``t`` (N,) on plot ``key``."""
        self._set(key, t, values, labels, prefix, dashed=False)

    def set_overlay(self, key: str, t, values, labels, prefix: str = "model ") -> None:
        """Dashed curves (a prediction, an error) on plot ``key``; ``values`` None removes them."""
        item = self.plots[key]
        for name in [n for n in self._curves[key] if n.startswith(prefix)]:
            item.removeItem(self._curves[key].pop(name))
            self._data.pop((key, name), None)
        if values is not None:
            self._set(key, t, values, labels, prefix, dashed=True)

    def _set(self, key, t, values, labels, prefix, dashed) -> None:
        item = self.plots[key]
        t = np.asarray(t, dtype=float)
        values = np.asarray(values, dtype=float).reshape(t.shape[0], -1)
        for i, label in enumerate(labels):
            name = f"{prefix}{label}"
            pen = pg.mkPen(color(i), width=2 if dashed else 1.5,
                           style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
            curve = self._curves[key].get(name)
            if curve is None:
                curve = item.plot([], [], name=name, pen=pen)
                self._curves[key][name] = curve
            curve.setData(t, values[:, i])
            self._data[(key, name)] = (t, values[:, i])

    def curve_names(self, key: str) -> list[str]:
        return list(self._curves.get(key, {}))

    def curve_data(self, key: str, name: str) -> tuple[np.ndarray, np.ndarray]:
        return self._data[(key, name)]

    # ------------------------------------------------------------------ time axis and cursor
    def _sync_x(self, key: str, rng) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            for other, item in self.plots.items():
                if other != key:
                    item.setXRange(float(rng[0]), float(rng[1]), padding=0)
        finally:
            self._syncing = False

    def set_x_range(self, t0: float, t1: float) -> None:
        if self.plots:
            next(iter(self.plots.values())).setXRange(t0, t1, padding=0)

    def x_range(self, key: str | None = None) -> tuple[float, float]:
        item = self.plots[key] if key else next(iter(self.plots.values()))
        lo, hi = item.getViewBox().viewRange()[0]
        return float(lo), float(hi)

    @property
    def cursor(self) -> float:
        return self._cursor

    def set_cursor(self, t: float) -> None:
        """Move every plot's cursor to ``t`` (no signal)."""
        self._cursor = float(t)
        self._moving = True
        try:
            for line in self.cursors.values():
                line.setValue(self._cursor)
        finally:
            self._moving = False
        self._update_readout(self._cursor)

    def _on_cursor_dragged(self, key: str, line) -> None:
        if self._moving:
            return
        t = float(line.value())
        self.set_cursor(t)
        self.cursor_moved.emit(t)

    def drag_cursor(self, key: str, t: float) -> None:
        """Act as if the user dragged plot ``key``'s cursor to ``t`` (emits ``cursor_moved``)."""
        self.cursors[key].setValue(t)

    # ------------------------------------------------------------------ a shaded time range (the loop)
    def set_region(self, region) -> None:
        """Shade ``(start, end)`` on every plot (draggable; emits ``region_changed``), None: none."""
        self._region = None if region is None else (float(region[0]), float(region[1]))
        for key in list(self.plots):
            item = self._regions.get(key)
            if self._region is None:
                if item is not None:
                    self.plots[key].removeItem(self._regions.pop(key))
            elif item is None:
                self._add_region(key)
            else:
                item.blockSignals(True)
                item.setRegion(self._region)
                item.blockSignals(False)

    def _add_region(self, key: str) -> None:
        item = pg.LinearRegionItem(values=self._region, brush=pg.mkBrush(255, 209, 102, 35), movable=True)
        item.setZValue(-5)
        item.sigRegionChangeFinished.connect(lambda r: self._on_region_dragged(r))
        self.plots[key].addItem(item, ignoreBounds=True)
        self._regions[key] = item

    def _on_region_dragged(self, item) -> None:
        a, b = item.getRegion()
        self.set_region((a, b))
        self.region_changed.emit((float(a), float(b)))

    # ------------------------------------------------------------------ crosshair and readout
    def _on_mouse_moved(self, pos) -> None:
        for key, item in self.plots.items():
            vline, hline = self._crosshair[key]
            inside = item.sceneBoundingRect().contains(pos)
            vline.setVisible(inside)
            hline.setVisible(inside)
            if inside:
                p = item.getViewBox().mapSceneToView(pos)
                vline.setValue(p.x())
                hline.setValue(p.y())
                self._update_readout(float(p.x()), key)

    def values_at(self, t: float, key: str) -> dict[str, float]:
        """Each curve of plot ``key`` at time ``t`` (linear interpolation)."""
        out = {}
        for name in self._curves.get(key, {}):
            x, y = self._data[(key, name)]
            if x.size and x[0] <= t <= x[-1]:
                out[name] = float(np.interp(t, x, y))
        return out

    def _update_readout(self, t: float, key: str | None = None) -> None:
        key = key or next(iter(self.plots), None)
        if key is None:
            self.readout.setText("")
            return
        vals = self.values_at(t, key)
        unit = self._units.get(key, "")
        parts = [f"<span style='color:{color(i % 8)}'>{name} {v:.4g}</span>"
                 for i, (name, v) in enumerate(list(vals.items())[:12])]
        self.readout.setText(f"<b>{key}</b> at {t:.3f} s{f' [{unit}]' if unit else ''}: " + ", ".join(parts))

    # ------------------------------------------------------------------ export
    def export(self, path: str | os.PathLike) -> Path:
        """``.png`` / ``.svg``: the stacked plots; ``.csv``: one row per sample time, one column
        per curve (``plot/curve``), empty where a curve has no sample."""
        path = Path(path)
        if path.suffix.lower() != ".csv":
            return export_figure(self.layout_widget, path)
        keys = list(self._data)
        times = np.unique(np.concatenate([self._data[k][0] for k in keys])) if keys else np.zeros(0)
        tmp = path.with_name(f".{path.stem}.tmp.csv")
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["t"] + [f"{k}/{n}" for k, n in keys])
            cols = []
            for k in keys:
                x, y = self._data[k]
                col = np.full(times.shape, np.nan)
                idx = np.searchsorted(times, x)
                col[idx] = y
                cols.append(col)
            for i, t in enumerate(times):
                w.writerow([repr(float(t))] + ["" if np.isnan(c[i]) else repr(float(c[i])) for c in cols])
        tmp.replace(path)
        return path
