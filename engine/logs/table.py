"""``LogTable``: what every reader returns (named float64 columns of equal length)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.logs.errors import LogError

__all__ = ["LogTable"]


@dataclass
class LogTable:
    """A loaded log: ``columns`` names, one float64 array of shape ``(rows,)`` per name.

    ``row_lines`` (int64, ``(rows,)``) gives the 1-based file line of each row for text
    formats, so later checks (time not increasing, NaN gaps) can name the line; it is None
    for binary formats. ``sparse`` marks multi-rate logs (ROS bags, MCAP): there each
    column is NaN between the messages of its topic, and preparation interpolates each
    column over its own samples. ``notes`` are human-readable remarks from the reader
    (delimiter found, columns renamed, fields skipped...). ``repeated`` maps a name the header
    repeats to the names its copies were read as (``theta`` -> ``[theta_1, theta_2]``), and
    ``skipped`` a column the reader could not read as numbers (a nested Parquet column...) to
    why: a mapping that asks for either is refused with that reason, other columns load.
    """

    columns: list[str]
    data: dict[str, np.ndarray]
    source: str = ""
    format: str = ""
    notes: list[str] = field(default_factory=list)
    row_lines: np.ndarray | None = None
    sparse: bool = False
    repeated: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.columns = list(self.columns)
        if set(self.columns) != set(self.data) or len(self.columns) != len(self.data):
            raise LogError("columns and data disagree", path=self.source or None)
        lengths = {name: np.asarray(self.data[name]).shape for name in self.columns}
        rows = None
        for name, shape in lengths.items():
            if len(shape) != 1:
                raise LogError(f"expected a 1-D column, got shape {shape}", path=self.source or None,
                               column=name)
            if rows is None:
                rows = shape[0]
            elif shape[0] != rows:
                raise LogError(f"column has {shape[0]} rows, but {self.columns[0]!r} has {rows}",
                               path=self.source or None, column=name)
        self.data = {name: np.ascontiguousarray(self.data[name], dtype=np.float64) for name in self.columns}
        if self.row_lines is not None:
            self.row_lines = np.asarray(self.row_lines, dtype=np.int64)

    @property
    def n_rows(self) -> int:
        return 0 if not self.columns else int(self.data[self.columns[0]].shape[0])

    def __len__(self) -> int:
        return self.n_rows

    def __getitem__(self, name: str) -> np.ndarray:
        return self.column(name)

    def column(self, name: str) -> np.ndarray:
        """The float64 column ``name`` (shape ``(rows,)``); a LogError names what exists if not."""
        try:
            return self.data[name]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, self.columns, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else \
                f"; the columns are {', '.join(map(repr, self.columns[:20]))}"
            raise LogError(f"no column {name!r}{hint}", path=self.source or None, column=name) from None

    def to_array(self, names: list[str] | None = None) -> np.ndarray:
        """Stack columns into an array of shape ``(rows, len(names))``."""
        names = self.columns if names is None else names
        if not names:
            return np.zeros((self.n_rows, 0))
        return np.stack([self.column(n) for n in names], axis=1)

    def line_of(self, row: int) -> int | None:
        """The 1-based file line of ``row`` (text formats), else None."""
        if self.row_lines is None or not (0 <= row < len(self.row_lines)):
            return None
        return int(self.row_lines[row])

    @property
    def name(self) -> str:
        return Path(self.source).name if self.source else ""

    def head(self, n: int = 5) -> dict[str, np.ndarray]:
        return {c: self.data[c][:n].copy() for c in self.columns}
