"""Training the learned car model: the loop (:func:`fit_car_model`), the job, the TVE metric and
the paper's model selection.

The car model is fitted on one-step pairs with a one-cycle cosine schedule and block-wise
validation (Köhler et al.), on the engine's one training loop
(:func:`engine.training_loop.train_epochs`: checkpoints, resume, divergence, progress).

TVE (trajectory validation error, Eq. 10): roll the model out open loop from the start of
each of the 40 validation trajectories (3 s) under the recorded controls and average the L1
norm of the end-pose error ``|x_n - x_n^j|_1`` (x in m, y in m, yaw in rad wrapped to
[-pi, pi]: a heading error of a full turn is no error in the pose).
"""

from __future__ import annotations

import io as _io
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine import io
from engine.car.data import DrivingConfig, make_dataset, validation_trajectories
from engine.car.dynamics import LearnedCarModel, rollout
from engine.car.model import (
    ACTIVATIONS,
    LOSSES,
    CarMLP,
    CarMLPConfig,
    CarModelError,
    car_loss,
    save_car_model,
)
from engine.devices import resolve_device
from engine.jobs import ProgressSpan
from engine.runs import restore_training_state, training_state
from engine.systems.rc_car import CarParams
from engine.training_loop import EpochOutcome, train_epochs
from engine.validation import InputError, check_int, check_range

__all__ = [
    "CarTrainConfig",
    "SelectionConfig",
    "block_split",
    "fit_car_model",
    "select_models_job",
    "selection_plot",
    "train_job",
    "trajectory_validation_error",
]


@dataclass(frozen=True)
class CarTrainConfig:
    """Everything ``car train`` needs: the car, the driver/motion capture, the model."""

    model: CarMLPConfig = CarMLPConfig()
    driving: DrivingConfig = DrivingConfig()
    params: CarParams = CarParams()
    validation_count: int = 40
    validation_seconds: float = 3.0
    device: str = "cpu"     # where the network trains (cpu, cuda, auto); the saved model is on the CPU

    def __post_init__(self):
        check_int("car training setting", "validation_count", self.validation_count, 1, 10_000)
        check_range("car training setting", "validation_seconds", self.validation_seconds, 0.0, 600.0,
                    lo_open=True, unit="s")

    def to_dict(self) -> dict:
        return {"model": self.model.to_dict(), "driving": self.driving.to_dict(),
                "params": self.params.to_dict(), "validation_count": self.validation_count,
                "validation_seconds": self.validation_seconds}


def block_split(n: int, val_fraction: float, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Validation pairs as whole contiguous blocks (neighbouring time steps are nearly equal, so
    a pair-wise random split would leak); returns ``(train_idx, val_idx)``."""
    block = 100 if n >= 2000 else max(1, n // 20)
    blocks = torch.arange(n) // block
    nb = int(blocks[-1]) + 1 if n else 0
    n_val = round(val_fraction * nb)
    val_blocks = torch.randperm(nb, generator=gen)[:n_val]
    is_val = torch.isin(blocks, val_blocks)
    return torch.nonzero(~is_val).flatten(), torch.nonzero(is_val).flatten()


def fit_car_model(inputs: torch.Tensor, targets: torch.Tensor,
                  config: CarMLPConfig = CarMLPConfig(), ctx=None, device: str = "cpu",
                  run=None, resume: bool = False, checkpoint_every: int = 10) -> tuple[CarMLP, dict]:
    """Train on pairs ``inputs`` (N, 5) = (v_i, u_i) -> ``targets`` (N, 3) = v_{i+1}.

    Pairs are expected in recording order: the held-out pairs are whole blocks of consecutive
    steps. One-step loss (``config.loss``), Adam, one-cycle cosine learning rate.
    ``ctx`` is an optional job context (progress with live metrics, cancellation).
    Returns ``(model, history)`` with per-epoch ``train_loss`` / ``val_loss`` lists. ``device``:
    where it trains (the random draws stay on the CPU, so every device sees the same batches);
    the model comes back on the CPU. ``run``: a run folder (:class:`engine.runs.Run`) that gets
    every epoch's losses and the whole training state (weights, Adam, the one-cycle schedule,
    the random streams) every ``checkpoint_every`` epochs and at the end; ``resume``: continue its
    last checkpoint (engine/car/car_runs.py).
    """
    if inputs.ndim != 2 or inputs.shape[1] != 5 or targets.shape != (inputs.shape[0], 3):
        raise CarModelError(f"training data: expected inputs (N, 5) and targets (N, 3), got "
                            f"{tuple(inputs.shape)} and {tuple(targets.shape)}")
    if not (torch.isfinite(inputs).all() and torch.isfinite(targets).all()):
        raise CarModelError("training data: contains NaN or inf")
    gen = torch.Generator().manual_seed(config.seed)
    torch.manual_seed(config.seed)
    inputs, targets = inputs.float(), targets.float()
    train_idx, val_idx = block_split(inputs.shape[0], config.val_fraction, gen)
    model = CarMLP(config)
    model.set_normalisation(inputs[train_idx], targets[train_idx])
    dev = resolve_device(device)
    model, inputs, targets = model.to(dev), inputs.to(dev), targets.to(dev)
    bs = config.batch_size
    steps_per_epoch = max(1, math.ceil(len(train_idx) / bs))
    total_steps = config.epochs * steps_per_epoch
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=total_steps,
                                                pct_start=0.05, anneal_strategy="cos",
                                                div_factor=10.0, final_div_factor=50.0)
    trainee = _CarTrainee(model, inputs, targets, train_idx, val_idx, config, opt, sched, gen, run)
    result = train_epochs(trainee, config.epochs, ctx, run, resume=resume, checkpoint_every=checkpoint_every)
    history = {**trainee.history, "seconds": result.seconds}
    model.eval()
    return model.to("cpu"), history


class _CarTrainee:
    """The car model's side of :func:`engine.training_loop.train_epochs`: shuffled one-step pairs,
    Adam, the one-cycle schedule stepped per batch, the held-out blocks' loss per epoch."""

    def __init__(self, model: CarMLP, inputs, targets, train_idx, val_idx, config: CarMLPConfig, opt, sched,
                 gen: torch.Generator, run):
        self.model, self.inputs, self.targets, self.config = model, inputs, targets, config
        self.train_idx, self.val_idx, self.opt, self.sched, self.gen, self.run = (
            train_idx,
            val_idx,
            opt,
            sched,
            gen,
            run,
        )
        self.steps_per_epoch = max(1, math.ceil(len(train_idx) / config.batch_size))
        self.history: dict[str, list[float]] = {"train_loss": [], "val_loss": []}

    def epoch(self, epoch: int, ctx) -> EpochOutcome:
        model, config, bs = self.model, self.config, self.config.batch_size
        total_steps = config.epochs * self.steps_per_epoch
        order = self.train_idx[torch.randperm(len(self.train_idx), generator=self.gen)]
        total = 0.0
        for k in range(self.steps_per_epoch):
            idx = order[k * bs:(k + 1) * bs]
            x, y = self.inputs[idx], self.targets[idx]
            loss = car_loss(model(x[:, :3], x[:, 3:]), y, config.loss, config.eps)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            if self.sched.last_epoch + 1 < total_steps:
                self.sched.step()
            total += float(loss.detach()) * len(idx)
            if k % 20 == 0:
                ctx.check_cancelled()
        train_loss = total / max(1, len(self.train_idx))
        if not math.isfinite(train_loss):
            return EpochOutcome(train_loss)
        with torch.no_grad():
            if len(self.val_idx):
                xv, yv = self.inputs[self.val_idx], self.targets[self.val_idx]
                val_loss = float(car_loss(model(xv[:, :3], xv[:, 3:]), yv, config.loss, config.eps))
            else:
                val_loss = float("nan")
        self.history["train_loss"].append(train_loss)
        self.history["val_loss"].append(val_loss)
        return EpochOutcome(train_loss, {"train_loss": train_loss, "val_loss": val_loss,
                                         "lr": self.opt.param_groups[0]["lr"]}, steps=self.steps_per_epoch)

    def training_state(self) -> dict:
        return training_state(self.model, self.opt, self.sched, {"batches": self.gen})

    def checkpoint_meta(self) -> dict:
        return {"schedule_epochs": self.config.epochs}   # the epochs the one-cycle schedule was planned for

    def restore(self, state, meta) -> None:
        """Resumed to the epochs its schedule was planned for, the run continues exactly (it ends
        where an uninterrupted one does). Extended beyond them, the one-cycle schedule is planned
        again over the new total from the step reached (its learning rate rises again: an extension
        is a new schedule's tail, not the run it would have been had it been planned that long)."""
        epochs = self.config.epochs
        same_plan = int(meta.get("schedule_epochs", epochs)) == epochs
        restore_training_state(
            state, self.model, self.opt, self.sched if same_plan else None, {"batches": self.gen}
        )
        done = int(meta["epoch"])
        if not same_plan:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "scheduler stepped before the optimiser": a fast-forward
                self.sched.last_epoch = done * self.steps_per_epoch - 1
                self.sched.step()
        self.history["train_loss"] = [float(r["train_loss"]) for r in self.run.metrics]
        self.history["val_loss"] = [float(r["val_loss"]) for r in self.run.metrics]

    def finite_copy(self) -> dict | None:
        if all(bool(torch.isfinite(p).all()) for p in self.model.parameters()):
            return {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        return None

    def restore_copy(self, copy: dict) -> None:
        self.model.load_state_dict(copy)

    def write_last_finite(self, folder: Path, copy: dict, epoch: int, wall_time: float) -> None:
        self.model.load_state_dict(copy)
        save_car_model(folder, self.model.to("cpu"), {"status": "last finite", "epoch": epoch})

    def diverged_message(self, epoch: int, what: str, good_epoch: int, kept: Path | None) -> str:
        where = (f"; the last finite model (epoch {good_epoch}) is kept in {kept}; no model was written"
                 if kept is not None else "")
        return (
            f"car model training diverged at epoch {epoch} ({what}){where}. Try a lower learning rate (--lr)."
        )

    def report(self, epoch: int, epochs: int, outcome: EpochOutcome, step: int, wall_time: float):
        return f"epoch {epoch}/{epochs}", {"train_loss": outcome.logged["train_loss"],
                                           "val_loss": outcome.logged["val_loss"]}


def trajectory_validation_error(model, validation: dict, h: float) -> tuple[float, np.ndarray]:
    """TVE and the per-trajectory end-pose L1 errors (J,) of ``model`` on ``validation``."""
    dyn = LearnedCarModel(model, h)
    with torch.no_grad():
        P, _ = rollout(dyn, validation["pose0"].float(), validation["v0"].float(),
                       validation["controls"].float())
    d = P[:, -1].double() - validation["pose"][:, -1].double()
    d[:, 2] = torch.atan2(torch.sin(d[:, 2]), torch.cos(d[:, 2]))
    err = d.abs().sum(-1).numpy()
    return float(err.mean()), err


def train_job(config: CarTrainConfig = CarTrainConfig(), out_dir: str | Path | None = None, dataset=None,
              validation=None):
    """A job: simulate data, train, measure TVE, save into ``out_dir`` (if given).

    The job returns a dict with ``train_loss``, ``val_loss``, ``initial_loss``, ``tve``,
    ``samples``, ``seconds`` and ``model_dir``; the trained model is under ``model``.
    """
    def job(ctx):
        t0 = time.perf_counter()
        data = dataset if dataset is not None else make_dataset(config.params, config.driving, ctx)
        ctx.check_cancelled()
        model, hist = fit_car_model(
            data["inputs"],
            data["targets"],
            config.model,
            ctx=ProgressSpan(ctx, 0.1, 0.9, ceiling=0.99),
            device=config.device,
        )
        val = validation if validation is not None else validation_trajectories(
            config.params, config.validation_count, config.validation_seconds)
        tve, _ = trajectory_validation_error(model, val, config.params.dt)
        meta = {"h": config.params.dt, "train": config.to_dict(), "tve": tve,
                "train_loss": hist["train_loss"][-1], "val_loss": hist["val_loss"][-1]}
        if out_dir is not None:
            save_car_model(out_dir, model, meta)
        ctx.progress(1.0, "trained", {"tve": tve})
        return {"model": model, "train_loss": hist["train_loss"][-1], "val_loss": hist["val_loss"][-1],
                "initial_loss": hist["train_loss"][0], "history": hist, "tve": tve,
                "samples": int(data["inputs"].shape[0]), "seconds": time.perf_counter() - t0,
                "model_dir": str(out_dir) if out_dir is not None else None}
    return job


@dataclass(frozen=True)
class SelectionConfig:
    """The paper's comparison: activations x losses, several seeds each, TVE on 40 trajectories."""

    activations: tuple[str, ...] = ("gelu", "relu")
    losses: tuple[str, ...] = ("relative", "l1", "l2")
    seeds: int = 2
    epochs: int = CarMLPConfig.epochs   # as trained by `car train`: rankings of under-trained models mislead
    minutes: float = 15.0
    hidden: int = 64
    layers: int = 8
    device: str = "cpu"     # where each model trains (cpu, cuda, auto)

    def __post_init__(self):
        if not self.activations or any(a not in ACTIVATIONS for a in self.activations):
            raise InputError(f"one or more of {', '.join(ACTIVATIONS)}, got {list(self.activations)}",
                             owner="SelectionConfig", field="activations")
        if not self.losses or any(l not in LOSSES for l in self.losses):
            raise InputError(
                f"one or more of {', '.join(LOSSES)}, got {list(self.losses)}",
                owner="SelectionConfig",
                field="losses",
            )
        check_int("model selection setting", "seeds (--seeds)", self.seeds, 1, 1000)
        # the network and the data each run trains on: the same checks as `car train`
        CarMLPConfig(hidden=self.hidden, layers=self.layers, epochs=self.epochs)
        DrivingConfig(minutes=self.minutes)


DATA_SHARE = 0.05  # of the selection job's progress bar: simulating the driving data


def select_models_job(config: SelectionConfig = SelectionConfig(), out_dir: str | Path | None = None,
                      params: CarParams = CarParams()):
    """A job training every (activation, loss, seed); returns the TVE table (and writes
    ``selection.json`` and the box plot ``selection.png`` into ``out_dir`` if given)."""
    def job(ctx):
        data = make_dataset(
            params,
            DrivingConfig(minutes=config.minutes),
            ctx=ProgressSpan(ctx, 0.0, DATA_SHARE, ceiling=0.99),
        )
        ctx.check_cancelled()
        val = validation_trajectories(params)
        rows = []
        runs = [(a, l, s) for a in config.activations for l in config.losses for s in range(config.seeds)]
        share = (1.0 - DATA_SHARE) / len(runs)
        for i, (act, loss, seed) in enumerate(runs):
            ctx.check_cancelled()
            mc = CarMLPConfig(hidden=config.hidden, layers=config.layers, activation=act, loss=loss,
                              epochs=config.epochs, seed=seed)
            model, _ = fit_car_model(
                data["inputs"],
                data["targets"],
                mc,
                ctx=ProgressSpan(ctx, DATA_SHARE + i * share, DATA_SHARE + (i + 1) * share, ceiling=0.99),
                device=config.device,
            )
            tve, errs = trajectory_validation_error(model, val, params.dt)
            rows.append({"activation": act, "loss": loss, "seed": seed, "tve": tve, "errors": errs.tolist()})
            ctx.progress((i + 1) / len(runs), f"{act}/{loss}/seed {seed}", {"tve": tve})
        table = []
        for act in config.activations:
            for loss in config.losses:
                sel = [r["tve"] for r in rows if r["activation"] == act and r["loss"] == loss]
                table.append({"activation": act, "loss": loss, "tve_mean": float(np.mean(sel)),
                              "tve_min": float(np.min(sel)), "tve_max": float(np.max(sel)), "runs": len(sel)})
        best = min(table, key=lambda r: r["tve_mean"])
        result = {
            "table": table,
            "runs": rows,
            "best": best,
            "validation_trajectories": int(val["pose0"].shape[0]),
        }
        if out_dir is not None:
            out = Path(out_dir)
            io.write_json(out / "selection.json", result)
            io.atomic_write_bytes(out / "selection.png", selection_plot(rows))
            result["plot"] = str(out / "selection.png")
        return result
    return job


def selection_plot(rows: list[dict]) -> bytes:
    """Box plots of the TVE per (activation, loss) as PNG bytes (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    groups = list(dict.fromkeys((r["activation"], r["loss"]) for r in rows))   # the configuration's order
    fig = Figure(figsize=(7, 3.5), dpi=100)
    ax = fig.add_subplot(111)
    data = [[r["tve"] for r in rows if (r["activation"], r["loss"]) == g] for g in groups]
    ax.boxplot(data)
    ax.set_xticks(range(1, len(groups) + 1), [f"{a}\n{l}" for a, l in groups])
    ax.set_ylabel("TVE (mean L1 end-pose error)")
    ax.set_title("Model selection: 40 validation trajectories of 3 s")
    fig.tight_layout()
    buf = _io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
