"""Jobs for the GUI and the CLI: ``train_job(config)`` and ``resume_job(run_dir)`` return ``job(ctx) -> result``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from engine.data.config import DatasetConfig
from engine.data.dataset import TrajectoryDataset, generate_dataset, load_dataset
from engine.jobs import JobContext
from engine.runs import Run, RunError
from engine.training.config import TrainConfig
from engine.training.trainer import build_for, new_run, train_model

__all__ = ["dataset_for", "dataset_from_source", "resume_job", "resume_plan", "train_job"]


def dataset_for(system: str, trajectories: int, data_path: str | Path | None = None, seed: int = 0,
                ctx: JobContext | None = None) -> TrajectoryDataset:
    """Load ``data_path`` or generate the protocol's data set (with ``trajectories`` training trajectories)."""
    if data_path is not None:
        ds = load_dataset(data_path)
        if ds.config.system != system:
            raise ValueError(f"{data_path}: data set is for system {ds.config.system!r}, not {system!r}")
        return ds
    if ctx is not None:
        ctx.progress(0.0, f"generating the {system} data set")
    return generate_dataset(DatasetConfig(system=system, train_trajectories=max(trajectories, 1), seed=seed))


def _source(dataset, data_path) -> dict:
    if data_path is not None:
        return {"kind": "file", "path": str(Path(data_path).resolve()), "config": dataset.config.to_dict()}
    return {"kind": "generated", "config": dataset.config.to_dict()}


def dataset_from_source(run: Run, ctx: JobContext | None = None):
    """The data set a run trained on, rebuilt from its config (generated again, or read from its
    file) and checked against the run's data fingerprint."""
    source = run.config.get("data") or {}
    kind = source.get("kind")
    if kind == "file":
        ds = load_dataset(source["path"])
    elif kind == "generated":
        if ctx is not None:
            ctx.progress(0.0, "generating the run's data set again")
        ds = generate_dataset(DatasetConfig.from_dict(source["config"]))
    else:
        raise RunError(
            f"{run.path}: the run trained on {kind or 'unknown'} data, which cannot be rebuilt from "
            "its folder; resume it where that data is loaded (the model lab)"
        )
    want = (run.info.get("fingerprints") or {}).get("data")
    if want and ds.fingerprint() != want:
        raise RunError(f"{run.path}: the data rebuilt for the resume differ from the data the run trained on "
                       f"(fingerprint {ds.fingerprint()[:12]} instead of {want[:12]})")
    return ds


def train_job(config: TrainConfig, out_dir: str | Path | None = None, data_path: str | Path | None = None,
              dataset: TrajectoryDataset | None = None):
    """A job that trains and evaluates one model; returns ``{'row', 'checkpoint', 'losses'}``.

    With ``out_dir`` the run lives in that folder (:mod:`engine.runs`: config, metrics,
    checkpoints, and the final model when it ends well). The job reports ``{'loss', 'epoch'}``
    as live metrics and stops on cancel (JobCancelled).
    """

    def job(ctx: JobContext):
        ds = (
            dataset
            if dataset is not None
            else dataset_for(config.system, config.trajectories, data_path, ctx=ctx)
        )
        run = None
        model = None
        if out_dir is not None:
            model = build_for(config, ds)
            run = new_run(out_dir, model, config, ds, _source(ds, data_path))
        result = train_model(config, ds, ctx, checkpoint_dir=run, progress_span=(0.0, 0.95), model=model)
        return _finished(config, result)

    return job


def resume_plan(
    run_dir: str | Path, epochs: int | None = None, device: str | None = None
) -> tuple[Run, TrainConfig]:
    """The run in ``run_dir`` and the config it resumes with (``epochs``: the new total).

    A finished run resumes only to extend it (``epochs`` above the epochs it has trained); an
    unfinished one continues to its planned epochs. :class:`RunError` says what to pass otherwise.
    """
    run = Run.open(run_dir, "learn", write=True)   # this process writes the folder until the run ends
    with run.released_on_error():   # a refused plan leaves the folder free
        config = TrainConfig.from_dict(run.section("train"))
        target = int(epochs) if epochs is not None else int(run.info.get("epochs_target") or config.epochs)
        done = run.epoch
        if run.info.get("status") == "done" and target <= done:
            raise RunError(
                f"{run.path}: the run is finished ({done} epochs); pass --epochs N above {done} to extend it"
            )
        if target <= done:
            raise RunError(f"{run.path}: the last checkpoint is at epoch {done}; --epochs must be above it "
                           f"(got {target})")
        config = (
            replace(config, device=device) if device is not None else config
        )  # where it goes on (--device)
    return run, replace(config, epochs=target)


def resume_job(run_dir: str | Path, epochs: int | None = None, dataset=None, device: str | None = None):
    """A job that continues the run in ``run_dir`` from its last checkpoint up to ``epochs`` (default:
    its planned epochs): weights, optimiser, scheduler and random streams restored, so it ends
    where an uninterrupted run would. ``dataset``: the data, when they cannot be rebuilt from
    the run's config (a log); checked against the run's fingerprint."""
    run, config = resume_plan(run_dir, epochs, device)

    def job(ctx: JobContext):
        ds = dataset if dataset is not None else dataset_from_source(run, ctx)
        want = (run.info.get("fingerprints") or {}).get("data")
        if want and ds.fingerprint() != want:
            raise RunError(f"{run.path}: these data are not the data the run trained on")
        run.config["train"] = config.to_dict()
        run.info["epochs_target"] = config.epochs
        run.info["status"], run.info["message"] = "running", f"resumed at epoch {run.epoch}"
        result = train_model(config, ds, ctx, checkpoint_dir=run, progress_span=(0.0, 0.95), resume=True)
        return _finished(config, result)

    return job


def _finished(config: TrainConfig, result: dict) -> dict:
    run = result.get("run")
    return {"row": result["row"], "checkpoint": str(run.path) if run is not None else None,
            "losses": result["losses"]}
