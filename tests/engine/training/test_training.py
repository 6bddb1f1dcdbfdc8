"""The training loop: NaN guard, checkpoints, progress and cancellation, metrics, jobs."""

import json
import math
import threading

import pytest
import torch

from engine.data import DatasetConfig, generate_dataset
from engine.jobs import JobCancelled, ThreadJobContext, run_job
from engine.models import load_model
from engine.training import TrainConfig, TrainingDiverged, build_for, evaluate, fit, train_job
from engine.training.metrics import METRIC_NAMES

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU


@pytest.fixture(scope="module")
def data():
    return generate_dataset(DatasetConfig(train_trajectories=4, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=20, seed=1))


def _cfg(**kw):
    base = dict(model="symo", trajectories=2, epochs=3, hidden=16, learning_rate=1e-3, checkpoint_every=1)
    base.update(kw)
    return TrainConfig(**base)


def test_nan_mid_training_stops_cleanly_and_keeps_last_good_checkpoint(data, tmp_path):
    cfg = _cfg(epochs=6)
    model = build_for(cfg, data)
    calls = {"n": 0}
    real_loss = model.loss
    batches_per_epoch = 2 * 32 // (4 * 2)

    def loss_with_nan(w):
        calls["n"] += 1
        out = real_loss(w)
        return out * float("nan") if calls["n"] > 2 * batches_per_epoch + 1 else out  # NaN inside epoch 3

    model.loss = loss_with_nan
    with pytest.raises(TrainingDiverged, match="diverged at epoch 3") as info:
        fit(model, data, cfg, checkpoint_dir=tmp_path)
    assert info.value.last_good_epoch == 2 and "epoch 2" in str(info.value)
    # the last finite model under its own name; the final name never taken
    assert not (tmp_path / "model.json").exists() and str(tmp_path / "checkpoints" / "last-finite") in str(
        info.value
    )
    saved, meta = load_model(tmp_path / "checkpoints" / "last-finite")
    assert meta["epoch"] == 2 and meta["status"] == "last finite"
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "diverged"
    # the kept model is exactly the one after two clean epochs
    ref = build_for(_cfg(epochs=2), data)
    fit(ref, data, _cfg(epochs=2))
    for a, b in zip(saved.state_dict().values(), ref.state_dict().values()):
        assert torch.equal(a, b)
    for a, b in zip(model.state_dict().values(), ref.state_dict().values()):
        assert torch.equal(a, b)


def test_progress_metrics_and_cancellation(data):
    updates = []
    ctx = ThreadJobContext(on_progress=updates.append, min_interval=0.0)
    cfg = _cfg(model="node-midpoint", epochs=4)
    fit(build_for(cfg, data), data, cfg, ctx)
    epochs = [u.metrics["epoch"] for u in updates if u.metrics]
    assert epochs == [1, 2, 3, 4] and all(math.isfinite(u.metrics["loss"]) for u in updates if u.metrics)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(JobCancelled):
        run_job(train_job(cfg, dataset=data), cancel_event=cancel)


def test_train_job_row_metrics_and_checkpoint(data, tmp_path):
    cfg = _cfg(model="lnode-midpoint", epochs=2)
    result = run_job(train_job(cfg, out_dir=tmp_path, dataset=data))
    row = result["row"]
    for k in ("model", "system", "trajectories", "seed", *METRIC_NAMES, "seconds"):
        assert k in row
    assert row["model"] == "lnode-midpoint" and row["inertia_mse"] is not None
    model, meta = load_model(tmp_path)
    assert meta["status"] == "done" and meta["metrics"]["test_mse"] == row["test_mse"]
    again = evaluate(model, data.subset(2))
    assert again["integration_mse"] == pytest.approx(row["integration_mse"], rel=1e-6)


def test_metrics_against_the_true_model(data):
    """A SyMo carrying the true Lagrangian is the variational integrator: tiny one-step error, no inertia error."""
    from engine.models.lagrangian import AnalyticLagrangian

    model = build_for(_cfg(), data).double()
    model.lagrangian = AnalyticLagrangian(data.system)
    m = evaluate(model, data.subset(2))
    untrained = evaluate(build_for(_cfg(), data), data.subset(2))
    assert m["inertia_mse"] == 0.0 and untrained["inertia_mse"] > 1e-4
    # midpoint rule at h = 0.1: one-step error O(h^3), bounded energy error
    assert m["test_mse"] < 1e-3 and m["test_mse"] < 1e-2 * untrained["test_mse"]
    assert m["energy_mse"] < 1e-1 and m["integration_mse"] < 1e-2 * untrained["integration_mse"]
    assert evaluate(build_for(_cfg(model="node-rk4"), data), data.subset(2))["inertia_mse"] is None


def test_learning_rate_defaults_to_the_papers_protocol_and_an_explicit_rate_wins():
    """Issue #5: every model trains at the paper's rate by default (cart-pole 1e-3, pendulum 1e-4);
    an explicit learning_rate always wins."""
    assert TrainConfig(model="symo", system="cartpole").lr == 1e-3
    assert TrainConfig(model="e2e-symo", system="cartpole").lr == 1e-3
    assert TrainConfig(model="node-rk4", system="cartpole").lr == 1e-3
    assert TrainConfig(model="symo", system="pendulum").lr == 1e-4
    assert TrainConfig(model="symo", system="cartpole", learning_rate=3e-4).lr == 3e-4
