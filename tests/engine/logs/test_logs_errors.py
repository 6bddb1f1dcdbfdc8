"""Each bad input gives a LogError (a ValueError) that names the file, and the line and column where known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.logs import LogError, LogMapping, LogTable, PrepareConfig, prepare_log, read_log
from engine.logs.writers import write_csv


def _error(path, **kw) -> LogError:
    with pytest.raises(LogError) as info:
        read_log(path, **kw)
    err = info.value
    assert isinstance(err, ValueError)
    assert str(path) in str(err) and err.path == str(path)
    return err


def _write(tmp_path, text, name="bad.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_non_numeric_cell_names_line_and_column(tmp_path):
    err = _error(_write(tmp_path, "# c\nt,theta,tau\n0,1,2\n0.1,abc,3\n"))
    assert (err.line, err.column) == (4, "theta")
    assert "non-numeric cell 'abc'" in str(err) and "line 4" in str(err) and "'theta'" in str(err)


def test_missing_field_names_line_and_first_missing_column(tmp_path):
    err = _error(_write(tmp_path, "t,theta,tau\n0,1,2\n0.1,2\n"))
    assert (err.line, err.column) == (3, "tau")
    assert "2 fields but the header has 3" in str(err)


def test_extra_field_names_line_and_field_number(tmp_path):
    err = _error(_write(tmp_path, "t,theta\n0,1\n1,2\n2,3,4\n"))
    assert (err.line, err.column) == (4, 3)


def test_error_in_a_late_block_names_the_right_line(tmp_path):
    rows = [f"{i},{i * 2}" for i in range(20000)]
    rows[15000] = "15000,oops"
    path = _write(tmp_path, "t,x\n" + "\n".join(rows) + "\n")
    with pytest.raises(LogError) as info:
        read_log(
            path, options=__import__("engine.logs", fromlist=["ReadOptions"]).ReadOptions(chunk_bytes=4096)
        )
    assert (info.value.line, info.value.column) == (15002, "x")


def test_empty_file(tmp_path):
    assert "empty" in str(_error(_write(tmp_path, "")))


def test_only_comments(tmp_path):
    assert "no header and no data" in str(_error(_write(tmp_path, "# just\n\n# comments\n")))


def test_header_without_rows(tmp_path):
    assert "no data rows" in str(_error(_write(tmp_path, "t,x\n# nothing else\n")))


def test_missing_file(tmp_path):
    assert "not found" in str(_error(tmp_path / "nope.csv"))


def test_binary_file_as_text(tmp_path):
    path = tmp_path / "bin.csv"
    path.write_bytes(b"t,x\n\x00\x01\x02\xff")
    assert "binary" in str(_error(path))


def test_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("t,x\n0,1\n1,2 \xb0\n".encode("latin-1"))
    err = _error(path)
    assert err.line == 3 and "UTF-8" in str(err)


def test_unbalanced_quote_names_the_line(tmp_path):
    err = _error(_write(tmp_path, 't,x\n0,1\n1,"2\n2,3\n'))
    assert err.line == 3


def test_npz_mismatched_lengths_name_the_array(tmp_path):
    np.savez(tmp_path / "m.npz", t=np.arange(5.0), x=np.arange(4.0))
    err = _error(tmp_path / "m.npz")
    assert err.column == "x" and "mismatched lengths" in str(err)


def test_npz_with_pickled_objects_is_refused(tmp_path):
    np.savez(tmp_path / "o.npz", t=np.arange(3.0), obj=np.array([{"a": 1}, None, 3], dtype=object))
    err = _error(tmp_path / "o.npz")
    assert err.column == "obj" and "pickle" in str(err)


def test_corrupt_npz_parquet_and_bags(tmp_path):
    for name in ("c.npz", "c.parquet", "c.bag", "c.mcap", "c.db3"):
        path = tmp_path / name
        path.write_bytes(b"this is not that format at all" * 10)
        assert "not a readable" in str(_error(path))


def test_npz_with_corrupt_compressed_data(tmp_path):
    from engine.logs.writers import write_npz

    path = write_npz(tmp_path / "z.npz", {"t": np.arange(200.0), "x": np.sin(np.arange(200.0))})
    data = bytearray(path.read_bytes())
    for i in range(120, 400, 7):  # scribble over the deflated data of the first member
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    err = _error(path)
    assert "cannot be read" in str(err) or "not a readable" in str(err)


def test_parquet_string_column_names_the_column(tmp_path):
    """A string column loads as skipped (only used columns must be readable); mapping it names it."""
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"t": np.arange(20) * 0.1, "mode": ["a", "b"] * 10}), path)
    table = read_log(path)
    assert table.columns == ["t"] and "string" in table.skipped["mode"]
    with pytest.raises(LogError) as info:
        prepare_log(table, LogMapping(time="t", q=["mode"]), PrepareConfig(window=5, polyorder=2))
    err = info.value
    assert err.column == "mode" and "not numbers" in str(err) and str(path) in str(err)
    pq.write_table(pa.table({"mode": ["a", "b"]}), tmp_path / "only.parquet")
    assert "no column can be read as numbers ('mode'" in str(_error(tmp_path / "only.parquet"))


def test_folder_that_is_not_a_bag(tmp_path):
    (tmp_path / "dir").mkdir()
    assert "not a ROS 2 bag" in str(_error(tmp_path / "dir"))


# -- errors found after reading: mapping and preparation ---------------------------------------

def _csv(tmp_path, cols, name="log.csv"):
    return read_log(write_csv(tmp_path / name, cols, comments=["header comment"]))


def test_time_not_increasing_names_line(tmp_path):
    t = np.arange(10) * 0.1
    t[6] = t[4]
    table = _csv(tmp_path, {"t": t, "q": np.sin(t)})
    with pytest.raises(LogError) as info:
        prepare_log(table, LogMapping(time="t", q=["q"]), PrepareConfig(window=5, polyorder=2))
    err = info.value
    # data row 6 is on file line 6 + 3 (comment, header, 1-based)
    assert (
        (err.line, err.column) == (9, "t") and "not increasing" in str(err) and str(table.source) in str(err)
    )


def test_nan_gap_says_where(tmp_path):
    t = np.arange(20) * 0.1
    q = np.sin(t)
    q[5:8] = np.nan
    q[12] = np.nan
    table = _csv(tmp_path, {"t": t, "q": q})
    with pytest.raises(LogError) as info:
        prepare_log(table, LogMapping(time="t", q=["q"]), PrepareConfig(window=5, polyorder=2))
    err = info.value
    assert (err.line, err.column) == (8, "q")
    assert "3 missing value(s) at lines 8 to 10" in str(err) and "2 gaps" in str(err)


def test_missing_column_suggests_close_names(tmp_path):
    table = _csv(tmp_path, {"t": np.arange(5.0), "theta": np.arange(5.0)})
    with pytest.raises(LogError) as info:
        prepare_log(table, LogMapping(time="t", q=["thetta"]))
    assert info.value.column == "thetta" and "did you mean 'theta'" in str(info.value)


def test_mapping_mismatched_lengths_and_bad_units():
    with pytest.raises(LogError) as info:
        LogMapping(time="t", q=["a", "b"], qd=["ad"])
    assert info.value.column == "qd" and "mismatched lengths" in str(info.value)
    with pytest.raises(LogError) as info:
        LogMapping(time="t", q=["a"], units={"a": "furlong"})
    assert "unknown unit 'furlong'" in str(info.value)
    with pytest.raises(LogError):
        LogMapping(time=None, q=["a"])  # no time column and no sample period


def test_mapping_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text('{"time": "t",\n "q": ["x"],,}')
    with pytest.raises(LogError) as info:
        LogMapping.load(bad)
    assert info.value.path == str(bad) and info.value.line == 2
    bad.write_text('{"time": "t", "q": ["x"], "colour": 1}')
    with pytest.raises(LogError) as info:
        LogMapping.load(bad)
    assert info.value.column == "colour"


def test_table_with_mismatched_columns_is_refused():
    with pytest.raises(LogError) as info:
        LogTable(["a", "b"], {"a": np.zeros(3), "b": np.zeros(4)}, source="mem.csv")
    assert info.value.column == "b"


def test_pandas_written_garbage_column(tmp_path):
    pd.DataFrame({"t": [0.0, 1.0], "s": ["x", "y"]}).to_csv(tmp_path / "g.csv", index=False)
    err = _error(tmp_path / "g.csv")
    assert (err.line, err.column) == (2, "s")
