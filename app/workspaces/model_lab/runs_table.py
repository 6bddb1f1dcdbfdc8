"""The Qt-free part of the Models panel's runs table: columns, sortable values, filtering, the
config diff of two runs, and the loss curves (smoothed, against epochs, steps or wall time).

The panel (``runs_panel.py``) only lays these out; tests drive these functions directly.
"""

from __future__ import annotations

import math

from app.workspaces.model_lab import lab_jobs
from engine.runs import config_diff, ema

__all__ = [
    "HYPER_COLUMNS",
    "METRIC_COLUMNS",
    "RUN_COLUMNS",
    "TABLE_COLUMNS",
    "X_AXES",
    "cell_text",
    "curve_points",
    "diff_text",
    "format_eta",
    "matches",
    "parse_sizes",
    "run_config",
    "row_values",
    "sort_key",
]

RUN_COLUMNS = ("name", "type", "state", "progress", "ETA", "loss")
# hyperparameters shown as columns (TrainConfig fields), then the final metrics
HYPER_COLUMNS = ("trajectories", "epochs", "learning_rate", "hidden", "layers", "batch_factor", "patience",
                 "factor", "seed")
METRIC_COLUMNS = ("train_mse", "test_mse", "integration_mse")
TABLE_COLUMNS = RUN_COLUMNS + HYPER_COLUMNS + METRIC_COLUMNS
X_AXES = {"epoch": "epoch", "step": "optimiser steps", "wall_time": "wall time (s)"}


def parse_sizes(text: str) -> list[int]:
    """``"8, 16,32"`` -> [8, 16, 32]; ValueError naming the bad entry."""
    out = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise ValueError(f"sweep N: {part!r} is not a whole number") from None
        if n < 1:
            raise ValueError(f"sweep N: {n} must be >= 1")
        out.append(n)
    if not out:
        raise ValueError("sweep N: give sizes such as 8,16,32")
    return out


def format_eta(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    seconds = max(0, round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def row_values(run) -> dict:
    """The table's values of a run, column -> value (numbers stay numbers, for sorting)."""
    tc = run.train_config
    row = run.row or {}
    values = {
        "name": run.name,
        "type": run.model_type,
        "state": run.state + (f": {run.message}" if run.message else ""),
        "progress": 100 * run.fraction,
        "ETA": run.eta if run.state == "running" else None,
        "loss": run.loss,
    }
    for name in HYPER_COLUMNS:
        values[name] = getattr(tc, name, None)
    for name in METRIC_COLUMNS:
        v = row.get(name)
        values[name] = v if isinstance(v, (int, float)) else None
    return values


def cell_text(column: str, value) -> str:
    """How the table shows a value."""
    if column == "progress":
        return f"{value:.0f}%"
    if column == "ETA":
        return format_eta(value)
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else "diverged"
    return str(value)


def sort_key(value) -> tuple:
    """Numbers by value (NaN after every number), then text; empty cells last."""
    if value is None:
        return (3, 0.0, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, math.inf, "") if math.isnan(value) else (0, float(value), "")
    return (2, 0.0, str(value).lower())


def matches(values: dict, text: str) -> bool:
    """The filter: every space-separated term must hold. ``key=value`` compares one column
    (numbers by value), ``key<x`` / ``key>x`` compare numerically, a bare word is a substring of
    any cell."""
    for term in text.split():
        op = next((o for o in ("<=", ">=", "=", "<", ">") if o in term), None)
        if op is None:
            if not any(term.lower() in cell_text(k, v).lower() for k, v in values.items()):
                return False
            continue
        key, _, want = term.partition(op)
        if key not in values:
            return False
        have = values[key]
        try:
            w, h = float(want), float(have)
        except (TypeError, ValueError):
            if op != "=" or str(have).lower() != want.lower():
                return False
            continue
        ok = {"=": math.isclose(h, w, rel_tol=1e-9), "<": h < w, ">": h > w, "<=": h <= w, ">=": h >= w}[op]
        if not ok:
            return False
    return True


def run_config(run) -> dict:
    """A run's full configuration (type, training settings, model settings), for the diff."""
    spec = {f: getattr(run.spec, f) for f in lab_jobs.SPEC_FIELDS} if run.spec is not None else {}
    return {"type": run.model_type, "train": run.train_config.to_dict(), "spec": spec}


def diff_text(a, b) -> str:
    """What differs between two runs' configurations, one setting a line."""
    diff = config_diff(run_config(a), run_config(b))
    if not diff:
        return f"{a.name} and {b.name} have the same configuration."
    lines = [f"{a.name}  vs  {b.name}:"]
    lines += [f"  {key}: {cell_text(key, va)}  ->  {cell_text(key, vb)}" for key, va, vb in diff]
    return "\n".join(lines)


def curve_points(history: list[dict], x_axis: str = "epoch", smoothing: float = 0.0) -> tuple[list, list]:
    """``(xs, ys)`` of a run's loss curve: ``x_axis`` one of :data:`X_AXES`, the loss smoothed
    by an exponential moving average of weight ``smoothing`` (0: raw; TensorBoard's slider).
    Points without that x value or with a non-positive or non-finite loss are left out."""
    if x_axis not in X_AXES:
        raise ValueError(f"x axis {x_axis!r}: choose one of {', '.join(X_AXES)}")
    rows = [r for r in history if r.get(x_axis) is not None and r.get("loss") is not None]
    ys = ema([float(r["loss"]) for r in rows], smoothing)
    xs = [float(r[x_axis]) for r in rows]
    keep = [i for i, y in enumerate(ys) if y is not None and math.isfinite(y) and y > 0]
    return [xs[i] for i in keep], [ys[i] for i in keep]
