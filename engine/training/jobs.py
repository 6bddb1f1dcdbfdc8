"""Jobs for the GUI and the CLI: ``train_job(config)`` returns ``job(ctx) -> result``."""

from __future__ import annotations

from pathlib import Path

from engine.data.config import DatasetConfig
from engine.data.dataset import TrajectoryDataset, generate_dataset, load_dataset
from engine.jobs import JobContext
from engine.training.config import TrainConfig
from engine.training.trainer import train_model

__all__ = ["train_job", "dataset_for"]


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


def train_job(config: TrainConfig, out_dir: str | Path | None = None, data_path: str | Path | None = None,
              dataset: TrajectoryDataset | None = None):
    """A job that trains and evaluates one model; returns ``{'row': metrics row, 'checkpoint': dir}``.

    The trained model is written to ``out_dir`` (safetensors + JSON) when given. The job
    reports ``{'loss', 'epoch'}`` as live metrics and stops on cancel (JobCancelled).
    """

    def job(ctx: JobContext):
        ds = dataset if dataset is not None else dataset_for(config.system, config.trajectories, data_path, ctx=ctx)
        result = train_model(config, ds, ctx, checkpoint_dir=out_dir, progress_span=(0.0, 0.95))
        ctx.progress(1.0, f"{config.model} done", {"loss": result["row"]["final_loss"] or float("nan"),
                                                    "epoch": config.epochs})
        return {"row": result["row"], "checkpoint": str(out_dir) if out_dir else None, "losses": result["losses"]}

    return job
