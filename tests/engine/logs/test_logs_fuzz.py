"""Fuzzing the text reader: whatever the bytes, it returns a table or raises LogError, nothing else."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.logs import LogError, LogTable, ReadOptions, read_log

_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _read_or_log_error(path, **kw):
    try:
        table = read_log(path, **kw)
    except LogError as exc:
        assert str(exc)
        return None
    assert isinstance(table, LogTable) and table.n_rows > 0
    for name in table.columns:
        assert table[name].dtype == np.float64 and table[name].shape == (table.n_rows,)
    return table


@_SETTINGS
@given(data=st.binary(max_size=400))
def test_random_bytes(tmp_path, data):
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    _read_or_log_error(path)


@_SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list("0123456789.,;\t |-+eE#\"nai_ \n\r\x00xyz")), max_size=300),
       chunk=st.sampled_from([7, 64, 1 << 20]))
def test_csv_like_text(tmp_path, text, chunk):
    path = tmp_path / "fuzz.csv"
    path.write_text(text, encoding="utf-8")
    _read_or_log_error(path, options=ReadOptions(chunk_bytes=chunk))


@_SETTINGS
@given(
    values=st.lists(
        st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=3, max_size=3),
        min_size=1,
        max_size=30,
    ),
    sep=st.sampled_from([",", "\t", ";", " "]),
)
def test_valid_numbers_always_round_trip(tmp_path, values, sep):
    path = tmp_path / "ok.csv"
    lines = [sep.join(["a", "b", "c"])] + [sep.join(repr(v) for v in row) for row in values]
    path.write_text("\n".join(lines) + "\n")
    table = read_log(path)
    np.testing.assert_array_equal(table.to_array(), np.array(values))
