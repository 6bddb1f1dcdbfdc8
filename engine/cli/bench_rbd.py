"""`python -m engine bench rbd --robot panda --batch 1,64,1024,4096 [--json]`.

Times FK + Jacobian, RNEA, CRBA and ABA of the rigid-body engine against Pinocchio (a
Python loop over the samples), pytorch_kinematics and differentiable-robot-model, in this
process, and prints the ratios; one sample per call against Pinocchio's per-call time (thin
numpy entry, plain API; ``--no-batch1`` skips them); the analytic derivatives and backward passes against
Pinocchio's derivatives (``--derivative-batch 1,1024``, the default); then the same against
Pinocchio for floating-base robots (``--floating solo12,talos``, the default). The work lives
in engine.robots.benchmark.
"""

from __future__ import annotations

import argparse
import sys

from engine.cli._common import add_device_option, print_json


def _batches(text: str) -> tuple[int, ...]:
    """Parse ``1,64,1024``; the sizes are checked by RbdBenchConfig."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--batch must be comma-separated positive integers, got {text!r}") from None


def _run(args) -> int:
    from engine.robots.benchmark import RbdBenchConfig, format_table, run_rbd_benchmark
    from engine.validation import check_int

    check_int(None, "--plain-batch", args.plain_batch, 0, 1_000_000, hint="0 skips the plain-API row")
    floating = tuple(x.strip() for x in args.floating.split(",") if x.strip() and x.strip() != "none")
    cfg = RbdBenchConfig(
        robot=args.robot,
        batches=_batches(args.batch),
        threads=args.threads,
        min_time_s=args.min_time,
        repeats=args.repeats,
        floating=floating,
        device=args.device,
        derivative_batches=() if args.derivative_batch.strip() == "none" else _batches(args.derivative_batch),
        batch1=args.batch1,
    )

    def progress(fraction, message):
        if not args.json:
            print(f"[{fraction:5.0%}] {message}", file=sys.stderr, flush=True)

    result = run_rbd_benchmark(cfg, progress=progress)
    plain = _plain_rows(args, result, progress)
    if args.json:
        print_json({k: result[k] for k in ("robot", "dof", "threads", "rows", "floating_rows", "derivative_rows",
                                          "batch1_rows")}
                   | {"urdf": result["urdf"]}
                   | ({"plain_api": plain[0], "plain_api_torch": plain[1]} if plain else {}))
    else:
        print(format_table(result))
        if plain:
            from engine.robots.bench_plain import format_plain_rows

            print("\n".join(format_plain_rows(p) for p in plain))
    return 0


def _plain_rows(args, result, progress):
    """The rows "plain API (no CLI settings)": RNEA, CRBA, ABA at --plain-batch in a fresh process,
    as a script calls them, then through the torch algorithms (engine.robots.backends.torch_only)."""
    if not args.plain_batch:
        return None
    from engine.robots.bench_plain import run_plain_api_benchmark

    progress(1.0, f"plain API, batch {args.plain_batch}, in a fresh process")
    return [run_plain_api_benchmark(result["urdf"], batch=args.plain_batch, repeats=args.repeats,
                                    min_time_s=args.min_time, path=path) for path in ("default", "torch")]


def register_bench(subparsers) -> None:
    from engine.robots.benchmark import RbdBenchConfig

    d = RbdBenchConfig()
    p = subparsers.add_parser("rbd", help="rigid-body engine: FK+Jacobian, RNEA, CRBA, ABA vs Pinocchio, "
                                          "pytorch_kinematics, differentiable-robot-model")
    p.add_argument("--robot", default=d.robot, help="library name (panda, ur5, allegro...) or URDF path")
    p.add_argument("--batch", default=",".join(map(str, d.batches)), help="comma-separated batch sizes")
    p.add_argument("--threads", type=int, default=d.threads, help="torch threads")
    p.add_argument("--repeats", type=int, default=d.repeats, help="measurements per cell (median)")
    p.add_argument("--min-time", type=float, default=d.min_time_s, help="seconds per cell, at least")
    p.add_argument(
        "--plain-batch",
        type=int,
        default=1024,
        help="batch of the row measured through the plain "
        "API without the CLI's settings, in a fresh process (0: skip it)",
    )
    p.add_argument("--floating", default=",".join(d.floating),
                   help="floating-base library robots timed against Pinocchio's free-flyer model "
                        "(comma-separated; 'none' for none)")
    p.add_argument("--derivative-batch", default=",".join(map(str, d.derivative_batches)),
                   help="batch sizes of the analytic-derivative rows (RNEA/ABA derivatives and backward passes "
                        "against Pinocchio's computeRNEADerivatives/computeABADerivatives); 'none' skips them")
    p.add_argument("--batch1", action=argparse.BooleanOptionalAction, default=d.batch1,
                   help="rows of one sample per call: CompiledCalls (numpy), the plain API and Pinocchio's "
                        "per-call time (--no-batch1 skips them)")
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)
