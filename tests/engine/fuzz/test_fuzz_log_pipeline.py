"""Structured mutations of a valid log through read -> inspect -> prepare: a table, a summary
and prepared data, or a ValueError (LogError, InputError) with a message; nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from corpus import corpus, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.logs import LogMapping, PrepareConfig, ReadOptions, prepare_log, read_log
from engine.logs.inspect import inspect_table

_SETTINGS = settings(max_examples=fuzz_examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_T = np.arange(60) * 0.01
BASE_LINES = ["# a comment", "t,q,u"] + [f"{t:.2f},{np.sin(t):.6f},{np.cos(t):.4f}" for t in _T]
WEIRD = ["1e9", "-1e9", "nan", "inf", "-inf", "", "1e308", "1e-320", "0", "-0", "abc", "1,5", '"1"', "0x10", "∞",
         "1_000", "  ", "\x00", "٣", "1e", "--1"]
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
