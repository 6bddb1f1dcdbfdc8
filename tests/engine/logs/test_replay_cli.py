"""`python -m engine logs replay`: a log nobody prepared (renamed columns, degrees, ms) on the Panda."""

from __future__ import annotations

import json

import imageio.v2 as iio
import numpy as np
import pandas as pd

from engine.cli import main
from engine.paths import resource


def test_replay_cli_matches_renamed_degrees_and_writes_mp4(tmp_path, capsys):
    df = pd.read_csv(resource("logs", "panda_joints.csv"), comment="#")
    out = pd.DataFrame({"time_ms": df.t * 1e3})
    for i in range(1, 8):
        out[f"J{i}_pos"] = np.degrees(df[f"q{i}"])
        out[f"J{i}_tau"] = df[f"tau{i}"]
    log = tmp_path / "arm.csv"
    out.to_csv(log, index=False)
    code = main(
        [
            "logs",
            "replay",
            str(log),
            "--robot",
            "panda",
            "--video",
            str(tmp_path / "a.mp4"),
            "--fps",
            "10",
            "--start",
            "1.0",
            "--end",
            "1.5",
            "--width",
            "160",
            "--height",
            "128",
            "--save-mapping",
            str(tmp_path / "m.json"),
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["joints"] == [f"panda_joint{i}" for i in range(1, 8)]
    assert summary["q"] == [f"J{i}_pos" for i in range(1, 8)] and summary["u"] == [
        f"J{i}_tau" for i in range(1, 8)
    ]
    assert summary["units"]["J1_pos"] == "deg" and summary["units"]["time_ms"] == "ms"
    assert summary["duration"] == 30.0 and summary["videos"][0]["frames"] == 6
    assert iio.get_reader(tmp_path / "a.mp4").count_frames() == 6
    # the saved mapping replays the same way
    code = main(
        ["logs", "replay", str(log), "--robot", "panda", "--mapping", str(tmp_path / "m.json"), "--json"]
    )
    assert code == 0 and json.loads(capsys.readouterr().out)["q"] == summary["q"]


def test_replay_cli_errors_name_the_problem(tmp_path, capsys):
    log = tmp_path / "x.csv"
    log.write_text("t,voltage\n0,1\n1,2\n")
    assert main(["logs", "replay", str(log), "--robot", "panda"]) == 2
    assert "no column matches a joint" in capsys.readouterr().err
    assert main(["logs", "replay", str(log), "--robot", "pandax"]) == 2
    assert "unknown robot" in capsys.readouterr().err


def test_replay_cli_checks_outputs_before_reading(tmp_path, capsys):
    log = tmp_path / "x.csv"
    log.write_text("t,q1\n0,1\n1,2\n")
    assert main(["logs", "replay", str(log), "--robot", "panda", "--video", str(tmp_path / "a.avi")]) == 2
    assert 'must end in ".mp4"' in capsys.readouterr().err
    assert main(["logs", "replay", str(log), "--robot", "panda", "--gif", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
