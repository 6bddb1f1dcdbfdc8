"""The paper's appendix B ablations: the effort weight lambda and the period T, with figures.

``SweepJob(design, effort_weights, periods, out)`` learns one mode per lambda (at the design's
period) and one per period (at the design's lambda), writes ``sweep.json`` and the PNG
figures ``effort_weight.png`` and ``period.png`` (squared control effort over time,
configuration paths, and the summary numbers) into ``out``, and returns one row per run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.eigenmodes.config import DesignConfig
from engine.eigenmodes.jobs import learn_summary
from engine.eigenmodes.train import learn_mode
from engine.io import write_json
from engine.jobs import JobContext, NullJobContext, ProgressSpan

__all__ = ["SweepJob", "plot_sweep"]


class SweepJob:
    def __init__(self, design: DesignConfig, effort_weights, periods, out: Path):
        self.design = DesignConfig.from_dict(design.to_dict())
        self.effort_weights = [float(v) for v in effort_weights]
        self.periods = [float(v) for v in periods]
        self.out = Path(out)

    def _runs(self):
        for lam in self.effort_weights:
            d = DesignConfig.from_dict(self.design.to_dict())
            d.weights.effort_weight = lam
            yield "effort_weight", lam, d
        for T in self.periods:
            d = DesignConfig.from_dict(self.design.to_dict())
            d.task.period = T
            yield "period", T, d

    def __call__(self, ctx: JobContext | None = None):
        ctx = ctx or NullJobContext()
        runs = list(self._runs())
        rows: list[dict] = []
        modes: dict[str, list] = {"effort_weight": [], "period": []}
        for i, (kind, value, d) in enumerate(runs):
            sub = ProgressSpan(ctx, i / len(runs), (i + 1) / len(runs), f"{kind}={value:g}")
            mode = learn_mode(d, sub)
            rows.append({"sweep": kind, "value": value, **learn_summary(mode)})
            modes[kind].append((value, mode))
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / "sweep.json", {"design": self.design.to_dict(), "runs": rows})
        for kind, entries in modes.items():
            if entries:
                plot_sweep(entries, kind, self.out / f"{kind}.png")
        return rows


def plot_sweep(entries, kind: str, path: Path) -> Path:
    """One figure per sweep: |u|^2 over t/T, configuration paths, control effort per value."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    label = {"effort_weight": "lambda", "period": "T"}[kind]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    values, efforts = [], []
    for value, mode in entries:
        tr = mode.trajectory
        axes[0].plot(tr["t"] / mode.period, np.sum(tr["u"] ** 2, axis=-1), label=f"{label}={value:g}")
        axes[1].plot(tr["q"][:, 0], tr["q"][:, 1], label=f"{label}={value:g}")
        values.append(value)
        efforts.append(mode.checks["control_effort"])
    axes[0].set_xlabel("t / T")
    axes[0].set_ylabel("|u|^2 (N^2 m^2)")
    axes[0].set_title("squared control effort")
    axes[0].legend(fontsize=7)
    axes[1].set_xlabel("q1 (rad)")
    axes[1].set_ylabel("q2 (rad)")
    axes[1].set_title("configuration paths")
    axes[2].plot(values, efforts, "o-")
    axes[2].set_xlabel(label)
    axes[2].set_ylabel("int |u|^2 dt")
    axes[2].set_title("control effort")
    if kind == "effort_weight":
        axes[2].set_xscale("log")
        axes[2].set_yscale("log")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
