"""The Model lab's Qt-free state, driven directly: units shown as converted, plots that do not apply,
and the one-click example ("Compare models on an example log") to a finished comparison."""

from __future__ import annotations

import csv
import dataclasses
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import torch

from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.state import (
    ExampleSettings,
    ModelLabState,
    example_log_path,
    signal_labels,
)
from engine.jobs import NullJobContext
from engine.logs import LogMapping, PrepareConfig
from engine.training.compare import LogCompareConfig
from tests.app.state_runner import SyncRunner

torch.set_num_threads(1)


def test_the_state_module_imports_no_qt():
    code = ("import sys, app.workspaces.model_lab.state; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_signal_labels_name_the_units_plotted():
    assert signal_labels(["cart_x_mm", "pole_angle_deg", "theta"],
                         {"cart_x_mm": "mm", "pole_angle_deg": "deg", "theta": "rad"}) == \
        ["cart_x [m]", "pole_angle [rad]", "theta [rad]"]
    assert signal_labels(["q0"], None) == ["q0"]


def test_a_cartpole_log_in_millimetres_is_shown_in_metres():
    path = example_log_path("cartpole")
    table = lab_jobs.read_log_job(path)(NullJobContext())
    mapping = LogMapping.load(path.with_name("cartpole.mapping.json"))
    prepare, compare = PrepareConfig(), LogCompareConfig()
    prepared, dataset = lab_jobs.prepare_job(table, mapping, prepare, compare)(NullJobContext())
    state = ModelLabState(SyncRunner())
    state.set_data(dataset, {"kind": "log", "path": str(path), "mapping": mapping.to_dict()}, prepared)
    assert state.signal_names() == ["cart_x [m]", "pole_angle [rad]"]
    # the values plotted are the file's millimetres in metres (read independently of the log engine)
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("#"))]
    raw_mm = np.array([float(r[1]) for r in rows[1:]])
    assert np.ptp(raw_mm) > 10.0                        # really in millimetres
    q = np.asarray(prepared.q[:, 0])
    assert np.ptp(q) < 1.0
    assert abs(np.ptp(q) - 1e-3 * np.ptp(raw_mm)) < 0.02 * 1e-3 * np.ptp(raw_mm)


def _run(n, mse):
    return SimpleNamespace(name=f"run N={n}", model_type="mlp", index=0, curves={},
                           row={"trajectories": n, "integration_mse": mse})


def test_plots_that_do_not_apply_are_named_with_the_reason():
    state = ModelLabState(SyncRunner())
    assert state.is_empty and set(state.applicable_plots().values()) == {"no data yet"}
    seen = []
    state.events.plots.connect(seen.append)
    state.set_data(SimpleNamespace(system=SimpleNamespace(dof=1), q_names=["theta"]), {"kind": "log"})
    plots = seen[-1]
    assert plots["rollout"] is None and plots["phase"] is None and plots["horizon"] is None
    assert "no known energy" in plots["energy"] and "inertia" in plots["inertia"]
    assert "two or more" in plots["size"]
    state.set_runs([_run(8, 0.1), _run(8, 0.2)])         # one N: Error vs N would be one point
    assert state.applicable_plots()["size"] is not None
    state.set_runs([_run(8, 0.1), _run(16, 0.05), SimpleNamespace(row=None)])
    assert state.sizes() == [8, 16] and state.applicable_plots()["size"] is None
    assert len(state.runs) == 2 and not state.is_empty


def test_the_example_trains_two_models_on_the_shipped_log_and_compares_them():
    state = ModelLabState(SyncRunner())
    busy, progress = [], []
    state.events.example_busy.connect(busy.append)
    state.events.example_progress.connect(lambda f, m: progress.append(f))
    assert state.run_example(ExampleSettings(epochs=3)) is True
    assert busy == [True, False] and not state.example_running
    result = state.example_result
    assert [m.model_type for m in result.models] == ["node-rk4", "lnode-rk4"]
    for m in result.models:
        assert len(m.losses) == 3 and all(math.isfinite(v) for v in m.losses)
        for key in ("train_mse", "test_mse", "integration_mse"):
            assert math.isfinite(m.row[key]) and m.row[key] >= 0
        assert m.curves["horizon_mse"] is not None
    # the comparison is what the state shows: the log's data and both models
    assert state.data.is_log and state.data.source["path"].endswith("pendulum_friction.csv")
    assert state.runs == result.models and state.signal_names() == ["theta [rad]"]
    assert progress[0] == 0.0 and progress[-1] == 1.0 and progress == sorted(progress)
    # the rollouts start on the measured validation data (each model's first predicted q is the data's)
    c = result.models[0].curves
    assert np.isfinite(c["q_pred"]).any()


def test_the_example_can_be_cancelled():
    state = ModelLabState(SyncRunner(cancel_after_progress=3))
    messages = []
    state.events.message.connect(messages.append)
    state.run_example(dataclasses.replace(ExampleSettings(), epochs=50))
    assert state.example_result is None and not state.example_running and state.is_empty
    assert messages[-1] == "Example cancelled."


def test_a_config_saved_with_a_logs_name_as_its_system_reads_as_that_log():
    old = {**lab_jobs.default_train_config().to_dict(), "system": "pendulum_friction"}
    old.pop("log")
    cfg = lab_jobs.train_config_from_dict(old)
    assert cfg.log == "pendulum_friction" and cfg.system == "pendulum"
    assert lab_jobs.with_changes(cfg, epochs=7).log == "pendulum_friction"
    assert lab_jobs.train_config_from_dict(cfg.to_dict()) == cfg
