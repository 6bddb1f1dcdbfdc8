"""`python -m engine bench jobs`: every job kind idle and with another program holding a core, with
torch's default threads and with the thread policy (engine/job_bench.py, engine/threads.py)."""

from __future__ import annotations

from engine.cli._common import print_json


def register_bench(subparsers) -> None:
    from engine.job_bench import JOBS

    p = subparsers.add_parser(
        "jobs",
        help="each job idle and with `yes` holding a core, torch's default threads "
        "vs --threads auto (writes the table of results/benchmarks/jobs.md)",
    )
    p.add_argument(
        "--jobs", default=",".join(JOBS), help=f"comma-separated, from: {','.join(JOBS)} (default: all)"
    )
    p.add_argument("--repeats", type=int, default=1, help="runs per cell, the best kept (default: 1)")
    p.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        help="seconds per run before it counts as too slow (up to 3600; default: 180)",
    )
    p.add_argument("--no-heartbeat", action="store_true", help="skip the UI heartbeat measurement")
    p.add_argument("--markdown", metavar="FILE", help="also write the table (Markdown) to FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args) -> int:
    import signal
    import sys

    from engine.io import atomic_write_text
    from engine.job_bench import JobBenchConfig, markdown_table, run_job_bench
    from engine.validation import check_int

    check_int(None, "--repeats", args.repeats, 1, 100)
    if not 0 < args.timeout <= 3600:
        raise ValueError(f"--timeout {args.timeout}: give the seconds a run may take, from 1 to 3600")
    cfg = JobBenchConfig(jobs=[j.strip() for j in args.jobs.split(",") if j.strip()], repeats=args.repeats,
                         timeout=args.timeout, heartbeat=not args.no_heartbeat)

    # stopped (kill, Ctrl+C): the runs' processes and the busy-core process are ended on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def row(r):
        if not args.json:
            print(f"{r['job']}: {r}", file=sys.stderr, flush=True)

    result = run_job_bench(cfg, on_row=row)
    table = markdown_table(result)
    if args.markdown:
        atomic_write_text(args.markdown, f"Machine: {result['machine']}\n\n{table}")
    if args.json:
        print_json(result)
    else:
        print(f"Machine: {result['machine']} (load average at start {result['load_average_at_start']})\n")
        print(table)
    return 0
