"""The Model lab's jobs and the app-side helpers around the engine (like the Robot workspace's
robot_jobs.py): data generation, log reading and preparation, training and evaluation as jobs
(``job(ctx) -> result``, engine.jobs), saved models, the fields the forms edit and file filters.

The workspace imports the engine's own names (TrainConfig, LogMapping, ModelSpec, ...) from the
engine directly; this module holds only what the app adds.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from app.device_preference import preferred_device
from engine import runs
from engine.data import DatasetConfig, LogDataset, generate_dataset, log_dataset
from engine.data.config import PROTOCOLS
from engine.io import atomic_write_text, finite_or_none, json_default
from engine.logs import (
    LOG_FILE_FILTERS,
    LogError,
    LogMapping,
    PrepareConfig,
    find_saved_mapping,
    guess_time_column,
    prepare_log,
    read_log,
)
from engine.logs.units import UNIT_KINDS
from engine.models import ModelSpec, load_model, model_names, save_model
from engine.training import compare as lc
from engine.training import evaluation, report
from engine.training.config import TrainConfig

__all__ = [
    "LOG_FILTERS",
    "MODEL_FILTER",
    "MODEL_TYPES",
    "SPEC_FIELDS",
    "SPEC_LABELS",
    "SPEC_TOOLTIPS",
    "SYSTEMS",
    "TRAIN_FIELDS",
    "UNIT_CHOICES",
    "data_hash_of",
    "data_summary",
    "default_train_config",
    "evaluate_job",
    "generate_job",
    "initial_mapping",
    "is_log_file",
    "is_model_file",
    "jsonable",
    "load_trained",
    "prepare_job",
    "read_log_job",
    "resumable",
    "run_history",
    "save_trained",
    "train_config_from_dict",
    "train_job",
    "with_changes",
    "write_csv",
    "write_report",
]

LOG_FILTERS: tuple[str, ...] = tuple(f for f in LOG_FILE_FILTERS if not f.startswith("All files"))
MODEL_FILTER = "Learned models (*.json)"
SYSTEMS: list[str] = sorted(PROTOCOLS)
UNIT_CHOICES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in UNIT_KINDS.items()}

# the fields of the engine's dataclasses the Models panel edits (the rest follow from the data)
TRAIN_FIELDS = ["epochs", "learning_rate", "hidden", "layers", "batch_factor", "patience", "factor", "seed"]
SPEC_FIELDS = ["inertia_eps", "newton_tol", "newton_max_iter", "train_newton_tol", "train_newton_max_iter",
               "robot_learn", "robot_perturb"]
# how the Models panel shows the robot model's spec fields (the others: their field names)
SPEC_LABELS = {"robot_learn": "Robot: learned kinds", "robot_perturb": "Robot: initial perturbation"}
SPEC_TOOLTIPS = {
    "robot_learn": "robot-rk4 / robot-midpoint: the inertial parameters learned on every moving link of the "
    'system\'s URDF, a JSON list from "mass", "com", "inertia", "damping"',
    "robot_perturb": "robot-rk4 / robot-midpoint: the initial guess is each learned URDF value times a seeded "
    "factor in [1 - p, 1 + p] (a wrong CAD guess to identify from); 0 starts at the URDF values",
}


def MODEL_TYPES() -> list[str]:
    """The registered model types (the registry may grow at run time)."""
    return list(model_names())


def _suffixes(filters) -> set[str]:
    out = set()
    for f in filters:
        inside = f[f.find("(") + 1:f.rfind(")")]
        out |= {p.lstrip("*").lower() for p in inside.split() if p.startswith("*.")}
    return out


def is_log_file(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / "metadata.yaml").exists() or p.suffix.lower() in _suffixes(LOG_FILTERS)


def is_model_file(path: str | Path) -> bool:
    p = Path(path)
    return p.suffix.lower() == ".json" and p.with_suffix(".safetensors").exists()


# -- logs --------------------------------------------------------------------------------
def read_log_job(path: str | Path):
    """A job reading ``path`` into a LogTable (progress, cancellation, LogError on bad input)."""
    path = str(path)
    return lambda ctx: read_log(path, ctx)


def initial_mapping(table, mapping_folder: str | Path | None) -> tuple[LogMapping | None, str]:
    """The best first mapping for ``table`` and where it came from.

    In order: a mapping saved for files of the same columns (``mapping_folder``), a
    ``<stem>.mapping.json`` beside the log, else a guess (time column, q = the next column,
    u = the last). Returns ``(mapping or None, origin text)``.
    """
    if mapping_folder:
        saved = find_saved_mapping(table.columns, mapping_folder)
        if saved is not None:
            return saved, "saved mapping for files with these columns"
    if table.source:
        src = Path(table.source)
        beside = src.with_name(src.stem + ".mapping.json")
        if beside.is_file():
            try:
                m = LogMapping.load(beside)
                if all(c in table.columns for c in m.columns):
                    return m, f"{beside.name}"
            except LogError:
                pass
    time_col = guess_time_column(table)
    rest = [c for c in table.columns if c != time_col]
    if not rest:
        return None, "no columns to map"
    q = [rest[0]]
    u = [rest[-1]] if len(rest) > 1 else []
    try:
        return LogMapping(time=time_col, q=q, u=u, sample_period=None if time_col else 0.01), "guessed"
    except LogError:
        return None, "no guess"


def prepare_job(table, mapping: LogMapping, config: PrepareConfig, compare: lc.LogCompareConfig):
    """A job: prepare the log and cut it into a data set; returns ``(PreparedLog, LogDataset)``."""

    def job(ctx):
        prepared = prepare_log(table, mapping, config, ctx)
        ctx.check_cancelled()
        return prepared, log_dataset(prepared, compare.steps, compare.horizon)

    return job


# -- generated data ----------------------------------------------------------------------
def generate_job(config: DatasetConfig):
    """A job: simulate the SyMo protocol data set for ``config``."""

    def job(ctx):
        ctx.progress(None, f"simulating {config.system} ({config.train_trajectories} + "
                           f"{config.test_trajectories} trajectories)")
        data = generate_dataset(config)
        ctx.progress(1.0, "data set ready")
        return data

    return job


def data_summary(dataset) -> str:
    """One line describing a data set (generated or from a log)."""
    if isinstance(dataset, LogDataset):
        d = dataset.description
        return (
            f"log {Path(d.get('source') or '').name}: h = {dataset.h:.4g} s, {len(dataset.train_x)} train "
            f"and {len(dataset.test_x)} validation chunks of {d.get('steps')} steps, "
            f"{len(dataset.long_x)} rollouts of {d.get('horizon')} steps"
        )
    c = dataset.config
    return (f"{c.system}: h = {dataset.h:.4g} s, {len(dataset.train_x)} train / {len(dataset.test_x)} test "
            f"trajectories of {c.steps} steps, {len(dataset.long_x)} x {c.long_term_steps} long-term")


# -- models ------------------------------------------------------------------------------
def default_train_config(dataset=None, model: str = "node-rk4") -> TrainConfig:
    """The engine's defaults for the Models form (for a log: its chunk count, lr 1e-3, width 64)."""
    if dataset is None:
        return TrainConfig(model=model)
    return lc.train_config_for(model, dataset)


def train_config_from_dict(data: dict) -> TrainConfig:
    """A TrainConfig from its dict; a file written before TrainConfig had ``log`` (a log's name
    in ``system``) reads as that log."""
    d = dict(data)
    if d.get("system", "pendulum") not in PROTOCOLS and not d.get("log"):
        d["log"], d["system"] = d["system"], "pendulum"
    return TrainConfig.from_dict(d)


def with_changes(cfg: TrainConfig, **changes) -> TrainConfig:
    """A copy of ``cfg`` with ``changes``, validated."""
    return dataclasses.replace(cfg, **changes)


def train_job(model_type: str, dataset, train_config: TrainConfig, spec: ModelSpec | None,
              run_dir: str | Path | None = None, resume: bool = False, model_meta: dict | None = None):
    """A job: build, train and evaluate one model; returns ``{"row", "model", "losses", "curves", "run_dir"}``.

    ``run_dir``: the run's folder (config, metrics, checkpoints, and the final model when it ends
    well); ``resume``: continue that run from its last checkpoint up to ``train_config.epochs``."""
    if isinstance(dataset, LogDataset):
        # the log's name labels the run (the trainer prints it)
        base = lc.train_config_for(model_type, dataset)
        cfg = with_changes(train_config, model=model_type, log=dataset.system.name,
                           learning_rate=train_config.learning_rate or base.learning_rate,
                           hidden=train_config.hidden or base.hidden)
    else:
        cfg = with_changes(train_config, model=model_type, system=dataset.config.system, log=None)
    cfg = with_changes(cfg, device=preferred_device())  # View > Compute Device
    n_train = len(dataset.train_x)
    if cfg.trajectories > n_train:
        raise ValueError(f"trajectories: {cfg.trajectories} asked, the data have {n_train}")
    overrides = {f: getattr(spec, f) for f in SPEC_FIELDS} if spec is not None else None

    if resume:
        resumable(run_dir, cfg.epochs)

    def job(ctx):
        return lc.train_and_evaluate(model_type, dataset, cfg, overrides, ctx, run_dir=run_dir, resume=resume,
                                     model_meta=model_meta)

    return job


def resumable(run_dir: str | Path | None, epochs: int) -> int:
    """The epoch a run would resume from; ValueError saying why it cannot resume to ``epochs``."""
    if run_dir is None or not Path(run_dir, "config.json").is_file():
        raise ValueError("this model has no run folder to resume (train it first)")
    run = runs.Run.open(run_dir, "learn")
    if run.epoch == 0:
        raise ValueError(f"{run_dir}: the run has no checkpoint yet; train it again")
    if epochs <= run.epoch:
        raise ValueError(f"the run has trained {run.epoch} epochs; set Epochs above {run.epoch} to extend it")
    return run.epoch


def folder_in_use(run_dir: str | Path | None) -> str | None:
    """Why a run cannot write into ``run_dir`` now: another run (this app's, or a command's in
    another process) holds its lock (``engine.runs.RunLock``); None when it is free. Takes nothing."""
    if not run_dir:
        return None
    try:
        runs.RunLock(run_dir).check()
    except runs.RunLocked as exc:
        return str(exc)
    return None


def run_history(run_dir: str | Path | None) -> list[dict]:
    """The per-epoch metrics rows (epoch, step, wall_time, loss, ...) of a run folder ([] if none)."""
    return runs.read_metrics(run_dir) if run_dir and Path(run_dir).is_dir() else []


def evaluate_job(model, dataset, trajectories: int | None = None):
    """A job: metrics and curves of an already trained (e.g. loaded) model on the current data."""

    def job(ctx):
        evaluation.check_compatible(model, dataset)
        ctx.progress(0.1, "evaluating")
        return evaluation.evaluate_model(model, dataset, trajectories)

    return job


def save_trained(path: str | Path, model, meta: dict) -> Path:
    """Write ``<path stem>.safetensors`` + ``.json`` (type, hyperparameters and ``meta``)."""
    path = Path(path)
    directory, name = path.parent, path.stem
    save_model(directory, model, _jsonable(meta), name=name)
    return directory / f"{name}.json"


def load_trained(path: str | Path):
    """``(model, meta)`` from a ``.json`` written by :func:`save_trained` (CheckpointError if broken)."""
    path = Path(path)
    return load_model(path.parent, name=path.stem)


def data_hash_of(dataset) -> str:
    """sha256 of the data a model is trained on (saved with the model)."""
    return dataset.fingerprint()


# -- reports -----------------------------------------------------------------------------
def write_csv(path: str | Path, rows: list[dict]) -> Path:
    """The compare table as a CSV file (atomic write)."""
    return atomic_write_text(path, report.rows_to_csv(rows))


def write_report(directory: str | Path, rows: list[dict], info: dict, stem: str = "compare") -> dict:
    return report.write_compare_report(directory, rows, info, stem)


def _jsonable(obj):
    """``obj`` as plain JSON values: numpy arrays and scalars as lists and numbers, NaN/inf as None."""
    return finite_or_none(json.loads(json.dumps(obj, default=json_default)))


jsonable = _jsonable
