"""``car train`` as a run folder (:mod:`engine.runs`): resumable, comparable.

The folder holds ``config.json`` (the :class:`~engine.car.training.CarTrainConfig` and where the
data came from: simulated driving, or a recorded log's path), ``run.json``, ``metrics.csv``
(``train_loss``, ``val_loss``, ``lr`` per epoch), ``checkpoints/last`` (weights, Adam, the
one-cycle schedule, the random streams) and, when the run ends well, the model
(``car_model.safetensors`` + ``car_model.json``, what ``car plan --model DIR`` loads).

:func:`resume_job` continues a run from its last checkpoint: an interrupted run ends where the
uninterrupted one would (same seed, same loss); ``epochs`` beyond the planned ones extend a run
(its one-cycle schedule is planned again over the new total, see
:func:`engine.car.training.fit_car_model`).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from engine.car.data import DrivingConfig, make_dataset, validation_trajectories
from engine.car.model import CarMLPConfig, save_car_model
from engine.car.training import CarTrainConfig, fit_car_model, trajectory_validation_error
from engine.devices import parse_device_name
from engine.jobs import ProgressSpan
from engine.runs import Run, RunError
from engine.systems.rc_car import CarParams
from engine.training_loop import TrainingDiverged

__all__ = ["RUN_KIND", "config_from_dict", "data_fingerprint", "resume_job", "train_job"]

RUN_KIND = "car"


def config_from_dict(data: dict) -> CarTrainConfig:
    """The :class:`CarTrainConfig` of a run's ``config.json`` (``train``)."""
    driving_names = set(DrivingConfig.__dataclass_fields__)
    return CarTrainConfig(
        model=CarMLPConfig.from_dict(data["model"]),
        driving=DrivingConfig(**{k: v for k, v in data["driving"].items() if k in driving_names}),
        params=CarParams.from_dict(data["params"]),
        validation_count=int(data["validation_count"]),
        validation_seconds=float(data["validation_seconds"]),
        device=str(data.get("device", "cpu")),
    )


def _config_dict(config: CarTrainConfig) -> dict:
    return {**config.to_dict(), "device": config.device}


def data_fingerprint(data: dict) -> str:
    """sha256 of the training pairs (float32 inputs and targets)."""
    h = hashlib.sha256()
    for key in ("inputs", "targets"):
        h.update(np.ascontiguousarray(torch.as_tensor(data[key]).float().cpu().numpy()).tobytes())
    return h.hexdigest()


def _data(config: CarTrainConfig, source: dict, ctx) -> dict:
    """The training pairs ``source`` names: simulated from the config, or a recorded log again."""
    if source.get("kind") == "log":
        from engine.car.driving_logs import load_car_log

        prep = load_car_log(source["path"], config.params, config.driving)
        return {
            "inputs": torch.from_numpy(prep["inputs"]).float(),
            "targets": torch.from_numpy(prep["targets"]).float(),
        }
    return make_dataset(config.params, config.driving, ProgressSpan(ctx, 0.0, 0.1, ceiling=0.99))


def _train(
    config: CarTrainConfig, run: Run, data: dict, ctx, resume: bool, validation, checkpoint_every: int
):
    t0 = time.perf_counter()
    cancelled = lambda: (
        f"cancelled before the end; the checkpoint of epoch {run.epoch} is kept in {run.path} "
        f"(continue it with --resume {run.path}); no model was written"
    )
    with run.recording(cancelled, (TrainingDiverged,)):  # a divergence records itself
        model, hist = fit_car_model(
            data["inputs"],
            data["targets"],
            config.model,
            ctx=ProgressSpan(ctx, 0.1, 0.9, ceiling=0.99),
            device=config.device,
            run=run,
            resume=resume,
            checkpoint_every=checkpoint_every,
        )
        val = validation if validation is not None else validation_trajectories(
            config.params, config.validation_count, config.validation_seconds)
        tve, _ = trajectory_validation_error(model, val, config.params.dt)
    meta = {"h": config.params.dt, "train": config.to_dict(), "tve": tve, "epoch": config.model.epochs,
            "train_loss": hist["train_loss"][-1], "val_loss": hist["val_loss"][-1]}
    path = run.finish(lambda tmp: save_car_model(tmp, model, meta),
                      {"train_loss": hist["train_loss"][-1], "val_loss": hist["val_loss"][-1], "tve": tve},
                      f"done: {config.model.epochs} epochs")
    ctx.progress(1.0, "trained", {"tve": tve})
    return {"model": model, "train_loss": hist["train_loss"][-1], "val_loss": hist["val_loss"][-1],
            "initial_loss": hist["train_loss"][0], "history": hist, "tve": tve,
            "samples": int(data["inputs"].shape[0]), "seconds": time.perf_counter() - t0,
            "model_dir": str(path), "epochs": config.model.epochs}


def train_job(
    config: CarTrainConfig,
    out_dir: str | Path,
    dataset: dict | None = None,
    log_path: str | None = None,
    validation=None,
    checkpoint_every: int = 10,
):
    """A job training a car model as a new run in ``out_dir`` (simulated driving, or ``dataset``
    read from the log at ``log_path``); returns what :func:`engine.car.training.train_job` does."""
    source = {"kind": "log", "path": str(Path(log_path).resolve())} if log_path else {"kind": "simulated"}

    def job(ctx):
        data = dataset if dataset is not None else _data(config, source, ctx)
        ctx.check_cancelled()
        run = Run.create(out_dir, RUN_KIND, {"train": _config_dict(config), "data": source},
                         {"data": data_fingerprint(data)})
        return _train(config, run, data, ctx, False, validation, checkpoint_every)

    return job


def resume_plan(run_dir: str | Path, epochs: int | None = None, device: str | None = None):
    """The run in ``run_dir`` and the config it resumes with (``epochs``: the new total)."""
    run = Run.open(run_dir, RUN_KIND, write=True)   # this process writes the folder until the run ends
    with run.released_on_error():   # a refused plan leaves the folder free
        config = config_from_dict(run.section("train"))
        target = int(epochs) if epochs is not None else config.model.epochs
        done = run.epoch
        if run.info.get("status") == "done" and target <= done:
            raise RunError(
                f"{run.path}: the run is finished ({done} epochs); pass --epochs N above {done} to extend it"
            )
        if target <= done:
            raise RunError(
                f"{run.path}: the last checkpoint is at epoch {done}; --epochs must be above it (got {target})"
            )
        config = replace(config, model=replace(config.model, epochs=target))
        if device is not None:
            config = replace(config, device=parse_device_name(device))
    return run, config


def resume_job(run_dir: str | Path, epochs: int | None = None, device: str | None = None,
               dataset: dict | None = None, validation=None, checkpoint_every: int = 10):
    """A job continuing the run in ``run_dir`` from its last checkpoint up to ``epochs`` (default:
    its planned epochs); weights, Adam, the schedule and the random streams restored. The data
    are simulated again (or the log read again) and checked against the run's fingerprint."""
    run, config = resume_plan(run_dir, epochs, device)

    def job(ctx):
        data = dataset if dataset is not None else _data(config, run.config.get("data") or {}, ctx)
        want = (run.info.get("fingerprints") or {}).get("data")
        if want and data_fingerprint(data) != want:
            raise RunError(f"{run.path}: these data are not the data the run trained on")
        run.config["train"] = _config_dict(config)
        run.info["status"], run.info["message"] = "running", f"resumed at epoch {run.epoch}"
        return _train(config, run, data, ctx, True, validation, checkpoint_every)

    return job
