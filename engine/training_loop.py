"""The one training loop of everything the engine learns: learned dynamics
(:mod:`engine.training.trainer`), the car model (:mod:`engine.car.training`) and eigenmodes
(:mod:`engine.eigenmodes.train`).

:func:`train_epochs` runs the epochs of a :class:`Trainee`, the domain's side of the loop: it
runs one epoch (its own batches, loss, optimiser and schedule), hands over its whole training
state for a checkpoint and takes it back on a resume, copies and restores its last finite weights,
and says in words what diverged. The loop does the rest, the same way for all three:

- epochs numbered from 1; a resume continues after the run's last checkpoint (``first``), with
  the optimiser steps and the wall time counted over every resume;
- a cancel check before every epoch (the domain checks inside long epochs too);
- divergence: an epoch loss that is not finite (or a reason the domain found, e.g. a loss far over
  the untrained model's) ends the run with :class:`TrainingDiverged`, the one divergence error:
  the last finite weights are restored, written to the run's ``checkpoints/last-finite`` and the
  run records ``diverged``;
- with a run folder (:class:`engine.runs.Run`): every epoch's row in ``metrics.csv`` and the whole
  training state every ``checkpoint_every`` epochs and at the last;
- progress: the fraction of the epochs (within ``span`` of the job's bar), the domain's message
  with an estimate of the time left, and the domain's live metrics.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from engine.jobs import JobContext, NullJobContext
from engine.runs import LAST_FINITE, Run

__all__ = ["EpochOutcome", "LoopResult", "Trainee", "TrainingDiverged", "format_time_left", "train_epochs"]


class TrainingDiverged(ValueError):
    """The loss (or the final metrics) became NaN/inf; ``epoch``, ``last_good_epoch`` and
    ``checkpoint`` (the folder of the last finite weights, or None) say what was kept."""

    def __init__(self, message: str, epoch: int, last_good_epoch: int, checkpoint: Path | None):
        super().__init__(message)
        self.epoch = epoch
        self.last_good_epoch = last_good_epoch
        self.checkpoint = checkpoint


@dataclass
class EpochOutcome:
    """What one epoch gave: ``loss`` (not finite: a divergence), ``logged`` (the run's
    ``metrics.csv`` values besides epoch, step and wall time; the domain's live metrics too),
    ``steps`` (optimiser steps taken) and ``diverged`` (a reason the domain found itself, e.g. a
    loss far over the untrained model's; the loop then ends the run as diverged); ``stop``: a
    reason to end the run well after this epoch (early stopping, a time budget spent);
    ``time_left``: the domain's own bound on the time left (s), e.g. what remains of its budget."""

    loss: float
    logged: dict[str, float] = field(default_factory=dict)
    steps: int = 1
    diverged: str | None = None
    stop: str | None = None
    time_left: float | None = None


class Trainee(Protocol):
    """The domain's side of :func:`train_epochs`."""

    def epoch(self, epoch: int, ctx: JobContext) -> EpochOutcome:
        """Train epoch ``epoch`` (1-based); a loss found not finite is returned before the update."""
        ...

    def training_state(self) -> Mapping[str, Any]:
        """The whole state a checkpoint keeps (weights, optimiser, schedule, random streams, ...)."""
        ...

    def checkpoint_meta(self) -> Mapping[str, Any]:
        """Extra entries of the checkpoint's ``state.json`` (besides epoch, step and wall time)."""
        ...

    def restore(self, state: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
        """Put a checkpoint's state back (a resume)."""
        ...

    def finite_copy(self) -> Any | None:
        """A copy of the weights when they are all finite (the last good state), else None."""
        ...

    def restore_copy(self, copy: Any) -> None:
        """Put a :meth:`finite_copy` back."""
        ...

    def write_last_finite(self, folder: Path, copy: Any, epoch: int, wall_time: float) -> None:
        """Write the weights ``copy`` of ``epoch`` into ``folder`` in the domain's model format."""
        ...

    def diverged_message(self, epoch: int, what: str, good_epoch: int, kept: Path | None) -> str:
        """The one-line message of a divergence at ``epoch`` (``what`` went wrong; ``kept``: where
        the last finite weights of ``good_epoch`` are, or None)."""
        ...

    def report(self, epoch: int, epochs: int, outcome: EpochOutcome, step: int,
               wall_time: float) -> tuple[str, Mapping[str, float]]:
        """The progress message after ``epoch`` of ``epochs`` (e.g. ``"epoch 3/10"``; the loop adds
        the time left) and the live metrics shown with it."""
        ...


@dataclass
class LoopResult:
    """``losses``: this call's epoch losses; ``seconds``: this call's wall time; ``wall_time``
    (s) and ``step``: over every resume; ``epochs``: the last epoch trained; ``stopped``: why
    the run ended before ``epochs`` (an :attr:`EpochOutcome.stop`), else None."""

    losses: list[float]
    seconds: float
    wall_time: float
    step: int
    epochs: int
    stopped: str | None = None


def format_time_left(seconds: float) -> str:
    """``"12 s left"``, ``"3 min left"``, ``"1.5 h left"``."""
    if seconds < 90:
        return f"{seconds:.0f} s left"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min left"
    return f"{seconds / 3600:.1f} h left"


def train_epochs(trainee: Trainee, epochs: int, ctx: JobContext | None = None, run: Run | None = None,
                 resume: bool = False, checkpoint_every: int = 1,
                 span: tuple[float, float] = (0.0, 1.0)) -> LoopResult:
    """Train ``trainee`` up to epoch ``epochs`` (see the module's docstring).

    ``run``: a run folder for the metrics and checkpoints; ``resume``: continue its last checkpoint
    (``trainee.restore`` gets the state; the loop goes on from its epoch, step and wall time).
    ``span``: the part of the job's progress bar these epochs fill.
    """
    ctx = ctx or NullJobContext()
    first, step, wall0 = 0, 0, 0.0
    if resume:
        if run is None:
            raise ValueError("a resume needs the run folder to continue")
        state, meta = run.load_state()
        trainee.restore(state, meta)
        first, step, wall0 = int(meta["epoch"]), int(meta.get("step", 0)), float(meta.get("wall_time", 0.0))
    every = max(1, int(checkpoint_every))
    lo, hi = span
    good, good_epoch = trainee.finite_copy(), first
    losses: list[float] = []
    stopped, last = None, first
    t0 = time.perf_counter()
    for epoch in range(first + 1, epochs + 1):
        ctx.check_cancelled()
        out = trainee.epoch(epoch, ctx)
        what = out.diverged if out.diverged is not None else (
            None if math.isfinite(out.loss) else f"the loss is {out.loss}")
        if what is not None:
            _diverge(trainee, run, epoch, what, good, good_epoch, wall0 + time.perf_counter() - t0)
        step += out.steps
        losses.append(out.loss)
        copy = trainee.finite_copy()
        if copy is not None:
            good, good_epoch = copy, epoch
        wall = wall0 + time.perf_counter() - t0
        last = epoch
        if run is not None:
            run.log(epoch, step, wall, **out.logged)
            if epoch % every == 0 or epoch == epochs or out.stop:
                run.save_state(epoch, trainee.training_state(),
                               {"step": step, "wall_time": wall, **trainee.checkpoint_meta()})
        done = epoch - first
        left = (time.perf_counter() - t0) / done * (epochs - epoch)
        if out.time_left is not None:
            left = min(left, max(out.time_left, 0.0))
        message, shown = trainee.report(epoch, epochs, out, step, wall)
        if out.stop:
            ctx.progress(hi, f"{message} ({out.stop})", shown)
            stopped = out.stop
            break
        ctx.progress(lo + (hi - lo) * epoch / max(epochs, 1),
                     f"{message}, {format_time_left(left)}" if epoch < epochs else message, shown)
    seconds = time.perf_counter() - t0
    return LoopResult(losses=losses, seconds=seconds, wall_time=wall0 + seconds, step=step,
                      epochs=last if stopped else max(epochs, first), stopped=stopped)


def _diverge(trainee: Trainee, run: Run | None, epoch: int, what: str, good: Any, good_epoch: int,
             wall: float) -> None:
    """End a diverged run: the last finite weights back in place and kept; :class:`TrainingDiverged`."""
    if good is not None:
        trainee.restore_copy(good)
    kept = None
    if run is not None and good is not None:
        kept = run.save_files(LAST_FINITE, lambda tmp: trainee.write_last_finite(tmp, good, good_epoch, wall))
    if run is not None:
        run.end("diverged", f"{what} at epoch {epoch}", epoch_diverged=epoch, last_finite_epoch=good_epoch)
    raise TrainingDiverged(trainee.diverged_message(epoch, what, good_epoch, kept), epoch, good_epoch, kept)
