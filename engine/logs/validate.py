"""Checks on loaded logs, with messages that name file, line and column.

:func:`check_time` and :func:`check_no_gaps` raise :class:`LogError` on the first problem
(used by preparation); :func:`find_problems` lists every problem without raising (used by
``logs inspect`` and the GUI's problem list).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import cast

import numpy as np

from engine.logs.episodes import episode_rows
from engine.logs.errors import LogError
from engine.logs.table import LogTable

__all__ = [
    "Problem",
    "check_no_gaps",
    "check_time",
    "check_time_gaps",
    "time_gaps",
    "find_problems",
    "guess_time_column",
    "nan_runs",
    "sample_rate",
    "time_unit_from_name",
]

TIME_NAMES = ("t", "time", "timestamp", "stamp", "time_s", "t_s", "time_ms", "t_ms", "sec", "seconds")


@dataclass
class Problem:
    """One problem found in a log: ``kind`` (``time``, ``gap``, ``nan``, ``empty``, ``episode``)."""

    kind: str
    message: str
    column: str | None = None
    line: int | None = None
    row: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def nan_runs(values: np.ndarray) -> list[tuple[int, int]]:
    """Runs of non-finite values in a 1-D array as ``(first_row, last_row)`` (inclusive)."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return []
    edges = np.diff(np.concatenate([[0], bad.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) - 1
    return list(zip(starts.tolist(), ends.tolist()))


def _where(table: LogTable, row: int) -> str:
    line = table.line_of(row)
    return f"line {line}" if line is not None else f"row {row + 1}"


def _span(table: LogTable, a: int, b: int) -> str:
    la, lb = table.line_of(a), table.line_of(b)
    if la is not None:
        return f"line {la}" if a == b else f"lines {la} to {lb}"
    return f"row {a + 1}" if a == b else f"rows {a + 1} to {b + 1}"


def check_time(table: LogTable, t: np.ndarray, column: str | None, rows: np.ndarray | None = None) -> None:
    """Raise LogError unless ``t`` is finite and strictly increasing (names line and column).

    ``rows`` maps entries of ``t`` to table rows (default: entry i is row i).
    """
    rows = np.arange(len(t)) if rows is None else rows
    if len(t) < 2:
        raise LogError(f"need at least 2 samples, found {len(t)}", path=table.source or None, column=column)
    finite = np.isfinite(t)
    if not finite.all():
        i = int(np.argmin(finite))
        raise LogError("missing or non-finite time", path=table.source or None,
                       line=table.line_of(int(rows[i])), column=column)
    steps = np.diff(t)
    bad = np.flatnonzero(steps <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        what = "repeats" if steps[i - 1] == 0 else "goes back"
        raise LogError(f"time is not increasing: it {what} from {t[i - 1]:.9g} to {t[i]:.9g} "
                       f"({bad.size} such step(s) in all)", path=table.source or None,
                       line=table.line_of(int(rows[i])), column=column)


def time_gaps(t: np.ndarray, factor: float = 100.0) -> tuple[np.ndarray, float | None]:
    """Indices ``i`` where the step ``t[i+1] - t[i]`` exceeds ``factor`` x the median positive
    step (finite entries of ``t`` only, in order), and that median (None if too few steps)."""
    t = np.asarray(t, dtype=np.float64)
    steps = np.diff(t)
    pos = steps[np.isfinite(steps) & (steps > 0)]
    if pos.size < 2:
        return np.zeros(0, dtype=np.int64), None
    med = float(np.median(pos))
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(steps > factor * med)
    return bad, med


def check_time_gaps(table: LogTable, t: np.ndarray, column: str | None, factor: float = 100.0,
                    rows: np.ndarray | None = None) -> None:
    """Raise LogError at the first time step longer than ``factor`` x the median step (a pause,
    a clock jump or a bogus timestamp), naming its line: resampling across it would invent data
    (and, for one timestamp of 1e9 s, allocate terabytes)."""
    rows = np.arange(len(t)) if rows is None else rows
    bad, med = time_gaps(t, factor)
    if not bad.size:
        return
    i = int(bad[0]) + 1
    step = t[i] - t[i - 1]
    more = f" ({bad.size} such gaps in all)" if bad.size > 1 else ""
    raise LogError(
        f"time jumps from {t[i - 1]:.9g} to {t[i]:.9g} s, {step / med:.3g} times the median step "
        f"of {med:.3g} s{more}: fix or remove the line, crop with --t-start/--t-end, or resample "
        "across the gap with --time-gaps keep (or cut it out: --time-gaps split)",
        path=table.source or None,
        line=table.line_of(int(rows[i])),
        column=column,
    )


def check_no_gaps(table: LogTable, columns: list[str]) -> None:
    """Raise LogError for the first column with NaN gaps, saying where the gaps are."""
    for col in columns:
        runs = nan_runs(table.column(col))
        if runs:
            a, b = runs[0]
            more = f" ({len(runs)} gaps, {sum(e - s + 1 for s, e in runs)} missing values in all)" \
                if len(runs) > 1 else ""
            raise LogError(f"NaN gap: {b - a + 1} missing value(s) at {_span(table, a, b)}{more}",
                           path=table.source or None, line=table.line_of(a), column=col)


def guess_time_column(table: LogTable) -> str | None:
    """A column that looks like time: a known name that increases, else the first
    strictly increasing column; None if there is none."""
    lower = {c.lower(): c for c in table.columns}
    for name in TIME_NAMES:
        if name in lower:
            return lower[name]
    for c in table.columns:
        v = table.data[c]
        v = v[np.isfinite(v)]
        if len(v) > 1 and np.all(np.diff(v) > 0):
            return c
    return None


def time_unit_from_name(name: str) -> str:
    """Guess a time column's unit from its name (``time_ms``, ``stamp_us``, ``t [ns]``...); else ``s``."""
    low = name.lower().rstrip("]) ")
    for unit in ("ms", "us", "ns"):
        if low.endswith(unit):
            return unit
    return "s"


def sample_rate(t: np.ndarray) -> float | None:
    """Median samples per time unit of ``t`` (finite, increasing entries), or None."""
    t = t[np.isfinite(t)]
    if len(t) < 2:
        return None
    dt = np.median(np.diff(t))
    return float(1.0 / dt) if dt > 0 else None


def _time_problems(table: LogTable, t: np.ndarray, rows: np.ndarray, column: str, where: str,
                   limit: int) -> list[Problem]:
    """Non-increasing steps and long gaps of ``t`` over table ``rows`` (one run; ``where`` names it)."""
    problems: list[Problem] = []
    rows = rows[np.isfinite(t[rows])]
    steps = np.diff(t[rows])
    for k in np.flatnonzero(steps <= 0)[:limit]:
        r = int(rows[k + 1])
        problems.append(Problem("time", f"time is not increasing{where}: {t[rows[k]]:.9g} then {t[r]:.9g}",
                                column=column, line=table.line_of(r), row=r))
    gaps, med = time_gaps(t[rows])
    for k in gaps[:limit]:
        r = int(rows[k + 1])
        step = t[r] - t[rows[k]]
        problems.append(
            Problem(
                "gap",
                f"time jumps{where} from {t[rows[k]]:.9g} to {t[r]:.9g}, {step / cast(float, med):.3g} "
                f"times the median step of {med:.3g} (a pause or a bogus timestamp?)",
                column=column,
                line=table.line_of(r),
                row=r,
            )
        )
    return problems


def _runs(table: LogTable, problems: list[Problem]) -> dict[str, np.ndarray]:
    """The runs whose time must increase, as ``{" in episode 3": rows}``: each episode of a log
    of several (its clock restarts), each topic of a recording of several (two topics may
    share an instant), else the whole table (``{"": all rows}``)."""
    if table.sparse:
        topics = [c[:-2] for c in table.columns if c.endswith("/t") and c != "t"]
        return {f" on {topic}": np.flatnonzero(np.isfinite(table.data[f"{topic}/t"])) for topic in topics} \
            or {"": np.arange(table.n_rows)}
    try:
        groups = episode_rows(table)
    except LogError as exc:
        problems.append(Problem("episode", exc.reason, column=None if exc.column is None else str(exc.column),
                                line=exc.line))
        groups = {}
    return {f" in episode {e}": rows for e, rows in groups.items()} or {"": np.arange(table.n_rows)}


def find_problems(table: LogTable, time_column: str | None = None, max_per_column: int = 5) -> list[Problem]:
    """Every problem found (never raises): non-increasing time, NaN gaps, empty columns.

    In a log of several episodes (:mod:`engine.logs.episodes`) time is checked within each
    episode: a clock that restarts at an episode's start is not a problem; in a recording of
    several topics, within each topic (two topics' messages may share an instant)."""
    problems: list[Problem] = []
    if table.n_rows == 0:
        return [Problem("empty", "the log has no rows")]
    time_column = time_column or guess_time_column(table)
    if time_column is None:
        problems.append(Problem("time", "no increasing column that could be time; map one, or give a "
                                        "sample period"))
    else:
        runs = _runs(table, problems)
        t = table.column(time_column)
        for where, rows in runs.items():
            found = _time_problems(table, t, rows, time_column, where, max_per_column)
            problems += found[:max(0, max_per_column - sum(p.kind in ("time", "gap") for p in problems))]
    for col in table.columns:
        v = table.data[col]
        finite = np.isfinite(v)
        if not finite.any():
            problems.append(Problem("nan", "the column has no values", column=col))
            continue
        if table.sparse:
            continue  # multi-rate recordings are NaN between their topic's messages
        for a, b in nan_runs(v)[:max_per_column]:
            problems.append(Problem("nan", f"NaN gap: {b - a + 1} missing value(s) at {_span(table, a, b)}",
                                    column=col, line=table.line_of(a), row=a))
    return problems
