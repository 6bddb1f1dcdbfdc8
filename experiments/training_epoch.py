"""One training epoch of the learnable rigid-body model (``robot-rk4``) on a 7-DoF robot log,
with the compiled backward (engine/robots/backends/compiled_autograd.py) and without it
(``LAGRANGE_COMPILED_BACKWARD=0``, switched in the process), issue #33's third goal.

    python -m experiments.training_epoch [--log resources/logs/panda_friction.csv]
        [--robot panda] [--repeats 7] [--out results/benchmarks/training_epoch.json]

The model is built as ``learn compare --log ... --robot panda --models robot-rk4`` builds it
(float64, learnable mass, CoM and inertia of every moving link, joint friction and armature).
On a shared machine wall time is unreliable, so each training step (loss and backward on one
mini-batch, the optimiser excluded) is timed as this thread's CPU time, the two settings
interleaved, best and median of ``--repeats``; the epoch is that times the mini-batches per
epoch. With the compiled backward the torch profiler splits one step into the rigid-body calls
(forward and backward of the compiled autograd functions: RNEA, ABA, CRBA) and the rest (the
integrator, friction, the parametrisations of the learnable inertials, the solve).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from engine.data.log_dataset import log_dataset
from engine.data.windows import Windows
from engine.logs import LogMapping, PrepareConfig, prepare_log, read_log
from engine.robots.backends import compiled_autograd as cag
from engine.training.compare import LogCompareConfig, build_learned_model, train_config_for
from engine.training.robot_compare import robot_setup
from engine.training.trainer import TrainingBatches

_RIGID = ("_Rnea", "_Aba", "_Crba")


def _model_and_batch(log: Path, mapping: Path, robot: str):
    setup = robot_setup(robot, LogMapping.load(mapping))
    prepared = prepare_log(read_log(log, None), setup.mapping, PrepareConfig())
    c = LogCompareConfig()
    data = log_dataset(prepared, c.steps, c.horizon)
    tc = train_config_for("robot-rk4", data, c)
    model = build_learned_model("robot-rk4", data, tc, dict(setup.spec_overrides))
    p = next(model.parameters())
    batches = TrainingBatches.build(data, tc, p.dtype, p.device)
    w = Windows.unpack(batches.packed[:batches.batch_size], batches.widths)
    return model, w, -(-len(batches) // batches.batch_size), batches.batch_size, str(p.dtype)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _rigid_share(step) -> float:
    """The rigid-body calls' share of one step's CPU time (torch profiler, self times)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    rows = prof.key_averages()
    total = sum(r.self_cpu_time_total for r in rows)
    rigid = sum(r.self_cpu_time_total for r in rows if r.key.startswith(_RIGID))
    return rigid / total if total else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log", default="resources/logs/panda_friction.csv")
    p.add_argument("--mapping", default=None, help="default: the log's .mapping.json")
    p.add_argument("--robot", default="panda")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default="results/benchmarks/training_epoch.json")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    log = Path(args.log)
    mapping = Path(args.mapping) if args.mapping else log.with_suffix(".mapping.json")
    model, w, steps, batch, dtype = _model_and_batch(log, mapping, args.robot)

    def step():
        model.zero_grad()
        model.loss(w).backward()

    settings = {"compiled backward off": False, "compiled backward on": True}
    times: dict[str, list[float]] = {k: [] for k in settings}
    enabled = cag.ENABLED
    try:
        for _ in range(args.repeats):
            for name, on in settings.items():
                cag.ENABLED = on
                step()
                t = time.thread_time()
                step()
                times[name].append(time.thread_time() - t)
        shares: dict[str, float | None] = {name: None for name in settings}   # torch's operators: not split
        cag.ENABLED = True
        shares["compiled backward on"] = _rigid_share(step)
    finally:
        cag.ENABLED = enabled
    rows = {name: {"step_cpu_ms_best": 1e3 * min(t), "step_cpu_ms_median": 1e3 * statistics.median(t),
                   "epoch_cpu_s_best": steps * min(t), "rigid_body_share": shares[name]} for name, t in times.items()}
    off, on = (rows[k]["step_cpu_ms_best"] for k in settings)
    report = {"log": str(log), "robot": args.robot, "model": "robot-rk4", "dtype": dtype, "batch": batch,
              "steps_per_epoch": steps, "rows": rows, "speedup": off / on,
              "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(),
                          "load_average": os.getloadavg(), "torch": torch.__version__}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for name, r in rows.items():
        share = "" if r["rigid_body_share"] is None else f", rigid-body calls {100 * r['rigid_body_share']:.0f} %"
        print(f"{name:22s} step {r['step_cpu_ms_best']:7.1f} ms CPU (median {r['step_cpu_ms_median']:.1f}), "
              f"epoch {r['epoch_cpu_s_best']:.2f} s{share}")
    print(f"speed-up {off / on:.2f}x; load average {report['machine']['load_average']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
