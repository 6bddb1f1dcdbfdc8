"""Structured mutations of a valid log through read -> inspect -> prepare: a table, a summary
and prepared data, or a ValueError (LogError, InputError) with a message; nothing else."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus import corpus, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.logs import LogMapping, PrepareConfig, ReadOptions, prepare_log, read_log
from engine.logs.inspect import inspect_table

_SETTINGS = settings(
    max_examples=fuzz_examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_T = np.arange(60) * 0.01
BASE_LINES = ["# a comment", "t,q,u"] + [f"{t:.2f},{np.sin(t):.6f},{np.cos(t):.4f}" for t in _T]
WEIRD = [
    "1e9",
    "-1e9",
    "nan",
    "inf",
    "-inf",
    "",
    "1e308",
    "1e-320",
    "0",
    "-0",
    "abc",
    "1,5",
    '"1"',
    "0x10",
    "∞",
    "1_000",
    "  ",
    "\x00",
    "٣",
    "1e",
    "--1",
]
MAPPING = LogMapping(time="t", q=["q"], u=["u"])


def _mutate(lines: list[str], ops) -> list[str]:
    lines = list(lines)
    for kind, i, j, text in ops:
        if not lines:
            break
        i %= len(lines)
        if kind == "cell":
            cells = lines[i].split(",")
            cells[j % len(cells)] = text
            lines[i] = ",".join(cells)
        elif kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "swap":
            k = j % len(lines)
            lines[i], lines[k] = lines[k], lines[i]
        elif kind == "raw":
            lines[i] = text
    return lines


def _check(path, options=None):
    try:
        table = read_log(path, options=options)
    except ValueError as exc:
        assert str(exc)
        return
    summary = inspect_table(table)
    assert summary["rows"] == table.n_rows
    try:
        prepared = prepare_log(table, MAPPING, PrepareConfig(window=5, polyorder=2))
    except ValueError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    assert np.all(np.isfinite(prepared.q)) and prepared.n_samples >= 5


_OPS = st.lists(st.tuples(st.sampled_from(["cell", "drop", "dup", "swap", "raw"]), st.integers(0, 200),
                          st.integers(0, 5), st.one_of(st.sampled_from(WEIRD), st.text(max_size=12))),
                max_size=5)


@_SETTINGS
@given(ops=_OPS, encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"]),
       newline=st.sampled_from(["\n", "\r\n", "\r"]), chunk=st.sampled_from([13, 1 << 20]))
def test_mutated_logs_read_inspect_and_prepare_or_say_why(tmp_path, ops, encoding, newline, chunk):
    text = newline.join(_mutate(BASE_LINES, ops)) + newline
    path = tmp_path / "fuzz.csv"
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:  # a lone surrogate: write it as UTF-8 with replacement
        data = text.encode("utf-8", errors="replace")
    path.write_bytes(data)
    _check(path, ReadOptions(chunk_bytes=chunk))


@pytest.mark.parametrize("path", corpus("logs"), ids=lambda p: p.name)
def test_log_corpus(path):
    _check(path)


_NAMES = st.lists(st.sampled_from(["t", "q", "u", "q_1", "q_2", "", " q ", "x"]), min_size=1, max_size=6)


@_SETTINGS
@given(names=_NAMES)
def test_headers_with_repeated_names_read_and_a_repeated_mapped_column_is_refused(tmp_path, names):
    """Any header reads into unique names; a mapping of a name the header repeats is refused,
    never served one of the copies."""
    rows = [",".join(f"{(i + 1) * 0.01 * (k + 1):.4f}" for k in range(len(names))) for i in range(20)]
    path = tmp_path / "h.csv"
    path.write_text("\n".join([",".join(names)] + rows) + "\n")
    try:
        table = read_log(path)
    except ValueError as exc:   # a header of numbers only is not a header; still a message
        assert str(exc)
        return
    assert len(set(table.columns)) == len(table.columns) == len(names)
    for name, copies in table.repeated.items():
        assert len(copies) == [n.strip() for n in names].count(name) >= 2 and name not in table.columns
        with pytest.raises(ValueError, match="repeats column"):
            prepare_log(table, LogMapping(time=table.columns[0] if table.columns[0] != copies[0] else None,
                                          sample_period=0.01, q=[name]), PrepareConfig(window=5, polyorder=2))


_PARQUET_KINDS = {
    "float": lambda n, rng: pa.array(rng.normal(size=n)),
    "int": lambda n, rng: pa.array(rng.integers(-5, 5, n)),
    "bool": lambda n, rng: pa.array(rng.random(n) > 0.5),
    "list": lambda n, rng: pa.array([[float(v), 1.0] for v in rng.normal(size=n)]),
    "ragged": lambda n, rng: pa.array([[1.0] * int(k) for k in rng.integers(1, 3, n)]),
    "string": lambda n, rng: pa.array([str(v) for v in rng.integers(0, 9, n)]),
    "struct": lambda n, rng: pa.array([{"a": float(v), "b": "x"} for v in rng.normal(size=n)]),
    "nested": lambda n, rng: pa.array([[[float(v)]] for v in rng.normal(size=n)]),
    "null": lambda n, rng: pa.nulls(n),
    "map": lambda n, rng: pa.array(
        [[("k", float(v))] for v in rng.normal(size=n)], type=pa.map_(pa.string(), pa.float64())
    ),
}


@_SETTINGS
@given(
    kinds=st.lists(st.sampled_from(sorted(_PARQUET_KINDS)), min_size=0, max_size=5),
    seed=st.integers(0, 99),
    group=st.sampled_from([7, 64]),
)
def test_parquet_with_any_extra_columns_reads_the_numeric_ones(tmp_path, kinds, seed, group):
    """Extra columns of any type around a time and a q column: the log reads, inspects and
    prepares from t and q; every other column is loaded or skipped with a note, never fatal."""
    rng = np.random.default_rng(seed)
    n = 60
    cols = {"t": pa.array(_T), "q": pa.array(np.sin(_T))}
    for i, kind in enumerate(kinds):
        cols[f"c{i}_{kind}"] = _PARQUET_KINDS[kind](n, rng)
    pq.write_table(pa.table(cols), tmp_path / "x.parquet", row_group_size=group)
    table = read_log(tmp_path / "x.parquet")
    assert {"t", "q"} <= set(table.columns)
    for name in cols:
        loaded = name in table.columns or any(c.startswith(f"{name}[") for c in table.columns)
        assert loaded != (name in table.skipped)
        if name in table.skipped:
            assert any(note.startswith(f"skipped column {name!r}") for note in inspect_table(table)["notes"])
            with pytest.raises(ValueError, match="cannot be read"):
                prepare_log(table, LogMapping(time="t", q=[name]), PrepareConfig(window=5, polyorder=2))
    prepared = prepare_log(table, LogMapping(time="t", q=["q"]), PrepareConfig(window=5, polyorder=2))
    assert prepared.n_samples >= 5 and np.all(np.isfinite(prepared.q))
