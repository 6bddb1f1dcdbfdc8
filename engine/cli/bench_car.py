"""`python -m engine bench car`: MPC control rate and Drifting Turn planning time (learned 8x64 GELU model)."""

from __future__ import annotations

from engine.cli._common import add_device_option, print_json


def register_bench(subparsers) -> None:
    p = subparsers.add_parser(
        "car", help="car planner: MPC cycle time (horizon 20, 512 candidates) and Drifting Turn time"
    )
    p.add_argument("--model", default="default",
                   help="'default' (the shipped learned model), a trained car model folder, or 'train' "
                        "(train a small one first)")
    p.add_argument("--cycles", type=int, default=60, help="MPC cycles to time")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_bench)


def _bench(args) -> int:
    import torch

    from engine.car.benchmark import BenchConfig, run_benchmark
    from engine.validation import check_int

    check_int(None, "--threads", args.threads, 1, 1024, hint="torch CPU threads")
    cfg = BenchConfig(cycles=args.cycles, device=args.device)   # checked before any work
    torch.set_num_threads(args.threads)
    from engine.car.model import DEFAULT_MODEL, default_model_dir

    model_dir = {DEFAULT_MODEL: default_model_dir(), "train": None}.get(args.model, args.model)
    res = run_benchmark(cfg, model_dir=model_dir)
    if args.json:
        print_json(res)
    else:
        print(
            f"MPC: {res['cycle_ms']:.1f} ms per cycle ({res['control_rate_hz']:.1f} Hz), "
            f"{res['iterations_per_cycle']} iterations x {res['candidates']} candidates, horizon {res['horizon']}; "
            f"eager autograd iteration {res['eager_iteration_ms']:.1f} ms; "
            f"Drifting Turn {res['drifting_turn_seconds']:.2f} s "
            f"({'converged' if res['drifting_turn_converged'] else 'not converged'})"
        )
    return 0
