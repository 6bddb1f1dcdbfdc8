"""A small, real engine job for self-tests: integrate a pendulum and check energy drift; the
compiled rigid-body kernels (numba) against the torch algorithms on the shipped Panda."""

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
    ctx.progress(0.9, "the compiled rigid-body kernels")
    kernels = compiled_kernels_check()
    ctx.progress(1.0, "done")
    ok = drift < 1e-6 and math.isfinite(drift) and kernels.get("agree", True)
    return {"ok": bool(ok), "energy_drift": drift, "torch": torch.__version__, **kernels,
            "seconds": time.perf_counter() - t0}


def compiled_kernels_check() -> dict:
    """``{"compiled_kernels": bool}``: whether the compiled kernels load (numba present and
    working; else the torch algorithms serve every call), and where they do, ``"agree"``: whether
    the gradient of a compiled inverse-dynamics call on the shipped Panda (values and the compiled
    backward, float64, batch 4) matches the torch algorithms' to 1e-9."""
    import torch

    from engine.paths import urdf_dir
    from engine.robots import RobotModel, compiled_dynamics
    from engine.robots.backends import torch_only

    if not compiled_dynamics.available():
        return {"compiled_kernels": False}
    model = RobotModel.from_urdf(urdf_dir() / "panda.urdf")
    gen = torch.Generator().manual_seed(0)
    q, v, a = (torch.randn(4, model.nv, dtype=torch.float64, generator=gen) for _ in range(3))
    outs = []
    for route in ("compiled", "torch"):
        x = q.clone().requires_grad_(True)
        if route == "torch":
            with torch_only():
                tau = model.inverse_dynamics(x, v, a)
        else:
            tau = model.inverse_dynamics(x, v, a)
        (grad,) = torch.autograd.grad(tau.square().sum(), x)
        outs.append(torch.cat([tau.detach().reshape(-1), grad.reshape(-1)]))
    err = float((outs[0] - outs[1]).abs().max() / outs[1].abs().max().clamp_min(1.0))
    return {"compiled_kernels": True, "agree": bool(err < 1e-9), "kernel_error": err}
