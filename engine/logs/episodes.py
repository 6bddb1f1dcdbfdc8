"""Episodes: logs that hold several runs, as robot data sets publish them.

A LeRobot data set's Parquet file has an ``episode_index`` column and a ``timestamp`` that
restarts at 0 in every episode. The episode column is recognised by name, case-insensitively:
``episode_index`` (LeRobot), ``episode`` or ``episode_id`` (the first of these the table has).
Its values are episode numbers; the rows of one episode need not be contiguous, and are kept
in file order.

Each episode is one run: time is checked within it (:mod:`engine.logs.validate`), preparation
resamples it on its own and never lets a training window cross into the next
(:func:`engine.logs.prepare.prepare_log`), and a replay plays one episode at a time.
"""

from __future__ import annotations

import numpy as np

from engine.logs.errors import LogError
from engine.logs.table import LogTable

__all__ = ["EPISODE_COLUMNS", "episode_column", "episode_rows", "episodes", "select_episode"]

EPISODE_COLUMNS = ("episode_index", "episode", "episode_id")


def episode_column(table: LogTable) -> str | None:
    """The table's episode column (see the module doc), or None."""
    lower = {c.lower(): c for c in table.columns}
    return next((lower[n] for n in EPISODE_COLUMNS if n in lower), None)


def episodes(table: LogTable) -> list[int]:
    """The episode numbers in the table, in increasing order (empty without an episode column)."""
    col = episode_column(table)
    if col is None:
        return []
    v = table.data[col]
    return [int(e) for e in np.unique(v[np.isfinite(v)])]


def episode_rows(table: LogTable) -> dict[int, np.ndarray]:
    """``{episode: rows}`` (int64 row indices, file order) for a table with two or more
    episodes; ``{}`` otherwise. Raises LogError when a row has no episode number (NaN), naming
    its row or line."""
    col = episode_column(table)
    have = episodes(table)
    if col is None or len(have) < 2:
        return {}
    values = table.data[col]
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        line = table.line_of(int(bad[0]))
        where = f"line {line}" if line is not None else f"row {int(bad[0]) + 1}"
        raise LogError(f"{bad.size} row(s) have no episode number (the first at {where}); fill them in, "
                       "or choose one episode (--episode K)", path=table.source or None, column=col,
                       line=line)
    return {e: np.flatnonzero(values == e) for e in have}


def select_episode(table: LogTable, episode: int | None) -> LogTable:
    """The rows of one episode (``episode`` None: the table itself, with a note when it holds several)."""
    col = episode_column(table)
    if episode is None:
        if col is not None and len(have := episodes(table)) > 1:
            table.notes.append(f"{len(have)} episodes in column {col!r} ({have[0]} .. {have[-1]}): each is "
                               "prepared as its own run; a replay plays one (--episode K)")
        return table
    if col is None:
        raise LogError("an episode is chosen but the file has no episode column "
                       f"({', '.join(EPISODE_COLUMNS)})", path=table.source or None, column="episode")
    rows = np.flatnonzero(table.data[col] == episode)
    if rows.size == 0:
        have = episodes(table)
        listed = ", ".join(map(str, have[:20])) + (" ..." if len(have) > 20 else "")
        raise LogError(f"no episode {episode}; the file has {len(have)} episode(s): {listed}",
                       path=table.source or None, column=col)
    return LogTable(columns=table.columns, data={c: v[rows] for c, v in table.data.items()},
                    source=table.source, format=table.format,
                    notes=table.notes + [f"episode {episode}: {rows.size} rows"],
                    row_lines=None if table.row_lines is None else table.row_lines[rows], sparse=table.sparse,
                    repeated=table.repeated, skipped=table.skipped)
