"""Small helpers shared by the command modules: JSON output, running jobs with progress,
command groups and the ``--device`` option."""

from __future__ import annotations

import argparse
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


def add_device_option(parser, default: str = "cpu") -> None:
    """Add ``--device cpu|cuda|cuda:N|auto`` to ``parser`` (resolve it with :func:`device_from_args`)."""
    from engine.devices import DeviceError, parse_device_name

    def device_name(text: str) -> str:
        try:
            return parse_device_name(text)
        except DeviceError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser.add_argument("--device", type=device_name, default=default, metavar="{cpu,cuda,auto}",
                        help=f"where to compute: cpu, cuda (or cuda:N), or auto (a GPU when there is one; "
                             f"default {default})")


def device_from_args(args, default: str = "cpu"):
    """The torch device ``args.device`` names here; a clear user error (exit code 2) when CUDA
    is asked for and absent."""
    from engine.devices import resolve_device

    return resolve_device(getattr(args, "device", None) or default, flag="--device")
