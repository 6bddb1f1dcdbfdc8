"""Logs at the edges: time gaps, absurd resampling steps, bad delimiters, pipes and devices,
UTF-16 and BOMs, and the messages the command line gives for them."""

from __future__ import annotations

import os

import numpy as np
import pytest

from engine.cli import main
from engine.logs import LogError, LogMapping, PrepareConfig, prepare_log, read_log
from engine.logs.inspect import inspect_log
from engine.logs.reader import ReadOptions
from engine.logs.writers import write_csv
from engine.validation import InputError


def _csv_text(n=400, dt=0.01):
    t = np.arange(n) * dt
    return "t,q,u\n" + "".join(f"{a:.6f},{np.sin(a):.9f},{np.cos(a):.6f}\n" for a in t)


@pytest.fixture
def mapping_file(tmp_path):
    path = tmp_path / "map.json"
    LogMapping(time="t", q=["q"], u=["u"]).save(path)
    return path


def _with_bogus_timestamp(tmp_path):
    text = _csv_text().splitlines()
    text[-1] = "1e9,0.5,0.1"  # the last line: a timestamp of 1e9 s (line 401)
    path = tmp_path / "gap.csv"
    path.write_text("\n".join(text) + "\n")
    return path


def test_inspect_reports_a_bogus_timestamp_with_its_line(tmp_path):
    summary = inspect_log(_with_bogus_timestamp(tmp_path))
    gaps = [p for p in summary["problems"] if p["kind"] == "gap"]
    assert not summary["ok"] and len(gaps) == 1
    assert gaps[0]["line"] == 401 and gaps[0]["column"] == "t" and "1e+09" in gaps[0]["message"]
    # a regular log has no gap problem
    ok = tmp_path / "ok.csv"
    ok.write_text(_csv_text())
    assert inspect_log(ok)["problems"] == []


def test_prepare_refuses_to_resample_across_a_gap_unless_told(tmp_path):
    table = read_log(_with_bogus_timestamp(tmp_path))
    mapping = LogMapping(time="t", q=["q"], u=["u"])
    with pytest.raises(LogError) as info:
        prepare_log(table, mapping, PrepareConfig())
    assert info.value.line == 401 and "--time-gaps keep" in str(info.value)
    # told to keep it, the bogus span is estimated before any allocation and refused
    with pytest.raises(InputError, match=r"TiB.*--allow-large"):
        prepare_log(table, mapping, PrepareConfig(time_gaps="keep"))
    # a real pause (10 s in a 100 Hz log) is resampled across when asked, with the right span
    t = np.concatenate([np.arange(200) * 0.01, 12.0 + np.arange(200) * 0.01])
    gap = write_csv(tmp_path / "pause.csv", {"t": t, "q": np.sin(t), "u": np.cos(t)})
    table = read_log(gap)
    with pytest.raises(LogError, match="time jumps"):
        prepare_log(table, mapping, PrepareConfig())
    prepared = prepare_log(table, mapping, PrepareConfig(time_gaps="keep", dt=0.01))
    assert prepared.n_samples == pytest.approx((t[-1] - t[0]) / 0.01 + 1, abs=1)


def test_prepare_estimates_memory_before_a_tiny_dt(tmp_path, monkeypatch):
    monkeypatch.delenv("LAGRANGE_MEMORY_BUDGET", raising=False)
    path = tmp_path / "ok.csv"
    path.write_text(_csv_text())
    table = read_log(path)
    mapping = LogMapping(time="t", q=["q"], u=["u"])
    with pytest.raises(InputError) as info:
        prepare_log(table, mapping, PrepareConfig(dt=1e-12))
    assert "3.99e+12 samples x 20 channels" in str(info.value) and "--dt" in str(info.value)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(LogError) as err:
            prepare_log(table, mapping, PrepareConfig(dt=bad))
        assert err.value.setting == "dt" and "(--dt)" in str(err.value)


def test_cli_prepare_gap_tiny_dt_and_out_folder_exit_2(tmp_path, mapping_file, capsys):
    gap = _with_bogus_timestamp(tmp_path)
    out = tmp_path / "out.npz"
    assert main(["logs", "prepare", str(gap), "--mapping", str(mapping_file), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 401" in err and "Traceback" not in err and not out.exists()
    ok = tmp_path / "ok.csv"
    ok.write_text(_csv_text())
    assert (
        main(
            [
                "logs",
                "prepare",
                str(ok),
                "--mapping",
                str(mapping_file),
                "--out",
                str(out),
                "--dt",
                "1e-12",
                "--json",
            ]
        )
        == 2
    )
    assert "--allow-large" in capsys.readouterr().err and not out.exists()
    folder = tmp_path / "folder"
    folder.mkdir()
    assert (
        main(["logs", "prepare", str(ok), "--mapping", str(mapping_file), "--out", str(folder), "--json"])
        == 2
    )
    err = capsys.readouterr().err
    assert f"--out: {folder} is a folder" in err
    assert (
        main(["logs", "prepare", str(ok), "--mapping", str(mapping_file), "--out", str(out), "--json"]) == 0
    )
    assert out.exists()


def test_bad_delimiter_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "ok.csv"
    path.write_text(_csv_text())
    assert main(["logs", "inspect", str(path), "--delimiter", "abc"]) == 2
    err = capsys.readouterr().err
    assert "--delimiter" in err and "'abc'" in err and "Traceback" not in err
    with pytest.raises(LogError, match="--delimiter"):
        read_log(path, options=ReadOptions(delimiter="x"))
    # names of delimiters work
    assert read_log(path, options=ReadOptions(delimiter="comma")).columns == ["t", "q", "u"]
    tsv = tmp_path / "ok.tsv"
    tsv.write_text(_csv_text().replace(",", "\t"))
    assert read_log(tsv, options=ReadOptions(delimiter="tab")).columns == ["t", "q", "u"]


def test_a_fifo_or_device_named_csv_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)  # opening it for reading would block forever: the reader must not
    with pytest.raises(LogError, match="named pipe, not a log file"):
        read_log(fifo)
    summary = inspect_log(fifo)
    assert not summary["ok"] and "named pipe" in summary["problems"][0]["message"]
    with pytest.raises(LogError, match="a device, not a log file"):
        read_log("/dev/null")


@pytest.mark.parametrize("encode", [
    lambda s: s.encode("utf-8"),
    lambda s: b"\xef\xbb\xbf" + s.encode("utf-8"),
    lambda s: s.encode("utf-16"),                      # BOM, native order
    lambda s: b"\xff\xfe" + s.encode("utf-16-le"),
    lambda s: b"\xfe\xff" + s.encode("utf-16-be"),
    lambda s: s.encode("utf-16-le"),                   # no BOM
    lambda s: s.replace("\n", "\r\n").encode("utf-16"),
], ids=["utf8", "utf8-bom", "utf16", "utf16le-bom", "utf16be-bom", "utf16le-nobom", "utf16-crlf"])
def test_text_encodings_read_alike(tmp_path, encode):
    text = _csv_text(n=50) + "# a comment with é\n"
    reference = tmp_path / "ref.csv"
    reference.write_bytes(text.encode("utf-8"))
    path = tmp_path / "enc.csv"
    path.write_bytes(encode(text))
    a, b = read_log(reference), read_log(path, options=ReadOptions(chunk_bytes=64))
    assert a.columns == b.columns == ["t", "q", "u"]
    for c in a.columns:
        np.testing.assert_array_equal(a.data[c], b.data[c])
    np.testing.assert_array_equal(a.row_lines, b.row_lines)


def test_binary_files_keep_the_binary_message(tmp_path):
    for i, data in enumerate([np.arange(1, 3000, dtype="<i2").tobytes(), bytes(range(256)) * 10,
                              b"PK\x03\x04" + bytes(100)]):
        path = tmp_path / f"b{i}.csv"
        path.write_bytes(data)
        with pytest.raises(LogError, match="binary file, not delimited text"):
            read_log(path)
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("t,q\n1,2\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(LogError, match="not UTF-8 text"):
        read_log(latin1)


def test_split_prepares_each_part_and_no_window_straddles_the_gap(tmp_path):
    dt = 0.01
    t = np.concatenate([np.arange(300) * dt, 50.0 + np.arange(200) * dt])    # a 47 s pause
    q = np.sin(t)
    path = write_csv(tmp_path / "pause.csv", {"t": t, "q": q, "u": np.cos(t)})
    table = read_log(path)
    mapping = LogMapping(time="t", q=["q"], u=["u"])
    prepared = prepare_log(table, mapping, PrepareConfig(time_gaps="split"))
    assert prepared.n_samples == 500 and prepared.dt == pytest.approx(dt)
    np.testing.assert_allclose(prepared.t, t, atol=1e-9)
    np.testing.assert_allclose(prepared.q[:, 0], q, atol=1e-6)  # smoothing a sine changes little
    # velocities from each part alone: cos(t), no spike at the gap
    np.testing.assert_allclose(prepared.qd[:, 0], np.cos(t), atol=1e-3)
    assert prepared.description["segments"] == [[0.0, pytest.approx(2.99)], [50.0, pytest.approx(51.99)]]
    for mask in (prepared.train_mask, prepared.val_mask):
        for seg in prepared.segments(mask):
            assert not (prepared.t[seg.start] < 10 < prepared.t[seg.stop - 1])   # never across the gap
    assert not prepared.train_mask[300] and not prepared.val_mask[300]
    # a part too short to prepare is skipped and named; the CLI flag exists
    t2 = np.concatenate([t, 100.0 + np.arange(4) * dt])
    short = read_log(write_csv(tmp_path / "short.csv", {"t": t2, "q": np.sin(t2), "u": np.cos(t2)}))
    prepared = prepare_log(short, mapping, PrepareConfig(time_gaps="split"))
    assert prepared.n_samples == 500 and len(prepared.description["skipped_segments"]) == 1
