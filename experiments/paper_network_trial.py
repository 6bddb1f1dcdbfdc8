"""Trial: SyMo on the pendulum with the paper's exact 1-DOF Lagrangian network, in our loop or in its.

The paper's network (ssantos97/SyMo, ``Code/Rigid_Body.py``) puts the inertia and potential heads on
one shared tanh trunk and, for one degree of freedom, takes the inertia as ``softplus(raw)`` with no
square and no offset. Ours (``engine.models.lagrangian``) uses two trunks and ``softplus(raw)^2 +
1e-3``. This script swaps the paper's network into a SyMo (or E2E-SyMo) model, trains it on the
reproduction's data set (the paper's draws) and prints the metrics and the angle MSE of long-term
trajectory 8, the near-separatrix one (results/reproduction/README.md).

    python -m experiments.paper_network_trial [--model symo] [--trajectories 32]
        [--seeds 0,1,2] [--paper-loop]

``--paper-loop``: the paper's training loop (``Code/Trainer.py``) instead of ours: mini-batches in
the data's order (no shuffling) and ReduceLROnPlateau stepped on the test-set loss after every
epoch. One run at a time, one core; N = 32 takes about 25 s (our loop) or 45 s (the paper's).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn
from torch.nn import functional as F

from engine.data.config import DatasetConfig
from engine.data.dataset import generate_dataset
from engine.data.windows import Windows, make_windows
from engine.models.lagrangian import LagrangianTerms
from engine.models.nets import StackedConfigurationMLP
from engine.runtime import tune_malloc
from engine.training.config import TrainConfig
from engine.training.metrics import evaluate
from engine.training.trainer import TrainingBatches, adam_optimizer, build_for, fit
from experiments.long_term_sets import per_trajectory_figure

NEAR_SEPARATRIX = 8    # the long-term trajectory at 99.2 % of the separatrix energy


class PaperLagrangian1DOF(nn.Module):
    """The :class:`~engine.models.lagrangian.LagrangianNetworks` interface for one angle, built as
    the paper's ``Rigid_Body``: one trunk, heads ``(raw, V)``, ``H = softplus(raw)``. Exact
    derivatives: ``dH = sigmoid(raw) raw'``, ``d2H = sigmoid(raw) raw'' + sigmoid'(raw) raw'^2``."""

    def __init__(self, hidden: int = 128, layers: int = 2, init: str = "xavier"):
        super().__init__()
        self.n, self.eps = 1, 0.0
        self.nets = StackedConfigurationMLP((True,), (2,), hidden, layers, init)

    def terms(self, q: torch.Tensor, order: int = 1) -> LagrangianTerms:
        ((y, dy, d2y),) = self.nets(q, order=order)
        raw, v = y[..., 0:1], y[..., 1:2]
        lead = raw.shape[:-1]
        out = LagrangianTerms(H=F.softplus(raw).unsqueeze(-1), V=v[..., 0])
        if order >= 1:
            sig = torch.sigmoid(raw)
            r1 = dy[..., 0:1].reshape(*lead, 1)
            out.dH = (sig * r1).reshape(*lead, 1, 1, 1)
            out.dV = dy[..., 1:2][..., 0]
            if order >= 2:
                r2 = d2y[..., 0:1].reshape(*lead, 1)
                out.d2H = (sig * r2 + sig * (1.0 - sig) * r1 * r1).reshape(*lead, 1, 1, 1, 1)
                out.d2V = d2y[..., 1:2][..., 0]
        return out

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        return self.terms(q, order=0).H

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        return self.terms(q, order=0).V


def train_paper_loop(model, ds, cfg: TrainConfig) -> None:
    """The paper's ``Code/Trainer.py`` loop: unshuffled mini-batches, the scheduler on the test loss."""
    batches = TrainingBatches.build(ds, cfg, torch.float32)
    test, widths = make_windows(ds.test_x, ds.test_u, ds.system.dof, torch.float32).pack()
    opt = adam_optimizer(model.parameters(), cfg.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, "min", patience=cfg.patience, factor=cfg.factor)
    W, bs = len(batches), batches.batch_size
    for _ in range(cfg.epochs):
        for i in range(0, W, bs):
            loss = model.loss(Windows.unpack(batches.packed[i:i + bs], batches.widths))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        with torch.no_grad():
            sched.step(model.loss(Windows.unpack(test, widths)).item())


def run(model_name: str, n: int, seed: int, paper_loop: bool, ds) -> dict:
    cfg = TrainConfig(model=model_name, system="pendulum", trajectories=n, seed=seed, epochs=2000)
    model = build_for(cfg, ds)
    torch.manual_seed(seed)
    model.lagrangian = PaperLagrangian1DOF(cfg.width, cfg.layers, cfg.init)
    t0 = time.perf_counter()
    if paper_loop:
        train_paper_loop(model, ds, cfg)
    else:
        fit(model, ds, cfg)
    seconds = time.perf_counter() - t0
    metrics = evaluate(model, ds.subset(n))
    model.eval()
    per_traj = per_trajectory_figure(model, ds.long_x, False, ds.h)
    return {
        "model": model_name,
        "trajectories": n,
        "seed": seed,
        "loop": "paper" if paper_loop else "ours",
        "seconds": round(seconds, 1),
        **{k: metrics[k] for k in ("train_mse", "test_mse", "integration_mse", "inertia_mse")},
        "trajectory_8": float(per_traj[NEAR_SEPARATRIX]),
    }


def main(argv=None) -> list:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="symo", choices=("symo", "e2e-symo"))
    ap.add_argument("--trajectories", type=int, default=32)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--paper-loop", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    tune_malloc()
    ds = generate_dataset(DatasetConfig(system="pendulum", sampler="paper"))
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        rows.append(run(args.model, args.trajectories, seed, args.paper_loop, ds))
        print(json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
