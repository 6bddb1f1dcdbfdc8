"""CPU times of the derivative matrices of ball-joint models (issue #33): compiled, autograd, Pinocchio.

``python -m experiments.ball_derivative_cpu_times [--files ball_chain,ball_floating,ball_tree]
[--batch 1024] [--turns 5] [--what derivs,backward] [--out FILE.json]``

For each MJCF file of tests/engine/robots/mjcf (ball joints; Pinocchio reads ``<joint type="ball">``
as JointModelSpherical, the same q and v), one batch of random states (unit quaternions);
``model.rnea_derivatives(q, v, a)`` and ``model.aba_derivatives(q, v, tau)`` (three ``(B, nv, nv)``
each) by the default route (the compiled kernels, :mod:`engine.robots.derivative_kernels`) and
through the torch algorithms differentiated by autograd (``torch_only``: what ball models took
before), against Pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives`` in a loop over
the samples. ``backward``: a forward and backward pass, ``(w * inverse_dynamics(q, v, a)).sum()
.backward()`` with q, v, a requiring a gradient (likewise ``forward_dynamics``), by the compiled
backward (:mod:`engine.robots.vjp_kernels`) and by autograd through the torch algorithms, against
the same Pinocchio derivatives. CPU time of the measuring thread, best of ``turns``, everything interleaved in this
process (:func:`experiments.derivative_cpu_times.cpu_times`); ``x`` = Pinocchio's time / ours.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np
import torch

from experiments.derivative_cpu_times import cpu_times

MJCF = Path(__file__).resolve().parents[1] / "tests" / "engine" / "robots" / "mjcf"


def _states(model, batch: int, rng):
    q = rng.normal(size=(batch, model.nq))
    if model.floating:
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    for name in model.ball_joint_names:
        s = model.joint_coordinates(name)[0]
        q[:, s] /= np.linalg.norm(q[:, s], axis=1, keepdims=True)
    v, a = rng.normal(size=(2, batch, model.nv))
    return q, v, a


def file_rows(name: str, batch: int, turns: int, seed: int = 0, what=("derivs", "backward")) -> list[dict]:
    """Rows ``{file, nv, algorithm, compiled_ms, autograd_ms, pinocchio_ms}`` of one MJCF file."""
    import pinocchio as pin

    from engine.robots import RobotModel
    from engine.robots.backends import torch_only

    path = MJCF / f"{name}.xml"
    logging.disable(logging.WARNING)
    try:
        model = RobotModel.from_file(path)
    finally:
        logging.disable(logging.NOTSET)
    pm = pin.buildModelFromMJCF(str(path))
    pd = pm.createData()
    q, v, a = _states(model, batch, np.random.default_rng(seed))
    tq, tv, ta = (torch.from_numpy(x) for x in (q, v, a))
    qs, vs, as_ = ([np.ascontiguousarray(r) for r in x] for x in (q, v, a))

    def autograd(fn):
        def call():
            with torch_only():
                fn(tq, tv, ta)
        return call

    def pin_loop(fn):
        def call():
            for x, y, z in zip(qs, vs, as_):
                fn(pm, pd, x, y, z)
        return call

    w = torch.from_numpy(np.random.default_rng(seed + 1).normal(size=v.shape))

    def backward(fn, torch_route):
        def call():
            xs = [x.clone().requires_grad_(True) for x in (tq, tv, ta)]
            if torch_route:
                with torch_only():
                    out = fn(*xs)
            else:
                out = fn(*xs)
            (out * w).sum().backward()
        return call

    fns = {"rnea_pinocchio": pin_loop(pin.computeRNEADerivatives),
           "aba_pinocchio": pin_loop(pin.computeABADerivatives)}
    if "derivs" in what:
        fns |= {"rnea_derivs_compiled": lambda: model.rnea_derivatives(tq, tv, ta),
                "aba_derivs_compiled": lambda: model.aba_derivatives(tq, tv, ta),
                "rnea_derivs_autograd": autograd(model.rnea_derivatives),
                "aba_derivs_autograd": autograd(model.aba_derivatives)}
    if "backward" in what:
        for alg, fn in (("rnea", model.inverse_dynamics), ("aba", model.forward_dynamics)):
            fns |= {f"{alg}_backward_compiled": backward(fn, False), f"{alg}_backward_autograd": backward(fn, True)}
    times = cpu_times(fns, turns)
    return [{"file": name, "nv": model.nv, "batch": batch, "algorithm": f"{alg}_{kind}",
             "compiled_ms": round(times[f"{alg}_{kind}_compiled"], 4),
             "autograd_ms": round(times[f"{alg}_{kind}_autograd"], 3),
             "pinocchio_ms": round(times[alg + "_pinocchio"], 4)}
            for kind in what for alg in ("rnea", "aba")]


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", default="ball_chain,ball_floating,ball_tree")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--what", default="derivs,backward",
                    help="derivs (the derivative matrices), backward (a forward and backward pass)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for name in args.files.split(","):
        for r in file_rows(name, args.batch, args.turns, what=tuple(args.what.split(","))):
            rows.append(r)
            print(f"{r['file']:14s} nv {r['nv']:2d} B {r['batch']:5d} {r['algorithm']:13s} compiled "
                  f"{r['compiled_ms']:9.4f} ms  autograd {r['autograd_ms']:10.3f} ms  pinocchio "
                  f"{r['pinocchio_ms']:9.4f} ms  pin/compiled {r['pinocchio_ms'] / r['compiled_ms']:.2f}  "
                  f"autograd/compiled {r['autograd_ms'] / r['compiled_ms']:.0f}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
