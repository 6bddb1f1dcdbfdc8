"""Which log columns are time, configurations ``q``, velocities ``qd`` and controls ``u``.

A :class:`LogMapping` is JSON-serialisable (``to_dict``/``from_dict``, ``save``/``load``).
Mappings are remembered per *column signature* (a hash of the ordered column names):
:func:`save_mapping` stores one under a folder, :func:`find_saved_mapping` finds it again
for any file of the same shape. :func:`apply_mapping` gives the mapped signals in SI units,
:func:`preview_mapping` the first rows of them for a preview table.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from engine.io import write_json
from engine.logs.errors import LogError
from engine.logs.table import LogTable
from engine.logs.units import si_unit, unit_factor

__all__ = [
    "LogMapping",
    "MappedLog",
    "apply_mapping",
    "column_signature",
    "find_saved_mapping",
    "preview_mapping",
    "save_mapping",
]


@dataclass
class LogMapping:
    """Columns (or bag topic fields) for each signal, and their units.

    ``time``: the time column, or None to use the row index times ``sample_period`` (s).
    ``q``: configuration columns (``nq`` of them); ``qd``: optional velocity columns (none,
    or ``nq``); ``u``: control / torque columns (any number, may be none). ``units`` maps a
    column name to its unit (``s``/``ms``/``us``/``ns``, ``rad``/``deg``, ``m``/``mm``,
    ``rad/s``, ``deg/s``, ``N``, ``N m``...; see ``engine.logs.units``); unlisted columns are
    taken as SI already.
    """

    time: str | None = None
    q: list[str] = field(default_factory=list)
    qd: list[str] = field(default_factory=list)
    u: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    sample_period: float | None = None
    name: str = ""

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Check the mapping on its own (not against a table); raise LogError naming the field."""
        if self.time is not None and not isinstance(self.time, str):
            raise LogError("must be a column name or null", column="time")
        for key in ("q", "qd", "u"):
            value = getattr(self, key)
            if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
                raise LogError("must be a list of column names", column=key)
        if not self.q:
            raise LogError("map at least one configuration column", column="q")
        if self.qd and len(self.qd) != len(self.q):
            raise LogError(f"{len(self.qd)} velocity columns for {len(self.q)} configurations "
                           "(mismatched lengths)", column="qd")
        if len(set(self.q)) != len(self.q):
            raise LogError("a configuration column is listed twice", column="q")
        if self.time is None and (self.sample_period is None or not self.sample_period > 0):
            raise LogError("without a time column, give a positive sample_period (s)", column="sample_period")
        if not isinstance(self.units, dict):
            raise LogError("must map column names to units", column="units")
        for col, unit in self.units.items():
            unit_factor(unit, field=f"units[{col!r}]")

    @property
    def columns(self) -> list[str]:
        """Every column the mapping reads, time first."""
        cols = ([self.time] if self.time else []) + self.q + self.qd + self.u
        return list(dict.fromkeys(cols))

    def unit(self, column: str) -> str:
        return self.units.get(column, "")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: object, *, source: str | None = None) -> LogMapping:
        if not isinstance(d, dict):
            raise LogError("a mapping must be a JSON object", path=source)
        known = {"time", "q", "qd", "u", "units", "sample_period", "name"}
        unknown = set(d) - known
        if unknown:
            raise LogError(f"unknown field(s) {sorted(unknown)}; known: {sorted(known)}", path=source,
                           column=min(unknown))
        try:
            given: dict[str, Any] = {k: (list(v) if k in ("q", "qd", "u") and isinstance(v, tuple) else v)
                                     for k, v in d.items()}
            return cls(**given)
        except LogError as exc:
            if source is None:
                raise
            raise LogError(exc.reason, path=source, column=exc.column) from None

    def save(self, path: str | os.PathLike) -> Path:
        return write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> LogMapping:
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise LogError(f"cannot read the mapping ({exc.strerror or exc})", path=path) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            line = getattr(exc, "lineno", None)
            raise LogError(f"not valid JSON ({exc})", path=path, line=line) from None
        if isinstance(d, dict) and "mapping" in d and "signature" in d:
            d = d["mapping"]  # a saved-mapping file
        return cls.from_dict(d, source=str(path))


@dataclass
class MappedLog:
    """Mapped signals in SI units. ``t``: (N,) s; ``q``: (N, nq); ``qd``: (N, nq) or None;
    ``u``: (N, nu) (nu may be 0). ``rows``: the table rows used; labels name the columns."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray | None
    u: np.ndarray
    rows: np.ndarray
    q_names: list[str]
    qd_names: list[str]
    u_names: list[str]
    q_units: list[str]
    u_units: list[str]


def _check_columns(table: LogTable, mapping: LogMapping) -> None:
    for role in ("time", "q", "qd", "u"):
        cols = getattr(mapping, role)
        for col in ([cols] if isinstance(cols, str) else cols or []):
            if col not in table.data:
                if col in table.repeated:  # the text reader renames every copy of a repeated header name
                    copies = ", ".join(repr(c) for c in table.repeated[col])
                    raise LogError(f"the header repeats column {col!r} (read as {copies}), so {role} {col!r} "
                                   "is ambiguous; map the copy you mean, or rename the columns in the file",
                                   path=table.source or None, column=col)
                # a skipped column, or an element name[k] of a skipped list column
                source = (
                    col if col in table.skipped else col.rpartition("[")[0] if col.endswith("]") else None
                )
                if source in table.skipped:
                    raise LogError(f"column for {role} cannot be read: {table.skipped[source]}",
                                   path=table.source or None, column=source)
                try:
                    table.column(col)
                except LogError as exc:
                    raise LogError(f"missing column for {role}: {exc.reason}", path=table.source or None,
                                   column=col) from None


def apply_mapping(table: LogTable, mapping: LogMapping, rows: int | None = None) -> MappedLog:
    """Pick and convert the mapped columns (first ``rows`` rows, or all) into SI units."""
    _check_columns(table, mapping)
    n = table.n_rows if rows is None else min(rows, table.n_rows)
    sel = slice(0, n)

    def conv(col):
        return table.data[col][sel] * unit_factor(mapping.unit(col), field=f"units[{col!r}]")

    if mapping.time is not None:
        t = conv(mapping.time)
    else:
        t = np.arange(n, dtype=np.float64) * float(cast(float, mapping.sample_period))
    q = np.stack([conv(c) for c in mapping.q], axis=1)
    qd = np.stack([conv(c) for c in mapping.qd], axis=1) if mapping.qd else None
    u = np.stack([conv(c) for c in mapping.u], axis=1) if mapping.u else np.zeros((n, 0))
    return MappedLog(t=t, q=q, qd=qd, u=u, rows=np.arange(n), q_names=list(mapping.q),
                     qd_names=list(mapping.qd), u_names=list(mapping.u),
                     q_units=[si_unit(mapping.unit(c)) or "rad or m" for c in mapping.q],
                     u_units=[si_unit(mapping.unit(c)) for c in mapping.u])


def preview_mapping(table: LogTable, mapping: LogMapping, rows: int = 10) -> dict[str, np.ndarray]:
    """The first ``rows`` rows after conversion, as ordered ``label -> (rows,) array``.

    Labels read ``"t [s]"``, ``"q[0] theta [rad]"``, ``"qd[0] ..."``, ``"u[0] torque [N m]"``.
    """
    m = apply_mapping(table, mapping, rows)
    out = {"t [s]": m.t}
    for i, c in enumerate(m.q_names):
        out[f"q[{i}] {c} [{si_unit(mapping.unit(c)) or 'SI'}]"] = m.q[:, i]
    for i, c in enumerate(m.qd_names):
        out[f"qd[{i}] {c} [{si_unit(mapping.unit(c)) or 'SI'}]"] = cast(np.ndarray, m.qd)[:, i]
    for i, c in enumerate(m.u_names):
        out[f"u[{i}] {c} [{si_unit(mapping.unit(c)) or 'SI'}]"] = m.u[:, i]
    return out


def column_signature(columns: list[str]) -> str:
    """A short hash of the ordered column names: files of the same shape share it."""
    return hashlib.sha256("\x1f".join(columns).encode("utf-8")).hexdigest()[:16]


def save_mapping(mapping: LogMapping, columns: list[str], folder: str | os.PathLike) -> Path:
    """Remember ``mapping`` for files with these ``columns`` (``<folder>/<signature>.json``)."""
    missing = [c for c in mapping.columns if c not in columns]
    if missing:
        raise LogError(f"the mapping names columns the file lacks: {missing}", column=missing[0])
    sig = column_signature(list(columns))
    return write_json(Path(folder) / f"{sig}.json",
                      {"signature": sig, "columns": list(columns), "mapping": mapping.to_dict()})


def find_saved_mapping(columns: list[str], folder: str | os.PathLike) -> LogMapping | None:
    """The mapping saved for files with exactly these ``columns``, or None."""
    path = Path(folder) / f"{column_signature(list(columns))}.json"
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(saved, dict) or saved.get("columns") != list(columns):
        return None
    try:
        return LogMapping.from_dict(saved.get("mapping"), source=str(path))
    except LogError:
        return None
