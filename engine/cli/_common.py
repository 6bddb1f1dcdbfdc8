"""Small helpers shared by the command modules: JSON output and running jobs with progress."""

from __future__ import annotations

import json
import sys
from typing import Any

from engine.jobs import Job, StderrProgress, run_job


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout (NaN and inf become null, so the output is strict JSON)."""
    from engine.io import finite_or_none, json_default

    json.dump(finite_or_none(json.loads(json.dumps(obj, default=json_default))), sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.stdout.flush()


def run_cli_job(job: Job, quiet: bool = False) -> Any:
    """Run a job in this thread, printing its progress on stderr unless ``quiet``."""
    return run_job(job, on_progress=None if quiet else StderrProgress())


def add_group(subparsers, name: str, help: str):
    """Add a command group parser whose bare invocation prints its own help."""
    group = subparsers.add_parser(name, help=help, description=help)
    group.set_defaults(group_parser=group)
    return group, group.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
