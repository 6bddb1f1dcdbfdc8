"""Result plots of the eigenmode workspace (pyqtgraph, 2D)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import Qt

__all__ = ["PotentialMaps", "StabilisePlots", "TimePlot", "potential_grid"]

def potential_grid(fn, lo=-np.pi, hi=np.pi, n=101):
    """``(values (n, n), extent)``: ``fn(q (n*n, 2))`` on a grid, rows over q1, columns over q2."""
    q1, q2 = np.meshgrid(np.linspace(lo, hi, n), np.linspace(lo, hi, n), indexing="ij")
    q = torch.tensor(np.stack([q1.ravel(), q2.ravel()], -1), dtype=torch.float64)
    with torch.no_grad():
        v = fn(q).reshape(n, n).numpy()
    return v, (lo, hi)


class PotentialMaps(pg.GraphicsLayoutWidget):
    """Heatmaps over (q1, q2): the learned V_theta and the plant's V, the orbit drawn on both."""

    def __init__(self, parent=None):
        super().__init__(parent=parent)
        self.setBackground("w")
        self.images, self.orbits, self.plots, self.bars = [], [], [], []
        for col, title in enumerate(("learned potential V_theta", "plant potential V")):
            p = self.addPlot(row=0, col=2 * col, title=title)
            p.setLabel("bottom", "q1 (rad)")
            p.setLabel("left", "q2 (rad)")
            p.setAspectLocked(True)
            img = pg.ImageItem()
            p.addItem(img)
            orbit = p.plot(pen=pg.mkPen((255, 255, 255), width=3))
            start = pg.ScatterPlotItem(size=10, brush=(255, 255, 255), pen=pg.mkPen((0, 0, 0)))
            p.addItem(start)
            bar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), interactive=False, width=12)
            bar.setImageItem(img, insert_in=p)
            self.images.append(img)
            self.bars.append(bar)
            self.orbits.append((orbit, start))
            self.plots.append(p)

    def set_maps(self, learned: np.ndarray | None, plant: np.ndarray, extent):
        lo, hi = extent
        for img, bar, plot, data in zip(self.images, self.bars, self.plots, (learned, plant)):
            if data is None:
                img.clear()
                continue
            img.setImage(data, autoLevels=False)
            img.setRect(lo, lo, hi - lo, hi - lo)
            vmin, vmax = float(np.nanmin(data)), float(np.nanmax(data))
            bar.setLevels((vmin, vmax if vmax > vmin else vmin + 1e-9))
            plot.setRange(xRange=(lo, hi), yRange=(lo, hi), padding=0.02)

    def set_orbit(self, q: np.ndarray | None):
        for curve, start in self.orbits:
            if q is None:
                curve.setData([], [])
                start.setData([], [])
            else:
                curve.setData(q[:, 0], q[:, 1])
                start.setData([q[0, 0]], [q[0, 1]])

    def has_data(self) -> bool:
        return self.images[0].image is not None and self.images[0].image.size > 0


class TimePlot(pg.PlotWidget):
    """Named curves over time with a moving cursor."""

    def __init__(self, ylabel: str, names: list[str], xlabel: str = "t (s)", parent=None, colours=None,
                 cursor: bool = True):
        super().__init__(parent=parent)
        for axis in ("bottom", "left"):
            self.getAxis(axis).enableAutoSIPrefix(False)
        self.setBackground("w")
        self.setLabel("bottom", xlabel)
        self.setLabel("left", ylabel)
        self.showGrid(x=True, y=True, alpha=0.2)
        self.addLegend(offset=(-10, 10))
        colours = colours or [(200, 40, 40), (40, 90, 200), (40, 150, 60), (150, 60, 150)]
        self.curves = {n: self.plot(pen=pg.mkPen(c, width=2), name=n) for n, c in zip(names, colours)}
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen((120, 120, 120), style=Qt.PenStyle.DashLine))
        if cursor:
            self.addItem(self.cursor)

    def set_curve(self, name: str, x, y):
        self.curves[name].setData(np.asarray(x), np.asarray(y))

    def set_cursor(self, t: float):
        self.cursor.setPos(t)


class StabilisePlots(pg.GraphicsLayoutWidget):
    """Energy and distances to the orbit over time, and the cycle multipliers in the complex plane."""

    def __init__(self, parent=None):
        super().__init__(parent=parent)
        self.setBackground("w")
        self.energy_plot = self.addPlot(row=0, col=0, title="closed-loop energy H_cl")
        self.energy_plot.setLabel("bottom", "t (s)")
        self.energy_plot.setLabel("left", "J")
        self.energy = self.energy_plot.plot(pen=pg.mkPen((40, 90, 200), width=2))
        self.energy_target = pg.InfiniteLine(angle=0, pen=pg.mkPen((200, 40, 40), style=Qt.PenStyle.DashLine))
        self.energy_plot.addItem(self.energy_target)
        self.dist_plot = self.addPlot(row=1, col=0, title="distance to the orbit")
        self.dist_plot.setLogMode(y=True)
        self.dist_plot.setLabel("bottom", "t (s)")
        self.dist_plot.addLegend(offset=(-10, 10))
        self.dist_q = self.dist_plot.plot(pen=pg.mkPen((200, 40, 40), width=2), name="|q - q_d(s*)|")
        self.dist_p = self.dist_plot.plot(pen=pg.mkPen((40, 150, 60), width=2), name="|p - p_d(s*)|")
        self.mult_plot = self.addPlot(row=0, col=1, rowspan=2, title="cycle multipliers")
        self.mult_plot.setAspectLocked(True)
        self.mult_plot.setLabel("bottom", "Re")
        self.mult_plot.setLabel("left", "Im")
        th = np.linspace(0, 2 * np.pi, 181)
        self.mult_plot.plot(np.cos(th), np.sin(th), pen=pg.mkPen((120, 120, 120), width=1))
        self.mult_plot.addItem(pg.InfiniteLine(angle=0, pen=pg.mkPen((210, 210, 210))))
        self.mult_plot.addItem(pg.InfiniteLine(angle=90, pen=pg.mkPen((210, 210, 210))))
        self.mults = pg.ScatterPlotItem(size=12, brush=(40, 90, 200), pen=pg.mkPen((0, 0, 0)))
        self.trivial = pg.ScatterPlotItem(size=12, symbol="s", brush=(200, 200, 200), pen=pg.mkPen((0, 0, 0)))
        self.mult_plot.addItem(self.mults)
        self.mult_plot.addItem(self.trivial)
        self.mult_plot.setXRange(-1.1, 1.1)
        self.mult_plot.setYRange(-1.1, 1.1)
        self.ci.layout.setColumnStretchFactor(0, 3)
        self.ci.layout.setColumnStretchFactor(1, 2)

    def set_result(self, result):
        """Show a StabiliseResult; None empties the plots."""
        if result is None:
            for item in (self.energy, self.dist_q, self.dist_p, self.mults, self.trivial):
                item.setData([], [])
            return
        self.energy.setData(result.t, result.energy)
        self.energy_target.setPos(result.energy_target)
        eps = 1e-12
        self.dist_q.setData(result.t, np.maximum(result.position_distance, eps))
        self.dist_p.setData(result.t, np.maximum(result.momentum_distance, eps))
        if result.cycle:
            nt = result.cycle["nontrivial"]
            tv = result.cycle["multipliers"][result.cycle["trivial_index"]]
            self.mults.setData(nt.real, nt.imag)
            self.trivial.setData([tv.real], [tv.imag])
        else:
            self.mults.setData([], [])
            self.trivial.setData([], [])
