"""One training epoch of the learnable rigid-body model (``robot-rk4``) on a 7-DoF robot log, as
the engine computes it now and as it did when issue #33 was filed (its "at least 5x faster than
today" goal).

    python -m experiments.training_epoch [--log resources/logs/panda_friction.csv]
        [--robot panda] [--repeats 7] [--out results/benchmarks/training_epoch.json]

The model is built as ``learn compare --log ... --robot panda --models robot-rk4`` builds it
(float64, learnable mass, CoM and inertia of every moving link, joint friction and armature).
Three settings, switched in one process on the same model and mini-batch:

- **at the issue**: gradients by torch autograd through the torch algorithms (the compiled
  backward off, ``LAGRANGE_COMPILED_BACKWARD=0``), the learnable inertials recomputed at every
  rigid-body call, and each acceleration ``(M + Ia)^-1 (force - h - tau_friction)`` differentiated
  through CRBA, RNEA and the solve;
- **compiled backward**: the analytic backward kernels (engine/robots/backends/compiled_autograd.py),
  otherwise as at the issue;
- **now**: the compiled backward, the inertials computed once per training step
  (``RobotModel.inertials_held``) and the acceleration by the compiled ABA with the learned
  armature on M's diagonal (``forward_dynamics(..., armature=)``: one O(n) forward pass and one
  reverse pass, the armature's gradient ``-lambda qdd``) instead of CRBA, RNEA and a dense solve.

On a shared machine wall time is unreliable, so each training step (loss and backward on one
mini-batch, the optimiser excluded) is timed as this thread's CPU time, the settings interleaved,
best and median of ``--repeats``; the epoch is that times the mini-batches per epoch. The torch
profiler gives the rigid-body calls' share of a step (forward and backward of the compiled autograd
functions: RNEA, ABA, CRBA).
"""

from __future__ import annotations

import argparse
import contextlib
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


@contextlib.contextmanager
def _model_code(cls, robot, current: bool):
    """The model's code as it is (``current``), or as it was when issue #33 was filed: the inertials
    recomputed per call and the acceleration differentiated through CRBA, RNEA and the solve."""
    if current:
        yield
        return
    from engine.integrators import small_solve

    def acceleration(self, q, qd, force):
        f = self.friction
        M = self.robot.mass_matrix(q) + torch.diag_embed(f.value("armature").to(q.dtype).expand(q.shape))
        return small_solve(M, force - self.robot.bias_forces(q, qd) - f.dissipative_torque(qd))

    @contextlib.contextmanager
    def per_call(self):
        yield self

    saved = cls._acceleration, type(robot).inertials_held
    cls._acceleration, type(robot).inertials_held = acceleration, per_call
    try:
        yield
    finally:
        cls._acceleration, type(robot).inertials_held = saved


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

    # (compiled backward, the model's code now)
    settings = {"at the issue": (False, False), "compiled backward": (True, False), "now": (True, True)}
    times: dict[str, list[float]] = {k: [] for k in settings}
    shares: dict[str, float | None] = {name: None for name in settings}   # torch's operators: not split
    enabled = cag.ENABLED
    try:
        for _ in range(args.repeats):
            for name, (on, current) in settings.items():
                cag.ENABLED = on
                with _model_code(type(model), model.robot, current):
                    step()
                    t = time.thread_time()
                    step()
                    times[name].append(time.thread_time() - t)
        for name in ("compiled backward", "now"):
            cag.ENABLED = True
            with _model_code(type(model), model.robot, settings[name][1]):
                shares[name] = _rigid_share(step)
    finally:
        cag.ENABLED = enabled
    rows = {name: {"step_cpu_ms_best": 1e3 * min(t), "step_cpu_ms_median": 1e3 * statistics.median(t),
                   "epoch_cpu_s_best": steps * min(t), "rigid_body_share": shares[name]} for name, t in times.items()}
    before, now = (rows[k]["step_cpu_ms_best"] for k in ("at the issue", "now"))
    report = {"log": str(log), "robot": args.robot, "model": "robot-rk4", "dtype": dtype, "batch": batch,
              "steps_per_epoch": steps, "rows": rows, "speedup": before / now,
              "speedup_compiled_backward_alone": before / rows["compiled backward"]["step_cpu_ms_best"],
              "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(),
                          "load_average": os.getloadavg(), "torch": torch.__version__}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for name, r in rows.items():
        share = "" if r["rigid_body_share"] is None else f", rigid-body calls {100 * r['rigid_body_share']:.0f} %"
        print(f"{name:22s} step {r['step_cpu_ms_best']:7.1f} ms CPU (median {r['step_cpu_ms_median']:.1f}), "
              f"epoch {r['epoch_cpu_s_best']:.2f} s{share}")
    print(f"speed-up against the issue's code {before / now:.2f}x; load average {report['machine']['load_average']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
