"""Train learned dynamics models on data and compare them: generated data sets and hardware logs.

No Qt here; the Model lab workspace and ``python -m engine learn compare`` both call it.

A prepared hardware log (:class:`engine.logs.PreparedLog`, uniform step ``dt``) becomes a
:class:`LogDataset` shaped like the SyMo protocol's :class:`~engine.data.TrajectoryDataset`,
so the engine's trainer (:func:`engine.training.trainer.fit`) trains on it unchanged:

- the training time ranges are cut into chunks of ``steps + 2`` points that overlap by two
  points, so every three-point window of the training range is used exactly once;
- the validation ranges give the one-step test windows the same way, and chunks of
  ``horizon + 2`` points (restarted every ``horizon`` steps) for k-step rollouts.

Metrics on a log (all mean squared errors in SI units; ``None`` where not defined):

- ``train_mse`` / ``test_mse``: one-step prediction of ``q`` on the train / validation windows;
- ``integration_mse``: ``q`` along the k-step rollouts over the validation ranges (``k = horizon``),
  driven by the measured controls;
- ``one_step`` / ``k_step``: the same per signal (``q`` and ``qd`` columns, by name; the
  velocities of SyMo-type models are ``(q_{k+1} - q_k) / h``, compared with the log's ``qd_{k+1}``);
- ``horizon_mse``: ``q`` error against the prediction horizon 1..k (a list);
- ``energy_mse`` / ``inertia_mse``: ``None`` (a log has no known Lagrangian).
"""

from __future__ import annotations

import csv
import io
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engine.io import atomic_write_text, write_json

__all__ = [
    "METRIC_COLUMNS",
    "LogCompareConfig",
    "LogDataset",
    "LogSystem",
    "build_learned_model",
    "check_compatible",
    "compare_on_log",
    "dataset_hash",
    "evaluate_model",
    "evaluate_on_log",
    "generated_curves",
    "log_dataset",
    "log_rollouts",
    "metrics_row",
    "model_spec_for",
    "rows_to_csv",
    "train_and_evaluate",
    "train_config_for",
    "write_compare_report",
]

# the compare table's columns, in order (configuration MSEs; a missing metric is None)
METRIC_COLUMNS = ("model", "trajectories", "train_mse", "test_mse", "integration_mse", "energy_mse",
                  "inertia_mse", "seconds")


@dataclass
class LogCompareConfig:
    """How a prepared log is cut into training data, how models train on it and are judged.

    ``steps``: windows per training chunk (chunks have ``steps + 2`` points);
    ``horizon``: k of the k-step errors and the length of each validation rollout (steps);
    ``epochs``, ``learning_rate``, ``hidden`` (neurons per layer), ``layers``, ``seed``: the
    training defaults on a log (the SyMo protocol's values are per analytic system; a log has
    none, so these stand in for them).
    """

    steps: int = 32
    horizon: int = 50
    epochs: int = 200
    learning_rate: float = 1e-3
    hidden: int = 64
    layers: int = 2
    seed: int = 0

    def __post_init__(self):
        for name in ("steps", "horizon", "epochs", "hidden", "layers"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"LogCompareConfig.{name}: expected a positive integer, got {v!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"LogCompareConfig.learning_rate: expected > 0, got {self.learning_rate!r}")

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LogSystem:
    """What the trainer needs to know of a system behind a log: sizes, angles, actuation."""

    dof: int
    control_dim: int
    angle_mask: tuple
    name: str = "log"

    def input_matrix(self, dtype=torch.float32, device=None) -> torch.Tensor:
        """``B`` (n, m): the controls drive the first m coordinates (as the analytic systems do)."""
        B = torch.zeros(self.dof, self.control_dim, dtype=dtype, device=device)
        k = min(self.dof, self.control_dim)
        B[:k, :k] = torch.eye(k, dtype=dtype, device=device)
        return B

    def describe(self) -> dict:
        return {"name": self.name, "dof": self.dof, "control_dim": self.control_dim,
                "angle_mask": list(self.angle_mask)}


@dataclass
class LogDataset:
    """Trajectory chunks from a prepared log, duck-typed like ``TrajectoryDataset``.

    ``train_x`` (N, steps + 2, 2n), ``train_u`` (N, steps + 2, m); ``test_x``/``test_u`` the same
    from the validation ranges; ``long_x``/``long_u`` (R, horizon + 2, ...) validation rollout
    chunks; ``long_t`` (R, horizon + 2) their times (s). ``h``: time step (s).
    """

    system: LogSystem
    h: float
    train_x: np.ndarray
    train_u: np.ndarray
    test_x: np.ndarray
    test_u: np.ndarray
    long_x: np.ndarray
    long_u: np.ndarray
    long_t: np.ndarray
    q_names: list = field(default_factory=list)
    description: dict = field(default_factory=dict)

    def subset(self, n_train: int) -> LogDataset:
        if not 1 <= n_train <= len(self.train_x):
            raise ValueError(f"train trajectories: asked for {n_train}, the log gives {len(self.train_x)}")
        return LogDataset(self.system, self.h, self.train_x[:n_train], self.train_u[:n_train], self.test_x,
                          self.test_u, self.long_x, self.long_u, self.long_t, self.q_names, self.description)

    def describe(self) -> dict:
        return {"kind": "log", "h": self.h, "system": self.system.describe(), "q_names": self.q_names,
                "shapes": {k: list(getattr(self, k).shape) for k in ("train_x", "test_x", "long_x")},
                **self.description}


def _chunks(x: np.ndarray, u: np.ndarray, t: np.ndarray, segments: list[slice], length: int, stride: int):
    xs, us, ts = [], [], []
    for seg in segments:
        for a in range(seg.start, seg.stop - length + 1, stride):
            xs.append(x[a:a + length])
            us.append(u[a:a + length])
            ts.append(t[a:a + length])
    if not xs:
        return None
    return np.stack(xs), np.stack(us), np.stack(ts)


def log_dataset(prepared, config: LogCompareConfig | None = None) -> LogDataset:
    """Cut a :class:`~engine.logs.PreparedLog` into training, test and rollout chunks.

    Raises ``ValueError`` naming the range that is too short for one chunk.
    """
    cfg = config or LogCompareConfig()
    desc = prepared.description or {}
    q = np.asarray(prepared.q, dtype=np.float64)
    x = np.concatenate([q, np.asarray(prepared.qd, dtype=np.float64)], axis=1)
    u = np.asarray(prepared.u, dtype=np.float64)
    if u.shape[1] == 0:
        u = np.zeros((len(x), 1))
    t = np.asarray(prepared.t, dtype=np.float64)
    source = desc.get("source") or "the log"
    train_seg = prepared.segments(prepared.train_mask)
    val_seg = prepared.segments(prepared.val_mask)
    L = cfg.steps + 2
    train = _chunks(x, u, t, train_seg, L, cfg.steps)
    if train is None:
        raise ValueError(f"{source}: the training range holds no run of {L} samples (steps + 2); "
                         "widen it or lower 'steps'")
    test = _chunks(x, u, t, val_seg, L, cfg.steps)
    if test is None:
        raise ValueError(f"{source}: the validation range holds no run of {L} samples (steps + 2); "
                         "widen it or lower 'steps'")
    K = cfg.horizon + 2
    long = _chunks(x, u, t, val_seg, K, cfg.horizon)
    if long is None:
        raise ValueError(f"{source}: the validation range holds no run of {K} samples (horizon + 2); "
                         "widen it or lower 'horizon'")
    angle_units = ("rad", "deg", "rev")
    mapping = desc.get("mapping") or {}
    units = mapping.get("units") or {}
    q_names = list(desc.get("q_names") or [f"q{i}" for i in range(q.shape[1])])
    angle_mask = tuple(units.get(name, "") in angle_units for name in q_names)
    system = LogSystem(dof=q.shape[1], control_dim=u.shape[1], angle_mask=angle_mask,
                       name=Path(source).stem if source != "the log" else "log")
    info = {"source": desc.get("source"), "data_hash": getattr(prepared, "data_hash", None),
            "dt": float(prepared.dt), "steps": cfg.steps, "horizon": cfg.horizon,
            "n_train_chunks": len(train[0]), "n_val_chunks": len(test[0])}
    return LogDataset(system=system, h=float(prepared.dt), train_x=train[0], train_u=train[1],
                      test_x=test[0], test_u=test[1], long_x=long[0], long_u=long[1], long_t=long[2],
                      q_names=q_names, description=info)


def dataset_hash(dataset) -> str:
    """sha256 of a data set's arrays (a log's prepared-data hash; for generated sets, all six arrays)."""
    import hashlib

    if isinstance(dataset, LogDataset) and dataset.description.get("data_hash"):
        return str(dataset.description["data_hash"])
    h = hashlib.sha256()
    for key in ("train_x", "train_u", "test_x", "test_u", "long_x", "long_u"):
        a = np.ascontiguousarray(getattr(dataset, key))
        h.update(key.encode() + str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def model_spec_for(system, h: float, **overrides):
    """A :class:`~engine.models.ModelSpec` for a system (analytic or :class:`LogSystem`) and step ``h`` (s)."""
    from engine.models import ModelSpec

    if isinstance(system, LogSystem):   # a log names no analytic system: no URDF for the robot model
        overrides.setdefault("system", None)
    return ModelSpec.for_system(system, h, **overrides)


def train_config_for(model: str, dataset, config: LogCompareConfig | None = None, **overrides):
    """A :class:`~engine.training.config.TrainConfig` for ``dataset`` (generated or log).

    For a log, the defaults come from ``config`` (a :class:`LogCompareConfig`) and
    ``trajectories`` is every training chunk; the protocol's system name is only a placeholder
    that passes TrainConfig's check, replaced by the log's name as a label.
    """
    from engine.training.config import TrainConfig

    if isinstance(dataset, LogDataset):
        c = config or LogCompareConfig()
        overrides.setdefault("trajectories", len(dataset.train_x))
        for key in ("epochs", "learning_rate", "hidden", "layers", "seed"):
            overrides.setdefault(key, getattr(c, key))
        overrides["system"] = "pendulum"
        cfg = TrainConfig(model=model, **overrides)
        cfg.system = dataset.system.name  # label only; validated above against a protocol
        return cfg
    overrides.setdefault("system", dataset.config.system)
    return TrainConfig(model=model, **overrides)


def build_learned_model(model: str, dataset, train_config, spec_overrides: dict | None = None):
    """A fresh model of type ``model`` for ``dataset``, seeded by ``train_config.seed``."""
    from engine.models import build_model

    spec_overrides = dict(spec_overrides or {})
    spec_overrides["hidden"] = int(train_config.hidden if train_config.hidden is not None else train_config.width)
    spec_overrides["layers"] = train_config.layers
    spec_overrides.setdefault("init", train_config.init)
    torch.manual_seed(train_config.seed)
    return build_model(model, model_spec_for(dataset.system, dataset.h, **spec_overrides))


def _f(v) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else float("nan")


@torch.no_grad()
def log_rollouts(model, data: LogDataset) -> dict:
    """k-step rollouts over the validation chunks (driven by the measured controls).

    Returns ``t`` (R, k) s, ``q_pred``/``qd_pred`` and ``q_true``/``qd_true`` (R, k, n) for the
    points 2..k+1 of each chunk.
    """
    dtype = next(model.parameters()).dtype
    n = data.system.dof
    k = data.long_x.shape[1] - 2
    x = torch.as_tensor(data.long_x, dtype=dtype)
    u = torch.as_tensor(data.long_u, dtype=dtype)
    q, qd = model.rollout(x, u, k)
    return {"t": data.long_t[:, 2:], "q_pred": q.double().numpy(), "qd_pred": qd.double().numpy(),
            "q_true": data.long_x[:, 2:, :n], "qd_true": data.long_x[:, 2:, n:]}


@torch.no_grad()
def evaluate_on_log(model, data: LogDataset) -> dict:
    """The metrics of the module doc for ``model`` on ``data`` (plus the rollouts, for plots)."""
    from engine.data.windows import make_windows

    n = data.system.dof
    dtype = next(model.parameters()).dtype
    out: dict = {}
    per_signal_one: dict = {}
    for key, x, u in (("train_mse", data.train_x, data.train_u), ("test_mse", data.test_x, data.test_u)):
        w = make_windows(x, u, n, dtype)
        q_next, qd_next = model.predict(w)
        out[key] = _f(((q_next - w.q_next) ** 2).mean())
        if key == "test_mse":
            for i, name in enumerate(data.q_names):
                per_signal_one[name] = _f(((q_next[:, i] - w.q_next[:, i]) ** 2).mean())
                per_signal_one[f"d({name})/dt"] = _f(((qd_next[:, i] - w.qd_next[:, i]) ** 2).mean())
    roll = log_rollouts(model, data)
    err_q = (roll["q_pred"] - roll["q_true"]) ** 2      # (R, k, n)
    err_qd = (roll["qd_pred"] - roll["qd_true"]) ** 2
    out["integration_mse"] = _f(err_q.mean())
    out["energy_mse"] = None
    out["inertia_mse"] = None
    k_step = {}
    for i, name in enumerate(data.q_names):
        k_step[name] = _f(err_q[:, -1, i].mean())
        k_step[f"d({name})/dt"] = _f(err_qd[:, -1, i].mean())
    out["one_step"] = per_signal_one
    out["k_step"] = k_step
    out["horizon"] = int(err_q.shape[1])
    out["horizon_mse"] = [_f(v) for v in err_q.mean(axis=(0, 2))]
    return out, roll


@torch.no_grad()
def generated_curves(model, dataset, trajectory: int = 0, steps: int | None = None) -> dict:
    """Rollouts on a generated data set's long-term set, for plots.

    Returns ``t`` (T,) s; ``q_pred``, ``qd_pred``, ``q_true``, ``qd_true`` (T, n) for long-term
    trajectory ``trajectory``; ``energy_pred``, ``energy_true`` (T,) J; ``horizon_mse`` (T,) the
    configuration MSE at each step over all long-term trajectories; ``inertia_true`` and
    ``inertia_pred`` (T, n, n) the true and learned inertia matrices along the true configurations
    of that trajectory (``inertia_pred`` None for a model without one); ``potential_true`` and
    ``potential_pred`` (T,) J the same for the potential (the learned one shifted to the true
    one's mean, as a potential is known up to a constant; None for a model without one).
    """
    system = dataset.system
    n = system.dof
    dtype = next(model.parameters()).dtype
    total = dataset.long_x.shape[1] - 2
    steps = total if steps is None else min(steps, total)
    x = torch.as_tensor(dataset.long_x, dtype=dtype)
    u = torch.as_tensor(dataset.long_u, dtype=dtype)
    q, qd = model.rollout(x, u, steps)
    q, qd = q.double(), qd.double()
    truth = torch.as_tensor(dataset.long_x[:, 2:steps + 2])
    e_pred = system.energy(q, qd)
    e_true = system.energy(truth[..., :n], truth[..., n:])
    i = int(np.clip(trajectory, 0, len(dataset.long_x) - 1))
    t = dataset.h * np.arange(2, steps + 2)
    horizon = ((q - truth[..., :n]) ** 2).mean(dim=(0, 2)).numpy()
    q_data = truth[i, :, :n]
    H_pred = model.mass_matrix(q_data.to(dtype))
    V_true = system.potential_energy(q_data).numpy()
    V_pred = None
    # the learned potential: the Lagrangian networks' (L-NODE, SyMo) or the robot model's own
    source = getattr(model, "lagrangian", None) or model
    if hasattr(source, "potential_energy"):
        V_pred = source.potential_energy(q_data.to(dtype)).double().detach().numpy().reshape(V_true.shape)
        V_pred = V_pred - V_pred.mean() + V_true.mean()   # a potential is known up to a constant
    return {"t": t, "q_pred": q[i].numpy(), "qd_pred": qd[i].numpy(), "q_true": q_data.numpy(),
            "qd_true": truth[i, :, n:].numpy(), "energy_pred": e_pred[i].numpy(), "energy_true": e_true[i].numpy(),
            "horizon_mse": horizon, "inertia_true": system.mass_matrix(q_data).numpy(),
            "inertia_pred": None if H_pred is None else H_pred.double().numpy(),
            "potential_true": V_true, "potential_pred": V_pred}


def evaluate_model(model, dataset, trajectories: int | None = None) -> tuple[dict, dict]:
    """Metrics and plot data of a trained ``model`` on a generated or log data set.

    Returns ``(metrics, curves)``: for a log, :func:`evaluate_on_log`'s metrics and
    :func:`log_rollouts` plus ``horizon_mse``; for a generated set, the engine's
    ``evaluate`` (on the first ``trajectories`` training trajectories) and :func:`generated_curves`.
    """
    from engine.training.metrics import evaluate

    model.eval()
    if isinstance(dataset, LogDataset):
        metrics, roll = evaluate_on_log(model, dataset)
        return metrics, dict(roll, horizon_mse=np.asarray(metrics["horizon_mse"], dtype=float))
    data = dataset if trajectories is None else dataset.subset(min(trajectories, len(dataset.train_x)))
    return evaluate(model, data), generated_curves(model, dataset)


def check_compatible(model, dataset) -> None:
    """Raise ``ValueError`` when ``model`` cannot run on ``dataset`` (sizes or time step differ)."""
    spec = model.spec
    sys_ = dataset.system
    if spec.dof != sys_.dof or spec.control_dim != sys_.control_dim:
        raise ValueError(f"the model has {spec.dof} configurations and {spec.control_dim} controls; "
                         f"the data have {sys_.dof} and {sys_.control_dim}")
    if not math.isclose(spec.h, dataset.h, rel_tol=1e-6):
        raise ValueError(f"the model's time step is {spec.h} s; the data's is {dataset.h} s "
                         "(resample the log to the model's step)")


def train_and_evaluate(model_type: str, dataset, train_config, spec_overrides: dict | None = None,
                       ctx=None, progress_span=(0.0, 1.0)) -> dict:
    """Build, train (the engine's trainer) and evaluate one model on a generated or log data set.

    Returns ``{"row": metrics row, "model": the trained model, "losses": [per epoch],
    "curves": plot data (see :func:`evaluate_model`)}``. The row follows the sweep schema:
    ``model, system, trajectories, seed, train_mse, test_mse, integration_mse, energy_mse,
    inertia_mse, seconds`` (plus per-signal errors on a log).
    """
    from engine.training.trainer import fit

    model = build_learned_model(model_type, dataset, train_config, spec_overrides)
    lo, hi = progress_span
    t0 = time.perf_counter()
    result = fit(model, dataset, train_config, ctx, None, (lo, lo + 0.9 * (hi - lo)))
    seconds = time.perf_counter() - t0
    if ctx is not None:
        ctx.progress(lo + 0.9 * (hi - lo), f"{model_type}: evaluating")
    metrics, curves = evaluate_model(model, dataset, train_config.trajectories)
    row = metrics_row(model_type, dataset, train_config, metrics, seconds)
    row["final_loss"] = _f(result.losses[-1]) if result.losses else None
    if ctx is not None:
        ctx.progress(hi, f"{model_type}: done")
    return {"row": row, "model": model, "losses": list(result.losses), "curves": curves}


def metrics_row(model_type: str, dataset, train_config, metrics: dict, seconds: float | None) -> dict:
    """One compare-table row from :func:`evaluate_model`'s metrics."""
    return {"model": model_type, "system": dataset.system.name,
            "trajectories": None if train_config is None else train_config.trajectories,
            "seed": None if train_config is None else train_config.seed,
            **{k: (v if isinstance(v, (dict, list, int)) else _f(v)) for k, v in metrics.items()},
            "seconds": seconds, "epochs": None if train_config is None else train_config.epochs}


def compare_on_log(log_path, mapping_path, models, epochs: int | None = None, *, prepare=None,
                   config: LogCompareConfig | None = None, ctx=None) -> list[dict]:
    """Read, map and prepare a log, train each model type on it, and return the compare table.

    ``models``: model type names (``engine.models.model_names()``), or one comma-separated string;
    ``epochs``: overrides ``config.epochs``; ``prepare``: a :class:`~engine.logs.PrepareConfig`
    (default: its defaults); ``config``: a :class:`LogCompareConfig`. Returns one row per model
    (see :func:`train_and_evaluate`) plus ``log`` and ``data_hash``; raises ``LogError`` /
    ``ValueError`` on bad input, before any training starts.
    """
    from engine.logs import LogMapping, PrepareConfig, prepare_log, read_log
    from engine.models import model_names

    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    models = list(models)
    known = model_names()
    for m in models:
        if m not in known:
            raise ValueError(f"unknown model type {m!r}; choose from {', '.join(known)}")
    if not models:
        raise ValueError("give at least one model type")
    config = config or LogCompareConfig()
    if epochs is not None:
        config = LogCompareConfig(**{**config.to_dict(), "epochs": int(epochs)})
    mapping = LogMapping.load(mapping_path)
    table = read_log(log_path, ctx)
    prepared = prepare_log(table, mapping, prepare or PrepareConfig())
    data = log_dataset(prepared, config)
    rows = []
    span = 1.0 / len(models)
    for i, name in enumerate(models):
        tc = train_config_for(name, data, config)
        out = train_and_evaluate(name, data, tc, ctx=ctx, progress_span=(i * span, (i + 1) * span))
        row = dict(out["row"])
        row["log"] = str(log_path)
        row["data_hash"] = prepared.data_hash
        rows.append(row)
    return rows


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def rows_to_csv(rows: list[dict], columns: list[str] | None = None) -> str:
    """The compare table as CSV text; nested per-signal dicts become ``<key>:<signal>`` columns."""
    flat = []
    for r in rows:
        f = {}
        for k, v in r.items():
            if isinstance(v, dict):
                for s, sv in v.items():
                    f[f"{k}:{s}"] = sv
            elif isinstance(v, list):
                continue
            else:
                f[k] = v
        flat.append(f)
    if columns is None:
        columns = list(METRIC_COLUMNS)
        for f in flat:
            columns += [k for k in f if k not in columns]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for f in flat:
        w.writerow([_cell(f.get(c)) for c in columns])
    return buf.getvalue()


def write_compare_report(directory, rows: list[dict], info: dict | None = None, stem: str = "compare") -> dict:
    """Write ``<stem>.csv`` and ``<stem>.json`` (rows + ``info``) under ``directory``; returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    csv_path = atomic_write_text(directory / f"{stem}.csv", rows_to_csv(rows))

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    json_path = write_json(directory / f"{stem}.json", {"rows": clean(rows), "info": clean(info or {})})
    return {"csv": csv_path, "json": json_path}
