"""CPU times of the backward rows of ``bench rbd`` against Pinocchio's derivatives (issue #33).

``python -m experiments.derivative_cpu_times [--robots iiwa,solo12,talos] [--batch 1024] [--turns 9]
[--algorithms id_backward,fd_backward,id_vjp,fd_vjp] [--out FILE.json] [--label NAME]``

For each robot (a library name; "iiwa" on its fixed base, the others on a free-flyer base), one
batch of random states; ours are :func:`engine.robots.bench_derivatives.derivative_calls`'
``id_backward``, ``fd_backward`` (forward plus backward of a weighted sum, a training step's call
and its gradient) and ``id_vjp``, ``fd_vjp`` (the backward alone, its graph built once), Pinocchio's
its loops of ``computeRNEADerivatives`` / ``computeABADerivatives`` over the samples
(:func:`engine.robots.bench_derivatives.pinocchio_derivative_loops`). ``--algorithms
rnea_derivs,aba_derivs`` times the full derivative matrices instead (``model.rnea_derivatives``,
``model.aba_derivatives``: three ``(B, nv, nv)`` each) against the same loops. Every function of a robot
is timed in turns (each turn times each once, so a change of load touches all alike), as the
**CPU time of the measuring thread** (``time.thread_time``) over enough calls to last
``min_s``, best of ``turns``: on a shared machine wall-clock times mostly measure the other
processes. ``x`` = Pinocchio's time / ours. Runs on whichever ``engine`` is first on the path
(so an older checkout can be timed by the same script, in its own process).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

ROWS = {"id_backward": "rnea_derivs", "fd_backward": "aba_derivs", "id_vjp": "rnea_derivs", "fd_vjp": "aba_derivs",
        "rnea_derivs": "rnea_derivs", "aba_derivs": "aba_derivs"}
DEFAULT_ALGORITHMS = ("id_backward", "fd_backward", "id_vjp", "fd_vjp")


def _states(model, pm, batch: int, rng):
    """``(ours (q, v, a), Pinocchio's (q, v, a))`` numpy ``(B, .)`` of one random batch."""
    lim = model.joint_limits
    joints = rng.uniform(np.maximum(lim.lower.cpu().numpy(), -np.pi), np.minimum(lim.upper.cpu().numpy(), np.pi),
                         (batch, model.dof))
    f = 6 if model.floating else 0
    if model.floating:
        quat = rng.normal(size=(batch, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        q = np.concatenate([rng.normal(size=(batch, 3)), quat, joints], 1)
    else:
        q = joints
    v, a = rng.normal(size=(2, batch, model.nv))
    qp, vp, ap = np.zeros((batch, pm.nq)), np.zeros((batch, pm.nv)), np.zeros((batch, pm.nv))
    if model.floating:
        qp[:, :7], vp[:, :6], ap[:, :6] = q[:, :7], v[:, :6], a[:, :6]
    for k, name in enumerate(model.joint_names):
        jm = pm.joints[pm.getJointId(name)]
        if jm.nq == 2:      # a continuous joint: (cos, sin)
            qp[:, jm.idx_q], qp[:, jm.idx_q + 1] = np.cos(joints[:, k]), np.sin(joints[:, k])
        else:
            qp[:, jm.idx_q] = joints[:, k]
        vp[:, jm.idx_v], ap[:, jm.idx_v] = v[:, f + k], a[:, f + k]
    return (q, v, a), tuple([np.ascontiguousarray(r) for r in x] for x in (qp, vp, ap))


def cpu_times(fns: dict, turns: int = 9, min_s: float = 0.03) -> dict:
    """Best CPU time of one call (ms) of each function, timed in turns (see the module docstring)."""
    calls = {}
    for name, fn in fns.items():
        fn()
        t0 = time.thread_time()
        fn()
        calls[name] = max(1, int(np.ceil(min_s / max(time.thread_time() - t0, 1e-6))))
    best = {name: float("inf") for name in fns}
    for _ in range(turns):
        for name, fn in fns.items():
            t0 = time.thread_time()
            for _ in range(calls[name]):
                fn()
            best[name] = min(best[name], (time.thread_time() - t0) / calls[name] * 1e3)
    return best


def robot_rows(name: str, batch: int, turns: int, seed: int = 0, algorithms=DEFAULT_ALGORITHMS) -> list[dict]:
    """Rows ``{robot, nv, algorithm, ours_ms, pinocchio_ms, x}`` of one library robot."""
    import pinocchio as pin

    from engine.robots import bench_derivatives as bd
    from engine.robots.library import load_robot, resolve_robot

    floating = name != "iiwa"
    logging.disable(logging.WARNING)
    try:
        model = load_robot(name, floating_base=floating)
    finally:
        logging.disable(logging.NOTSET)
    path = str(resolve_robot(name))
    mimic = bool(model.mimic_joint_names)
    pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=mimic) if floating
          else pin.buildModelFromUrdf(path))
    ours_state, pin_state = _states(model, pm, batch, np.random.default_rng(seed))
    ours = bd.derivative_calls(model, *ours_state)
    theirs = bd.pinocchio_derivative_loops(pm, pm.createData(), *pin_state)
    fns = {"pin_rnea_derivs": theirs["rnea_derivs"], "pin_aba_derivs": theirs["aba_derivs"]}
    fns |= {alg: ours[alg] for alg in algorithms}
    times = cpu_times(fns, turns)
    rows = []
    for alg in algorithms:
        p = times["pin_" + ROWS[alg]]
        rows.append({"robot": name, "nv": model.nv, "algorithm": alg, "ours_ms": round(times[alg], 3),
                     "pinocchio_ms": round(p, 3), "x": round(p / times[alg], 2)})
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", default="iiwa,solo12,talos")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--turns", type=int, default=9)
    ap.add_argument("--algorithms", default=",".join(DEFAULT_ALGORITHMS))
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    import engine

    algorithms = tuple(args.algorithms.split(","))
    unknown = set(algorithms) - set(ROWS)
    if unknown:
        ap.error(f"unknown algorithms {sorted(unknown)}; known: {', '.join(ROWS)}")
    rows = []
    for name in args.robots.split(","):
        rows += robot_rows(name, args.batch, args.turns, algorithms=algorithms)
        for r in rows[-len(algorithms):]:
            print(f"{r['robot']:8s} {r['algorithm']:12s} ours {r['ours_ms']:8.3f} ms  pinocchio "
                  f"{r['pinocchio_ms']:8.3f} ms  x {r['x']:.2f}", flush=True)
    result = {"label": args.label, "engine": str(Path(engine.__file__).parent), "batch": args.batch,
              "turns": args.turns, "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
              "load_average": os.getloadavg(), "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
