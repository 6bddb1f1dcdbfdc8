"""Evaluation of a trained model on a generated data set or a log, for the compare table and plots.

Metrics on a log (all mean squared errors in SI units; ``None`` where not defined):

- ``train_mse`` / ``test_mse``: one-step prediction of ``q`` on the train / validation windows;
- ``integration_mse``: ``q`` along the k-step rollouts over the validation ranges (``k = horizon``),
  driven by the measured controls;
- ``one_step`` / ``k_step``: the same per signal (``q`` and ``qd`` columns, by name; the
  velocities of SyMo-type models are ``(q_{k+1} - q_k) / h``, compared with the log's ``qd_{k+1}``);
- ``horizon_mse``: ``q`` error against the prediction horizon 1..k (a list);
- ``energy_mse`` / ``inertia_mse``: ``None`` (a log has no known Lagrangian).

On a generated data set the metrics are the paper's (:func:`engine.training.metrics.evaluate`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.data.log_dataset import LogDataset
from engine.training.metrics import as_float, evaluate

__all__ = ["METRIC_COLUMNS", "check_compatible", "evaluate_model", "evaluate_on_log", "generated_curves",
           "log_rollouts", "metrics_row"]

# the compare table's columns, in order (configuration MSEs; a missing metric is None)
METRIC_COLUMNS = ("model", "trajectories", "train_mse", "test_mse", "integration_mse", "energy_mse",
                  "inertia_mse", "seconds")


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
def evaluate_on_log(model, data: LogDataset) -> tuple[dict, dict]:
    """The metrics of the module doc for ``model`` on ``data``, and the rollouts (for plots)."""
    from engine.data.windows import make_windows

    n = data.system.dof
    dtype = next(model.parameters()).dtype
    out: dict = {}
    per_signal_one: dict = {}
    for key, x, u in (("train_mse", data.train_x, data.train_u), ("test_mse", data.test_x, data.test_u)):
        w = make_windows(x, u, n, dtype)
        q_next, qd_next = model.predict(w)
        out[key] = as_float(((q_next - w.q_next) ** 2).mean())
        if key == "test_mse":
            for i, name in enumerate(data.q_names):
                per_signal_one[name] = as_float(((q_next[:, i] - w.q_next[:, i]) ** 2).mean())
                per_signal_one[f"d({name})/dt"] = as_float(((qd_next[:, i] - w.qd_next[:, i]) ** 2).mean())
    roll = log_rollouts(model, data)
    err_q = (roll["q_pred"] - roll["q_true"]) ** 2      # (R, k, n)
    err_qd = (roll["qd_pred"] - roll["qd_true"]) ** 2
    out["integration_mse"] = as_float(err_q.mean())
    out["energy_mse"] = None
    out["inertia_mse"] = None
    k_step = {}
    for i, name in enumerate(data.q_names):
        k_step[name] = as_float(err_q[:, -1, i].mean())
        k_step[f"d({name})/dt"] = as_float(err_qd[:, -1, i].mean())
    out["one_step"] = per_signal_one
    out["k_step"] = k_step
    out["horizon"] = int(err_q.shape[1])
    out["horizon_mse"] = [as_float(v) for v in err_q.mean(axis=(0, 2))]
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
    return {
        "t": t,
        "q_pred": q[i].numpy(),
        "qd_pred": qd[i].numpy(),
        "q_true": q_data.numpy(),
        "qd_true": truth[i, :, n:].numpy(),
        "energy_pred": e_pred[i].numpy(),
        "energy_true": e_true[i].numpy(),
        "horizon_mse": horizon,
        "inertia_true": system.mass_matrix(q_data).numpy(),
        "inertia_pred": None if H_pred is None else H_pred.double().numpy(),
        "potential_true": V_true,
        "potential_pred": V_pred,
    }


def evaluate_model(model, dataset, trajectories: int | None = None) -> tuple[dict, dict]:
    """Metrics and plot data of a trained ``model`` on a generated or log data set.

    Returns ``(metrics, curves)``: for a log, :func:`evaluate_on_log`'s metrics and
    :func:`log_rollouts` plus ``horizon_mse``; for a generated set, the engine's
    ``evaluate`` (on the first ``trajectories`` training trajectories) and :func:`generated_curves`.
    """
    model.eval()
    if dataset.kind == "log":
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


def metrics_row(model_type: str, dataset, train_config, metrics: dict, seconds: float | None) -> dict:
    """One compare-table row from :func:`evaluate_model`'s metrics."""
    return {"model": model_type, "system": dataset.system.name,
            "trajectories": None if train_config is None else train_config.trajectories,
            "seed": None if train_config is None else train_config.seed,
            **{k: (v if isinstance(v, (dict, list, int)) else as_float(v)) for k, v in metrics.items()},
            "seconds": seconds, "epochs": None if train_config is None else train_config.epochs}
