"""Train learned dynamics models on a data set (generated or a hardware log) and compare them.

No Qt here; the Model lab workspace and ``python -m engine learn compare`` both call it. The
data sets are :mod:`engine.data` (:func:`~engine.data.log_dataset.log_dataset` for a log), the
metrics :mod:`engine.training.evaluation`, the tables :mod:`engine.training.report`.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine.data.log_dataset import LogSystem, log_dataset
from engine.devices import resolve_device
from engine.io import finite_or_none
from engine.jobs import ProgressSpan
from engine.logs import LogMapping, PrepareConfig, prepare_log, read_log
from engine.models import ModelSpec, build_model, model_names
from engine.runs import Run, RunError
from engine.training.config import TrainConfig
from engine.training.evaluation import evaluate_model, metrics_row
from engine.training.metrics import as_float
from engine.training.robot_compare import (
    ON_IDENTIFIED,
    REFINE_IDENTIFIED,
    RIGID_BODY_MODELS,
    ROBOT_LEARNING_RATES,
    check_models,
    identify_robot_file,
    rigid_body_row,
    robot_setup,
    rollout_rmse,
    torque_columns,
    torque_samples,
    torque_scale_check,
)
from engine.training.trainer import (
    TrainingDiverged,
    check_metrics,
    fit,
    new_run,
    recording,
    write_model_files,
)
from engine.training_loop import format_time_left
from engine.validation import InputError

__all__ = ["PRIOR_MODELS", "ROBOT_DEFAULTS", "TRAIN_COST", "LogCompareConfig", "build_learned_model",
           "compare_on_log", "model_spec_for", "torque_scale", "train_and_evaluate", "train_config_for"]


@dataclass
class LogCompareConfig:
    """How a prepared log is cut into training data, how models train on it and are judged.

    ``steps``: windows per training chunk (chunks have ``steps + 2`` points);
    ``horizon``: k of the k-step errors and the length of each validation rollout (steps);
    ``epochs``, ``learning_rate``, ``hidden`` (neurons per layer), ``layers``, ``seed``: the
    training defaults on a log (the SyMo protocol's values are per analytic system; a log has
    none, so these stand in for them).

    How long each model trains and which weights are kept (None: the default of the kind of
    comparison, :data:`ROBOT_DEFAULTS` with a robot, off without; 0: off):
    ``time_budget`` (s): the wall time of the whole comparison's training, shared out as it goes
    (each trained model gets what is left times its share, :data:`TRAIN_COST`, of the models left
    to train, so a model that stops early leaves its time to the next); ``holdout``: the fraction
    of training chunks held out for model selection; ``select_every``: epochs between held-out scores (the best weights,
    the start included, are the ones kept); ``stop_patience``: scores without a better one that
    stop a model early.
    ``lagrangian_prior``: with a robot and an identification, ``"robot"`` (the default) builds
    the Lagrangian models (:data:`PRIOR_MODELS`) as residuals on top of the identified rigid body
    (:mod:`engine.models.lagrangian_prior`), ``"none"`` the paper's model from scratch.
    """

    steps: int = 32
    horizon: int = 50
    epochs: int = 200
    learning_rate: float = 1e-3
    hidden: int = 64
    layers: int = 2
    seed: int = 0
    device: str = "cpu"     # where the models train: cpu, cuda, cuda:N or auto (engine/devices.py)
    time_budget: float | None = None
    holdout: float | None = None
    select_every: int | None = None
    stop_patience: int | None = None
    lagrangian_prior: str = "robot"   # with a robot: the Lagrangian models on the identified rigid body, or "none"

    def __post_init__(self):
        for name in ("steps", "horizon", "epochs", "hidden", "layers"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise InputError(f"expected a positive whole number, got {v!r}", owner="LogCompareConfig",
                                 field=name)
        if self.time_budget is not None and not self.time_budget >= 0:
            raise InputError(f"expected seconds (0: no budget), got {self.time_budget!r}",
                             owner="LogCompareConfig", field="time_budget", flag="--time-budget")
        if self.lagrangian_prior not in ("robot", "none"):
            raise InputError(f"expected 'robot' or 'none', got {self.lagrangian_prior!r}",
                             owner="LogCompareConfig", field="lagrangian_prior", flag="--lagrangian-prior")
        if self.holdout is not None and not 0 <= self.holdout <= 0.5:
            raise InputError(f"expected a fraction from 0 to 0.5, got {self.holdout!r}", owner="LogCompareConfig",
                             field="holdout")
        for name in ("select_every", "stop_patience"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 0):
                raise InputError(f"expected a whole number from 0, got {v!r}", owner="LogCompareConfig",
                                 field=name)
        if not self.learning_rate > 0:
            raise InputError(
                f"must be greater than zero, got {self.learning_rate!r}",
                owner="LogCompareConfig",
                field="learning_rate",
                flag="--lr",
            )

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def resolved(self, robot: bool) -> LogCompareConfig:
        """This config with every None of the selection and budget settings filled: the robot
        comparison's defaults (:data:`ROBOT_DEFAULTS`) with ``robot``, else 0 (off)."""
        d = self.to_dict()
        for k, v in ROBOT_DEFAULTS.items():
            if d[k] is None:
                d[k] = v if robot else type(v)(0)
        return LogCompareConfig(**d)


# what a robot-log comparison does unless told otherwise (LogCompareConfig's doc): the whole
# comparison's training within 8 minutes, so that with the identification, the evaluations and
# the interpreter's start the seven-model comparison of a 7-DOF log of 20 s at 200 Hz ends within
# 10 minutes on 2 cores; 1 training chunk in 7 held out; a held-out score every 5 epochs; a model
# stops after 8 scores (40 epochs) without a better one
ROBOT_DEFAULTS: dict = {"time_budget": 480.0, "holdout": 1 / 7, "select_every": 5, "stop_patience": 8}


# the share of the time budget each model gets, relative (what its epoch costs on a 7-DOF log of
# 200 Hz, roughly: the robot models integrate 4 RK4 substeps of the rigid body, E2E-SyMo solves its
# implicit step in training); what a model leaves unused goes to the models after it
TRAIN_COST = {"mlp": 0.2, "node-rk4": 0.5, "node-midpoint": 0.4, "symo": 0.7, "lnode-rk4": 1.0,
              "lnode-midpoint": 0.8, "e2e-symo": 2.0, "robot-rk4": 1.5, "robot-midpoint": 1.2, "hybrid-rk4": 1.5}


# the models that take the identified rigid body as their prior (LogCompareConfig.lagrangian_prior)
PRIOR_MODELS = ("lnode-rk4", "lnode-midpoint", "symo", "e2e-symo")


def model_spec_for(system, h: float, **overrides):
    """A :class:`~engine.models.ModelSpec` for a system (analytic or :class:`LogSystem`) and step ``h`` (s)."""
    if isinstance(system, LogSystem):   # a log names no analytic system: no URDF for the robot model
        overrides.setdefault("system", None)
    return ModelSpec.for_system(system, h, **overrides)


def train_config_for(model: str, dataset, config: LogCompareConfig | None = None, **overrides):
    """A :class:`~engine.training.config.TrainConfig` for ``dataset`` (generated or log).

    For a log, the defaults come from ``config`` (a :class:`LogCompareConfig`) and
    ``trajectories`` is every training chunk, ``log`` the log's name (``system`` keeps its
    default: a log has no SyMo protocol, and every value a protocol would give is set here).
    """
    if dataset.kind == "log":
        c = config or LogCompareConfig()
        overrides.setdefault("trajectories", len(dataset.train_x))
        for key in ("epochs", "learning_rate", "hidden", "layers", "seed", "device"):
            overrides.setdefault(key, getattr(c, key))
        for key in ("holdout", "select_every", "stop_patience"):
            if getattr(c, key) is not None:
                overrides.setdefault(key, getattr(c, key))
        overrides["log"] = dataset.system.name
        return TrainConfig(model=model, **overrides)
    overrides.setdefault("system", dataset.config.system)
    return TrainConfig(model=model, **overrides)


def torque_scale(dataset) -> float:
    """The RMS of a log's training torques (N m, 3 significant digits; 1 when they are all zero):
    the potential scale of the Lagrangian models in a robot comparison (``ModelSpec.potential_scale``)."""
    rms = float(np.sqrt(np.mean(np.square(dataset.train_u))))
    return float(f"{rms:.3g}") if rms > 0 and np.isfinite(rms) else 1.0


def build_learned_model(model: str, dataset, train_config, spec_overrides: dict | None = None):
    """A fresh model of type ``model`` for ``dataset``, seeded by ``train_config.seed``."""
    spec_overrides = dict(spec_overrides or {})
    spec_overrides["hidden"] = int(
        train_config.hidden if train_config.hidden is not None else train_config.width
    )
    spec_overrides["layers"] = train_config.layers
    spec_overrides.setdefault("init", train_config.init)
    torch.manual_seed(train_config.seed)
    return build_model(model, model_spec_for(dataset.system, dataset.h, **spec_overrides)).to(
        resolve_device(getattr(train_config, "device", "cpu")))


def train_and_evaluate(model_type: str, dataset, train_config, spec_overrides: dict | None = None,
                       ctx=None, progress_span=(0.0, 1.0), run_dir=None, resume: bool = False,
                       model_meta: dict | None = None) -> dict:
    """Build, train (the engine's trainer) and evaluate one model on a generated or log data set.

    Returns ``{"row": metrics row, "model": the trained model, "losses": [per epoch],
    "curves": plot data (see :func:`~engine.training.evaluation.evaluate_model`), "run_dir"}``.
    The row follows the sweep schema: ``model, system, trajectories, seed, train_mse, test_mse,
    integration_mse, energy_mse, inertia_mse, seconds`` (plus per-signal errors on a log).

    ``run_dir``: the run folder (:mod:`engine.runs`; a new run, or with ``resume`` the run to
    continue up to ``train_config.epochs``); the final ``model.*`` (with ``model_meta`` added to
    its JSON) is written there only when the run ends well. A run whose metrics are not finite
    is recorded as diverged and keeps no final model (the row still shows them).
    """
    model = build_learned_model(model_type, dataset, train_config, spec_overrides)
    run = None
    if run_dir is not None:
        run = (
            Run.open(run_dir, "learn", write=True)
            if resume
            else new_run(run_dir, model, train_config, dataset)
        )
        if resume:
            want = (run.info.get("fingerprints") or {}).get("data")
            if want and want != dataset.fingerprint():
                raise RunError(
                    f"{run.path}: these data are not the data the run trained on; open those to resume it"
                )
            run.config["train"] = train_config.to_dict()
    lo, hi = progress_span
    t0 = time.perf_counter()
    with recording(run):
        result = fit(model, dataset, train_config, ctx, run, (lo, lo + 0.9 * (hi - lo)), resume=resume)
    seconds = time.perf_counter() - t0
    if ctx is not None:
        ctx.progress(lo + 0.9 * (hi - lo), f"{model_type}: evaluating")
    metrics, curves = evaluate_model(model, dataset, train_config.trajectories)
    row = metrics_row(model_type, dataset, train_config, metrics, seconds)
    held = result.best_score or (None, None)
    row.update(epochs_trained=result.epochs, best_epoch=result.best_epoch, holdout_mse=held[0],
               holdout_torque_mse=held[1], stopped=result.stopped)
    losses = [float(r["loss"]) for r in run.metrics] if run is not None else list(result.losses)
    row["final_loss"] = as_float(losses[-1]) if losses else None
    if run is not None:
        scalars = {k: v for k, v in metrics.items() if isinstance(v, float)}
        try:
            check_metrics(scalars, model, train_config, dataset, run, result.epochs)
            meta = {"type": model.name, "hyperparameters": model.spec.to_dict(),
                    "train_config": train_config.to_dict(), "epoch": result.epochs, "status": "done",
                    **(model_meta or {}), "metrics": finite_or_none(row), "losses": losses}
            run.finish(
                lambda tmp: write_model_files(tmp, model, meta), scalars, f"done: {result.epochs} epochs"
            )
        except TrainingDiverged as exc:
            row["error"] = str(exc)
    if ctx is not None:
        ctx.progress(hi, f"{model_type}: done")
    return {
        "row": row,
        "model": model.to("cpu"),
        "losses": losses,
        "curves": curves,  # handed back on the CPU
        "run_dir": None if run is None else str(run.path),
    }


class _Clock:
    """The comparison's job context: the parent's, with the whole comparison's time left added to
    every message. With a budget (s of training): what is left of it, plus ~5 s per model left
    for its evaluation (an upper bound: a model that stops early leaves its time unused); without
    one: the time so far scaled by the fraction of the bar still to fill."""

    def __init__(self, ctx, budget: float | None, n_models: int):
        self.ctx, self.budget, self.t0 = ctx, budget, time.perf_counter()
        self.models_left = n_models

    def budget_left(self) -> float:
        assert self.budget is not None
        return self.budget - (time.perf_counter() - self.t0)

    def time_left(self, fraction: float | None) -> float | None:
        if self.budget is not None:
            return max(self.budget_left(), 0.0) + 5.0 * self.models_left
        spent = time.perf_counter() - self.t0
        if fraction is None or fraction < 0.02 or spent < 5.0:
            return None
        return spent / fraction * (1.0 - fraction)

    def progress(self, fraction, message: str = "", metrics=None) -> None:
        left = self.time_left(fraction)
        if left is not None and (fraction is None or fraction < 1.0):
            word = "at most " if self.budget is not None else "about "
            message = f"{message} | comparison: {word}{format_time_left(left)}"
        self.ctx.progress(fraction, message, metrics)

    def check_cancelled(self) -> None:
        self.ctx.check_cancelled()

    @property
    def cancelled(self) -> bool:
        return self.ctx.cancelled


def compare_on_log(log_path, mapping_path, models, epochs: int | None = None, *, prepare=None,
                   config: LogCompareConfig | None = None, ctx=None, runs_dir=None,
                   robot: str | None = None, identify=None, keep: dict | None = None) -> list[dict]:
    """Read, map and prepare a log, train each model type on it, and return the compare table.

    ``models``: model type names (``engine.models.model_names()``), or one comma-separated string;
    ``epochs``: overrides ``config.epochs``; ``prepare``: a :class:`~engine.logs.PrepareConfig`
    (default: its defaults); ``config``: a :class:`LogCompareConfig`; ``runs_dir``: where each
    model's run folder goes (``<runs_dir>/<model>``; none without it). Returns one row per model
    (see :func:`train_and_evaluate`) plus ``log`` and ``data_hash``; raises ``LogError`` /
    ``ValueError`` on bad input, before any training starts.

    ``robot``: the robot whose log this is (library name, URDF, xacro or MJCF path; see
    :mod:`engine.training.robot_compare`): the log's joints are matched to it by name (a
    mismatch is refused before any training), the robot models learn it, the rows ``urdf``
    and ``rigid-body`` (identified) become available, and every row gets the inverse-dynamics
    metrics ``torque_rmse`` (N m), ``torque_rmse_per_joint`` (or ``torque_note``, why none),
    ``noise_level`` (N m, per joint in ``noise_level_per_joint``) and ``rollout_rmse``
    ``{"0.1": rad, ...}`` (q's RMSE at 0.1, 0.5, 1 s where the horizon reaches). A model that
    fails is one row with its ``error``; the others still get theirs. ``identify``: the
    identification behind the ``rigid-body`` row (see
    :func:`~engine.training.robot_compare.rigid_body_row`; the CLI passes
    :func:`engine.identification.from_log.identify_from_log`). ``keep``: a dict that receives
    each model that ends well and its plot data, ``{model: {"model", "curves"}}`` (the app's
    Show on robot plays them).
    """
    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    models = list(models)
    known = model_names() + list(RIGID_BODY_MODELS)
    for m in models:
        if m not in known:
            raise ValueError(f"unknown model type {m!r}; choose from {', '.join(known)}")
    if not models:
        raise ValueError("give at least one model type")
    check_models(models, robot)
    config = (config or LogCompareConfig()).resolved(robot is not None)
    if epochs is not None:
        config = LogCompareConfig(**{**config.to_dict(), "epochs": int(epochs)})
    mapping = LogMapping.load(mapping_path)
    setup = None if robot is None else robot_setup(robot, mapping)   # joints matched before any work
    if setup is not None:
        mapping = setup.mapping
    table = read_log(log_path, ctx)
    prepare = prepare or PrepareConfig()
    prepared = prepare_log(table, mapping, prepare)
    data = log_dataset(prepared, config.steps, config.horizon)
    prepared_id = None
    samples: dict | None = None
    if setup is not None:
        prepared_id, samples = torque_samples(table, mapping, prepare)
        warning = torque_scale_check(setup, samples)
        if warning:
            setup.notes.append(f"warning: {warning}")
    rows = []
    span = 1.0 / len(models)
    weights_left = [TRAIN_COST.get(m, 1.0) for m in models if m not in RIGID_BODY_MODELS]
    clock = _Clock(ctx, config.time_budget or None, len(models))
    ctx = clock if ctx is not None else None
    with tempfile.TemporaryDirectory() as tmp:
        identified: dict = {}   # the identified robot file, once, for rigid-body and hybrid-rk4

        def identified_file(i):
            assert setup is not None   # check_models: these rows need a robot
            if not identified:
                folder = Path(runs_dir) / "rigid-body" if runs_dir is not None else Path(tmp)
                t0 = time.perf_counter()
                part = None if ctx is None else ProgressSpan(ctx, i * span, (i + 0.5) * span, "identification",
                                                             ceiling=0.999)
                path, report = identify_robot_file(setup, prepared_id, folder, identify, part)
                identified.update(path=path, report=report, seconds=time.perf_counter() - t0)
            return identified["path"]

        for i, name in enumerate(models):
            t0 = time.perf_counter()
            clock.models_left = len(models) - i
            try:
                if name in RIGID_BODY_MODELS:
                    assert setup is not None and samples is not None   # check_models
                    source = setup.source if name == "urdf" else identified_file(i)
                    row = rigid_body_row(name, setup, source, data, samples,
                                         identified.get("seconds", 0.0) if name != "urdf" else 0.0, keep)
                    if name != "urdf":
                        row.update(identified["report"], saved_urdf=identified["path"] if runs_dir else None)
                else:
                    overrides = dict(setup.spec_overrides) if setup else None
                    if overrides is not None:   # the Lagrangian models' potential at the log's torques
                        overrides["potential_scale"] = torque_scale(data)
                    if name in ON_IDENTIFIED and overrides is not None:
                        overrides.update(robot=identified_file(i), robot_learn=("mass",))
                    elif name in REFINE_IDENTIFIED and overrides is not None and identify is not None:
                        overrides.update(robot=identified_file(i))    # identify, then refine by rollouts
                    elif (name in PRIOR_MODELS and overrides is not None and identify is not None
                          and config.lagrangian_prior == "robot"):
                        overrides.update(robot=identified_file(i), lagrangian_prior="robot")
                    extra = {}
                    if setup is not None and name in ROBOT_LEARNING_RATES:
                        extra["learning_rate"] = ROBOT_LEARNING_RATES[name] * config.learning_rate
                    if config.time_budget:
                        share = weights_left[0] / sum(weights_left)
                        extra["time_budget"] = max(clock.budget_left() * share, 1e-6)   # one epoch at least
                    weights_left.pop(0)
                    tc = train_config_for(name, data, config, **extra)
                    out = train_and_evaluate(name, data, tc, overrides, ctx=ctx,
                                             progress_span=(i * span, (i + 1) * span),
                                             run_dir=None if runs_dir is None else Path(runs_dir) / name)
                    row = dict(out["row"])
                    if keep is not None:
                        keep[name] = {"model": out["model"], "curves": out["curves"]}
                    if samples is not None:
                        row.update(torque_columns(out["model"], samples))
                    diss = getattr(out["model"], "dissipation", None)
                    if diss is not None:   # the Lagrangian models' learned friction (N m s/rad, N m)
                        row["learned_dissipation"] = diss.values()
            except (ValueError, RuntimeError, TrainingDiverged) as exc:   # one row with its reason
                if setup is None:
                    raise
                row = {"model": name, "system": data.system.name, "error": str(exc),
                       "seconds": time.perf_counter() - t0}
            if setup is not None and samples is not None:
                row["rollout_rmse"] = rollout_rmse(row.get("horizon_mse") or [], data.h)
                row["noise_level"] = float(np.sqrt(np.mean(samples["noise"] ** 2)))
                row["noise_level_per_joint"] = [float(v) for v in samples["noise"]]
                row["robot"] = setup.source
                row["notes"] = list(setup.notes)
            row["log"] = str(log_path)
            row["data_hash"] = prepared.data_hash
            rows.append(row)
    return rows
