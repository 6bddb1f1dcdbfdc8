"""Binary column logs: NPZ (numpy, never pickled) and Parquet (pyarrow).

NPZ layouts understood:

- ``data`` (2-D, ``(rows, k)``) plus ``columns`` (1-D string array of ``k`` names): the
  layout :func:`engine.logs.writers.write_npz` writes;
- otherwise every 1-D numeric array is a column and every 2-D numeric array ``name`` of
  shape ``(rows, k)`` gives columns ``name[0]`` ... ``name[k-1]``; 0-d arrays and string
  arrays are skipped with a note. All columns must have the same length.

Parquet: a column is numeric, boolean or a timestamp (converted to seconds since the epoch),
or a list of numbers of one length per row (LeRobot's ``observation.state``, ``action``), which
gives columns ``name[0]`` ... ``name[k-1]``; any other column (strings, structs, nested lists) is
skipped with a note, so only the columns a mapping uses must be readable; row groups are read
one by one (progress and cancellation between them).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from engine.jobs import JobCancelled
from engine.logs.errors import LogError
from engine.logs.table import LogTable

__all__ = ["read_npz", "read_parquet"]


def read_npz(path: str | os.PathLike, ctx=None) -> LogTable:
    """Read a ``.npz`` log (``np.load(allow_pickle=False)``) into a :class:`LogTable`."""
    path = Path(path)
    try:
        if path.stat().st_size == 0:
            raise LogError("the file is empty", path=path)
        archive = np.load(path, allow_pickle=False)
    except LogError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile, zlib, numpy and OS errors alike: the file is unreadable
        raise LogError(f"not a readable .npz file ({type(exc).__name__}: {exc})", path=path) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise LogError("a single .npy array, not an .npz archive of named columns", path=path)
    notes: list[str] = []
    data: dict[str, np.ndarray] = {}
    with archive:
        keys = list(archive.files)
        try:
            arrays = {}
            for i, key in enumerate(keys):
                if ctx is not None:
                    ctx.check_cancelled()
                    ctx.progress(i / max(len(keys), 1), f"reading {path.name}: {key}")
                arrays[key] = archive[key]
        except JobCancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - zipfile, zlib (corrupt data), numpy (pickled objects) errors
            what = "holds Python objects (pickled), which are never loaded" if "pickle" in str(exc) \
                else f"cannot be read ({type(exc).__name__}: {exc})"
            raise LogError(f"array {what}", path=path, column=key) from None
    if not arrays:
        raise LogError("the archive holds no arrays", path=path)
    if "data" in arrays and "columns" in arrays and arrays["columns"].dtype.kind == "U":
        values, names = arrays["data"], [str(n) for n in arrays["columns"].reshape(-1)]
        if values.ndim != 2 or values.shape[1] != len(names):
            raise LogError(f"'data' has shape {values.shape} but 'columns' names {len(names)} columns",
                           path=path, column="data")
        if values.dtype.kind not in "biuf":
            raise LogError(f"'data' has non-numeric dtype {values.dtype}", path=path, column="data")
        if len(set(names)) != len(names):
            raise LogError("'columns' repeats a name", path=path, column="columns")
        data = {n: values[:, i] for i, n in enumerate(names)}
    else:
        for key, arr in arrays.items():
            if arr.ndim == 0 or arr.dtype.kind not in "biuf":
                notes.append(f"skipped array {key!r} (dtype {arr.dtype}, shape {arr.shape})")
                continue
            if arr.ndim == 1:
                data[key] = arr
            elif arr.ndim == 2:
                for j in range(arr.shape[1]):
                    data[f"{key}[{j}]"] = arr[:, j]
            else:
                raise LogError(f"array of shape {arr.shape}: only 1-D and 2-D arrays are columns",
                               path=path, column=key)
    if not data:
        raise LogError("the archive holds no numeric 1-D or 2-D arrays", path=path)
    lengths = {k: len(v) for k, v in data.items()}
    first = next(iter(lengths))
    for key, n in lengths.items():
        if n != lengths[first]:
            raise LogError(f"mismatched lengths: {n} rows here, {lengths[first]} in {first!r}",
                           path=path, column=key)
    if lengths[first] == 0:
        raise LogError("the arrays have no rows", path=path)
    if ctx is not None:
        ctx.progress(1.0, f"read {path.name}")
    return LogTable(columns=list(data), data=data, source=str(path), format="npz", notes=notes)


def _arrow_to_float(column, name: str, path: Path) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    typ = column.type
    if pa.types.is_timestamp(typ):
        unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[typ.unit]
        ints = pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False)
        return ints.astype(np.float64) * unit
    if pa.types.is_duration(typ):
        unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[typ.unit]
        return pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False).astype(np.float64) * unit
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ) \
            or pa.types.is_decimal(typ):
        return pc.cast(column, pa.float64()).fill_null(float("nan")).to_numpy(zero_copy_only=False)
    raise LogError(f"column type {typ} is not numeric", path=path, column=name)


def _is_list(typ) -> bool:
    import pyarrow as pa

    return pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)


def _list_to_columns(column, name: str, path: Path, width: int | None) -> list[np.ndarray]:
    """A list column (one vector per row, as LeRobot's ``observation.state``) -> one float64
    array per element; every row must hold ``width`` numbers (the first row's length)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if column.null_count:
        raise LogError("a row holds no vector (null)", path=path, column=name)
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    if lengths.size == 0:
        return [np.zeros(0)] * (width or 0)
    width = int(lengths[0]) if width is None else width
    bad = np.flatnonzero(lengths != width)
    if bad.size:
        raise LogError(f"row {int(bad[0])} holds {int(lengths[bad[0]])} values, the first row {width}: "
                       "a list column needs vectors of one length", path=path, column=name)
    values = _arrow_to_float(pc.list_flatten(column), name, path)
    flat = values.reshape(len(lengths), width) if width else np.zeros((len(lengths), 0))
    return [flat[:, i] for i in range(width)]


def _parquet_readable(typ) -> str | None:
    """None if a column of Arrow type ``typ`` can become float64 columns here, else why not."""
    import pyarrow as pa

    def scalar(t) -> bool:
        return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                or pa.types.is_decimal(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t))

    if scalar(typ) or (_is_list(typ) and scalar(typ.value_type)):
        return None
    return f"its type {typ} is not numbers (nor a list of numbers)"


def read_parquet(path: str | os.PathLike, ctx=None) -> LogTable:
    """Read a Parquet log (numeric columns) into a :class:`LogTable`, row group by row group.

    A column that cannot be read as numbers (a string or nested column, a list column with
    vectors of different lengths) is skipped with a note and listed in ``LogTable.skipped``;
    only a file with no readable column is refused. A mapping that uses a skipped column is
    refused then, naming it and why.
    """
    path = Path(path)
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - the logs extra
        raise LogError("reading Parquet needs pyarrow (pip install 'lagrange-studio[logs]')",
                       path=path) from exc
    try:
        if path.stat().st_size == 0:
            raise LogError("the file is empty", path=path)
        pfile = pq.ParquetFile(path)
        schema = pfile.schema_arrow
    except LogError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError...
        raise LogError(f"not a readable Parquet file ({exc})", path=path) from None
    all_names = list(schema.names)
    if not all_names:
        raise LogError("the file has no columns", path=path)
    if len(set(all_names)) != len(all_names):
        raise LogError("repeated column names", path=path)
    skipped: dict[str, str] = {}
    for n in all_names:
        why = _parquet_readable(schema.field(n).type)
        if why is not None:
            skipped[n] = why
    names = [n for n in all_names if n not in skipped]
    lists = {n for n in names if _is_list(schema.field(n).type)}
    widths: dict[str, int | None] = {n: None for n in lists}
    parts: dict[str, list] = {n: [] for n in names}
    n_groups = pfile.num_row_groups
    for g in range(n_groups):
        if ctx is not None:
            ctx.check_cancelled()
        if not names:
            break
        try:
            group = pfile.read_row_group(g, columns=names)
        except Exception as exc:  # noqa: BLE001
            raise LogError(f"row group {g} cannot be read ({exc})", path=path) from None
        for name in list(names):
            try:
                if name in lists:
                    cols = _list_to_columns(group.column(name), name, path, widths[name])
                    if group.num_rows:
                        widths[name] = len(cols)
                    parts[name].append(cols)
                else:
                    parts[name].append(_arrow_to_float(group.column(name), name, path))
            except LogError as exc:
                skipped[name] = f"{exc.reason} (row group {g})" if n_groups > 1 else exc.reason
                names.remove(name)
                del parts[name]
        if ctx is not None:
            ctx.progress((g + 1) / n_groups * 0.99, f"reading {path.name}: row group {g + 1}/{n_groups}")
    data: dict[str, np.ndarray] = {}
    notes: list[str] = []
    for n in names:
        if n in lists:
            width = widths[n] or 0
            for i in range(width):
                data[f"{n}[{i}]"] = np.concatenate([p[i] for p in parts[n] if len(p) > i])
            notes.append(f"list column {n!r}: {width} columns {n}[0] .. {n}[{width - 1}]")
        else:
            data[n] = np.concatenate(parts[n]) if parts[n] else np.zeros(0)
    skipped = {n: skipped[n] for n in all_names if n in skipped}      # file order
    for n, why in skipped.items():
        notes.append(f"skipped column {n!r}: {why}")
    if not data:
        listed = "; ".join(f"{n!r}: {why}" for n, why in list(skipped.items())[:5])
        raise LogError(f"no column can be read as numbers ({listed})", path=path)
    if len(next(iter(data.values()))) == 0:
        raise LogError("the file has no rows", path=path)
    if ctx is not None:
        ctx.progress(1.0, f"read {path.name}")
    return LogTable(columns=list(data), data=data, source=str(path), format="parquet", notes=notes,
                    skipped=skipped)
