"""`python -m engine bench ik --robot panda [--json]`: inverse kinematics speed.

Targets: poses of the end link at random joint positions within the limits (reachable by
construction), seeded. Measured, in this process with ``--threads`` torch threads:

- single: one 6-D target at a time from the neutral pose (median and 90th percentile, ms);
  the issue's goal for the Panda is a median under 10 ms to 1 mm / 0.01 rad;
- batch: ``--batch`` targets as one batch (ms; goal for 256 on the Panda: under 200 ms);
- CPU time (process time) beside wall time, for machines shared with other work;
- tracking: the GUI's case, a target moving by small steps, each solve warm-started from
  the previous solution (solves per second; goal 30+).
"""

from __future__ import annotations

import statistics
import time

from engine.cli._common import add_device_option, print_json
from engine.robots.end_effector import default_end_effector


def run_bench(robot: str = "panda", link: str | None = None, n_single: int = 50, batch: int = 256,
              tracking_steps: int = 100, threads: int = 1, seed: int = 0, device: str = "cpu") -> dict:
    import torch

    from engine.robots.ik import IKOptions, _kinematics, neutral_configuration, solve_ik
    from engine.devices import resolve_device
    from engine.robots.library import load_robot
    from engine.validation import check_int

    # checked before any work (this function is the benchmark's only settings)
    check_int(None, "--n", n_single, 1, 100_000, hint="single targets to time, for example 50")
    check_int(None, "--batch", batch, 1, 1_000_000, hint="targets in one batch, for example 256")
    check_int(None, "--tracking", tracking_steps, 1, 1_000_000, hint="tracking steps, for example 100")
    check_int(None, "--threads", threads, 1, 1024, hint="torch CPU threads, for example 1")
    check_int(None, "--seed", seed, 0, 2**62)
    torch.set_num_threads(threads)
    model = load_robot(robot, device=resolve_device(device))  # float64 on every device
    link = link or default_end_effector(model)
    kin = _kinematics(model, (link,), model.dtype, model.device)
    gen = torch.Generator().manual_seed(seed)
    lim = model.joint_limits
    lo, hi = lim.lower.clamp(-3.14159, 3.14159), lim.upper.clamp(-3.14159, 3.14159)
    n = max(n_single, batch)
    q_true = lo + torch.rand(n, model.dof, generator=gen, dtype=model.dtype).to(model.device) * (hi - lo)
    with torch.no_grad():
        poses = kin(q_true)[0][:, 0]
    # a chain with fewer than 6 joints cannot follow arbitrary poses: use positions there
    position_only = kin.n < 6
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
        sv = torch.linalg.svdvals(kin(q)[1][0, :3, :])
    if sv.numel() < 2 or float(sv[1]) < 0.1 * float(sv[0]):
        q = q_true[0].clone()  # neutral is singular (a stretched arm): start from a random pose
    with torch.no_grad():
        start_poses, start_J = kin(q)
        start = start_poses[0]
        # the circle lies in the plane the link can move in most easily (top two directions of J)
        U = torch.linalg.svd(start_J[0, :3, :])[0]
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
        "robot": model.name, "link": link, "dof": model.dof, "threads": threads,
        "tol_pos": opts.tol_pos, "tol_rot": opts.tol_rot, "position_only": position_only,
        "single": {"n": n_single, "median_ms": statistics.median(times) * 1e3,
                   "p90_ms": times[int(0.9 * (n_single - 1))] * 1e3, "max_ms": times[-1] * 1e3,
                   "median_cpu_ms": statistics.median(cpu) * 1e3, "converged": conv},
        "batch": {"size": batch, "ms": batch_ms, "cpu_ms": batch_cpu_ms, "converged": int(rb.converged.sum()),
                  "iterations_max": int(rb.iterations.max())},
        "tracking": {"steps": tracking_steps, "solves_per_s": tracking_steps / track_s, "converged": track_conv},
    }


def _cmd(args) -> int:
    res = run_bench(args.robot, args.link, args.n, args.batch, args.tracking, args.threads, args.seed, args.device)
    if args.json:
        print_json(res)
        return 0
    s, b, t = res["single"], res["batch"], res["tracking"]
    print(f"IK on {res['robot']} ({res['dof']} dof), link {res['link']}, {res['threads']} threads, "
          f"tolerances {res['tol_pos'] * 1e3:g} mm / {res['tol_rot']:g} rad")
    kind = "position" if res["position_only"] else "6-D"
    print(f"  single {kind} target from neutral: median {s['median_ms']:.2f} ms, p90 {s['p90_ms']:.2f} ms, "
          f"max {s['max_ms']:.1f} ms (median CPU time {s['median_cpu_ms']:.2f} ms), converged {s['converged']}/{s['n']}   (goal: median < 10 ms)")
    print(f"  {b['size']} targets as one batch: {b['ms']:.1f} ms (CPU time {b['cpu_ms']:.1f} ms), converged {b['converged']}/{b['size']}"
          f"   (goal: < 200 ms for 256)")
    print(f"  tracking (warm start): {t['solves_per_s']:.0f} solves/s, converged {t['converged']}/{t['steps']}"
          f"   (goal: 30+)")
    return 0


def register_bench(subparsers) -> None:
    p = subparsers.add_parser("ik", help="inverse kinematics: one target, a batch, interactive tracking")
    p.add_argument("--robot", default="panda", help="library name or URDF path (default: panda)")
    p.add_argument("--link", default=None, help="end link (default: the deepest link)")
    p.add_argument("--n", type=int, default=50, help="single targets to time (default: 50)")
    p.add_argument("--batch", type=int, default=256, help="batch size (default: 256)")
    p.add_argument("--tracking", type=int, default=100, help="tracking steps (default: 100)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (default: 1; IK is latency-bound: more threads only add synchronisation)")
    p.add_argument("--seed", type=int, default=0)
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd)
