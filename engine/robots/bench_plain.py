"""The rigid-body engine through the plain API, without the command line's settings.

:func:`run_plain_api_benchmark` starts a fresh Python process that does what a user's script
does (``import torch``, then ``from engine.robots import RobotModel``; no ``python -m engine``,
no thread or allocator calls of its own, no ``GOMP_SPINCOUNT`` inherited from this process) and
times, in that process, RNEA, CRBA and ABA on one batch against Pinocchio's Python loop over
the samples, interleaved and repeated. It returns the median and the slowest repeat of each,
so an outlier run shows. ``python -m engine bench rbd`` prints it as the row
"plain API (no CLI settings)", twice: the calls as a script makes them (without derivatives:
the compiled kernels of :mod:`engine.robots.backends.compiled`), then through the torch
algorithms that autograd differentiates (``path="torch"``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["PLAIN_ALGORITHMS", "format_plain_rows", "run_plain_api_benchmark"]

PLAIN_ALGORITHMS = ("rnea", "crba", "aba")

# Runs in the child: a user's script. Prints one JSON line.
_SCRIPT = r"""
import json, statistics, sys, time
import numpy as np
import torch
from engine.robots import RobotModel
import pinocchio as pin

path, batch, repeats, min_time = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
model = RobotModel.from_file(path, mimic="independent", strict=False)   # as the in-process rows and Pinocchio load it
pm = pin.buildModelFromUrdf(path)
pd = pm.createData()
names = [pm.names[i] for i in range(1, pm.njoints)]
perm = np.array([pm.joints[names.index(j) + 1].idx_v for j in model.joint_names])
rng = np.random.default_rng(0)
lo = np.maximum(model.joint_limits.lower.numpy(), -np.pi)
hi = np.minimum(model.joint_limits.upper.numpy(), np.pi)
q = rng.uniform(lo, hi, size=(batch, model.dof))
qd, qdd = rng.normal(size=(batch, model.dof)), rng.normal(size=(batch, model.dof))
tq, tqd, tqdd = (torch.as_tensor(x) for x in (q, qd, qdd))

def reorder(x):
    out = np.zeros_like(x)
    out[:, perm] = x
    return [np.ascontiguousarray(r) for r in out]

from engine.robots.benchmark import pinocchio_loops  # the same loops as the in-process rows
loops = pinocchio_loops(pm, pd, 0, reorder(q), reorder(qd), reorder(qdd))

import contextlib
from engine.robots.backends import torch_only
scope = torch_only() if sys.argv[5] == "torch" else contextlib.nullcontext()

def scoped(fn):
    def call():
        with scope:
            fn()
    return call

fns = {"rnea": (scoped(lambda: model.inverse_dynamics(tq, tqd, tqdd)), loops["rnea"]),
       "crba": (scoped(lambda: model.mass_matrix(tq)), loops["crba"]),
       "aba": (scoped(lambda: model.forward_dynamics(tq, tqd, tqdd, method="articulated")), loops["aba"])}
out = {"threads": torch.get_num_threads(), "rows": []}
for alg, (ours, ref) in fns.items():
    ours(); ref()
    t0 = time.perf_counter(); ours(); once = max(time.perf_counter() - t0, 1e-6)
    calls = max(1, int(min_time / repeats / once))
    samples = {"ours": [], "pinocchio": []}
    for _ in range(repeats):
        for name, fn in (("ours", ours), ("pinocchio", ref)):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls * 1e3)
    out["rows"].append({"algorithm": alg, "batch": batch,
                        "ours_ms": statistics.median(samples["ours"]), "ours_max_ms": max(samples["ours"]),
                        "pinocchio_ms": statistics.median(samples["pinocchio"]),
                        "pinocchio_max_ms": max(samples["pinocchio"])})
print(json.dumps(out))
"""


def run_plain_api_benchmark(urdf: str | Path, batch: int = 1024, repeats: int = 7, min_time_s: float = 0.5,
                            timeout_s: float = 600.0, path: str = "default") -> dict:
    """``{"threads", "path", "rows": [{algorithm, batch, ours_ms, ours_max_ms, pinocchio_ms, pinocchio_max_ms}]}``
    measured in a fresh process (see the module docstring); ``path``: "default" (the calls as a
    script makes them: without derivatives, the compiled kernels) or "torch" (each call inside
    ``engine.robots.backends.torch_only()``: the differentiable torch algorithms). Raises
    RuntimeError when the child fails."""
    if path not in ("default", "torch"):
        raise ValueError(f"path must be 'default' or 'torch', got {path!r}")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GOMP_SPINCOUNT", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _SCRIPT,
            str(urdf),
            str(int(batch)),
            str(int(repeats)),
            str(float(min_time_s)),
            path,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the plain-API benchmark process failed: {proc.stderr.strip()[-800:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["path"] = path
    return result


def format_plain_rows(result: dict) -> str:
    """Text rows under the bench table: median and slowest repeat, Pinocchio's time / ours."""
    scope = (", through the torch algorithms (torch_only: what autograd differentiates)"
             if result.get("path") == "torch" else "")
    lines = [f"plain API (no CLI settings): a fresh `import torch; import engine.robots` process, "
             f"{result['threads']} torch threads{scope}; median (slowest) ms, pinocchio (slowest), x"]
    for r in result["rows"]:
        lines.append(
            f"{r['algorithm']:<12}{r['batch']:>6}{r['ours_ms']:>10.3f} ({r['ours_max_ms']:.3f})"
            f"{r['pinocchio_ms']:>11.3f} ({r['pinocchio_max_ms']:.3f}){r['pinocchio_ms'] / r['ours_ms']:>7.1f}"
        )
    return "\n".join(lines)
