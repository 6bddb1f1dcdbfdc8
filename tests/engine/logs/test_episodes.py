"""Logs of several episodes as LeRobot publishes them (a Parquet file written by pyarrow with
``episode_index`` and a per-episode ``timestamp``), end to end through the CLI: ``logs inspect``
lists the episodes and checks time within each, ``logs prepare`` and ``learn compare --log``
build one data set whose windows never cross an episode, ``logs replay --episode K`` plays one."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli import main
from engine.data.log_dataset import log_dataset
from engine.logs import LogMapping, load_prepared

DT = 0.02
LENGTHS = (60, 75, 90, 105)          # frames per episode: each episode identifiable by its length


def _q(t, ep):
    """Joint positions (N, 7) of episode ``ep`` at times ``t``: inside the Panda's limits."""
    return 0.3 * np.sin(np.outer(t, np.arange(1, 8) * 0.5) + ep)


def _lerobot(path, bad_row_in_episode: int | None = None):
    """LeRobot's layout: list columns, float32 timestamp restarting at 0, episode_index, index."""
    rows, index = [], 0
    for ep, n in enumerate(LENGTHS):
        t = np.arange(n) * DT
        if ep == bad_row_in_episode:
            t[10] = t[9]                       # one repeated timestamp inside the episode
        q = _q(t, ep)
        for k in range(n):
            rows.append({"observation.state": q[k].astype(np.float32).tolist(),
                         "action": (0.5 * q[k]).astype(np.float32).tolist(),
                         "timestamp": np.float32(t[k]), "frame_index": k, "episode_index": ep,
                         "index": index, "task_index": 0})
            index += 1
    schema = pa.schema([("observation.state", pa.list_(pa.float32(), 7)), ("action", pa.list_(pa.float32(), 7)),
                        ("timestamp", pa.float32()), ("frame_index", pa.int64()), ("episode_index", pa.int64()),
                        ("index", pa.int64()), ("task_index", pa.int64())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=64)
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_inspect_lists_episodes_and_checks_time_within_each(tmp_path, capsys):
    log = _lerobot(tmp_path / "episodes.parquet")
    code, out, _ = _run(capsys, "logs", "inspect", log, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["ok"] and summary["problems"] == []     # the clock restarts are no problem
    assert summary["episode_column"] == "episode_index"
    assert [e["episode"] for e in summary["episodes"]] == [0, 1, 2, 3]
    assert [e["rows"] for e in summary["episodes"]] == list(LENGTHS)
    for e, n in zip(summary["episodes"], LENGTHS):
        assert e["duration"] == pytest.approx((n - 1) * DT, rel=1e-5)
        assert e["rate_hz"] == pytest.approx(1 / DT, rel=1e-4)
    assert summary["duration"] == pytest.approx(sum(n - 1 for n in LENGTHS) * DT, rel=1e-5)
    code, out, _ = _run(capsys, "logs", "inspect", log)
    assert code == 0 and "4 episodes in column 'episode_index' (60 to 105 rows each)" in out
    assert "episode 3: 105 rows, 2.08 s, 50 Hz" in out

    bad = _lerobot(tmp_path / "bad.parquet", bad_row_in_episode=2)
    code, out, _ = _run(capsys, "logs", "inspect", bad, "--json")
    problems = json.loads(out)["problems"]
    assert code == 1 and [p["kind"] for p in problems] == ["time"]       # the one real fault, not the restarts
    assert "not increasing in episode 2" in problems[0]["message"]
    assert problems[0]["row"] == LENGTHS[0] + LENGTHS[1] + 10
    code, out, _ = _run(capsys, "logs", "inspect", bad, "--episode", "1", "--json")
    assert code == 0 and json.loads(out)["rows"] == LENGTHS[1]


def _mapping(tmp_path, joints=7):
    path = tmp_path / "mapping.json"
    LogMapping(time="timestamp", q=[f"observation.state[{i}]" for i in range(joints)],
               u=[f"action[{i}]" for i in range(joints)]).save(path)
    return path


def test_prepare_keeps_episodes_apart_and_holds_out_the_last(tmp_path, capsys):
    log = _lerobot(tmp_path / "episodes.parquet")
    mapping = _mapping(tmp_path)
    out_npz = tmp_path / "prepared.npz"
    code, out, _ = _run(capsys, "logs", "prepare", log, "--mapping", mapping, "--out", out_npz, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["episodes"] == [0, 1, 2, 3] and summary["val_episodes"] == [3]
    prepared = load_prepared(out_npz)
    assert prepared.data_hash == summary["data_hash"]
    counts = [int((prepared.episode == e).sum()) for e in range(4)]
    assert counts == list(LENGTHS)
    np.testing.assert_array_equal(prepared.val_mask, prepared.episode == 3)
    np.testing.assert_array_equal(prepared.train_mask, prepared.episode != 3)
    # each episode on its own clock, resampled on its own: the positions are that episode's
    for e, n in enumerate(LENGTHS):
        rows = prepared.episode == e
        np.testing.assert_allclose(prepared.t[rows], np.arange(n) * DT, atol=1e-5)
        np.testing.assert_allclose(prepared.q[rows], _q(np.arange(n) * DT, e), atol=2e-4)
    steps = 16
    data = log_dataset(prepared, steps=steps, horizon=20)
    # training chunks (steps + 2 samples) are cut from each training episode on its own (run
    # together, the 225 samples of episodes 0-2 would give 13 chunks, some across a restart)
    assert len(data.train_x) == sum((n - (steps + 2)) // steps + 1 for n in LENGTHS[:3]) == 12
    first = prepared.segments(prepared.train_mask)
    assert [(s.start, s.stop) for s in first] == [(0, 60), (60, 135), (135, 225)]
    long_dt = np.diff(data.long_t, axis=1)
    np.testing.assert_allclose(long_dt, DT, atol=1e-5)                  # rollout chunks inside episode 3
    text_code, text, _ = _run(capsys, "logs", "prepare", log, "--mapping", mapping, "--out", out_npz)
    assert text_code == 0 and "4 episodes, each its own run" in text and "validation: episodes [3]" in text
    # one episode only, and the time ranges within every episode
    code, out, _ = _run(capsys, "logs", "prepare", log, "--mapping", mapping, "--out", out_npz, "--episode", "2",
                        "--json")
    assert code == 0 and json.loads(out)["samples"] == LENGTHS[2] and json.loads(out)["episodes"] == []
    code, out, _ = _run(capsys, "logs", "prepare", log, "--mapping", mapping, "--out", out_npz,
                        "--val-range", "1.0", "9.0", "--json")
    prepared = load_prepared(out_npz)
    assert code == 0 and json.loads(out)["val_episodes"] == []
    np.testing.assert_array_equal(prepared.val_mask, prepared.t >= 1.0 - 1e-9)


def test_learn_compare_on_episodes_trains_on_the_same_data_set(tmp_path, capsys):
    log = _lerobot(tmp_path / "episodes.parquet")
    mapping = _mapping(tmp_path, joints=2)
    code, out, _ = _run(capsys, "logs", "prepare", log, "--mapping", mapping, "--out", tmp_path / "p.npz", "--json")
    assert code == 0
    data_hash = json.loads(out)["data_hash"]
    code, out, err = _run(capsys, "learn", "compare", "--log", log, "--mapping", mapping, "--models", "mlp",
                          "--epochs", "1", "--steps", "8", "--horizon", "10", "--hidden", "8", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["data_hash"] == data_hash                 # the episode-aware preparation, not a mixed clock
    assert row.get("error") is None and np.isfinite(row["test_mse"])


def test_replay_plays_one_episode(tmp_path, capsys):
    log = _lerobot(tmp_path / "episodes.parquet")
    code, out, _ = _run(capsys, "logs", "replay", log, "--robot", "panda", "--json")
    summary = json.loads(out)
    assert code == 0 and (summary["episode"], summary["n_episodes"]) == (0, 4)
    assert summary["samples"] == LENGTHS[0] and any("1 of 4 episodes" in n for n in summary["notes"])
    code, out, _ = _run(capsys, "logs", "replay", log, "--robot", "panda", "--episode", "2", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["episode"] == 2 and summary["samples"] == LENGTHS[2]
    assert summary["duration"] == pytest.approx((LENGTHS[2] - 1) * DT, rel=1e-5)
    code, out, _ = _run(capsys, "logs", "replay", log, "--robot", "panda", "--episode", "2")
    assert code == 0 and "episode 2 of 4" in out
    code, _, err = _run(capsys, "logs", "replay", log, "--robot", "panda", "--episode", "9")
    assert code == 2 and "no episode 9; the file has 4 episode(s): 0, 1, 2, 3" in err
