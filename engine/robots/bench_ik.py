"""Inverse kinematics speed (``python -m engine bench ik``), through the public API only.

Targets: poses of the end link at random joint positions within the limits (reachable by
construction), seeded. Measured, in this process with ``threads`` torch threads:

- single: one 6-D target at a time from the neutral pose (median and 90th percentile, ms);
  the issue's goal for the Panda is a median under 10 ms to 1 mm / 0.01 rad;
- batch: ``batch`` targets as one batch (ms; goal for 256 on the Panda: under 200 ms);
- CPU time (process time) beside wall time, for machines shared with other work;
- tracking: the GUI's case, a target moving by small steps, each solve warm-started from
  the previous solution (solves per second; goal 30+).
"""

from __future__ import annotations

import statistics
import time

import torch

from engine.devices import resolve_device
from engine.robots.end_effector import default_end_effector
from engine.robots.ik import IKOptions, neutral_configuration, solve_ik
from engine.robots.library import load_robot
from engine.validation import check_int

__all__ = ["run_ik_benchmark"]


def run_ik_benchmark(robot: str = "panda", link: str | None = None, n_single: int = 50, batch: int = 256,
                     tracking_steps: int = 100, threads: int = 1, seed: int = 0, device: str = "cpu") -> dict:
    """Time :func:`engine.robots.ik.solve_ik` (see the module docstring); returns a JSON-ready dict."""
    # checked before any work (these arguments are the benchmark's only settings)
    check_int(None, "--n", n_single, 1, 100_000, hint="single targets to time, for example 50")
    check_int(None, "--batch", batch, 1, 1_000_000, hint="targets in one batch, for example 256")
    check_int(None, "--tracking", tracking_steps, 1, 1_000_000, hint="tracking steps, for example 100")
    check_int(None, "--threads", threads, 1, 1024, hint="torch CPU threads, for example 1")
    check_int(None, "--seed", seed, 0, 2**62)
    torch.set_num_threads(threads)
    model = load_robot(robot, device=resolve_device(device))  # float64 on every device
    link = link or default_end_effector(model)
    gen = torch.Generator().manual_seed(seed)
    lim = model.joint_limits
    lo, hi = lim.lower.clamp(-3.14159, 3.14159), lim.upper.clamp(-3.14159, 3.14159)
    n = max(n_single, batch)
    q_true = lo + torch.rand(n, model.dof, generator=gen, dtype=model.dtype).to(model.device) * (hi - lo)
    with torch.no_grad():
        poses = model.frame_jacobians(q_true, [link])[0][:, 0]
    # a chain with fewer than 6 joints cannot follow arbitrary poses: use positions there
    position_only = len(model.joints_moving([link])) < 6
    opts = IKOptions(position_only=position_only)
    solve_ik(model, {link: poses[:2]}, options=opts)  # warm-up

    times, cpu, conv = [], [], 0
    for i in range(n_single):
        t0, c0 = time.perf_counter(), time.process_time()
        r = solve_ik(model, {link: poses[i]}, options=opts)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        conv += int(r.converged)
    times.sort()

    t0, c0 = time.perf_counter(), time.process_time()
    rb = solve_ik(model, {link: poses[:batch]}, options=opts)
    batch_ms = (time.perf_counter() - t0) * 1e3
    batch_cpu_ms = (time.process_time() - c0) * 1e3

    # tracking: a target moving along a small circle, warm-started
    q = neutral_configuration(model, model.dtype, model.device)
    with torch.no_grad():
        sv = torch.linalg.svdvals(model.jacobian(q, link)[:3, :])
    if sv.numel() < 2 or float(sv[1]) < 0.1 * float(sv[0]):
        q = q_true[0].clone()  # neutral is singular (a stretched arm): start from a random pose
    with torch.no_grad():
        start = model.link_pose(q, link)
        # the circle lies in the plane the link can move in most easily (top two directions of J)
        U = torch.linalg.svd(model.jacobian(q, link)[:3, :])[0]
        u1, u2 = U[:, 0], U[:, 1]
    radius = float(start[:3, 3].norm()) * 0.1  # a circle a tenth of the link's distance from the base
    track_conv = 0
    t0 = time.perf_counter()
    for k in range(tracking_steps):
        target = start.clone()
        angle = torch.tensor(2 * 3.14159265 * k / tracking_steps, dtype=model.dtype, device=model.device)
        target[:3, 3] += radius * ((torch.cos(angle) - 1) * u1 + torch.sin(angle) * u2)
        r = solve_ik(model, {link: target}, q0=q, options=opts)
        q = r.q
        track_conv += int(r.converged)
    track_s = time.perf_counter() - t0

    return {
        "robot": model.name,
        "link": link,
        "dof": model.dof,
        "threads": threads,
        "tol_pos": opts.tol_pos,
        "tol_rot": opts.tol_rot,
        "position_only": position_only,
        "single": {
            "n": n_single,
            "median_ms": statistics.median(times) * 1e3,
            "p90_ms": times[int(0.9 * (n_single - 1))] * 1e3,
            "max_ms": times[-1] * 1e3,
            "median_cpu_ms": statistics.median(cpu) * 1e3,
            "converged": conv,
        },
        "batch": {
            "size": batch,
            "ms": batch_ms,
            "cpu_ms": batch_cpu_ms,
            "converged": int(rb.converged.sum()),
            "iterations_max": int(rb.iterations.max()),
        },
        "tracking": {
            "steps": tracking_steps,
            "solves_per_s": tracking_steps / track_s,
            "converged": track_conv,
        },
    }
