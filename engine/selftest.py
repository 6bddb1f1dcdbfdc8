"""A small, real engine job for self-tests: integrate a pendulum and check energy drift."""

from __future__ import annotations

import math
import time

from engine.jobs import JobContext


def selftest_job(ctx: JobContext, steps: int = 2000) -> dict:
    """Integrate an undamped pendulum (m = l = 1, g = 9.81) with RK4 and a batch of 64
    initial angles in torch; energy must be conserved to 1e-6 relative. Returns a dict."""
    import torch

    from engine.integrators import rk4_step_t

    t0 = time.perf_counter()
    g, h = 9.81, 1e-3
    q = torch.linspace(-3.0, 3.0, 64, dtype=torch.float64)
    p = torch.zeros_like(q)

    def energy(q, p):
        return 0.5 * p**2 - g * torch.cos(q)

    def f(_t, x):
        q_, p_ = x.unbind(-1)
        return torch.stack([p_, -g * torch.sin(q_)], -1)

    e0 = energy(q, p)
    x = torch.stack([q, p], -1)
    for i in range(steps):
        x = rk4_step_t(f, i * h, x, h)
        if i % 100 == 0:
            ctx.check_cancelled()
            ctx.progress(i / steps, "integrating pendulum")
    q, p = x.unbind(-1)
    drift = float(((energy(q, p) - e0).abs() / (e0.abs() + 1.0)).max())
    ctx.progress(1.0, "done")
    return {"ok": bool(drift < 1e-6 and math.isfinite(drift)), "energy_drift": drift,
            "torch": torch.__version__, "seconds": time.perf_counter() - t0}
