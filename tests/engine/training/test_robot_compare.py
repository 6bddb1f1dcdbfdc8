"""`learn compare --robot`: one table with torque and rollout metrics for every model, on a log
MuJoCo simulated (tests/engine/identification/mujoco_arm.py: friction, armature, masses off).

The references: MuJoCo's log (the logged torques and states), its noise level (known), and the
robot file as it is (the ``urdf`` row) as the baseline the identified rigid body must beat.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("mujoco")

from engine.cli import main  # noqa: E402
from tests.engine.identification import mujoco_arm  # noqa: E402

MODELS = "urdf,rigid-body,hybrid-rk4,node-rk4,lnode-rk4,mlp,symo,robot-rk4"


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    return mujoco_arm.write_log(tmp_path_factory.mktemp("arm3log"), seconds=8.0, shuffle=True)


def test_compare_with_a_robot_gives_both_metrics_in_one_table(log, tmp_path, capsys):
    csv, mapping = log
    out = tmp_path / "cmp"
    assert main(["learn", "compare", "--log", str(csv), "--mapping", str(mapping), "--robot",
                 str(mujoco_arm.URDF), "--models", MODELS, "--epochs", "2", "--hidden", "16", "--horizon", "100",
                 "--save", str(out), "--json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows) == MODELS.split(",")
    noise = rows["urdf"]["noise_level"]
    assert not any(n.startswith("warning") for n in rows["urdf"]["notes"])   # N m, as the robot's torques
    assert noise == pytest.approx(mujoco_arm.TAU_NOISE, rel=0.2)
    for name, r in rows.items():
        assert "error" not in r, (name, r.get("error"))
        assert math.isfinite(r["integration_mse"]) and r["noise_level"] == noise
        assert set(r["rollout_rmse"]) == {"0.1", "0.5"}      # 100 steps at 200 Hz reach 0.5 s, not 1 s
        if name in ("urdf", "rigid-body", "hybrid-rk4", "lnode-rk4", "robot-rk4"):
            assert math.isfinite(r["torque_rmse"]) and len(r["torque_rmse_per_joint"]) == 3
        else:   # forward and discrete models say why they give no torque
            assert r["torque_rmse"] is None and r["torque_note"]
    rb, urdf = rows["rigid-body"], rows["urdf"]
    # over the sliding samples (MuJoCo's dry friction sticks near rest) the identified robot does better still
    assert rb["torque_rmse_sliding"] < rb["torque_rmse"] and len(rb["torque_rmse_sliding_per_joint"]) == 3
    # identified from the torques: within ~2x the noise, and its rollouts far better than the URDF's
    assert rb["torque_rmse"] < 2.5 * noise < urdf["torque_rmse"] / 5
    assert rb["rollout_rmse"]["0.5"] < 0.2 * urdf["rollout_rmse"]["0.5"]
    assert rb["identified"]["joints"]["joint2"]["coulomb"] == pytest.approx(0.30, rel=0.15)
    # the hybrid starts as the identified robot (its residual's last layer at zero) and trains the residual only
    assert rows["hybrid-rk4"]["torque_rmse"] < 1.5 * rb["torque_rmse"]
    # the Lagrangian models report their learned friction, and their potential is scaled to the log's
    # torques (the RMS of the effort columns, N m; the training part of the log, so within a few %)
    for name in ("lnode-rk4", "symo"):
        assert set(rows[name]["learned_dissipation"]) == {"damping", "coulomb", "offset"}
        assert all(v > 0 for v in rows[name]["learned_dissipation"]["damping"])
    effort = np.loadtxt(csv, delimiter=",", skiprows=1)[:, 7:10]
    spec = json.loads((out / "runs" / "lnode-rk4" / "model.json").read_text())["hyperparameters"]
    assert spec["potential_scale"] == pytest.approx(float(np.sqrt(np.mean(effort ** 2))), rel=0.1)
    # L-NODE starts on top of the identified rigid body (the default prior) and keeps its best weights
    assert spec["lagrangian_prior"] == "robot" and spec["robot"] == rb["saved_urdf"]
    assert rows["lnode-rk4"]["torque_rmse"] < 1.5 * rb["torque_rmse"]
    # --save (--out) keeps the identified robot as URDF + actuation JSON beside it
    assert (out / "runs" / "rigid-body" / "rigid_body.urdf").is_file()
    assert (out / "runs" / "rigid-body" / "rigid_body.actuation.json").is_file()
    assert json.loads((out / "compare.json").read_text())["info"]["robot"] == str(mujoco_arm.URDF)


def test_mismatched_joints_and_missing_robot_are_refused_before_any_training(log, tmp_path, capsys):
    csv, mapping = log
    # the panda has 7 joints named panda_joint1..7: the log's three columns do not match
    assert main(["learn", "compare", "--log", str(csv), "--mapping", str(mapping), "--robot", "panda",
                 "--models", "robot-rk4", "--json"]) == 2
    err = capsys.readouterr().err
    assert "do not match 'panda'" in err and "'panda_joint7'" in err and "Traceback" not in err
    assert main(["learn", "compare", "--log", str(csv), "--mapping", str(mapping), "--models", "node-rk4,robot-rk4",
                 "--json"]) == 2
    err = capsys.readouterr().err
    assert "robot-rk4: these models need the robot" in err and "--robot" in err


def test_learn_train_takes_a_named_robot_and_refuses_one_that_does_not_fit(tmp_path, capsys):
    import shutil

    from engine.paths import urdf_dir

    mine = tmp_path / "my_pendulum.urdf"
    shutil.copy(urdf_dir() / "pendulum.urdf", mine)
    assert main(["learn", "train", "--system", "pendulum", "--model", "robot-rk4", "--robot", str(mine),
                 "--epochs", "2", "--trajectories", "2", "--out", str(tmp_path / "run"), "--json"]) == 0
    meta = json.loads((tmp_path / "run" / "model.json").read_text())
    assert meta["hyperparameters"]["robot"] == str(mine)
    capsys.readouterr()
    assert main(["learn", "train", "--system", "pendulum", "--model", "robot-rk4", "--robot", str(mujoco_arm.URDF),
                 "--epochs", "2", "--trajectories", "2"]) == 2
    assert "the robot has 3 movable joints, the model spec 1 coordinates" in capsys.readouterr().err


def test_torques_in_the_wrong_unit_are_warned_about(tmp_path, capsys):
    import numpy as np

    csv, mapping = mujoco_arm.write_log(tmp_path, seconds=6.0, shuffle=False)
    data = np.genfromtxt(csv, delimiter=",", names=True)
    header = ",".join(data.dtype.names)
    rows = np.column_stack([data[n] * (1000.0 if n.endswith("effort") else 1.0) for n in data.dtype.names])
    np.savetxt(csv, rows, delimiter=",", header=header, comments="", fmt="%.9g")   # mN m, labelled N m
    assert main(["learn", "compare", "--log", str(csv), "--mapping", str(mapping), "--robot", str(mujoco_arm.URDF),
                 "--models", "urdf", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert any(n.startswith("warning: the logged torques are") and "mN m" in n for n in row["notes"])
