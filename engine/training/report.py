"""Tables and figures of sweep results, and the paper's reproductions (``symo-pendulum``, ``symo-cartpole``,
``symo-acrobot``).

The figure follows the paper's Fig. 3/4: train, test, integration, energy and inertia MSE
against the number of training trajectories N, one line per model, log scales.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from engine.io import atomic_write_bytes, atomic_write_text, csv_text, finite_or_none, write_json
from engine.training.metrics import METRIC_NAMES
from engine.training.sweep import ROW_KEYS, SweepConfig, run_sweep

__all__ = [
    "rows_to_csv",
    "write_compare_report",
    "write_table",
    "plot_rows",
    "REPRODUCTIONS",
    "PAPER_INTEGRATION_MSE",
    "PAPER_METRIC",
    "reproduce",
    "compare_with_paper",
]

# The long-term figure the paper's repository computes per system (Experiments_*/train.py).
PAPER_METRIC = {
    "pendulum": "integration_mse",
    "cartpole": "integration_mse_state",
    "acrobot": "integration_mse_state",
}

# Published long-term integration MSE (METHODS section 2), N = 8, 16, 32, 64, 128. None for the
# acrobot: its comparison is empty.
PAPER_INTEGRATION_MSE = {
    "pendulum": {
        "symo": [0.023, 0.096, 0.0034, 0.0091, 0.028],
        "e2e-symo": [0.023, 0.030, 0.0039, 0.024, 0.028],
    },
    "cartpole": {
        "node-rk4": [307, 75, 46, 9.9, 0.54],
        "lnode-rk4": [14, 20, 0.18, 0.083, 0.11],
        "symo": [1.5, 0.39, 0.28, 0.23, 0.18],
        "e2e-symo": [18, 0.14, 0.087, 0.091, 0.10],
    },
}

REPRODUCTIONS = {"symo-pendulum": "pendulum", "symo-cartpole": "cartpole", "symo-acrobot": "acrobot"}


def rows_to_csv(rows: list[dict], columns: list[str] | None = None, nan: str = "nan") -> str:
    """A table of result rows as CSV text (the one CSV writer of sweeps and compare tables).

    Nested per-signal dicts become ``<key>:<signal>`` columns, lists are left out; ``columns``
    (default: the compare table's :data:`~engine.training.evaluation.METRIC_COLUMNS`, then every
    other key in order of appearance) fixes the order. None is an empty cell, a non-finite float
    the text ``nan`` (so a diverged model and a missing metric stay apart).
    """
    from engine.training.evaluation import METRIC_COLUMNS

    flat = []
    for r in rows:
        f = {}
        for k, v in r.items():
            if isinstance(v, dict):
                for s, sv in v.items():
                    f[f"{k}:{s}"] = sv
            elif not isinstance(v, list):
                f[k] = v
        flat.append(f)
    if columns is None:
        columns = list(METRIC_COLUMNS)
        for f in flat:
            columns += [k for k in f if k not in columns]
    return csv_text(flat, columns, nan)


def write_table(rows: list[dict], out_dir: str | Path, stem: str = "results") -> tuple[Path, Path]:
    """A sweep's ``<stem>.csv`` and ``<stem>.json`` (the sweep's row keys; NaN as empty cell / null)."""
    out = Path(out_dir)
    keys = list(ROW_KEYS) + sorted({k for r in rows for k in r} - set(ROW_KEYS))
    csv_path = atomic_write_text(out / f"{stem}.csv", rows_to_csv(rows, keys, nan=""))
    json_path = write_json(out / f"{stem}.json", [{k: finite_or_none(r.get(k)) for k in keys} for r in rows])
    return csv_path, json_path


def write_compare_report(
    directory, rows: list[dict], info: dict | None = None, stem: str = "compare"
) -> dict:
    """A compare table's ``<stem>.csv`` and ``<stem>.json`` (rows + ``info``) under ``directory``."""
    directory = Path(directory)
    csv_path = atomic_write_text(directory / f"{stem}.csv", rows_to_csv(rows))
    json_path = write_json(directory / f"{stem}.json", {"rows": finite_or_none(rows),
                                                         "info": finite_or_none(info or {})})
    return {"csv": csv_path, "json": json_path}


def plot_rows(rows: list[dict], path: str | Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(20, 4), dpi=100)
    axes = fig.subplots(1, len(METRIC_NAMES))
    models = list(dict.fromkeys(r["model"] for r in rows))
    labels = {"train_mse": "train MSE", "test_mse": "test MSE", "integration_mse": "integration MSE",
              "integration_mse_state": "integration MSE (state)",
              "energy_mse": "energy MSE", "inertia_mse": "inertia MSE"}
    for ax, metric in zip(axes, METRIC_NAMES):
        for mi, m in enumerate(models):
            pts: dict = {}
            for r in rows:
                v = finite_or_none(r.get(metric))
                if r["model"] == m and v is not None and v > 0:
                    pts.setdefault(r["trajectories"], []).append(v)
            if pts:
                ns = sorted(pts)
                ax.plot(ns, [sum(pts[n]) / len(pts[n]) for n in ns], marker="o", label=m, color=f"C{mi % 10}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("training trajectories N")
        ax.set_title(labels[metric])
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return atomic_write_bytes(path, buf.getvalue())


def compare_with_paper(rows: list[dict], system: str) -> list[dict]:
    """Our integration MSE beside the published one, where the paper gives it (else no rows).

    ``metric`` names the figure compared, the one the paper's repository computes for that
    system: the angle alone for the pendulum (``integration_mse``), the whole state for the
    cartpole and the acrobot (``integration_mse_state``, Experiments_{cartpole,acrobot}/train.py).
    """
    ref = PAPER_INTEGRATION_MSE.get(system, {})
    metric = PAPER_METRIC.get(system, "integration_mse")
    ns = (8, 16, 32, 64, 128)
    out = []
    for r in rows:
        paper = ref.get(r["model"])
        if paper and r["trajectories"] in ns:
            out.append({"model": r["model"], "trajectories": r["trajectories"], "seed": r["seed"],
                        "metric": metric, "integration_mse": finite_or_none(r.get(metric)),
                        "paper_integration_mse": paper[ns.index(r["trajectories"])]})
    return out


def reproduce(name: str, out_dir: str | Path, epochs: int = 2000, seeds=(0,), executor=None, ctx=None,
              trajectories=(8, 16, 32, 64, 128), models=None, data_path=None, device: str = "cpu") -> dict:
    """Run the paper's protocol for ``name`` and write results.csv/json, comparison.json and figure.png."""
    try:
        system = REPRODUCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown reproduction {name!r}; choose one of {', '.join(REPRODUCTIONS)}") from None
    chosen: dict[str, Any] = {"models": tuple(models)} if models else {}
    cfg = SweepConfig(system=system, epochs=epochs, seeds=tuple(seeds), trajectories=tuple(trajectories),
                      device=device, **chosen)
    rows = run_sweep(cfg, out_dir, executor, ctx, data_path=data_path)
    out = Path(out_dir)
    csv_path, json_path = write_table(rows, out)
    comparison = compare_with_paper(rows, system)
    write_json(out / "comparison.json", comparison)
    fig = plot_rows(rows, out / "figure.png", f"{name}: {epochs} epochs")
    return {"rows": rows, "comparison": comparison, "files": [str(csv_path), str(json_path), str(fig),
                                                                str(out / "comparison.json")]}
