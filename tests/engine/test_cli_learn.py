"""`python -m engine learn ...`: the sweep JSON schema, reproduce's files, train and data commands."""

import json
import math

import pytest
import torch

from engine.cli import main

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU

ROW = {"model": str, "system": str, "trajectories": int, "seed": int, "train_mse": float, "test_mse": float,
       "integration_mse": float, "energy_mse": float, "inertia_mse": (float, type(None)), "seconds": float}


def _check_rows(rows, models, ns):
    assert isinstance(rows, list) and len(rows) == len(models) * len(ns)
    for r in rows:
        assert set(ROW) <= set(r)
        for k, t in ROW.items():
            assert isinstance(r[k], t) or (r[k] is None and k.endswith("_mse")), (k, r[k])
        assert r["system"] == "pendulum" and r["model"] in models and r["trajectories"] in ns
    assert {(r["model"], r["trajectories"]) for r in rows} == {(m, n) for m in models for n in ns}
    for r in rows:
        assert (r["inertia_mse"] is None) == r["model"].startswith("node")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "d.npz"
    assert main(["learn", "data", "--system", "pendulum", "--trajectories", "8", "--test-trajectories", "2",
                 "--long-term-steps", "10", "--out", str(path), "--json"]) == 0
    return path


def test_data_command(data):
    desc = json.loads((data.with_suffix(".json")).read_text())
    assert desc["shapes"]["train_x"] == [8, 34, 2] and desc["shapes"]["long_x"] == [16, 12, 2]


def test_sweep_json_schema_with_local_processes(data, tmp_path, capsys):
    capsys.readouterr()
    assert (
        main(
            [
                "learn",
                "sweep",
                "--system",
                "pendulum",
                "--models",
                "node-rk4,e2e-symo",
                "--trajectories",
                "1,2",
                "--epochs",
                "2",
                "--data",
                str(data),
                "--workers",
                "2",
                "--out",
                str(tmp_path / "sw"),
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    _check_rows(rows, ["node-rk4", "e2e-symo"], [1, 2])
    assert (tmp_path / "sw" / "results.csv").exists() and (
        tmp_path / "sw" / "runs" / "e2e-symo-N2-s0" / "model.json"
    ).exists()


def test_reproduce_writes_table_and_figure(data, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "rep"
    assert (
        main(
            [
                "learn",
                "reproduce",
                "symo-pendulum",
                "--epochs",
                "1",
                "--trajectories",
                "8",
                "--models",
                "symo,lnode-midpoint",
                "--executor",
                "inline",
                "--data",
                str(data),
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    _check_rows(result["rows"], ["symo", "lnode-midpoint"], [8])
    assert result["comparison"][0]["paper_integration_mse"] == 0.023
    png = (out / "figure.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    table = json.loads((out / "results.json").read_text())
    assert [r["model"] for r in table] == ["symo", "lnode-midpoint"]
    assert (
        (out / "results.csv")
        .read_text()
        .splitlines()[0]
        .startswith("model,system,trajectories,seed,train_mse")
    )


def test_train_command_and_bad_input(tmp_path, capsys):
    assert main(["learn", "train", "--model", "mlp", "--trajectories", "2", "--epochs", "2", "--hidden", "16",
                 "--out", str(tmp_path / "m"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["row"]["model"] == "mlp" and math.isfinite(out["row"]["test_mse"])
    assert (tmp_path / "m" / "model.safetensors").exists()
    assert main(["learn", "train", "--model", "mlp", "--data", str(tmp_path / "missing.npz")]) == 2
    assert "missing.npz" in capsys.readouterr().err


def test_bench_learn_json_schema(capsys):
    assert (
        main(["bench", "learn", "--json", "--steps", "1", "--epochs", "10", "--models", "node-midpoint"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out["steps_per_second"]) == {"node-midpoint"}
    assert all(v > 0 for v in out["steps_per_second"].values())
    assert out["estimated_reproduction_minutes"] > 0 and out["workers"] >= 1


def test_bench_learn_refuses_meaningless_sizes_before_measuring(capsys):
    for flag, value in (("--steps", "0"), ("--workers", "0"), ("--epochs", "-1")):
        assert main(["bench", "learn", "--json", "--models", "node-midpoint", flag, value]) == 2
        err = capsys.readouterr().err.strip()
        assert flag in err and "must be between" in err and len(err.splitlines()) == 1, err


def test_acrobot_data_train_and_reproduce(tmp_path, capsys):
    """The third system end to end: its data, one trained model, and ``reproduce symo-acrobot`` (no
    published values: an empty comparison; the figure compared is the whole-state MSE)."""
    data = tmp_path / "acro.npz"
    assert main(["learn", "data", "--system", "acrobot", "--trajectories", "2", "--test-trajectories", "2",
                 "--long-term-steps", "10", "--out", str(data), "--json"]) == 0
    desc = json.loads(capsys.readouterr().out)
    assert desc["h"] == 0.05 and desc["system"]["name"] == "acrobot"
    assert desc["shapes"]["train_x"] == [2, 34, 4] and desc["shapes"]["long_x"] == [16, 12, 4]
    assert (
        main(
            [
                "learn",
                "train",
                "--system",
                "acrobot",
                "--model",
                "symo",
                "--trajectories",
                "2",
                "--epochs",
                "2",
                "--hidden",
                "16",
                "--data",
                str(data),
                "--out",
                str(tmp_path / "m"),
                "--json",
            ]
        )
        == 0
    )
    row = json.loads(capsys.readouterr().out)["row"]
    assert row["system"] == "acrobot" and row["model"] == "symo" and math.isfinite(row["test_mse"])
    model_json = json.loads((tmp_path / "m" / "model.json").read_text())
    assert "acrobot" in json.dumps(model_json)
    out = tmp_path / "rep"
    assert (
        main(
            [
                "learn",
                "reproduce",
                "symo-acrobot",
                "--epochs",
                "1",
                "--trajectories",
                "2",
                "--models",
                "node-rk4",
                "--executor",
                "inline",
                "--data",
                str(data),
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert [(r["system"], r["model"], r["trajectories"]) for r in result["rows"]] == [
        ("acrobot", "node-rk4", 2)
    ]
    assert result["comparison"] == [] and json.loads((out / "comparison.json").read_text()) == []
    assert json.loads((out / "results.json").read_text())[0]["integration_mse_state"] is not None
