"""The per-joint torque residual plot of a comparison on a robot's log: for each joint, one bar per
model that gives torques (its validation torque RMSE, N m) beside a grey bar of the log's torque
noise level on that joint, so a model at the noise has explained everything it can."""

from __future__ import annotations

import pyqtgraph as pg

from app.widgets.plots import color

__all__ = ["draw_torque_bars", "torque_runs"]

NOISE_COLOR = "#8a8f98"


def torque_runs(runs: list) -> list:
    """The runs whose rows give per-joint torque RMSEs."""
    return [r for r in runs if r.row.get("torque_rmse_per_joint")]


def draw_torque_bars(plot, runs: list, joint_names: list[str] | None = None) -> int:
    """Draw the bars into ``plot`` (a pyqtgraph PlotWidget); returns how many models were drawn."""
    runs = torque_runs(runs)
    if not runs:
        return 0
    n = max(len(r.row["torque_rmse_per_joint"]) for r in runs)
    noise = next((r.row.get("noise_level_per_joint") for r in runs if r.row.get("noise_level_per_joint")), None)
    groups = len(runs) + (1 if noise else 0)
    width = 0.8 / groups
    item = plot.getPlotItem()
    for k, run in enumerate(runs):
        values = list(run.row["torque_rmse_per_joint"])
        x = [j - 0.4 + (k + 0.5) * width for j in range(len(values))]
        bars = pg.BarGraphItem(x=x, height=values, width=width * 0.9, brush=color(run.index), name=run.name)
        item.addItem(bars)          # named: the plot's legend lists it once
    if noise:
        x = [j - 0.4 + (groups - 0.5) * width for j in range(len(noise))]
        bars = pg.BarGraphItem(x=x, height=list(noise), width=width * 0.9, brush=NOISE_COLOR, name="noise level")
        item.addItem(bars)
    names = list(joint_names or [])[:n] + [f"q[{j}]" for j in range(len(joint_names or []), n)]
    item.getAxis("bottom").setTicks([[(j, names[j]) for j in range(n)], []])
    return len(runs)
