"""A small, real engine job for self-tests: integrate a pendulum and check energy drift."""

from __future__ import annotations

import math
import time

from engine.jobs import JobContext


def selftest_job(ctx: JobContext, steps: int = 2000) -> dict:
    """Integrate an undamped pendulum (m = l = 1, g = 9.81) with RK4 and a batch of 64
    initial angles in torch; energy must be conserved to 1e-6 relative. Returns a dict."""
    import torch

    t0 = time.perf_counter()
    g, h = 9.81, 1e-3
    q = torch.linspace(-3.0, 3.0, 64, dtype=torch.float64)
    p = torch.zeros_like(q)

    def energy(q, p):
        return 0.5 * p**2 - g * torch.cos(q)

    def f(q, p):
        return p, -g * torch.sin(q)

    e0 = energy(q, p)
    for i in range(steps):
        k1 = f(q, p)
        k2 = f(q + 0.5 * h * k1[0], p + 0.5 * h * k1[1])
        k3 = f(q + 0.5 * h * k2[0], p + 0.5 * h * k2[1])
        k4 = f(q + h * k3[0], p + h * k3[1])
        q = q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        p = p + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        if i % 100 == 0:
            ctx.check_cancelled()
            ctx.progress(i / steps, "integrating pendulum")
    drift = float(((energy(q, p) - e0).abs() / (e0.abs() + 1.0)).max())
    ctx.progress(1.0, "done")
    return {"ok": bool(drift < 1e-6 and math.isfinite(drift)), "energy_drift": drift,
            "torch": torch.__version__, "seconds": time.perf_counter() - t0}
