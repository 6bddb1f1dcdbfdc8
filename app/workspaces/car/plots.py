"""The Car planner's plots under the canvas: the optimiser's cost per iteration, the plan's
throttle and steering per step (the plan layer), and a drive's speed profile (the track layer)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QWidget

from app.widgets.plots import make_plot
from app.workspaces.car.plan_panel import PLAN_COLOURS
from app.workspaces.car.state import PlanResult

__all__ = ["CarPlots"]

# the control plots' curves: the plan and, when there is one, another model's plan
CONTROL_CURVES = (("plan", "#ff8c00"), ("other model", "#9467bd"))


class CarPlots(QWidget):
    """A row of plots; :meth:`set_layer` shows those of ``"plan"`` or ``"track"``."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.cost_plot = make_plot("Cost", "iteration", "", log_y=True, legend=False)
        self.cost_curves = [self.cost_plot.plot(pen=pg.mkPen(c, width=2)) for c in PLAN_COLOURS[:2]]
        self.cost_plot.setYRange(0, 3, padding=0)  # decades 1..1000 until there is data (log axis)
        self.throttle_plot = make_plot("Throttle", "step", "m/s²")
        self.steer_plot = make_plot("Steering", "step", "rad")
        self.speed_plot = make_plot("Speed profile", "s", "m/s", legend=False)
        self.throttle_curves = {k: self.throttle_plot.plot(pen=pg.mkPen(c, width=2), name=k)
                                for k, c in CONTROL_CURVES}
        self.steer_curves = {k: self.steer_plot.plot(pen=pg.mkPen(c, width=2), name=k)
                             for k, c in CONTROL_CURVES}
        self.speed_curve = self.speed_plot.plot(pen=pg.mkPen("#2ca02c", width=2))
        for w in (self.cost_plot, self.throttle_plot, self.steer_plot, self.speed_plot):
            w.setMinimumHeight(150)
            row.addWidget(w)
        # the plots of each layer: a plan's cost and controls, a drive's speed profile
        self.layer_plots = {"plan": (self.cost_plot, self.throttle_plot, self.steer_plot),
                            "track": (self.speed_plot,)}
        self.speed_plot.setVisible(False)

    def set_layer(self, layer: str) -> None:
        for key, plots in self.layer_plots.items():
            for plot in plots:
                plot.setVisible(key == layer)

    # -- the plan layer --------------------------------------------------------------------
    def show_live_cost(self, variant: int, costs) -> None:
        """An optimisation's cost so far (``variant`` 0: the main plan, 1: the compared one)."""
        curve = self.cost_curves[min(variant, 1)]
        curve.setData(np.arange(1, len(costs) + 1), np.maximum(np.asarray(costs), 1e-12))

    def clear_plan(self) -> None:
        for c in (*self.cost_curves, *self.throttle_curves.values(), *self.steer_curves.values()):
            c.setData([], [])
        self.cost_plot.getPlotItem().enableAutoRange()
        self.label_control_plots({})

    def show_result(self, res: PlanResult) -> None:
        """Cost and controls of every variant of ``res`` (two at most), and of its compared model."""
        steps = np.arange(len(res.main.controls))
        keys = ("plan", "other model")
        for k, v in enumerate(res.variants[:2]):
            self.cost_curves[k].setData(np.arange(len(v.costs)), np.maximum(v.costs, 1e-12))
            self.throttle_curves[keys[k]].setData(steps, v.controls[:, 0])
            self.steer_curves[keys[k]].setData(steps, v.controls[:, 1])
        if res.compared:
            a, b = res.variants[0].label, res.variants[1].label
            names = {"plan": f"{a} plan", "other model": f"{b} plan"}
        elif res.compare is not None:
            C = res.compare
            self.cost_curves[1].setData([], [])
            self.throttle_curves["other model"].setData(steps, C.controls[:, 0])
            self.steer_curves["other model"].setData(steps, C.controls[:, 1])
            names = {"plan": "plan", "other model": C.model}
        else:
            for item in (self.cost_curves[1], self.throttle_curves["other model"],
                         self.steer_curves["other model"]):
                item.setData([], [])
            names = {"plan": "plan", "other model": "other model"}
        self.label_control_plots(names)

    def label_control_plots(self, names: dict[str, str]) -> None:
        """The throttle and steering legends list only the curves drawn ("other model" only
        when there is one), under ``names``."""
        for plot, curves in ((self.throttle_plot, self.throttle_curves), (self.steer_plot, self.steer_curves)):
            legend = plot.getPlotItem().legend
            if legend is None:
                continue
            legend.clear()
            for key, curve in curves.items():
                x, _ = curve.getData()
                if x is not None and len(x):
                    legend.addItem(curve, names[key])
            legend.setVisible(bool(legend.items))

    # -- the track layer -------------------------------------------------------------------
    def show_speed(self, speed) -> None:
        """A drive's speed profile: rows of (time s, speed m/s)."""
        sp = np.asarray(speed, dtype=float).reshape(-1, 2)
        self.speed_curve.setData(sp[:, 0], sp[:, 1])
