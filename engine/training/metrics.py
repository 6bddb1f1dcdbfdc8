"""Evaluation metrics of the SyMo paper, all mean squared errors (NaN where a model diverges).

- ``train_mse`` / ``test_mse``: one-step predictions of the configurations ``q_{k+1}``;
- ``integration_mse``: configurations along the long-term set (16 x 500 steps, zero control),
  predicted from each trajectory's first points;
- ``integration_mse_state``: the paper repository's *cartpole* figure (Experiments_cartpole/train.py,
  ``int_loss_poses = mean(losses, [1, 2])``): the MSE of the whole state ``(q, qd)`` averaged over
  steps, coordinates and trajectories, with DEL models' velocities by the backward difference
  ``(q_{k+1} - q_k) / h`` (Code/integrate_models.py ``implicit_integration_DEL``). Its *pendulum*
  figure is the angle alone (``mean(losses, [1])[:, 0]``), i.e. ``integration_mse``;
- ``energy_mse``: the true energy of the predicted states against the true energy, along the
  long-term set (DEL models' velocities by the discrete Legendre transform);
- ``inertia_mse``: the learned inertia matrix against the true one at the predicted
  configurations (None for models without one).
"""

from __future__ import annotations

import math

import torch

from engine.data.dataset import TrajectoryDataset
from engine.data.windows import make_windows
from engine.models.base import LearnedDynamics
from engine.models.symo import DiscreteLagrangianModel

__all__ = ["METRIC_NAMES", "as_float", "evaluate", "paper_rollout_velocities"]

METRIC_NAMES = (
    "train_mse",
    "test_mse",
    "integration_mse",
    "integration_mse_state",
    "energy_mse",
    "inertia_mse",
)


def as_float(t) -> float | None:
    """A metric as a Python float (NaN for any non-finite value: a diverged model); None stays None."""
    if t is None:
        return None
    v = float(t)
    return v if math.isfinite(v) else float("nan")


def paper_rollout_velocities(model: LearnedDynamics, x: torch.Tensor, q: torch.Tensor, qd: torch.Tensor,
                             h: float) -> torch.Tensor:
    """The velocities the paper's whole-state figure compares (B, T, n): a rollout's own ``qd`` for
    state models; for DEL models the backward difference ``(q_{k+1} - q_k) / h``, as the paper's
    ``implicit_integration_DEL`` reconstructs them. ``x`` (B, T + 2, 2n): the trajectories the
    rollout ``q`` (B, T, n) started from (its first two points)."""
    if not isinstance(model, DiscreteLagrangianModel):
        return qd
    n = q.shape[-1]
    return (q - torch.cat([x[:, 1:2, :n], q[:, :-1]], 1)) / h


@torch.no_grad()
def evaluate(model: LearnedDynamics, dataset: TrajectoryDataset, long_term_steps: int | None = None) -> dict:
    """Metrics of ``model`` on ``dataset`` (its training set is whatever the model was trained on)."""
    system = dataset.system
    n = system.dof
    ref = next(t for t in (*model.parameters(), *model.buffers()) if t.is_floating_point())
    dtype, device = ref.dtype, ref.device
    out = {}
    for key, x, u in (
        ("train_mse", dataset.train_x, dataset.train_u),
        ("test_mse", dataset.test_x, dataset.test_u),
    ):
        w = make_windows(x, u, n, dtype).to(device=device)
        q_next, _ = model.predict(w)
        out[key] = as_float(((q_next - w.q_next) ** 2).mean())
    steps = (
        dataset.long_x.shape[1] - 2
        if long_term_steps is None
        else min(long_term_steps, dataset.long_x.shape[1] - 2)
    )
    xs = torch.as_tensor(dataset.long_x, dtype=dtype, device=device)
    us = torch.as_tensor(dataset.long_u, dtype=dtype, device=device)
    q, qd = model.rollout(xs, us, steps)
    q_true = xs[:, 2:steps + 2, :n]
    out["integration_mse"] = as_float(((q - q_true) ** 2).mean())
    qd_paper = paper_rollout_velocities(model, xs, q, qd, dataset.h)
    out["integration_mse_state"] = as_float(((torch.cat([q, qd_paper], -1) - xs[:, 2:steps + 2]) ** 2).mean())
    q64, qd64 = q.double().cpu(), qd.double().cpu()  # the analytic references run on the CPU
    e_pred = system.energy(q64, qd64)
    x64 = torch.as_tensor(dataset.long_x[:, 2:steps + 2])
    e_true = system.energy(x64[..., :n], x64[..., n:])
    out["energy_mse"] = as_float(((e_pred - e_true) ** 2).mean())
    H = model.mass_matrix(q)
    out["inertia_mse"] = (
        None if H is None else as_float(((H.double().cpu() - system.mass_matrix(q64)) ** 2).mean())
    )
    return out
