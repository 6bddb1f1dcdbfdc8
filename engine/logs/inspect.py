"""A summary of a log for ``logs inspect`` and the GUI: columns, rows, rate, problems."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from engine.logs.errors import LogError
from engine.logs.reader import ReadOptions, read_log
from engine.logs.table import LogTable
from engine.logs.units import unit_factor
from engine.logs.validate import find_problems, guess_time_column, sample_rate, time_unit_from_name

__all__ = ["inspect_log", "inspect_table"]


def _num(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def inspect_table(table: LogTable, time_column: str | None = None) -> dict:
    """Summary dict: ``file, format, rows, columns [{name, min, max, mean, missing}],
    time_column, rate_hz, duration, notes, problems [{kind, message, column, line, row}]``.

    The time unit is guessed from the column's name (``time_ms`` is in ms, else seconds);
    ``rate_hz`` is the median sample rate and ``duration`` is in seconds.
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
    if time_column is not None:
        time_unit = time_unit_from_name(time_column)
        t = table.data[time_column] * unit_factor(time_unit)
        rate = sample_rate(t)
        finite = t[np.isfinite(t)]
        duration = float(finite.max() - finite.min()) if finite.size > 1 else None
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
