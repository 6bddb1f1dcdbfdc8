"""`python -m engine car ...` JSON outputs follow their schemas (small settings)."""

import json

from engine.cli import main


def _run(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _numbers(obj, keys):
    for k in keys:
        assert isinstance(obj[k], (int, float)) and not isinstance(obj[k], bool), k


def test_car_train_plan_mpc_json(tmp_path, capsys):
    out = _run(capsys, ["car", "train", "--out", str(tmp_path / "m"), "--minutes", "0.5", "--epochs", "2",
                        "--hidden", "16", "--layers", "2", "--json"])
    _numbers(out, ["train_loss", "val_loss", "initial_loss", "tve", "samples", "seconds"])
    assert (tmp_path / "m" / "car_model.safetensors").exists()

    out = _run(
        capsys,
        [
            "car",
            "plan",
            "--scenario",
            "drifting-turn",
            "--model",
            str(tmp_path / "m"),
            "--max-iterations",
            "3",
            "--candidates",
            "32",
            "--json",
            "--save",
            str(tmp_path / "plan.json"),
        ],
    )
    assert isinstance(out["converged"], bool)
    _numbers(
        out, ["iterations", "seconds", "final_cost", "executed_position_error", "executed_heading_error"]
    )
    assert [e["step"] for e in out["target_errors"]] == [25, 60]
    assert set(out["target_errors"][0]) == {"step", "position_error", "heading_error"}
    assert json.loads((tmp_path / "plan.json").read_text())["kind"] == "car_plan"

    out = _run(capsys, ["car", "mpc", "--track", "default", "--model", str(tmp_path / "m"), "--laps", "1",
                        "--horizon", "5", "--iterations", "1", "--max-seconds", "0.5", "--json"])
    assert isinstance(out["completed"], bool) and out["completed"] is False and out["lap_time"] is None
    _numbers(out, ["max_track_deviation", "control_rate_hz", "iterations_per_cycle"])


def test_car_select_json(tmp_path, capsys):
    out = _run(capsys, ["car", "select", "--seeds", "1", "--epochs", "1", "--minutes", "0.3",
                        "--out", str(tmp_path), "--json"])
    assert {(r["activation"], r["loss"]) for r in out["table"]} == {
        (a, l) for a in ("gelu", "relu") for l in ("relative", "l1", "l2")}
    assert out["validation_trajectories"] == 40
    assert (tmp_path / "selection.png").read_bytes()[:4] == b"\x89PNG"


def test_car_plan_defaults_to_the_shipped_learned_model(capsys):
    out = _run(capsys, ["car", "plan", "--scenario", "parallel-parking", "--max-iterations", "2",
                        "--candidates", "16", "--json"])
    assert out["model"] == "default" and out["iterations"] <= 2


def test_car_plan_unknown_scenario_is_a_clear_error(capsys):
    assert main(["car", "plan", "--scenario", "no-such", "--json"]) == 2
    assert "unknown scenario" in capsys.readouterr().err
