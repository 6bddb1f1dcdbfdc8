"""`python -m engine logs ...`: inspect --json, prepare, make-examples."""

from __future__ import annotations

import json

import numpy as np

from engine.cli import main
from engine.logs import LogMapping, load_prepared
from engine.logs.writers import write_csv
from engine.paths import resource


def test_inspect_json_on_a_shipped_log(capsys):
    assert main(["logs", "inspect", str(resource("logs", "cartpole.csv")), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] > 3000 and out["ok"] and out["problems"] == []
    assert [c["name"] for c in out["columns"]] == ["time_ms", "cart_x_mm", "pole_angle_deg", "force_N"]
    assert out["time_column"] == "time_ms" and out["time_unit"] == "ms"
    assert abs(out["rate_hz"] - 100.0) < 1e-6


def test_inspect_reports_problems_and_unreadable_files(tmp_path, capsys):
    q = np.arange(10.0)
    q[3] = np.nan
    t = np.arange(10.0)
    t[7] = 5.0
    path = write_csv(tmp_path / "p.csv", {"t": t, "q": q})
    assert main(["logs", "inspect", str(path), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    kinds = {(p["kind"], p["column"], p["line"]) for p in out["problems"]}
    assert ("nan", "q", 5) in kinds and ("time", "t", 9) in kinds
    bad = tmp_path / "bad.csv"
    bad.write_text("t,x\n1,2\n3,x\n")
    assert main(["logs", "inspect", str(bad), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["problems"][0]["kind"] == "unreadable" and out["problems"][0]["line"] == 3


def test_prepare_writes_a_prepared_log(tmp_path, capsys):
    out_path = tmp_path / "prep.npz"
    code = main(
        [
            "logs",
            "prepare",
            str(resource("logs", "pendulum_friction.csv")),
            "--mapping",
            str(resource("logs", "pendulum_friction.mapping.json")),
            "--out",
            str(out_path),
            "--dt",
            "0.02",
            "--window",
            "9",
            "--val-range",
            "50",
            "60",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    prepared = load_prepared(out_path)
    assert summary["data_hash"] == prepared.data_hash and prepared.dt == 0.02
    assert prepared.t[prepared.val_mask].min() >= 50 and prepared.description["config"]["window"] == 9
    assert (
        summary["n_val"] == int(prepared.val_mask.sum()) and 499 <= summary["n_val"] <= 501
    )  # 50 to 60 s at 50 Hz


def test_prepare_with_a_bad_mapping_fails_cleanly(tmp_path, capsys):
    mapping = tmp_path / "m.json"
    LogMapping(time="t", q=["nope"]).save(mapping)
    code = main(["logs", "prepare", str(resource("logs", "pendulum_friction.csv")), "--mapping", str(mapping),
                 "--out", str(tmp_path / "x.npz")])
    assert code == 2
    err = capsys.readouterr().err
    assert "pendulum_friction.csv" in err and "'nope'" in err
    assert not (tmp_path / "x.npz").exists()


def test_make_examples(tmp_path, capsys):
    assert main(["logs", "make-examples", "--out", str(tmp_path), "--only", "rc_car_mocap", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["written"]
    assert sorted(p.rsplit("/", 1)[1] for p in written) == ["rc_car_mocap.README.md", "rc_car_mocap.csv",
                                                           "rc_car_mocap.mapping.json"]
    # the generator reproduces the shipped files (the first seconds exactly: a drifting car is
    # chaotic, so last-digit differences between CPUs may grow later in the run)
    made = (tmp_path / "rc_car_mocap.csv").read_text().splitlines()
    shipped = resource("logs", "rc_car_mocap.csv").read_text().splitlines()
    assert len(made) == len(shipped) and made[:300] == shipped[:300]
    assert (tmp_path / "rc_car_mocap.README.md").read_text() == resource(
        "logs", "rc_car_mocap.README.md"
    ).read_text()
