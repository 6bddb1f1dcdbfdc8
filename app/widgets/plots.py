"""Shared pyqtgraph helpers: a colour cycle, a loss-curve plot (log scale), figure export (PNG, SVG).

- :func:`make_plot` a ``PlotWidget`` with a grid, a legend and axis labels;
- :class:`LossPlot` one curve per training run, log-scaled loss against epoch;
- :func:`export_figure` writes a plot (``PlotWidget``/``PlotItem``/``GraphicsLayoutWidget``) to
  ``.png`` or ``.svg`` through ``pyqtgraph.exporters``; :func:`export_png_svg` writes both.
- :func:`shade_region` a non-movable shaded time range (e.g. the validation range).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor

__all__ = [
    "COLORS",
    "LossPlot",
    "color",
    "curve_data",
    "export_figure",
    "export_png_svg",
    "make_plot",
    "shade_region",
]

# a colour-blind-friendly cycle (Okabe-Ito, then Tableau)
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
          "#4E79A7", "#F28E2B", "#59A14F", "#B07AA1")


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]


class LogAxis(pg.AxisItem):
    """An axis whose log-scale labels stay readable in small plots: when the view spans a
    decade or more only the decades are labelled (the 2..9 minor ticks keep their lines)."""

    def logTickStrings(self, values, scale, spacing):
        strings = super().logTickStrings(values, scale, spacing)
        lo, hi = sorted(float(r) for r in self.range)
        if hi - lo < 1.0:
            return strings
        return [s if abs(v - round(v)) < 1e-6 else "" for v, s in zip(values, strings)]


def make_plot(title: str = "", x_label: str = "", y_label: str = "", log_y: bool = False,
              legend: bool = True, parent=None) -> pg.PlotWidget:
    """A ``PlotWidget`` with a grid, axis labels, an optional legend and log-scaled y."""
    w = pg.PlotWidget(parent=parent, axisItems={"left": LogAxis("left")})
    item = w.getPlotItem()
    if title:
        item.setTitle(title)
    if x_label:
        item.setLabel("bottom", x_label)
    if y_label:
        item.setLabel("left", y_label)
    item.showGrid(x=True, y=True, alpha=0.25)
    for axis in ("left", "bottom"):
        item.getAxis(axis).enableAutoSIPrefix(False)
    if legend:
        # in the top-right corner, one row, small and see-through: the curves show through it
        item.addLegend(offset=(-4, 4), brush=pg.mkBrush(0, 0, 0, 70), labelTextSize="8pt", colCount=4,
                       verSpacing=-6, horSpacing=8)
    item.setLogMode(x=False, y=log_y)
    return w


def curve_data(curve: pg.PlotDataItem) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) arrays given to a curve (before any log-scale transform; empty when none)."""
    x, y = curve.xData, curve.yData
    if x is None or y is None:
        return np.zeros(0), np.zeros(0)
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


class LossPlot(pg.PlotWidget):
    """Losses against epoch on a log scale, one named curve per key.

    A key is a training run (the Model lab, the car's model) or a loss term (the eigenmode
    designer's total / task / constraint / effort, given as ``keys`` so they keep their order
    and colours). ``append(key, epoch, loss)`` adds a point, ``append_values(epoch, {key:
    loss})`` one point to several curves, ``set_losses(key, losses)`` / ``set_history({key:
    losses})`` replace curves with per-epoch values. Non-positive and non-finite losses are
    skipped (they cannot show on a log scale).
    """

    def __init__(self, title: str = "Training loss", keys: tuple[str, ...] = (), y_label: str = "loss",
                 parent=None):
        super().__init__(parent=parent, axisItems={"left": LogAxis("left")})
        item = self.getPlotItem()
        if title:
            item.setTitle(title)
        item.setLabel("bottom", "epoch")
        item.setLabel("left", y_label)
        item.showGrid(x=True, y=True, alpha=0.25)
        for axis in ("left", "bottom"):
            item.getAxis(axis).enableAutoSIPrefix(False)
        # in the top-right corner, one row, small and see-through: the curves show through it
        item.addLegend(offset=(-4, 4), brush=pg.mkBrush(0, 0, 0, 70), labelTextSize="8pt", colCount=4,
                       verSpacing=-6, horSpacing=8)
        item.setLogMode(x=False, y=True)
        self.setMinimumHeight(140)
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._data: dict[str, tuple[list, list]] = {}
        for k in keys:
            self.curve(k)

    @property
    def curves(self) -> dict[str, pg.PlotDataItem]:
        """Key -> its curve."""
        return dict(self._curves)

    def curve(self, key: str, name: str | None = None, index: int | None = None) -> pg.PlotDataItem:
        """The curve of ``key`` (created with the next colour on first use)."""
        if key not in self._curves:
            i = len(self._curves) if index is None else index
            self._curves[key] = self.getPlotItem().plot(
                [], [], name=name or key, pen=pg.mkPen(color(i), width=2)
            )
            self._data[key] = ([], [])
        return self._curves[key]

    def append(self, key: str, epoch: float, loss: float) -> None:
        """Add one point; non-positive or non-finite losses are skipped (log scale)."""
        self.curve(key)
        if loss is None or not (math.isfinite(loss) and loss > 0):
            return
        xs, ys = self._data[key]
        xs.append(float(epoch))
        ys.append(float(loss))
        self._curves[key].setData(np.asarray(xs), np.asarray(ys))

    def append_values(self, epoch: float, values: dict) -> None:
        """One point on each existing curve whose key is in ``values`` (other entries ignored)."""
        for key in list(self._curves):
            if key in values:
                self.append(key, epoch, values[key])

    def set_losses(self, key: str, losses, name: str | None = None) -> None:
        """Replace the curve of ``key`` with per-epoch ``losses`` (epoch 1..len)."""
        self.curve(key, name)
        ys = np.asarray(losses, dtype=float)
        xs = np.arange(1, len(ys) + 1, dtype=float)
        ok = np.isfinite(ys) & (ys > 0)
        self._data[key] = (list(xs[ok]), list(ys[ok]))
        self._curves[key].setData(xs[ok], ys[ok])

    def set_history(self, history: dict) -> None:
        """``set_losses`` for every existing curve (an empty curve where ``history`` has no entry)."""
        for key in list(self._curves):
            self.set_losses(key, history.get(key, []))

    def clear_data(self) -> None:
        """Empty every curve (the curves and their legend entries stay)."""
        for key, c in self._curves.items():
            self._data[key] = ([], [])
            c.setData([], [])

    def remove(self, key: str) -> None:
        c = self._curves.pop(key, None)
        self._data.pop(key, None)
        if c is not None:
            self.getPlotItem().removeItem(c)
            legend = self.getPlotItem().legend
            if legend is not None:
                legend.removeItem(c)

    def keys(self) -> list[str]:
        return list(self._curves)

    def points(self, key: str) -> int:
        return len(self._data.get(key, ([], []))[0])


def shade_region(plot: pg.PlotWidget | pg.PlotItem, start: float, end: float,
                 rgba=(255, 170, 0, 40), label: str | None = None) -> pg.LinearRegionItem:
    """A fixed shaded vertical band ``[start, end]`` (x units of the plot)."""
    region = pg.LinearRegionItem(values=(start, end), movable=False, brush=pg.mkBrush(*rgba))
    region.setZValue(-10)
    for line in region.lines:
        line.setPen(pg.mkPen(QColor(*rgba[:3], 120)))
    plot.addItem(region)
    if label:
        text = pg.TextItem(label, color=QColor(*rgba[:3]), anchor=(0, 0))
        text.setPos(start, 0)
        region._label = text
    return region


def _item_for_export(figure):
    if isinstance(figure, pg.PlotWidget):
        return figure.getPlotItem()
    if isinstance(figure, pg.GraphicsLayoutWidget):
        return figure.scene()
    return figure


def export_figure(figure, path: str | Path, width: int | None = None) -> Path:
    """Write ``figure`` to ``path``: ``.png`` (ImageExporter) or ``.svg`` (SVGExporter).

    ``width``: PNG width in pixels (default: the widget's size, at least 800). Raises
    ``ValueError`` for other suffixes; the file is written to a temporary name and renamed.
    """
    from pyqtgraph import exporters

    path = Path(path)
    suffix = path.suffix.lower()
    item = _item_for_export(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{suffix}")
    if suffix == ".png":
        exporter = exporters.ImageExporter(item)
        params = exporter.parameters()
        target = width or max(800, int(params["width"]))
        if int(params["width"]) != target:
            params["width"] = target  # height follows the aspect ratio
        exporter.export(str(tmp))
    elif suffix == ".svg":
        try:
            exporters.SVGExporter(item).export(str(tmp))
        except ValueError:
            # pyqtgraph 0.14's SVG post-processing cannot parse the path syntax of newer Qt SVG
            # generators; render the same scene straight into a QSvgGenerator instead
            tmp.unlink(missing_ok=True)
            _render_svg(item, tmp, path.stem)
    else:
        raise ValueError(f"{path}: figures export as .png or .svg, not {suffix or 'no suffix'!r}")
    if not tmp.exists():
        raise OSError(f"{path}: the exporter wrote nothing")
    tmp.replace(path)
    return path


def _render_svg(item, path: Path, title: str = "") -> None:
    """Vector SVG of a plot item (or scene) through ``QSvgGenerator`` (no post-processing)."""
    from PySide6.QtCore import QRectF, QSize
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator

    if isinstance(item, pg.GraphicsScene) or not hasattr(item, "sceneBoundingRect"):
        scene = item
        source = scene.itemsBoundingRect()
    else:
        scene = item.scene()
        source = item.sceneBoundingRect()
    w, h = max(1, int(source.width())), max(1, int(source.height()))
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(QSize(w, h))
    gen.setViewBox(QRectF(0, 0, w, h))
    gen.setTitle(title or path.stem)
    painter = QPainter(gen)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        scene.render(painter, QRectF(0, 0, w, h), source)
    finally:
        painter.end()


def export_png_svg(figure, stem: str | Path) -> list[Path]:
    """Write ``<stem>.png`` and ``<stem>.svg``; returns both paths."""
    stem = Path(stem)
    return [export_figure(figure, stem.with_suffix(".png")), export_figure(figure, stem.with_suffix(".svg"))]
