"""`python -m engine selftest`: a small real engine job run through the job protocol."""

from __future__ import annotations

from engine.cli._common import print_json, run_cli_job


def register(subparsers) -> None:
    p = subparsers.add_parser("selftest", help="run a small engine computation as a job and print its result")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from engine.selftest import selftest_job

    result = run_cli_job(selftest_job, quiet=args.json)
    if args.json:
        print_json(result)
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0 if result["ok"] else 1
