"""Model selection on held-out training chunks, early stopping and the time budget
(engine/training/trainer.py Selection, DynamicsTrainee; engine/training_loop.py's stop).

The references: the score of the starting model (the hybrid with its residual at zero) that the
kept weights may not exceed; the held-out chunks are the ones :func:`holdout_indices` names, and
the score is recomputed here with numpy from the model's own rollouts.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.data import DatasetConfig, generate_dataset
from engine.training import TrainConfig, build_for, fit
from engine.training.trainer import Selection, TrainingBatches, holdout_indices

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def data():
    return generate_dataset(DatasetConfig(train_trajectories=10, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=20, seed=3))


def _cfg(**kw):
    base = dict(model="hybrid-rk4", trajectories=10, epochs=6, hidden=16, learning_rate=3e-2, checkpoint_every=1,
                holdout=0.2, select_every=1)
    base.update(kw)
    return TrainConfig(**base)


def test_holdout_takes_every_kth_chunk_and_none_of_few():
    assert holdout_indices(10, 0.2) == [4, 9]
    assert holdout_indices(14, 1 / 7) == [6, 13]
    assert holdout_indices(4, 0.5) == [] and holdout_indices(100, 0.0) == []


def test_the_held_out_chunks_leave_the_training_windows(data):
    config = _cfg()
    batches = TrainingBatches.build(data, config, torch.float64)
    steps = data.train_x.shape[1] - 2
    assert len(batches) == 8 * steps                      # 10 chunks, 2 held out
    torch.testing.assert_close(batches.selection.x, torch.as_tensor(data.train_x[[4, 9]]))
    assert TrainingBatches.build(data, _cfg(select_every=0), torch.float64).selection is None


def test_score_is_the_rollout_mse_of_q_on_the_held_out_chunks(data):
    config = _cfg()
    model = build_for(config, data).double()
    sel = TrainingBatches.build(data, config, torch.float64).selection
    rollout, torque = sel.score(model)
    x = data.train_x[[4, 9]]
    n = data.system.dof
    with torch.no_grad():
        q, _ = model.rollout(torch.as_tensor(x), torch.as_tensor(data.train_u[[4, 9]]), x.shape[1] - 2)
    assert rollout == pytest.approx(float(np.mean((q.numpy() - x[:, 2:, :n]) ** 2)), rel=1e-12)
    assert torque is not None and torque >= 0.0            # the hybrid has inverse dynamics
    assert Selection.better((1.0, 2.0), None)
    assert Selection.better((1.0, 2.0), (1.5, 2.0)) and not Selection.better((1.0, 2.1), (1.5, 2.0))
    assert not Selection.better((1.5, None), (1.5, None)) and Selection.better((1.4, None), (1.5, None))


def test_the_kept_weights_are_no_worse_than_the_start_on_both_scores(data):
    """The hybrid's residual starts at zero (the model is its robot); whatever a learning rate far
    too high does to it, the kept weights score no worse than the start on the held-out rollouts
    and torques, and they are the weights that scored so (recomputed here)."""
    config = _cfg()
    model = build_for(config, data).double()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    sel = TrainingBatches.build(data, config, torch.float64).selection
    start_score = sel.score(model)
    result = fit(model, data, config)
    assert result.epochs == 6 and result.stopped is None
    kept = sel.score(model)
    assert kept == result.best_score
    assert kept[0] <= start_score[0] and kept[1] <= start_score[1]
    if result.best_epoch == 0:
        assert all(torch.equal(v, start[k]) for k, v in model.state_dict().items())
    # without the selection the same training ends elsewhere (the test above is not vacuous)
    other = build_for(config, data).double()
    fit(other, data, _cfg(select_every=0))
    assert any(not torch.equal(v, start[k]) for k, v in other.state_dict().items())


def test_early_stopping_and_the_time_budget_end_the_run_well(data):
    config = _cfg(epochs=50, stop_patience=2)
    model = build_for(config, data).double()
    result = fit(model, data, config)
    assert result.epochs == result.best_epoch + 2 and "no better on the held-out chunks" in result.stopped
    budget = _cfg(epochs=50, select_every=0, time_budget=1e-6)      # spent within the first epoch
    result = fit(build_for(budget, data).double(), data, budget)
    assert result.epochs == 1 and "time budget" in result.stopped and len(result.losses) == 1


def test_a_comparison_shares_its_time_budget_and_says_how_long_is_left():
    """A budget spent at once: every model stops after its first epoch, says why, and every progress
    message carries the comparison's time left (no timing is asserted, only what is said)."""
    from engine.paths import resources_dir
    from engine.training.compare import LogCompareConfig, compare_on_log

    class Ctx:
        cancelled = False

        def __init__(self):
            self.messages = []

        def progress(self, fraction, message="", metrics=None):
            self.messages.append((fraction, message))

        def check_cancelled(self):
            pass

    ctx = Ctx()
    logs = resources_dir() / "logs"
    config = LogCompareConfig(hidden=8, horizon=10, epochs=50, time_budget=1e-3, select_every=1, holdout=0.2)
    rows = compare_on_log(logs / "cartpole.csv", logs / "cartpole.mapping.json", "mlp,node-rk4", config=config,
                          ctx=ctx)
    assert [r["epochs_trained"] for r in rows] == [1, 1]
    assert all("time budget" in r["stopped"] and r["best_epoch"] in (0, 1) for r in rows)
    training = [m for f, m in ctx.messages if "epoch" in m and f is not None and f < 1]
    assert training and all("comparison: at most" in m for m in training)
    assert LogCompareConfig().resolved(robot=True).time_budget == 480.0
    assert LogCompareConfig().resolved(robot=False).time_budget == 0.0
    assert LogCompareConfig(time_budget=0).resolved(robot=True).time_budget == 0
