"""Speed of training: steps per second of every model at the paper's sizes, and the estimated
wall time of the whole reproduction (models x N x epochs, spread over the local workers).

Each model trains whole epochs at every N (batch 4N windows, the paper's widths), one torch
thread per process, through the trainer's own epoch (:meth:`engine.training.trainer.DynamicsTrainee.epoch`:
the same mini-batch gather, loss, backward, fused Adam step and scheduler as :func:`~engine.training.trainer.fit`)
plus the loop's per-epoch bookkeeping (NaN-guard snapshot) and process set-up (one thread,
:func:`~engine.runtime.tune_malloc`). After one warm-up epoch, a few epochs
are timed one by one and the median epoch time is scaled to the run's epochs (medians resist the
spikes of a shared machine). The estimate adds the evaluation (test set and 16 x 500-step
rollouts) of every run.

The measurement runs in as many processes at once as the sweep has workers (see
:func:`bench_learn`). Times are CPU times of the measuring processes (``time.process_time``):
what the work costs a core, independent of other processes sharing the machine; the wall-clock
figures (``*_wall``) are reported beside them with the load average, and equal the CPU figures
on an otherwise idle machine.
"""

from __future__ import annotations

import os
import statistics
import time

import torch

from engine.data.config import DatasetConfig
from engine.data.dataset import generate_dataset
from engine.jobs import NullJobContext
from engine.models.registry import PAPER_MODELS
from engine.runtime import tune_malloc
from engine.training.config import TrainConfig
from engine.training.metrics import evaluate
from engine.training.trainer import DynamicsTrainee, TrainingBatches, build_for
from engine.validation import check_int

__all__ = ["bench_learn"]


def _bench_epoch(trainee: DynamicsTrainee, ctx) -> None:
    """One training epoch as :func:`~engine.training.trainer.fit` runs it (steps, scheduler, snapshot)."""
    trainee.epoch(1, ctx)
    trainee.finite_copy()
    device = trainee.batches.packed.device
    if device.type == "cuda":  # the epoch's kernels finish inside its timing
        torch.cuda.synchronize(device)


def _measure(
    system: str, models, trajectories, epochs: int, steps: int, ctx=None, device: str = "cpu"
) -> dict:
    """Per model: median epoch times at every N scaled to ``epochs``, plus one evaluation per N."""
    torch.set_num_threads(1)
    tune_malloc()  # as fit does
    ds = generate_dataset(
        DatasetConfig(system=system, train_trajectories=max(trajectories), test_trajectories=128)
    )
    null = NullJobContext()
    per_model = {}
    for mi, name in enumerate(models):
        wall = cpu = 0.0
        nsteps = 0
        est_wall = est_cpu = 0.0
        detail = {}
        for n in trajectories:
            cfg = TrainConfig(model=name, system=system, trajectories=n, epochs=epochs, device=device)
            model = build_for(cfg, ds)
            batches = TrainingBatches.build(
                ds, cfg, next(model.parameters()).dtype, next(model.parameters()).device
            )
            trainee = DynamicsTrainee(model, ds, cfg, batches, None)
            per_epoch = batches.per_epoch()

            _bench_epoch(trainee, null)  # warm-up
            times_w, times_c = [], []
            for _ in range(max(3, -(-steps // per_epoch))):
                t0, c0 = time.perf_counter(), time.process_time()
                _bench_epoch(trainee, null)
                times_w.append(time.perf_counter() - t0)
                times_c.append(time.process_time() - c0)
            dw, dc = statistics.median(times_w), statistics.median(times_c)
            wall += dw
            cpu += dc
            nsteps += per_epoch
            est_wall += dw * epochs
            est_cpu += dc * epochs
            detail[n] = per_epoch / dc
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
        if ctx is not None:
            ctx.progress((mi + 1) / len(models), f"bench {name}", {"steps_per_second": nsteps / cpu})
    return per_model


def _measure_task(task: dict) -> dict:
    """Picklable entry point: one concurrent measuring process."""
    return _measure(**task)


def _mean_of(measurements: list[dict]) -> dict:
    """The element-wise mean of the processes' per-model figures (nested dicts of numbers)."""
    first = measurements[0]
    out: dict = {}
    for key, value in first.items():
        if isinstance(value, dict):
            out[key] = _mean_of([m[key] for m in measurements])
        else:
            out[key] = statistics.fmean(float(m[key]) for m in measurements)
    return out


def bench_learn(
    system: str = "pendulum",
    models=PAPER_MODELS,
    trajectories=(8, 16, 32, 64, 128),
    epochs: int = 2000,
    steps: int = 24,
    workers: int | None = None,
    ctx=None,
    device: str = "cpu",
) -> dict:
    """``steps``: timed mini-batches per model and N (rounded up to whole epochs, at least 3 epochs).
    ``device``: where the models train (cpu, cuda, auto; CPU time is then only the host's share).

    With ``workers`` > 1 the measurement runs in that many spawned processes at once, each timing
    every model (the figures are their mean): a sweep keeps every core busy, and processes that
    share the caches and the memory bus run slower than one alone (two SyMo/L-NODE fits side by
    side here: 5 to 11 %). The real pendulum reproductions' training loops have taken between 5 %
    less and 13 % more than an estimate made near the same time, and the machine's own speed
    moves by as much (results/reproduction/README.md): read the estimate as good to about 10 %.
    """
    who = "benchmark setting"
    check_int(
        who, "steps (--steps)", steps, 1, 100_000, hint="timed mini-batches per model and N, for example 24"
    )
    check_int(
        who, "epochs (--epochs)", epochs, 1, 1_000_000, hint="the epochs of the run the estimate is for"
    )
    if workers is not None:
        check_int(who, "workers (--workers)", workers, 1, 256, hint="parallel processes, for example 2")
    models = tuple(models)
    trajectories = tuple(trajectories)
    for n in trajectories:
        check_int(who, "trajectories", n, 1, 1_000_000)
    workers = int(workers or min(2, os.cpu_count() or 1))
    task = {
        "system": system,
        "models": models,
        "trajectories": trajectories,
        "epochs": epochs,
        "steps": steps,
        "device": device,
    }
    if workers == 1:
        per_model = _measure(**task, ctx=ctx)
    else:
        from engine.training.executors import LocalProcessExecutor

        results: list[dict] = []

        def on_done(i, result):
            results.append(result)
            if ctx is not None:
                ctx.progress(len(results) / workers, f"bench: {len(results)}/{workers} processes done", {})

        LocalProcessExecutor(workers).run(_measure_task, [task] * workers, on_done, ctx)
        per_model = {name: _mean_of([r[name] for r in results]) for name in models}
    total_cpu = sum(v["estimated_run_seconds"] for v in per_model.values())
    total_wall = sum(v["estimated_run_seconds_wall"] for v in per_model.values())
    return {
        "system": system,
        "epochs": epochs,
        "trajectories": list(trajectories),
        "workers": workers,
        "device": device,
        "steps_per_second": {m: v["steps_per_second"] for m, v in per_model.items()},
        "estimated_reproduction_minutes": total_cpu / workers / 60.0,
        "estimated_reproduction_minutes_wall": total_wall / workers / 60.0,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "models": per_model,
    }
