"""`python -m engine bench ik --robot panda [--json]`: inverse kinematics speed.

Parsing and printing only; the benchmark (what is measured, the goals) is
:mod:`engine.robots.bench_ik`.
"""

from __future__ import annotations

from engine.cli._common import add_device_option, print_json


def _cmd(args) -> int:
    from engine.robots.bench_ik import run_ik_benchmark

    res = run_ik_benchmark(args.robot, args.link, args.n, args.batch, args.tracking, args.threads, args.seed,
                           args.device)
    if args.json:
        print_json(res)
        return 0
    s, b, t = res["single"], res["batch"], res["tracking"]
    print(f"IK on {res['robot']} ({res['dof']} dof), link {res['link']}, {res['threads']} threads, "
          f"tolerances {res['tol_pos'] * 1e3:g} mm / {res['tol_rot']:g} rad")
    kind = "position" if res["position_only"] else "6-D"
    print(
        f"  single {kind} target from neutral: median {s['median_ms']:.2f} ms, p90 {s['p90_ms']:.2f} ms, "
        f"max {s['max_ms']:.1f} ms (median CPU time {s['median_cpu_ms']:.2f} ms), "
        f"converged {s['converged']}/{s['n']}   (goal: median < 10 ms)"
    )
    print(
        f"  {b['size']} targets as one batch: {b['ms']:.1f} ms (CPU time {b['cpu_ms']:.1f} ms), "
        f"converged {b['converged']}/{b['size']}"
        f"   (goal: < 200 ms for 256)"
    )
    print(
        f"  tracking (warm start): {t['solves_per_s']:.0f} solves/s, converged {t['converged']}/{t['steps']}"
        f"   (goal: 30+)"
    )
    return 0


def register_bench(subparsers) -> None:
    p = subparsers.add_parser("ik", help="inverse kinematics: one target, a batch, interactive tracking")
    p.add_argument("--robot", default="panda", help="library name or URDF path (default: panda)")
    p.add_argument("--link", default=None, help="end link (default: the deepest link)")
    p.add_argument("--n", type=int, default=50, help="single targets to time (default: 50)")
    p.add_argument("--batch", type=int, default=256, help="batch size (default: 256)")
    p.add_argument("--tracking", type=int, default=100, help="tracking steps (default: 100)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default: 1; IK is latency-bound: more threads only add synchronisation)",
    )
    p.add_argument("--seed", type=int, default=0)
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd)
