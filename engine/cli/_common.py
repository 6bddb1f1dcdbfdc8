"""Small helpers shared by the command modules: JSON output, running jobs with progress,
command groups, the ``--device`` option and the up-front check of output paths."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path
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


def check_output(
    path,
    kind: str = "file",
    flag: str = "--out",
    *,
    suffix: str | tuple[str, ...] | None = None,
    written_as: str | None = None,
    allow_existing: bool = True,
    allow_nonempty_folder: bool = False,
) -> Path:
    """Check an output flag's path before any work starts (every ``--out``, ``--save*``,
    ``--video`` of the command line goes through here), so a bad name never costs a fit.

    ``kind="file"``: the name is a file name (not empty, not ``.``, not ending in a separator),
    it ends in ``suffix`` (one or several, e.g. ``".urdf"``) when given, and what is there is
    not a device, pipe or folder. ``written_as``: the suffix the save puts on the name (e.g.
    ``learn data`` writes ``NAME.npz``), checked as well. Then
    :func:`engine.validation.check_output_path` (the parent can be written, ...). Messages name
    the flag and give the suffix with its dot, in quotes. Returns the path.
    """
    from engine.validation import InputError, check_output_path

    given = str(path)
    if not given.strip():
        raise InputError("is empty; give a path to write to", field=flag)
    p = Path(given).expanduser()
    if kind == "file":
        wanted = (
            (suffix,)
            if isinstance(suffix, str)
            else tuple(suffix or ()) or ((written_as,) if written_as else ())
        )
        example = f"out{wanted[0]}" if wanted else "out"
        if given.endswith(("/", os.sep)) or p.name in ("", ".", "..") or p.is_dir():
            raise InputError(
                f"{given} is a folder; give a file name (e.g. {Path(given) / example})", field=flag
            )
        _refuse_special(p, given, flag)
        if suffix and p.suffix.lower() not in {s.lower() for s in wanted}:
            need = " or ".join(f'"{s}"' for s in wanted)
            raise InputError(f"{given} must end in {need} (e.g. {p.with_suffix(wanted[0]).name})", field=flag)
        if written_as and p.suffix.lower() != written_as.lower():
            target = p.with_suffix(written_as)
            _refuse_special(target, str(target), flag)
            check_output_path(target, "file", flag, allow_existing=allow_existing)
    checked = check_output_path(p, kind, flag, allow_existing=allow_existing,
                                allow_nonempty_folder=allow_nonempty_folder)
    if kind == "folder" and (p / ".run.lock").exists():   # a run is (or was) writing there
        from engine.runs import RunLock

        RunLock(p).check()
    return checked


def _refuse_special(p: Path, given: str, flag: str) -> None:
    from engine.validation import InputError

    try:
        mode = os.stat(p).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(
            f"{given} is a device or a special file, not a regular file; give the path of a file to write",
            field=flag,
        )


def add_threads_option(parser, job: str) -> None:
    """Add ``--threads N|auto`` to a computing command ``job`` (its path, ``car train``): torch's
    intra-op threads while the command runs (engine/threads.py; ``main`` applies it around the
    command). ``build_parser`` adds it to every computing command, so command modules need not."""
    from engine.threads import AUTO, ThreadsError, parse_threads, threads_for

    def threads_value(text: str):
        try:
            return parse_threads(text)
        except ThreadsError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("--threads ")) from None

    parser.add_argument("--threads", type=threads_value, default=AUTO, metavar="{N,auto}",
                        help=f"torch threads for this job: a number, or auto (measured per job: "
                             f"{threads_for(job)} here; results/benchmarks/jobs.md)")
    parser.set_defaults(threads_job=job)
