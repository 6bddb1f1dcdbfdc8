"""A summary of a log for ``logs inspect`` and the GUI: columns, rows, rate, problems."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from engine.logs.episodes import episode_column, episode_rows
from engine.logs.errors import LogError
from engine.logs.reader import ReadOptions, read_log
from engine.logs.table import LogTable
from engine.logs.units import unit_factor
from engine.logs.validate import find_problems, guess_time_column, sample_rate, time_unit_from_name

__all__ = ["inspect_log", "inspect_table"]


def _num(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _median(values) -> float | None:
    finite = [v for v in values if v is not None]
    return float(np.median(finite)) if finite else None


def inspect_table(table: LogTable, time_column: str | None = None) -> dict:
    """Summary dict: ``file, format, rows, columns [{name, min, max, mean, missing}],
    time_column, rate_hz, duration, episode_column, episodes [{episode, rows, duration, rate_hz}],
    notes, problems [{kind, message, column, line, row}]``.

    The time unit is guessed from the column's name (``time_ms`` is in ms, else seconds);
    ``rate_hz`` is the median sample rate and ``duration`` is in seconds. In a log of several
    episodes (:mod:`engine.logs.episodes`) ``episodes`` lists each one, ``duration`` is their
    sum and time is checked within each episode; otherwise ``episodes`` is empty.
    """
    time_column = time_column or guess_time_column(table)
    cols = []
    for name in table.columns:
        v = table.data[name]
        finite = v[np.isfinite(v)]
        cols.append({"name": name, "min": _num(finite.min()) if finite.size else None,
                     "max": _num(finite.max()) if finite.size else None,
                     "mean": _num(finite.mean()) if finite.size else None,
                     "missing": int(v.size - finite.size)})
    rate = duration = time_unit = None
    try:
        groups = episode_rows(table)
    except LogError:
        groups = {}      # rows without an episode number: listed among the problems
    runs = list(groups.values()) or [np.arange(table.n_rows)]
    per_episode = []
    if time_column is not None:
        time_unit = time_unit_from_name(time_column)
        t = table.data[time_column] * unit_factor(time_unit)
        spans = []
        for episode, rows in zip(groups or [None], runs):
            finite = t[rows][np.isfinite(t[rows])]
            span = float(finite.max() - finite.min()) if finite.size > 1 else None
            spans.append(span)
            if episode is not None:
                per_episode.append({"episode": episode, "rows": int(rows.size), "duration": span,
                                    "rate_hz": sample_rate(finite)})
        rate = sample_rate(t) if not groups else _median([e["rate_hz"] for e in per_episode])
        duration = None if any(s is None for s in spans) else float(sum(s for s in spans if s is not None))
    elif groups:
        per_episode = [{"episode": e, "rows": int(rows.size), "duration": None, "rate_hz": None}
                       for e, rows in groups.items()]
    problems = find_problems(table, time_column)
    return {
        "file": table.source,
        "format": table.format,
        "ok": not problems,
        "rows": table.n_rows,
        "columns": cols,
        "time_column": time_column,
        "time_unit": time_unit,
        "rate_hz": rate,
        "duration": duration,
        "sparse": table.sparse,
        "episode_column": episode_column(table) if groups else None,
        "episodes": per_episode,
        "notes": list(table.notes),
        "problems": [p.as_dict() for p in problems],
    }


def inspect_log(path: str | os.PathLike, ctx=None, options: ReadOptions | None = None,
                time_column: str | None = None) -> dict:
    """Read and summarise ``path``; an unreadable file gives ``ok: false`` and its error as the
    one problem (never raises LogError)."""
    try:
        table = read_log(path, ctx, options)
    except LogError as exc:
        return {
            "file": str(Path(path)),
            "format": None,
            "ok": False,
            "rows": 0,
            "columns": [],
            "time_column": None,
            "time_unit": None,
            "rate_hz": None,
            "duration": None,
            "sparse": False,
            "episode_column": None,
            "episodes": [],
            "notes": [],
            "problems": [
                {
                    "kind": "unreadable",
                    "message": str(exc),
                    "column": exc.column,
                    "line": exc.line,
                    "row": None,
                }
            ],
        }
    if time_column is not None and time_column not in table.data:
        summary = inspect_table(table)
        summary["problems"].insert(0, {"kind": "missing", "message": f"no column {time_column!r}",
                                       "column": time_column, "line": None, "row": None})
        summary["ok"] = False
        return summary
    return inspect_table(table, time_column)
