"""Write a :class:`LogTable` (or plain named columns) as CSV/TSV, NPZ or Parquet, atomically."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from engine.io import atomic_write_bytes, atomic_write_text
from engine.logs.table import LogTable

__all__ = ["write_csv", "write_log", "write_npz", "write_parquet"]


def _columns(table: LogTable | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    if isinstance(table, LogTable):
        return {c: table.data[c] for c in table.columns}
    return {k: np.asarray(v, dtype=np.float64) for k, v in table.items()}


def write_csv(path: str | os.PathLike, table, *, delimiter: str = ",", comments: Sequence[str] = (),
              fmt: str | Mapping[str, str] = "%.17g") -> Path:
    """Write a header row, then one line per row. ``fmt`` is a printf format, for all columns
    or per column (``%.17g`` round-trips float64 exactly). ``comments`` become ``# `` lines."""
    cols = _columns(table)
    names = list(cols)
    fmts = [fmt.get(n, "%.17g") if isinstance(fmt, Mapping) else fmt for n in names]
    buf = io.StringIO()
    for c in comments:
        buf.write(f"# {c}\n")
    buf.write(delimiter.join(names) + "\n")
    if names:
        values = np.stack([cols[n] for n in names], axis=1)
        body = io.StringIO()
        np.savetxt(body, values, fmt=fmts, delimiter=delimiter)
        d = re.escape(delimiter)
        # missing values are written as empty cells
        buf.write(re.sub(rf"(?<![^{d}\n])nan(?![^{d}\n])", "", body.getvalue()))
    return atomic_write_text(path, buf.getvalue())


def write_npz(path: str | os.PathLike, table, *, compressed: bool = True) -> Path:
    """Write ``data`` (rows, k) and ``columns`` (k names) arrays: the layout read_npz prefers."""
    cols = _columns(table)
    names = list(cols)
    data = np.stack([cols[n] for n in names], axis=1) if names else np.zeros((0, 0))
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, data=data, columns=np.array(names, dtype=str))
    return atomic_write_bytes(path, buf.getvalue())


def write_parquet(path: str | os.PathLike, table, *, row_group_size: int | None = None) -> Path:
    """Write the columns as float64 Parquet columns (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = _columns(table)
    arrow = pa.table({n: pa.array(v, type=pa.float64()) for n, v in cols.items()})
    buf = io.BytesIO()
    pq.write_table(arrow, buf, row_group_size=row_group_size)
    return atomic_write_bytes(path, buf.getvalue())


def write_log(path: str | os.PathLike, table) -> Path:
    """Write by suffix: ``.npz``, ``.parquet``/``.pq``, ``.tsv`` (tab) or else comma text."""
    suffix = Path(path).suffix.lower()
    if suffix == ".npz":
        return write_npz(path, table)
    if suffix in (".parquet", ".pq"):
        return write_parquet(path, table)
    return write_csv(path, table, delimiter="\t" if suffix == ".tsv" else ",")
