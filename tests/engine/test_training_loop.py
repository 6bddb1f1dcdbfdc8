"""engine/training_loop.py, the one training loop, on a toy trainee (a scalar walked towards 0 by
a fixed rule): checkpoints on the cadence and at the end, an exact resume, divergence that restores
and keeps the last finite weights, progress with the time left, cancellation. The three real users
(learned dynamics, the car, eigenmodes) are tested in tests/engine/training, car and eigenmodes."""

from __future__ import annotations

import json
import math

import pytest
import torch

from engine.jobs import JobCancelled, NullJobContext
from engine.runs import Run, read_metrics
from engine.training_loop import EpochOutcome, TrainingDiverged, format_time_left, train_epochs


class Walker:
    """w <- w / 2 each epoch; the loss is w^2 (NaN from ``nan_at`` on)."""

    def __init__(self, nan_at: int | None = None):
        self.w = torch.tensor([8.0])
        self.nan_at = nan_at
        self.written = None

    def epoch(self, epoch, ctx):
        if self.nan_at is not None and epoch >= self.nan_at:
            self.w = torch.tensor([math.nan])
            return EpochOutcome(math.nan)
        self.w = self.w / 2
        loss = float(self.w[0] ** 2)
        return EpochOutcome(loss, {"loss": loss}, steps=3)

    def training_state(self):
        return {"w": self.w.clone()}

    def checkpoint_meta(self):
        return {"note": "toy"}

    def restore(self, state, meta):
        self.w = state["w"].clone()

    def finite_copy(self):
        return self.w.clone() if torch.isfinite(self.w).all() else None

    def restore_copy(self, copy):
        self.w = copy.clone()

    def write_last_finite(self, folder, copy, epoch, wall_time):
        (folder / "w.json").write_text(json.dumps({"w": float(copy[0]), "epoch": epoch}))

    def diverged_message(self, epoch, what, good_epoch, kept):
        return f"toy diverged at epoch {epoch} ({what}); epoch {good_epoch} kept in {kept}"

    def report(self, epoch, epochs, outcome, step, wall_time):
        return f"epoch {epoch}/{epochs}", {"loss": outcome.loss, "step": step}


class Recorder(NullJobContext):
    def __init__(self, cancel_after: int | None = None):
        super().__init__()
        self.seen, self.cancel_after = [], cancel_after

    def progress(self, fraction, message="", metrics=None):
        self.seen.append((fraction, message, metrics))

    def check_cancelled(self):
        if self.cancel_after is not None and len(self.seen) >= self.cancel_after:
            raise JobCancelled("stop")


def _run(tmp_path, name="r"):
    return Run.create(tmp_path / name, "toy", {}, {})


def test_epochs_log_checkpoint_on_the_cadence_and_report_progress(tmp_path):
    run, ctx, walker = _run(tmp_path), Recorder(), Walker()
    result = train_epochs(walker, 5, ctx, run, checkpoint_every=2, span=(0.5, 1.0))
    assert result.losses == [16.0, 4.0, 1.0, 0.25, 0.0625] and result.step == 15 and result.epochs == 5
    rows = read_metrics(run.path)
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4, 5] and [r["step"] for r in rows] == [3, 6, 9, 12, 15]
    state, meta = run.load_state()
    assert (
        meta["epoch"] == 5 and meta["step"] == 15 and meta["note"] == "toy" and float(state["w"][0]) == 0.25
    )
    assert [f for f, _, _ in ctx.seen] == pytest.approx([0.6, 0.7, 0.8, 0.9, 1.0])
    assert ctx.seen[0][1].startswith("epoch 1/5, ") and ctx.seen[0][1].endswith(" left")
    assert ctx.seen[-1][1] == "epoch 5/5" and ctx.seen[-1][2] == {"loss": 0.0625, "step": 15}


def test_a_resume_continues_from_the_last_checkpoint_as_if_never_stopped(tmp_path):
    whole = train_epochs(Walker(), 6, None, _run(tmp_path, "one"), checkpoint_every=2)
    run = _run(tmp_path, "two")
    with pytest.raises(JobCancelled):       # stopped at the start of epoch 4: the checkpoint is epoch 2's
        train_epochs(Walker(), 6, Recorder(cancel_after=3), run, checkpoint_every=2)
    rest = train_epochs(Walker(), 6, None, Run.open(run.path), resume=True, checkpoint_every=2)
    assert rest.losses == whole.losses[2:] and rest.step == whole.step
    assert [r["epoch"] for r in read_metrics(run.path)] == list(range(1, 7))
    with pytest.raises(ValueError, match="run folder"):
        train_epochs(Walker(), 6, resume=True)


def test_divergence_restores_and_keeps_the_last_finite_weights(tmp_path):
    run, walker = _run(tmp_path), Walker(nan_at=3)
    with pytest.raises(
        TrainingDiverged, match=r"toy diverged at epoch 3 \(the loss is nan\); epoch 2 kept"
    ) as info:
        train_epochs(walker, 5, None, run)
    assert (info.value.epoch, info.value.last_good_epoch) == (3, 2)
    assert float(walker.w[0]) == 2.0                                    # epoch 2's weights are back
    kept = json.loads((info.value.checkpoint / "w.json").read_text())
    assert kept == {"w": 2.0, "epoch": 2}
    status = json.loads((run.path / "run.json").read_text())
    assert status["status"] == "diverged" and status["message"] == "the loss is nan at epoch 3"
    # without a run folder nothing is written, and the error is the same type
    with pytest.raises(TrainingDiverged) as info:
        train_epochs(Walker(nan_at=1), 2)
    assert info.value.checkpoint is None and info.value.last_good_epoch == 0


def test_the_time_left_reads_as_words():
    assert format_time_left(12.4) == "12 s left"
    assert format_time_left(600) == "10 min left"
    assert format_time_left(3 * 3600) == "3.0 h left"
