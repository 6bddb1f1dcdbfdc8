"""Sweeps: models x training-set sizes x seeds on one data set, as one table of rows.

Each row: ``{model, system, trajectories, seed, train_mse, test_mse, integration_mse,
energy_mse, inertia_mse, seconds}`` (configuration MSEs; a missing or diverged metric is
None/NaN, with ``error`` set when the run failed). The data set is generated once (or
loaded), saved in the output folder, and shared by every run; runs execute on an
executor (local processes by default), the slowest first.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.data.config import DatasetConfig
from engine.data.dataset import generate_dataset, load_dataset, save_dataset
from engine.jobs import JobContext, NullJobContext
from engine.models.registry import PAPER_MODELS, model_names
from engine.training.config import TrainConfig
from engine.training.executors import get_executor
from engine.training.metrics import METRIC_NAMES
from engine.validation import InputError

__all__ = ["ROW_KEYS", "SweepConfig", "run_sweep", "run_task"]

ROW_KEYS = ("model", "system", "trajectories", "seed", *METRIC_NAMES, "seconds")

# relative cost per window of each model type, to start the slowest runs first. The robot models
# (one ABA per stage, overhead-bound: nearly flat in the batch size) measured against lnode-rk4 on
# the pendulum, training epochs at N = 8 / 32 / 128: robot-rk4 2.2x / 2.0x / 0.9x (1.4x over the
# three), robot-midpoint 1.1x / 1.0x / 0.4x (0.66x)
_COST = {
    "lnode-rk4": 6,
    "e2e-symo": 6,
    "lnode-midpoint": 3,
    "symo": 3,
    "node-rk4": 1.5,
    "node-midpoint": 1,
    "mlp": 0.5,
    "robot-rk4": 8,
    "robot-midpoint": 4,
}


@dataclass
class SweepConfig:
    system: str = "pendulum"
    models: tuple = PAPER_MODELS
    trajectories: tuple = (8, 16, 32, 64, 128)
    seeds: tuple = (0,)
    epochs: int = 2000
    learning_rate: float | None = None
    hidden: int | None = None
    data_seed: int = 0
    long_term_steps: int = 500
    device: str = "cpu"         # every run's TrainConfig.device (--device)

    def __post_init__(self):
        self.models = tuple(self.models)
        self.trajectories = tuple(int(n) for n in self.trajectories)
        self.seeds = tuple(int(s) for s in self.seeds)
        known = set(model_names())
        for m in self.models:
            if m not in known:
                raise InputError(f"unknown model {m!r}; choose from {', '.join(sorted(known))}",
                                 owner="SweepConfig", field="models")
        for name in ("models", "trajectories", "seeds"):
            if not getattr(self, name):
                raise InputError("give at least one", owner="SweepConfig", field=name)
        if any(n < 1 for n in self.trajectories):
            raise InputError(
                f"every N must be at least 1, got {list(self.trajectories)}",
                owner="SweepConfig",
                field="trajectories",
            )

    def train_configs(self) -> list[TrainConfig]:
        return [TrainConfig(model=m, system=self.system, trajectories=n, epochs=self.epochs,
                            learning_rate=self.learning_rate, hidden=self.hidden, seed=s, device=self.device)
                for m in self.models for n in self.trajectories for s in self.seeds]

    def to_dict(self) -> dict:
        return asdict(self)


def run_task(task: dict) -> dict:
    """Train one configuration in this process (picklable entry point for executors)."""
    from engine.training.trainer import TrainingDiverged, train_model

    config = TrainConfig.from_dict(task["config"])
    dataset = load_dataset(task["data"])
    try:
        return train_model(config, dataset, checkpoint_dir=task.get("checkpoint_dir"))["row"]
    except TrainingDiverged as exc:
        row = {"model": config.model, "system": config.system, "trajectories": config.trajectories,
               "seed": config.seed, **{k: math.nan for k in METRIC_NAMES}, "seconds": math.nan,
               "error": str(exc)}
        return row


def run_sweep(config: SweepConfig, out_dir: str | Path, executor=None, ctx: JobContext | None = None,
              data_path: str | Path | None = None) -> list[dict]:
    ctx = ctx or NullJobContext()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if data_path is None:
        ctx.progress(0.0, f"generating the {config.system} data set")
        ds = generate_dataset(DatasetConfig(system=config.system, train_trajectories=max(config.trajectories),
                                            long_term_steps=config.long_term_steps, seed=config.data_seed))
        data_path = save_dataset(ds, out / "dataset.npz")
    else:
        ds = load_dataset(data_path)
        if ds.config.system != config.system or len(ds.train_x) < max(config.trajectories):
            raise ValueError(
                f"{data_path}: data set must be for {config.system} with >= {max(config.trajectories)} "
                "training trajectories"
            )
    configs = sorted(config.train_configs(), key=lambda c: -_COST.get(c.model, 3) * (c.trajectories + 8))
    tasks = [
        {
            "config": c.to_dict(),
            "data": str(data_path),
            "checkpoint_dir": str(out / "runs" / f"{c.model}-N{c.trajectories}-s{c.seed}"),
        }
        for c in configs
    ]
    executor = executor or get_executor("local")
    rows: list[dict | None] = [None] * len(tasks)
    t0 = time.perf_counter()

    def on_done(i, row):
        rows[i] = row
        done = sum(r is not None for r in rows)
        metrics = {
            k: row[k] for k in ("integration_mse", "trajectories") if isinstance(row.get(k), (int, float))
        }
        ctx.progress(done / len(tasks), f"{done}/{len(tasks)} runs ({row['model']} N={row['trajectories']}) "
                     f"{time.perf_counter() - t0:.0f} s", metrics)

    executor.run(run_task, tasks, on_done, ctx)
    order = {m: i for i, m in enumerate(config.models)}
    done = [r for r in rows if r is not None]   # every task reported (the executor waits for all)
    return sorted(done, key=lambda r: (order[r["model"]], r["trajectories"], r["seed"]))

