"""Speed of training: steps per second of every model at the paper's sizes, and the estimated
wall time of the whole reproduction (models x N x epochs, spread over the local workers).

Each model trains a few mini-batches at every N (batch 4N windows, the paper's widths), one
torch thread per process, the same code path as :func:`engine.training.trainer.fit`. The
estimate adds the evaluation (test set and 16 x 500-step rollouts) of every run.

Times are measured as CPU time of this process (``time.process_time``): what the work costs
a core, independent of other processes sharing the machine; the wall-clock figures
(``*_wall``) are reported beside them with the load average, and equal the CPU figures on an
idle machine.
"""

from __future__ import annotations

import os
import time

import torch

from engine.data.config import DatasetConfig
from engine.data.dataset import generate_dataset
from engine.data.windows import make_windows
from engine.models.registry import PAPER_MODELS
from engine.training.config import TrainConfig
from engine.training.metrics import evaluate
from engine.training.trainer import _adam, build_for

__all__ = ["bench_learn"]


def bench_learn(system: str = "pendulum", models=PAPER_MODELS, trajectories=(8, 16, 32, 64, 128), epochs: int = 2000,
                steps: int = 10, workers: int | None = None, ctx=None) -> dict:
    torch.set_num_threads(1)
    workers = workers or min(2, os.cpu_count() or 1)
    ds = generate_dataset(DatasetConfig(system=system, train_trajectories=max(trajectories), test_trajectories=128))
    per_model = {}
    total_wall = total_cpu = 0.0
    for mi, name in enumerate(models):
        wall = cpu = 0.0
        nsteps = 0
        est_wall = est_cpu = 0.0
        detail = {}
        for n in trajectories:
            cfg = TrainConfig(model=name, system=system, trajectories=n, epochs=epochs)
            model = build_for(cfg, ds)
            opt = _adam(model.parameters(), cfg.lr)
            w = make_windows(ds.train_x[:n], ds.train_u[:n], ds.system.dof)
            bs = min(cfg.batch_factor * n, len(w))
            batches_per_epoch = -(-len(w) // bs)
            g = torch.Generator().manual_seed(0)

            def one():
                b = w.index(torch.randperm(len(w), generator=g)[:bs])
                loss = model.loss(b)
                loss.item()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()

            one()
            one()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(steps):
                one()
            dw, dc = time.perf_counter() - t0, time.process_time() - c0
            wall += dw
            cpu += dc
            nsteps += steps
            run_steps = epochs * batches_per_epoch
            est_wall += dw / steps * run_steps
            est_cpu += dc / steps * run_steps
            detail[n] = steps / dc
            if ctx is not None:
                ctx.check_cancelled()
        t0, c0 = time.perf_counter(), time.process_time()
        evaluate(model, ds.subset(8))
        eval_wall, eval_cpu = time.perf_counter() - t0, time.process_time() - c0
        est_wall += eval_wall * len(trajectories)
        est_cpu += eval_cpu * len(trajectories)
        per_model[name] = {"steps_per_second": nsteps / cpu, "steps_per_second_wall": nsteps / wall,
                           "steps_per_second_by_trajectories": detail, "evaluation_seconds": eval_cpu,
                           "estimated_run_seconds": est_cpu, "estimated_run_seconds_wall": est_wall}
        total_wall += est_wall
        total_cpu += est_cpu
        if ctx is not None:
            ctx.progress((mi + 1) / len(models), f"bench {name}", {"steps_per_second": nsteps / cpu})
    return {
        "system": system, "epochs": epochs, "trajectories": list(trajectories), "workers": workers,
        "steps_per_second": {m: v["steps_per_second"] for m, v in per_model.items()},
        "estimated_reproduction_minutes": total_cpu / workers / 60.0,
        "estimated_reproduction_minutes_wall": total_wall / workers / 60.0,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "models": per_model,
    }
