"""Training learned dynamics: Adam, ReduceLROnPlateau, mini-batches of ``batch_factor * N`` windows,
on the engine's one training loop (:func:`engine.training_loop.train_epochs`).

With a run folder (:mod:`engine.runs`) every epoch's metrics and periodic checkpoints
of the whole training state are kept, a run can be resumed exactly, and the final model takes its
name only when the run ends well. A NaN (or inf) loss stops the run: the last finite weights are
written under their own name (``checkpoints/last-finite``) and :class:`TrainingDiverged` says so
and names the epoch; non-finite metrics at the end are a divergence too. Progress goes through the
job context (``ctx.progress(fraction, message, {'loss': ..., 'epoch': ...})``) and the run
checks for cancellation after every mini-batch.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine.data.dataset import TrajectoryDataset
from engine.data.windows import Windows, make_windows
from engine.devices import resolve_device
from engine.io import save_tensors, write_json
from engine.jobs import JobContext
from engine.models.base import LearnedDynamics, ModelSpec
from engine.models.registry import build_model
from engine.runs import LAST_FINITE, Run, fingerprint, restore_training_state, training_state
from engine.runtime import tune_malloc
from engine.training.config import TrainConfig
from engine.training.metrics import evaluate
from engine.training_loop import EpochOutcome, TrainingDiverged, train_epochs

__all__ = [
    "DynamicsTrainee",
    "Selection",
    "TrainingBatches",
    "TrainingDiverged",
    "TrainResult",
    "adam_optimizer",
    "build_for",
    "cancelled_message",
    "check_metrics",
    "data_source_of",
    "fit",
    "holdout_indices",
    "new_run",
    "recording",
    "train_model",
    "write_model_files",
]


@dataclass
class TrainResult:
    model: LearnedDynamics
    losses: list = field(default_factory=list)   # mean training loss per epoch (this call's epochs)
    seconds: float = 0.0                         # wall time of the training loop (this call)
    epochs: int = 0                              # the last epoch trained (over every resume)
    best_epoch: int | None = None                # the epoch whose weights were kept (with a selection)
    best_score: tuple | None = None              # its held-out (rollout MSE of q, torque MSE or None)
    stopped: str | None = None                   # why training ended before config.epochs, else None


def build_for(config: TrainConfig, dataset: TrajectoryDataset) -> LearnedDynamics:
    """A fresh model for ``config`` on ``dataset``'s system, seeded by ``config.seed``."""
    torch.manual_seed(config.seed)
    extra = {} if getattr(config, "robot", None) is None else {"robot": config.robot}
    spec = ModelSpec.for_system(dataset.system, dataset.h, hidden=config.width, layers=config.layers,
                                init=config.init, **extra)
    return build_model(config.model, spec).to(resolve_device(config.device))  # float32 unless asked


def adam_optimizer(params, lr):
    """Adam; the fused kernel where the build has it (4x faster steps on CPU than the default)."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(params, lr=lr)


def holdout_indices(n_chunks: int, fraction: float) -> list[int]:
    """The training chunks held out for selection: every ``round(1 / fraction)``-th (the last of
    each group), none when ``fraction`` is 0 or fewer than 4 chunks would be left to train on."""
    if fraction <= 0 or n_chunks < 5:
        return []
    every = max(2, round(1.0 / fraction))
    return [i for i in range(n_chunks) if i % every == every - 1]


@dataclass
class Selection:
    """Held-out training chunks and the model selection on them.

    ``x`` (C, L, 2n) and ``u`` (C, L, m): whole chunks, ``h`` (s) their step. :meth:`score` gives
    ``(rollout, torque)``: the MSE of ``q`` over rollouts of ``L - 2`` steps from each chunk's
    start, driven by its measured controls (the comparison's k-step metric, on data the model
    does not train on), and for a model with inverse dynamics the MSE of its joint forces against
    ``B u`` at the chunks' inner points (accelerations by central differences of ``qd``), else
    None. Non-finite scores count as infinitely bad. :meth:`better` says whether a score beats
    the kept one: a lower rollout error and, where there is a torque score, no higher torque error
    (so the kept model is no worse than the start on either, e.g. the hybrid than its rigid body).
    """

    x: torch.Tensor
    u: torch.Tensor
    h: float

    @torch.no_grad()
    def score(self, model: LearnedDynamics) -> tuple[float, float | None]:
        n = self.x.shape[-1] // 2
        was_training = model.training
        model.eval()
        torque: float | None = None
        try:
            q, _ = model.rollout(self.x, self.u, self.x.shape[1] - 2)
            value = float(((q - self.x[:, 2:, :n]) ** 2).mean())
            inverse = getattr(model, "inverse_dynamics", None)
            if callable(inverse):
                x = self.x
                qdd = (x[:, 2:, n:] - x[:, :-2, n:]) / (2.0 * self.h)
                tau = inverse(x[:, 1:-1, :n], x[:, 1:-1, n:], qdd)
                torque = float(((tau - model.force(self.u[:, 1:-1])) ** 2).mean())
        except (RuntimeError, ValueError):   # a solve that fails on wild weights: the worst score
            value = math.inf
        finally:
            model.train(was_training)
        finite = lambda v: v if v is None or math.isfinite(v) else math.inf  # noqa: E731
        return finite(value), finite(torque)

    @staticmethod
    def better(new: tuple[float, float | None], kept: tuple[float, float | None] | None) -> bool:
        if kept is None:
            return True
        if new[1] is not None and kept[1] is not None and new[1] > kept[1]:
            return False
        return new[0] < kept[0]


@dataclass
class TrainingBatches:
    """One run's training windows, packed (W, F) for one gather per mini-batch, and its sampler."""

    packed: torch.Tensor
    widths: list
    batch_size: int
    generator: torch.Generator

    selection: Selection | None = None

    @classmethod
    def build(cls, dataset: TrajectoryDataset, config: TrainConfig, dtype, device=None) -> TrainingBatches:
        """The windows of the first ``config.trajectories`` training trajectories, less the
        chunks held out (``config.holdout``), which make the :class:`Selection`."""
        data = dataset.subset(config.trajectories)
        x, u = data.train_x, data.train_u
        held = holdout_indices(len(x), config.holdout) if config.select_every else []
        selection = None
        if held:
            keep = [i for i in range(len(x)) if i not in set(held)]
            selection = Selection(torch.as_tensor(x[held], dtype=dtype, device=device),
                                  torch.as_tensor(u[held], dtype=dtype, device=device), float(dataset.h))
            x, u = x[keep], u[keep]
        w = make_windows(x, u, dataset.system.dof, dtype)
        packed, widths = w.pack()
        packed = packed.to(device) if device is not None else packed  # the model's device
        return cls(packed, widths, min(config.batch_factor * len(x), len(w)),
                   torch.Generator().manual_seed(config.seed), selection)

    def __len__(self) -> int:
        return self.packed.shape[0]

    def per_epoch(self) -> int:
        return -(-len(self) // self.batch_size)


# an epoch's mean loss this many times the untrained model's (or than 1, for a model that starts
# almost exact) is a divergence: a sane run never comes near it; a learning rate far too high
# gets there in the first epoch
DIVERGENCE_FACTOR = 1e6


def _untrained_loss(model: LearnedDynamics, batches: TrainingBatches) -> float | None:
    """The loss of the untrained model on the first mini-batch (the divergence guard's reference)."""
    value = model.loss(Windows.unpack(batches.packed[:batches.batch_size], batches.widths)).item()
    return value if math.isfinite(value) else None


def _snapshot_if_finite(model: LearnedDynamics) -> dict | None:
    """A copy of the weights when they are all finite (the NaN guard's last good state), else None."""
    if all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return {k: v.detach().clone() for k, v in model.state_dict().items()}
    return None


def _model_meta(model: LearnedDynamics, config: TrainConfig, dataset, epoch: int, **extra) -> dict:
    return {"type": model.name, "hyperparameters": model.spec.to_dict(), "train_config": config.to_dict(),
            "data": dataset.describe(), "epoch": epoch, **extra}


def write_model_files(folder: Path, model: LearnedDynamics, meta: dict, state: dict | None = None) -> None:
    save_tensors(folder / "model.safetensors", state if state is not None else model.state_dict())
    write_json(folder / "model.json", meta)


class DynamicsTrainee:
    """A learned dynamics model's side of :func:`engine.training_loop.train_epochs`: mini-batch
    Adam steps over the packed windows, ReduceLROnPlateau on the epoch loss.

    With a :class:`Selection` (``config.select_every``): the held-out score at the start and every
    ``select_every`` epochs; the best weights are kept (:meth:`keep_best` puts them back at the
    end, so a model that starts good, e.g. the hybrid at its identified rigid body, can only stay
    or get better on the held-out chunks); ``config.stop_patience`` scores without a better one
    stop the run, and so does ``config.time_budget`` (s of training)."""

    def __init__(self, model: LearnedDynamics, dataset, config: TrainConfig, batches: TrainingBatches,
                 run: Run | None):
        self.model, self.dataset, self.config, self.batches, self.run = model, dataset, config, batches, run
        self.opt = adam_optimizer(model.parameters(), config.lr)
        self.sched = torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt, "min", patience=config.patience,
                                                                factor=config.factor)
        self.reference: float | None = None   # the untrained model's loss (the divergence guard's scale)
        self.limit = math.inf
        self.started = time.perf_counter()
        self.best: dict | None = None           # the best weights on the held-out chunks, their epoch, score
        self.best_epoch: int | None = None
        self.best_score: tuple[float, float | None] | None = None
        self.since_best = 0

    def select(self, epoch: int) -> tuple[float, float | None] | None:
        """Score the held-out chunks now and keep the weights if they are better (:meth:`Selection.better`)
        than the kept ones; None without a selection."""
        sel = self.batches.selection
        if sel is None:
            return None
        value = sel.score(self.model)
        if sel.better(value, self.best_score):
            self.best = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.best_epoch, self.best_score, self.since_best = epoch, value, 0
        else:
            self.since_best += 1
        return value

    def keep_best(self) -> None:
        """Put the best weights on the held-out chunks back (nothing without a selection)."""
        if self.best is not None:
            self.model.load_state_dict(self.best)

    def set_reference(self, reference: float | None) -> None:
        self.reference = reference
        self.limit = DIVERGENCE_FACTOR * max(reference, 1.0) if reference is not None else math.inf

    def epoch(self, epoch: int, ctx: JobContext) -> EpochOutcome:
        """One epoch of mini-batch steps; a mini-batch loss that is not finite stops it before its update."""
        model, opt, batches = self.model, self.opt, self.batches
        W, bs = len(batches), batches.batch_size
        perm = torch.randperm(W, generator=batches.generator)
        total = 0.0
        for i in range(0, W, bs):
            idx = perm[i:i + bs]
            loss = model.loss(Windows.unpack(batches.packed[idx], batches.widths))
            value = loss.item()
            if not math.isfinite(value):
                return EpochOutcome(math.nan, diverged=f"the loss is {value}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += value * len(idx)
            ctx.check_cancelled()
        epoch_loss = total / W
        if epoch_loss > self.limit:
            return EpochOutcome(
                epoch_loss,
                diverged=f"the loss is {epoch_loss:.3g}, over {self.limit:.0e} (the "
                f"untrained model's was {self.reference:.3g})",
            )
        self.sched.step(epoch_loss)
        logged = {"loss": epoch_loss, "lr": opt.param_groups[0]["lr"]}
        c = self.config
        stop = None
        if c.select_every and (epoch % c.select_every == 0 or epoch == c.epochs):
            score = self.select(epoch)
            if score is not None:
                logged["holdout_mse"] = score[0]
                if score[1] is not None:
                    logged["holdout_torque_mse"] = score[1]
                if c.stop_patience and self.since_best >= c.stop_patience:
                    stop = (f"stopped early: no better on the held-out chunks since epoch {self.best_epoch}")
        time_left = None
        if c.time_budget is not None:
            time_left = c.time_budget - (time.perf_counter() - self.started)
            if time_left <= 0 and stop is None and epoch < c.epochs:
                stop = f"time budget of {c.time_budget:.0f} s spent"
                if self.batches.selection is not None and epoch % max(c.select_every, 1):
                    self.select(epoch)   # the last weights get their score too
        return EpochOutcome(epoch_loss, logged, steps=batches.per_epoch(), stop=stop, time_left=time_left)

    def training_state(self) -> dict:
        return training_state(self.model, self.opt, self.sched, {"batches": self.batches.generator})

    def checkpoint_meta(self) -> dict:
        return {"reference_loss": self.reference}

    def restore(self, state: Mapping, meta: Mapping) -> None:
        restore_training_state(state, self.model, self.opt, self.sched, {"batches": self.batches.generator})
        self.set_reference(meta.get("reference_loss"))

    def finite_copy(self) -> dict | None:
        return _snapshot_if_finite(self.model)

    def restore_copy(self, copy: dict) -> None:
        self.model.load_state_dict(copy)

    def write_last_finite(self, folder: Path, copy: dict, epoch: int, wall_time: float) -> None:
        write_model_files(folder, self.model, _model_meta(self.model, self.config, self.dataset, epoch,
                                                          status="last finite"), copy)

    def diverged_message(self, epoch: int, what: str, good_epoch: int, kept: Path | None) -> str:
        return _diverged_message(self.config, epoch, what, good_epoch, kept, self.run)

    def report(self, epoch: int, epochs: int, outcome: EpochOutcome, step: int, wall_time: float):
        return (f"{self.config.model} N={self.config.trajectories} epoch {epoch}/{epochs}",
                {"loss": outcome.loss, "epoch": epoch, "step": step, "wall_time": wall_time})


def fit(model: LearnedDynamics, dataset: TrajectoryDataset, config: TrainConfig,
        ctx: JobContext | None = None, checkpoint_dir: str | Path | Run | None = None,
        progress_span: tuple[float, float] = (0.0, 1.0), resume: bool = False) -> TrainResult:
    """Train ``model`` on the first ``config.trajectories`` training trajectories of ``dataset``.

    ``checkpoint_dir``: a run folder (:class:`~engine.runs.Run`, or a path: a new run is
    made there) that gets the metrics of every epoch and the whole training state every
    ``config.checkpoint_every`` epochs and at the end (never the final model: see
    :func:`train_model`). ``resume``: continue the run's last checkpoint up to ``config.epochs``
    (weights, optimiser, scheduler and random streams restored, so the run ends where an
    uninterrupted one would). A NaN loss raises :class:`TrainingDiverged` naming the epoch; the
    last finite weights go to the run's ``checkpoints/last-finite``. The loop itself is
    :func:`engine.training_loop.train_epochs`.
    """
    if config.threads:
        torch.set_num_threads(int(config.threads))
    tune_malloc()  # reuse warm heap pages for the per-step activations (engine/runtime.py)
    run = checkpoint_dir if isinstance(checkpoint_dir, Run) or checkpoint_dir is None else \
        new_run(checkpoint_dir, model, config, dataset)   # Run | None
    dtype = next(model.parameters()).dtype
    batches = TrainingBatches.build(dataset, config, dtype, next(model.parameters()).device)
    trainee = DynamicsTrainee(model, dataset, config, batches, run)
    if not resume:
        trainee.set_reference(_untrained_loss(model, batches))
        trainee.select(0)    # the starting weights compete too
    result = train_epochs(
        trainee,
        config.epochs,
        ctx,
        run,
        resume=resume,
        checkpoint_every=config.checkpoint_every,
        span=progress_span,
    )
    trainee.keep_best()
    return TrainResult(model=model, losses=result.losses, seconds=result.seconds, epochs=result.epochs,
                       best_epoch=trainee.best_epoch,
                       best_score=trainee.best_score, stopped=result.stopped)


def cancelled_message(run: Run) -> str:
    """What a cancelled or interrupted run kept, in one line."""
    kept = (
        f"its checkpoint of epoch {run.epoch} is kept in {run.path / 'checkpoints' / 'last'} (continue it "
        f"with --resume {run.path})"
        if run.epoch
        else "it had no checkpoint yet"
    )
    untouched = f" ({run.destination} is as it was)" if run.staged else ""
    return f"cancelled before the end; {kept}; no final model was written{untouched}"


def _diverged_message(config: TrainConfig, epoch: int, what: str, good_epoch: int, path, run) -> str:
    kept = (f"; the last finite model (epoch {good_epoch}) is kept in {path}" if path is not None
            else f"; the last finite weights were those of epoch {good_epoch}")
    untouched = "" if run is None else "; no final model was written" + (
        f" ({run.destination} is as it was; this run's record is in {run.path})" if run.staged else "")
    return (f"training of {config.model!r} on {config.data_name} (N={config.trajectories}) diverged at epoch "
            f"{epoch}: {what}{kept}{untouched}. Try a lower learning rate.")


def new_run(
    path: str | Path, model: LearnedDynamics, config: TrainConfig, dataset, data_source: dict | None = None
):
    """A :class:`~engine.runs.Run` for training ``model`` with ``config`` on ``dataset``:
    the full config (training, model spec, data source) and the system and data fingerprints."""
    system = dataset.system.describe()
    run_config = {"train": config.to_dict(), "model": {"type": model.name, "spec": model.spec.to_dict()},
                  "data": data_source or data_source_of(dataset), "system": system}
    return Run.create(
        path, "learn", run_config, {"system": fingerprint(system), "data": dataset.fingerprint()}
    )


def data_source_of(dataset) -> dict:
    """How to get ``dataset`` again for a resume: a generated set's config, or its description."""
    if getattr(dataset, "kind", "generated") == "generated":
        return {"kind": "generated", "config": dataset.config.to_dict()}
    return {"kind": dataset.kind, "description": dataset.describe()}


def train_model(config: TrainConfig, dataset: TrajectoryDataset, ctx: JobContext | None = None,
                checkpoint_dir: str | Path | Run | None = None, progress_span=(0.0, 1.0),
                resume: bool = False, model: LearnedDynamics | None = None) -> dict:
    """Build (or take ``model``), train and evaluate one model; returns a result row (metrics,
    seconds, losses) and ``run`` (the run folder, with a checkpoint dir).

    With a run folder the final ``model.safetensors`` + ``model.json`` are written only when the
    run ends well, in one save with the run's record; a diverged run (NaN loss, or NaN metrics at
    the end) raises :class:`TrainingDiverged` and a cancelled one records ``cancelled``: the
    folder's earlier final model, if any, is left as it was.
    """
    model = model if model is not None else build_for(config, dataset)
    run: Run | None = None
    if isinstance(checkpoint_dir, Run):
        run = checkpoint_dir
    elif checkpoint_dir is not None:
        run = (
            Run.open(checkpoint_dir, "learn", write=True)
            if resume
            else new_run(checkpoint_dir, model, config, dataset)
        )
    with recording(run):
        result = fit(model, dataset, config, ctx, run, progress_span, resume=resume)
    metrics = evaluate(model, dataset.subset(config.trajectories))
    check_metrics(metrics, model, config, dataset, run, result.epochs)
    losses = [float(r["loss"]) for r in run.metrics] if run is not None else result.losses
    row = {"model": config.model, "system": config.data_name, "trajectories": config.trajectories,
           "seed": config.seed, **metrics, "seconds": result.seconds,
           "final_loss": losses[-1] if losses else None}
    if run is not None:
        meta = _model_meta(model, config, dataset, result.epochs, status="done", metrics=metrics,
                           seconds=result.seconds)
        run.finish(lambda tmp: write_model_files(tmp, model, meta), metrics, f"done: {result.epochs} epochs")
    return {"row": row, "model": model.to("cpu"), "losses": losses, "run": run}  # handed back on the CPU


def recording(run: Run | None):
    """The run records a cancel, an interrupt or an error (a divergence records itself)."""
    if run is None:
        return contextlib.nullcontext()
    return run.recording(lambda: cancelled_message(run), (TrainingDiverged,))


def check_metrics(metrics: dict, model: LearnedDynamics, config: TrainConfig, dataset, run: Run | None,
                  epoch: int) -> None:
    """A divergence when a metric is not finite: the weights go to ``checkpoints/last-finite``
    (they are finite; the rollouts blow up), the run records it, :class:`TrainingDiverged` is raised."""
    bad = [k for k, v in metrics.items() if isinstance(v, float) and not math.isfinite(v)]
    if not bad:
        return
    path = None
    if run is not None:
        meta = _model_meta(model, config, dataset, epoch, status="metrics not finite")
        path = run.save_files(LAST_FINITE, lambda tmp: write_model_files(tmp, model, meta))
        run.end(
            "diverged", f"the metrics {', '.join(bad)} are not finite after epoch {epoch}", metrics=metrics
        )
    raise TrainingDiverged(
        _diverged_message(
            config,
            epoch,
            f"the metrics {', '.join(bad)} are not finite (the model's predictions blow up)",
            epoch,
            path,
            run,
        ),
        epoch,
        epoch,
        path,
    )
