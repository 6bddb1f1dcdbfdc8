"""A column the mapping does not use never refuses a log; one it uses must be unambiguous and
readable (issue 34): a CSV header that repeats a name, a Parquet file with nested columns."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli import main
from engine.logs import LogError, LogMapping, PrepareConfig, ReadOptions, prepare_log, read_log
from engine.logs.inspect import inspect_log

_T = np.arange(200) * 0.01


def _theta_twice(path):
    """A header with two ``theta`` columns that differ in sign."""
    lines = ["t,theta,theta,tau"] + [f"{t:.2f},{np.sin(t):.6f},{-np.sin(t):.6f},{np.cos(t):.4f}" for t in _T]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_mapping_of_a_repeated_csv_column_is_refused_naming_file_and_column(tmp_path):
    path = _theta_twice(tmp_path / "twice.csv")
    table = read_log(path)
    assert table.columns == ["t", "theta_1", "theta_2", "tau"]
    with pytest.raises(LogError) as info:
        prepare_log(table, LogMapping(time="t", q=["theta"], u=["tau"]), PrepareConfig(window=5, polyorder=2))
    message = str(info.value)
    assert "twice.csv" in message and "repeats column 'theta'" in message
    assert "'theta_1', 'theta_2'" in message and info.value.column == "theta"
    # the episode selection and the gap splitter keep the ambiguity (a copy of the table)
    assert read_log(path, options=ReadOptions(episode=None)).repeated == {"theta": ["theta_1", "theta_2"]}
    # naming the copy is a choice: the second theta is the negated one
    prepared = prepare_log(
        table, LogMapping(time="t", q=["theta_2"], u=["tau"]), PrepareConfig(window=5, polyorder=2)
    )
    np.testing.assert_allclose(prepared.q[:, 0], -np.sin(prepared.t), atol=2e-5)


def test_logs_prepare_cli_refuses_the_repeated_column_in_one_line(tmp_path, capsys):
    path = _theta_twice(tmp_path / "twice.csv")
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"time": "t", "q": ["theta"], "u": ["tau"]}))
    code = main(["logs", "prepare", str(path), "--mapping", str(mapping), "--out", str(tmp_path / "p.npz")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "twice.csv" in err and "theta" in err and "repeats" in err
    assert not (tmp_path / "p.npz").exists()


def _parquet_with_nested(path, ragged=False):
    state = [[float(np.sin(t)), float(np.cos(t))] for t in _T]
    if ragged:
        state[50] = [1.0]
    table = pa.table({
        "timestamp": _T, "observation.state": state, "action": np.cos(_T),
        "meta": [{"camera": "front", "gain": 2}] * len(_T),          # struct: never numbers
        "label": ["walk"] * len(_T),                                 # strings
        "tags": [[[1.0], [2.0]]] * len(_T),                          # a list of lists
    })
    pq.write_table(table, path, row_group_size=64)
    return path


def test_unused_nested_parquet_columns_are_skipped_with_a_note(tmp_path):
    path = _parquet_with_nested(tmp_path / "nested.parquet")
    table = read_log(path)
    assert table.columns == ["timestamp", "observation.state[0]", "observation.state[1]", "action"]
    assert list(table.skipped) == ["meta", "label", "tags"]
    np.testing.assert_allclose(table["observation.state[1]"], np.cos(_T))
    summary = inspect_log(path)
    assert summary["ok"]
    assert any(n.startswith("skipped column 'meta'") and "struct" in n for n in summary["notes"])
    prepared = prepare_log(table, LogMapping(time="timestamp", q=["observation.state[0]"], u=["action"]),
                           PrepareConfig(window=5, polyorder=2))
    np.testing.assert_allclose(prepared.q[:, 0], np.sin(prepared.t), atol=1e-6)  # smoothed at the ends
    # a mapping that uses a skipped column is refused with the reason
    with pytest.raises(LogError, match=r"nested.parquet.*column for q cannot be read: its type struct"):
        prepare_log(table, LogMapping(time="timestamp", q=["meta"]), PrepareConfig(window=5, polyorder=2))


def test_logs_inspect_prints_the_skipped_columns(tmp_path, capsys):
    path = _parquet_with_nested(tmp_path / "nested.parquet")
    assert main(["logs", "inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "skipped column 'tags'" in out


def test_a_ragged_list_column_is_skipped_and_a_file_of_no_numbers_is_refused(tmp_path):
    table = read_log(_parquet_with_nested(tmp_path / "ragged.parquet", ragged=True))
    assert (
        "observation.state" in table.skipped and "row 50 holds 1 values" in table.skipped["observation.state"]
    )
    assert table.columns == ["timestamp", "action"]
    pq.write_table(pa.table({"label": ["a", "b"], "meta": [{"x": 1}, {"x": 2}]}), tmp_path / "words.parquet")
    with pytest.raises(
        LogError, match=r"words.parquet: no column can be read as numbers \('label': its type string"
    ):
        read_log(tmp_path / "words.parquet")
