"""experiments.robot_learning: the whole script on a tiny MuJoCo log of the Panda (3 s, one epoch,
three models), and its goal bookkeeping on a made-up report whose answers are known."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from engine.data.example_logs import write_example
from engine.data.mujoco_logs import PandaFrictionLogConfig, panda_friction_log
from experiments import robot_learning


def test_the_experiment_runs_on_a_tiny_log_and_writes_its_report(tmp_path):
    paths = write_example(panda_friction_log(replace(PandaFrictionLogConfig(), duration=3.0)), tmp_path / "log")
    csv, mapping, _, params = paths
    out = tmp_path / "out"
    assert robot_learning.main(["--log", str(csv), "--mapping", str(mapping), "--params", str(params),
                                "--models", "urdf,rigid-body,mlp", "--epochs", "1", "--horizon", "20",
                                "--timing-seconds", "0", "--out", str(out)]) == 0
    report = json.loads((out / "robot_learning.json").read_text())
    assert report["truth"] == json.loads(params.read_text())
    goals = {g["goal"]: g for g in report["goals"]}
    assert any(k.startswith("identified rigid body") for k in goals)
    assert any(k.startswith("the whole comparison") for k in goals)
    rows = {r["model"]: r for r in robot_learning._rows(report["compare"])}
    assert set(rows) == {"urdf", "rigid-body", "mlp"}
    # on a log with friction and armature the identified robot's torques beat the URDF's
    assert rows["rigid-body"]["torque_rmse"] < rows["urdf"]["torque_rmse"]
    assert math.isfinite(report["identify"]["torque_rmse_validation"]["learned"])
    # physically consistent: a mass the fit drives below zero is held at the URDF's (from_log)
    assert all(p["identified"] > 0 for p in report["identify"]["parameters"] if p["kind"] == "mass")
    readme = (out / "README.md").read_text()
    assert "| panda_joint1 |" in readme and "load average" in readme and "| mlp |" in readme


def _report(rmse, damping, mass2, hybrid_torque, rollouts, sliding=0.12):
    truth = {"joints": [f"j{i}" for i in range(7)], "damping": [1.0] * 7, "coulomb": [1.0] * 7,
             "armature": [1.0] * 7, "links": ["l1", "l2"], "mass": [2.0, 4.0]}
    ident = {"torque_rmse_validation": {"learned": rmse, "nominal": 1.0}, "noise_level": 0.1,
             "torque_rmse_validation_sliding": {"learned": sliding, "nominal": 1.0},
             "joint_values": {"damping": [damping] * 7, "coulomb": [1.1] * 7, "armature": [0.9] * 7},
             "parameters": [{"kind": "mass", "link": "l1", "identified": 0.0, "identifiable": False},
                            {"kind": "mass", "link": "l2", "identified": mass2, "identifiable": True}]}
    compare = [{"model": "rigid-body", "torque_rmse": 0.2, "rollout_rmse": {"1": rollouts["rigid-body"]}},
               {"model": "hybrid-rk4", "torque_rmse": hybrid_torque, "rollout_rmse": {"1": rollouts["hybrid-rk4"]}},
               {"model": "node-rk4", "torque_rmse": None, "rollout_rmse": {"1": rollouts["node-rk4"]}}]
    floor = {"all": [0.2] * 7, "sliding": [0.11] * 7, "sliding_share": 0.8}
    return {"identify": ident, "truth": truth, "truth_torque_rmse": floor, "compare": compare, "compare_wall_s": 700.0,
            "timing": {"log_seconds": 60, "rate": 200, "identification_s": 4.0}}


def test_goals_are_judged_by_their_thresholds():
    good = robot_learning.evaluate_goals(_report(0.14, 1.15, 4.3, 0.2, {"rigid-body": 0.1, "hybrid-rk4": 0.1,
                                                                         "node-rk4": 0.5}))
    assert [g["met"] for g in good] == [True, True, True, True, True, True, True, True, True, False]
    bad = robot_learning.evaluate_goals(_report(0.16, 1.25, 4.5, 0.3, {"rigid-body": 0.1, "hybrid-rk4": 0.1,
                                                                        "node-rk4": 0.05}, sliding=0.16))
    assert [g["met"] for g in bad] == [False, False, False, True, True, False, False, False, True, False]
    # the two torque goals: every sample (not met here) and the sliding samples (met), each with the truth's
    mixed = robot_learning.evaluate_goals(_report(0.2, 1.0, 4.0, 0.2, {"rigid-body": 0.1, "hybrid-rk4": 0.1,
                                                                        "node-rk4": 0.5}, sliding=0.13))
    assert [g["met"] for g in mixed[:2]] == [False, True]
    assert "2.00 x noise" in mixed[0]["figure"] and "given the truth: 2.00 x" in mixed[0]["figure"]
    assert "1.30 x noise" in mixed[1]["figure"] and "80 %" in mixed[1]["figure"]
