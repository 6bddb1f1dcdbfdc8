"""engine.training.compare (with engine.data.log_dataset, engine.training.evaluation and the
report writer): logs cut into training data, metrics on a log checked against numpy
references, the compare table end to end on a simulated log, and its CSV / JSON report."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
import torch

from engine.data.log_dataset import LogDataset, log_dataset
from engine.data.windows import make_windows
from engine.logs import LogMapping, PrepareConfig, prepare_log
from engine.logs.table import LogTable
from engine.models.base import LearnedDynamics, ModelSpec
from engine.training.compare import LogCompareConfig, compare_on_log
from engine.training.evaluation import check_compatible, evaluate_on_log
from engine.training.report import rows_to_csv, write_compare_report


def _pendulum_prepared(dt=0.05, duration=20.0, val=(14.0, 20.0)):
    """An exact (noise-free) frictionless pendulum log under a known torque, prepared at ``dt``."""
    from engine.systems.pendulum import Pendulum

    system = Pendulum()
    steps = round(duration / dt)
    t = dt * np.arange(steps + 1)
    u = 0.8 * np.sin(0.7 * t)
    x = system.simulate(np.array([[2.5, 0.3]]), u[None, :-1, None], dt, steps)[0]
    table = LogTable(["t", "theta", "omega", "tau"], {"t": t, "theta": x[:, 0], "omega": x[:, 1], "tau": u},
                     source="sim.csv", format="csv")
    mapping = LogMapping(
        time="t", q=["theta"], qd=["omega"], u=["tau"], units={"theta": "rad", "omega": "rad/s"}
    )
    cfg = PrepareConfig(dt=dt, smooth=False, val_ranges=[list(val)])
    return prepare_log(table, mapping, cfg), x, u


class _Hold(LearnedDynamics):
    """A state model that predicts no change: x_{k+1} = x_k (a reference with known errors)."""

    kind = "state"

    def __init__(self, spec):
        super().__init__(spec)
        self.dummy = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def step(self, x, u):
        return x + 0 * self.dummy


class _TruePendulum(LearnedDynamics):
    """The analytic pendulum integrated with 20 RK4 substeps per step: (nearly) exact predictions."""

    kind = "state"

    def __init__(self, spec):
        super().__init__(spec)
        from engine.systems.pendulum import Pendulum

        self.system = Pendulum()
        self.dummy = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def step(self, x, u):
        h = self.h / 20
        for _ in range(20):
            f = lambda x_: self.system.state_derivative(x_, u)
            k1 = f(x)
            k2 = f(x + 0.5 * h * k1)
            k3 = f(x + 0.5 * h * k2)
            k4 = f(x + h * k3)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return x


def test_log_dataset_uses_every_training_window_once_and_keeps_the_split():
    prepared, _, _ = _pendulum_prepared()
    data = log_dataset(prepared, 8, 10)
    assert data.h == pytest.approx(0.05) and data.system.angle_mask == (True,)
    assert data.train_x.shape[1:] == (10, 2) and data.long_x.shape[1] == 12
    # windows from the chunks == every consecutive triple of the training segment, each once
    seg = prepared.segments(prepared.train_mask)
    assert len(seg) == 1
    s = seg[0]
    x = np.concatenate([prepared.q, prepared.qd], 1)[s]
    n_triples = len(x) - 2
    w = make_windows(data.train_x, data.train_u, 1, torch.float64)
    usable = (n_triples // 8) * 8
    assert len(w) == usable
    ref = make_windows(x[None, : usable + 2], prepared.u[s][None, : usable + 2], 1, torch.float64)
    assert torch.equal(w.q_next, ref.q_next) and torch.equal(w.q_prev, ref.q_prev)
    # no validation sample in a training chunk, no training sample in a validation chunk
    t_val = prepared.t[prepared.val_mask]
    assert data.long_t.min() >= t_val.min() - 1e-12 and data.long_t.max() <= t_val.max() + 1e-12
    assert np.isin(np.round(data.test_x[..., 0], 12), np.round(prepared.q[prepared.val_mask, 0], 12)).all()
    assert not np.isin(
        np.round(data.train_x[..., 0], 12), np.round(prepared.q[prepared.val_mask, 0], 12)
    ).any()


def test_too_short_ranges_are_named():
    prepared, _, _ = _pendulum_prepared(val=(19.0, 20.0))
    with pytest.raises(ValueError, match="validation range.*horizon"):
        log_dataset(prepared, 8, 50)
    with pytest.raises(ValueError, match="steps"):
        LogCompareConfig(steps=0)


def test_metrics_on_a_log_match_numpy_references():
    prepared, _x, _u = _pendulum_prepared()
    data = log_dataset(prepared, 8, 10)
    spec = ModelSpec(h=data.h)
    hold = _Hold(spec).double()
    metrics, _roll = evaluate_on_log(hold, data)
    # hold: one-step error = mean (q_{k+1} - q_k)^2 over validation triples; k-step = (q_{k+10} - q_{k+0})^2
    tq = data.test_x[..., 0]
    assert metrics["test_mse"] == pytest.approx(np.mean((tq[:, 2:] - tq[:, 1:-1]) ** 2), rel=1e-12)
    tqd = data.test_x[..., 1]
    assert metrics["one_step"]["d(theta)/dt"] == pytest.approx(
        np.mean((tqd[:, 2:] - tqd[:, 1:-1]) ** 2), rel=1e-12
    )
    lq = data.long_x[..., 0]
    assert metrics["k_step"]["theta"] == pytest.approx(np.mean((lq[:, -1] - lq[:, 1]) ** 2), rel=1e-12)
    assert metrics["integration_mse"] == pytest.approx(np.mean((lq[:, 2:] - lq[:, 1:2]) ** 2), rel=1e-12)
    assert len(metrics["horizon_mse"]) == 10
    assert metrics["horizon_mse"][0] == pytest.approx(np.mean((lq[:, 2] - lq[:, 1]) ** 2), rel=1e-12)
    assert metrics["energy_mse"] is None and metrics["inertia_mse"] is None
    # the exact model: errors vanish (the log was simulated by the same system)
    exact = _TruePendulum(spec).double()
    m2, roll2 = evaluate_on_log(exact, data)
    assert m2["test_mse"] < 1e-12 and m2["integration_mse"] < 1e-9 and m2["k_step"]["theta"] < 1e-9
    assert roll2["q_pred"].shape == (len(data.long_x), 10, 1)
    assert np.allclose(roll2["t"], data.long_t[:, 2:])


def test_compare_on_log_end_to_end(tmp_path):
    from engine.data.example_logs import PendulumLogConfig, pendulum_log, write_example

    example = pendulum_log(PendulumLogConfig(duration=12.0))
    write_example(example, tmp_path)
    log = tmp_path / "pendulum_friction.csv"
    mapping = tmp_path / "pendulum_friction.mapping.json"
    assert log.exists() and mapping.exists()
    rows = compare_on_log(
        log,
        mapping,
        "mlp,lnode-midpoint",
        epochs=2,
        prepare=PrepareConfig(dt=0.04, window=7),
        config=LogCompareConfig(steps=16, horizon=20, hidden=16),
        runs_dir=tmp_path / "runs",
    )
    assert [r["model"] for r in rows] == ["mlp", "lnode-midpoint"]
    # each model's run folder: its metrics per epoch and its final model, which predicts as in the table
    from engine.models import load_model
    from engine.runs import read_metrics

    for r in rows:
        assert [m["epoch"] for m in read_metrics(tmp_path / "runs" / r["model"])] == [1, 2]
        model, meta = load_model(tmp_path / "runs" / r["model"])
        assert meta["metrics"]["test_mse"] == pytest.approx(r["test_mse"])
    for r in rows:
        for key in ("train_mse", "test_mse", "integration_mse", "seconds"):
            assert math.isfinite(r[key]) and r[key] >= 0
        assert r["energy_mse"] is None and r["inertia_mse"] is None
        assert r["trajectories"] >= 1 and r["epochs"] == 2
        assert set(r["one_step"]) == {"theta", "d(theta)/dt"}
    with pytest.raises(ValueError, match="unknown model type 'nope'"):
        compare_on_log(log, mapping, ["nope"], epochs=1)
    # the report: CSV and JSON with the same rows
    paths = write_compare_report(tmp_path / "report", rows, {"log": str(log)})
    table = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    assert [r["model"] for r in table] == ["mlp", "lnode-midpoint"]
    assert float(table[0]["test_mse"]) == pytest.approx(rows[0]["test_mse"])
    assert table[0]["energy_mse"] == "" and "one_step:theta" in table[0]
    saved = json.loads(paths["json"].read_text())
    assert saved["rows"][1]["model"] == "lnode-midpoint" and saved["info"]["log"] == str(log)


def test_csv_keeps_nan_and_none_apart():
    text = rows_to_csv([{"model": "a", "train_mse": float("nan"), "energy_mse": None, "horizon_mse": [1, 2]}])
    head, row = list(csv.reader(io.StringIO(text)))
    cells = dict(zip(head, row))
    assert cells["train_mse"] == "nan" and cells["energy_mse"] == "" and "horizon_mse" not in cells


def test_check_compatible_names_the_mismatch():
    prepared, _, _ = _pendulum_prepared()
    data: LogDataset = log_dataset(prepared, 8, 10)
    with pytest.raises(ValueError, match="time step"):
        check_compatible(_Hold(ModelSpec(h=0.1)), data)
    with pytest.raises(ValueError, match="configurations"):
        check_compatible(
            _Hold(ModelSpec(dof=2, angle_mask=(True, False), input_matrix=((1.0,), (0.0,)), h=0.05)), data
        )
    check_compatible(_Hold(ModelSpec(h=0.05)), data)


def test_read_log_path_in_compare_uses_the_log_engine(tmp_path):
    # a broken log gives the log engine's error, naming the file
    bad = tmp_path / "bad.csv"
    bad.write_text("t,theta,torque\n0,1,2\n0.1,x,3\n")
    mapping = tmp_path / "m.json"
    LogMapping(time="t", q=["theta"], u=["torque"]).save(mapping)
    with pytest.raises(ValueError, match="bad.csv"):
        compare_on_log(bad, mapping, ["mlp"], epochs=1)


def test_cli_learn_compare_follows_the_table_schema(tmp_path, subprocess_env):
    """`python -m engine learn compare --log ... --json` prints one finite row per model."""
    import json
    import math
    import subprocess
    import sys

    from engine.paths import resource

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "learn",
            "compare",
            "--log",
            str(resource("logs", "pendulum_friction.csv")),
            "--mapping",
            str(resource("logs", "pendulum_friction.mapping.json")),
            "--models",
            "node-rk4,symo",
            "--epochs",
            "2",
            "--json",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=subprocess_env,
        check=True,
        timeout=300,
    ).stdout
    rows = json.loads(out)
    assert [r["model"] for r in rows] == ["node-rk4", "symo"]
    for row in rows:
        for key in ("train_mse", "test_mse", "integration_mse"):
            assert isinstance(row[key], float) and math.isfinite(row[key])
    assert (tmp_path / "compare.csv").read_text().count("\n") >= 3
    assert len(json.loads((tmp_path / "compare.json").read_text())["rows"]) == 2


def test_a_log_has_its_own_place_in_the_training_config():
    from engine.training.compare import train_config_for
    from engine.training.config import TrainConfig

    prepared, _, _ = _pendulum_prepared()
    data = log_dataset(prepared, 8, 10)
    cfg = train_config_for("mlp", data)
    assert cfg.log == data.system.name and cfg.data_name == data.system.name
    assert cfg.system == "pendulum" and TrainConfig.from_dict(cfg.to_dict()) == cfg   # round trip, validated
    assert TrainConfig().log is None and TrainConfig(system="acrobot").data_name == "acrobot"
    for bad in ("", "  ", 3):
        with pytest.raises(ValueError, match="log"):
            TrainConfig(log=bad)
    with pytest.raises(ValueError, match="system"):
        TrainConfig(system=data.system.name)       # a log's name is not a system
