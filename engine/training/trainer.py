"""The training loop: Adam, ReduceLROnPlateau, mini-batches of ``batch_factor * N`` windows.

A NaN (or inf) loss stops the run: the model is restored to the last epoch whose loss was
finite, that state is written as the checkpoint (when a directory is given), and
:class:`TrainingDiverged` is raised with a message that says so. Progress goes through the
job context (``ctx.progress(fraction, message, {'loss': ..., 'epoch': ...})``) and the run
checks for cancellation after every mini-batch.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine.data.dataset import TrajectoryDataset
from engine.data.windows import Windows, make_windows
from engine.jobs import JobContext, NullJobContext
from engine.runtime import tune_malloc
from engine.models.base import LearnedDynamics, ModelSpec
from engine.models.registry import build_model, save_model
from engine.training.config import TrainConfig
from engine.training.metrics import evaluate

__all__ = ["TrainingBatches", "TrainingDiverged", "TrainResult", "adam_optimizer", "build_for", "fit", "train_model"]


class TrainingDiverged(ValueError):
    """The loss became NaN/inf; ``last_good_epoch`` and ``checkpoint`` say what was kept."""

    def __init__(self, message: str, epoch: int, last_good_epoch: int, checkpoint: Path | None):
        super().__init__(message)
        self.epoch = epoch
        self.last_good_epoch = last_good_epoch
        self.checkpoint = checkpoint


@dataclass
class TrainResult:
    model: LearnedDynamics
    losses: list = field(default_factory=list)   # mean training loss per epoch
    seconds: float = 0.0                         # wall time of the training loop
    epochs: int = 0


def build_for(config: TrainConfig, dataset: TrajectoryDataset) -> LearnedDynamics:
    """A fresh model for ``config`` on ``dataset``'s system, seeded by ``config.seed``."""
    torch.manual_seed(config.seed)
    spec = ModelSpec.for_system(dataset.system, dataset.h, hidden=config.width, layers=config.layers,
                                init=config.init)
    return build_model(config.model, spec)


def adam_optimizer(params, lr):
    """Adam; the fused kernel where the build has it (4x faster steps on CPU than the default)."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(params, lr=lr)


def _save(model, directory, config, dataset, epoch, extra=None):
    if directory is None:
        return None
    meta = {"train_config": config.to_dict(), "data": dataset.describe(), "epoch": epoch}
    meta.update(extra or {})
    save_model(directory, model, meta)
    return Path(directory)


@dataclass
class TrainingBatches:
    """One run's training windows, packed (W, F) for one gather per mini-batch, and its sampler."""

    packed: torch.Tensor
    widths: list
    batch_size: int
    generator: torch.Generator

    @classmethod
    def build(cls, dataset: TrajectoryDataset, config: TrainConfig, dtype, device=None) -> TrainingBatches:
        data = dataset.subset(config.trajectories)
        w = make_windows(data.train_x, data.train_u, dataset.system.dof, dtype)
        packed, widths = w.pack()
        packed = packed.to(device) if device is not None else packed  # the model's device
        return cls(packed, widths, min(config.batch_factor * config.trajectories, len(w)),
                   torch.Generator().manual_seed(config.seed))

    def __len__(self) -> int:
        return self.packed.shape[0]

    def per_epoch(self) -> int:
        return -(-len(self) // self.batch_size)


def _train_epoch(model: LearnedDynamics, opt, batches: TrainingBatches, ctx: JobContext) -> tuple[float, float | None]:
    """One epoch of mini-batch steps: ``(mean loss, None)``, or ``(nan, bad value)`` as soon as a
    mini-batch loss is not finite (before that batch's update)."""
    W, bs = len(batches), batches.batch_size
    perm = torch.randperm(W, generator=batches.generator)
    total = 0.0
    for i in range(0, W, bs):
        idx = perm[i:i + bs]
        loss = model.loss(Windows.unpack(batches.packed[idx], batches.widths))
        value = loss.item()
        if not math.isfinite(value):
            return math.nan, value
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += value * len(idx)
        ctx.check_cancelled()
    return total / W, None


def _snapshot_if_finite(model: LearnedDynamics) -> dict | None:
    """A copy of the weights when they are all finite (the NaN guard's last good state), else None."""
    if all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return {k: v.detach().clone() for k, v in model.state_dict().items()}
    return None


def fit(model: LearnedDynamics, dataset: TrajectoryDataset, config: TrainConfig,
        ctx: JobContext | None = None, checkpoint_dir: str | Path | None = None,
        progress_span: tuple[float, float] = (0.0, 1.0)) -> TrainResult:
    """Train ``model`` on the first ``config.trajectories`` training trajectories of ``dataset``."""
    ctx = ctx or NullJobContext()
    if config.threads:
        torch.set_num_threads(int(config.threads))
    tune_malloc()  # reuse warm heap pages for the per-step activations (engine/runtime.py)
    N = config.trajectories
    dtype = next(model.parameters()).dtype
    batches = TrainingBatches.build(dataset, config, dtype, next(model.parameters()).device)
    opt = adam_optimizer(model.parameters(), config.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, "min", patience=config.patience, factor=config.factor)
    good_state = copy.deepcopy(model.state_dict())
    good_epoch = 0
    losses = []
    lo, hi = progress_span
    t0 = time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        epoch_loss, bad = _train_epoch(model, opt, batches, ctx)
        if bad is not None:
            model.load_state_dict(good_state)
            path = _save(model, checkpoint_dir, config, dataset, good_epoch, {"status": "diverged"})
            kept = f"; the last good model (epoch {good_epoch}) is kept" + (f" in {path}" if path else "")
            raise TrainingDiverged(
                f"training of {config.model!r} on {config.system} (N={N}) diverged at epoch {epoch}: "
                f"the loss is {bad}{kept}. Try a lower learning rate.", epoch, good_epoch, path)
        losses.append(epoch_loss)
        sched.step(epoch_loss)
        snap = _snapshot_if_finite(model)
        if snap is not None:
            good_state, good_epoch = snap, epoch
        if checkpoint_dir is not None and epoch % config.checkpoint_every == 0:
            _save(model, checkpoint_dir, config, dataset, epoch, {"status": "training"})
        ctx.progress(lo + (hi - lo) * epoch / config.epochs, f"{config.model} N={N} epoch {epoch}/{config.epochs}",
                     {"loss": epoch_loss, "epoch": epoch})
    return TrainResult(model=model, losses=losses, seconds=time.perf_counter() - t0, epochs=config.epochs)


def train_model(config: TrainConfig, dataset: TrajectoryDataset, ctx: JobContext | None = None,
                checkpoint_dir: str | Path | None = None, progress_span=(0.0, 1.0)) -> dict:
    """Build, train and evaluate one model; returns a result row (metrics, seconds, losses)."""
    model = build_for(config, dataset)
    result = fit(model, dataset, config, ctx, checkpoint_dir, progress_span)
    metrics = evaluate(model, dataset.subset(config.trajectories))
    row = {"model": config.model, "system": config.system, "trajectories": config.trajectories,
           "seed": config.seed, **metrics, "seconds": result.seconds,
           "final_loss": result.losses[-1] if result.losses else None}
    _save(model, checkpoint_dir, config, dataset, result.epochs, {"status": "done", "metrics": metrics,
                                                                   "seconds": result.seconds})
    return {"row": row, "model": model, "losses": result.losses}
