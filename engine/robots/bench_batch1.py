"""The one-sample rows of ``python -m engine bench rbd``: per-call time against Pinocchio's.

One sample at a time is what MPC, IK and the app's readouts do, and there the Python around a
kernel, not the kernel, sets the time. For each algorithm, in this process, interleaved:

- ``thin``: :class:`engine.robots.compiled_calls.CompiledCalls` on 1-D numpy arrays (a new
  result array per call);
- ``plain``: the model's method on 1-D float64 tensors, as a script calls it (it reaches the
  same kernels through :mod:`engine.robots.compiled_shortcut`);
- ``routed``: the same call with the shortcut off (``compiled_shortcut.ENABLED = False``):
  the backend choice, coordinate mapping and tensor wrapping of every call, as before it;
- ``pinocchio``: one call of Pinocchio's Python binding on its own vectors.

Times are the calling thread's CPU time per call (``time.thread_time``), the best of the
repeats, interleaved: a one-sample call runs on the calling thread alone (no intra-op
parallelism at this size, single-threaded kernels), so that is its cost on an idle machine,
without the waits of a shared one (wall-clock medians there can be two to three times higher).

Algorithms: ``rnea``, ``crba``, ``aba``, ``fk_jacobian`` (every link's pose and the end link's
Jacobian; Pinocchio: ``framesForwardKinematics`` + ``computeFrameJacobian``), ``rnea_derivs``
and ``aba_derivs`` (``computeRNEADerivatives`` / ``computeABADerivatives``; the plain calls are
``model.rnea_derivatives`` / ``aba_derivatives``).
"""

from __future__ import annotations

import time

import numpy as np
import torch

__all__ = ["BATCH1_ALGORITHMS", "batch1_calls", "cpu_time_per_call", "format_batch1_rows",
           "pinocchio_batch1_calls"]

BATCH1_ALGORITHMS = ("rnea", "crba", "aba", "fk_jacobian", "rnea_derivs", "aba_derivs")


def batch1_calls(model, end_link: str, q, v, a) -> dict:
    """``{"thin", "plain", "routed"}``, each ``{algorithm: fn}``, on one sample (numpy ``(nq,)``,
    ``(nv,)``, ``(nv,)``); ``thin`` is empty where CompiledCalls does not apply (another dtype
    or device, no numba)."""
    from engine.robots import compiled_shortcut
    from engine.robots.compiled_calls import CompiledCalls, unavailable_reason

    tq, tv, ta = (torch.as_tensor(np.ascontiguousarray(x), device=model.device) for x in (q, v, a))
    m = model
    plain = {"rnea": lambda: m.inverse_dynamics(tq, tv, ta), "crba": lambda: m.mass_matrix(tq),
             "aba": lambda: m.forward_dynamics(tq, tv, ta),
             "fk_jacobian": lambda: (m.forward_kinematics(tq), m.jacobian(tq, end_link)),
             "rnea_derivs": lambda: m.rnea_derivatives(tq, tv, ta), "aba_derivs": lambda: m.aba_derivatives(tq, tv, ta)}

    def routed(fn):
        def call():       # the switch itself costs a few tens of nanoseconds
            before, compiled_shortcut.ENABLED = compiled_shortcut.ENABLED, False
            try:
                fn()
            finally:
                compiled_shortcut.ENABLED = before
        return call

    out = {"plain": plain, "routed": {k: routed(f) for k, f in plain.items()}, "thin": {}}
    if unavailable_reason(model) is None:
        c = CompiledCalls(model)
        q, v, a = (np.ascontiguousarray(x, dtype=np.float64) for x in (q, v, a))
        out["thin"] = {"rnea": lambda: c.rnea(q, v, a), "crba": lambda: c.crba(q), "aba": lambda: c.aba(q, v, a),
                       "fk_jacobian": lambda: (c.fk(q), c.jacobian(q, end_link)),
                       "rnea_derivs": lambda: c.rnea_derivatives(q, v, a),
                       "aba_derivs": lambda: c.aba_derivatives(q, v, a)}
    return out


def cpu_time_per_call(fns: dict, repeats: int = 5, min_time_s: float = 0.2) -> dict:
    """``{name: us}``: the calling thread's CPU time per call of each function, the best of
    ``repeats`` interleaved measurements of about ``min_time_s / repeats`` each (at least 100 calls);
    a function that raises gives None."""
    calls: dict[str, int] = {}
    out: dict[str, float | None] = {}
    for name, fn in fns.items():
        try:
            fn()
            t0 = time.perf_counter()
            fn()
            calls[name] = max(100, int(min_time_s / repeats / max(time.perf_counter() - t0, 1e-7)))
        except Exception:  # a library that cannot run this case is reported as null
            out[name] = None
    best = {name: float("inf") for name in calls}
    for _ in range(repeats):
        for name, n in calls.items():
            fn = fns[name]
            t0 = time.thread_time()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.thread_time() - t0) / n * 1e6)
    out.update(best)
    return out


def pinocchio_batch1_calls(pm, pd, fid, q, v, a) -> dict:
    """Pinocchio's calls on one sample (its own vectors): ``{algorithm: fn}``."""
    import pinocchio as pin

    rf = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def fkj():
        pin.framesForwardKinematics(pm, pd, q)
        pin.computeFrameJacobian(pm, pd, q, fid, rf)

    return {"rnea": lambda: pin.rnea(pm, pd, q, v, a), "crba": lambda: pin.crba(pm, pd, q),
            "aba": lambda: pin.aba(pm, pd, q, v, a), "fk_jacobian": fkj,
            "rnea_derivs": lambda: pin.computeRNEADerivatives(pm, pd, q, v, a),
            "aba_derivs": lambda: pin.computeABADerivatives(pm, pd, q, v, a)}


def format_batch1_rows(rows: list[dict]) -> str:
    """Text rows: us per call, and Pinocchio's time / ours (> 1: we are faster)."""
    lines = ["one sample per call (CPU us of the calling thread, best of the repeats; thin: CompiledCalls on "
             "numpy, plain: the model's method on tensors, routed: plain without the shortcut; "
             "x = pinocchio / ours)",
             f"{'algorithm':<12}{'thin':>8}{'plain':>8}{'routed':>8}{'pinocchio':>11}{'x thin':>8}{'x plain':>9}"]

    def cell(v, width):
        return f"{'-':>{width}}" if v is None else f"{v:>{width}.1f}"

    def ratio(ref, ours, width):
        return f"{'-':>{width}}" if ref is None or not ours else f"{ref / ours:>{width}.2f}"

    for r in rows:
        p = r.get("pinocchio_us")
        lines.append(f"{r['algorithm']:<12}{cell(r.get('thin_us'), 8)}{cell(r.get('plain_us'), 8)}"
                     f"{cell(r.get('routed_us'), 8)}{cell(p, 11)}{ratio(p, r.get('thin_us'), 8)}"
                     f"{ratio(p, r.get('plain_us'), 9)}")
    return "\n".join(lines)
