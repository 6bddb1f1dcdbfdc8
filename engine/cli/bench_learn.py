"""`python -m engine bench learn`: training speed of every model and the reproduction's estimated time."""

from __future__ import annotations

from engine.cli._common import add_device_option, print_json, run_cli_job


def register_bench(subparsers) -> None:
    from engine.data.config import PROTOCOLS
    from engine.models.registry import PAPER_MODELS

    p = subparsers.add_parser(
        "learn",
        help="steps/s (CPU time) of NODE, L-NODE, SyMo, E2E-SyMo at the paper's "
        "sizes; estimated minutes for the whole reproduction",
    )
    p.add_argument("--system", default="pendulum", choices=sorted(PROTOCOLS))
    p.add_argument("--models", default=",".join(PAPER_MODELS))
    p.add_argument(
        "--steps",
        type=int,
        default=24,
        help="timed mini-batches per model and N (whole epochs, at least 3; "
        "the median epoch is scaled to --epochs)",
    )
    p.add_argument("--epochs", type=int, default=2000)
    p.add_argument(
        "--workers", type=int, default=None, help="parallel processes assumed (default: min(2, cores))"
    )
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from engine.training.bench import bench_learn

    models = tuple(m for m in args.models.split(",") if m)
    result = run_cli_job(lambda ctx: bench_learn(args.system, models, epochs=args.epochs, steps=args.steps,
                                                 workers=args.workers, ctx=ctx, device=args.device),
                         quiet=args.json)
    if args.json:
        print_json({k: result[k] for k in ("steps_per_second", "estimated_reproduction_minutes",
                                           "estimated_reproduction_minutes_wall", "workers", "load_average",
                                           "system", "epochs", "models")})
    else:
        for m, v in result["steps_per_second"].items():
            print(
                f"{m:>16}: {v:8.1f} steps/s  (run estimate {result['models'][m]['estimated_run_seconds']:.0f} s)"
            )
        print(
            f"estimated reproduction: {result['estimated_reproduction_minutes']:.1f} min on {result['workers']} "
            f"idle cores (CPU time; {result['estimated_reproduction_minutes_wall']:.1f} min by wall clock at "
            f"load average {result['load_average']:.1f})"
        )
    return 0
