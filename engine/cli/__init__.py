"""`python -m engine` (also installed as `lagrange`).

Every module in this package whose name does not start with ``_`` or ``bench_`` and that
defines ``register(subparsers)`` becomes a command group (``robot``, ``learn``, ``logs``,
``eigenmode``, ``car``, ``bench``...). ``register`` adds one sub-parser and sets
``func=callable(args) -> int`` on it. Parsing and printing live here; the work lives in
the engine's domains.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys

from engine import __version__

__all__ = ["build_parser", "main"]


def _command_modules():
    import engine.cli as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name.startswith("bench_"):
            continue
        module = importlib.import_module(f"engine.cli.{info.name}")
        if hasattr(module, "register"):
            yield module


class CommandLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the flag and where the help is
    (exit code 2), never a usage block; its sub-parsers are of the same kind."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


class _QuietTracebacks(logging.Formatter):
    """Log lines on the terminal without tracebacks (they go to the log file with -v only)."""

    def formatException(self, ei) -> str:  # noqa: N802 - logging API
        return ""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_text = ""
        saved = record.exc_info
        record.exc_info = None
        try:
            return super().format(record)
        finally:
            record.exc_info = saved


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(
        prog="python -m engine",
        description="Lagrange Studio engine: everything the desktop app does, from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"lagrange-studio {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log debug messages to stderr (and an internal error's traceback)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(sub)
    _add_thread_options(parser)
    return parser


def _leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_parsers(child, (*path, name))


def _add_thread_options(parser: argparse.ArgumentParser) -> None:
    """``--threads N|auto`` on every computing command: each that has ``--device`` or a measured
    thread policy (engine/threads.py), except the benchmarks whose own ``--threads`` is what they
    measure (``bench rbd``, ``bench car``, ``bench ik``)."""
    from engine.cli._common import add_threads_option
    from engine.threads import JOB_THREADS

    for path, leaf in _leaf_parsers(parser):
        options = {o for a in leaf._actions for o in a.option_strings}
        job = " ".join(path)
        if "--threads" not in options and ("--device" in options or job in JOB_THREADS):
            add_threads_option(leaf, job)


def _chosen_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The (sub-)parser of the command that ``args`` runs."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        choice = getattr(args, subs[0].dest, None) if subs else None
        if not subs or choice not in subs[0].choices:
            return parser
        parser = subs[0].choices[choice]


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Field name -> the flag that sets it (``epochs`` -> ``--epochs``), for messages."""
    flags = {}
    for action in parser._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        if long:
            flags[action.dest] = long[0]
    return flags


def internal_error_note(log_file) -> str:
    """What follows an internal error's line: where its details are and how to report it."""
    if log_file:
        return f"the details are in {log_file}; please report it with that file"
    return ("the log folder cannot be written, so no details were kept; run the command again with -v to "
            "see them, and please report it with that output")


def _disk_full(exc: Exception) -> Exception:
    """A full disk anywhere (a checkpoint, a saved file, standard output) as the plain
    :class:`~engine.io.DiskFullError` (a user error) instead of an internal error."""
    from engine.io import DiskFullError, is_disk_full

    if isinstance(exc, DiskFullError) or not isinstance(exc, OSError) or not is_disk_full(exc):
        return exc
    if exc.filename is not None:
        return DiskFullError(os.fsdecode(exc.filename))
    try:   # no file name: most often standard output redirected to a file on a full disk
        sys.stdout.flush()
    except OSError:   # stop writing to it (the interpreter would fail again at exit)
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter closes it at exit
        except OSError:
            pass
    return DiskFullError(os.devnull, where="the output (standard output or the file it goes to, or a file "
                                           "being saved)")


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit codes: 0 done, 2 a user error (one line naming the file, field or
    flag), 1 an internal error (one line and the log file holding the traceback), 130 interrupted."""
    from engine.messages import is_user_error, user_message, write_traceback
    from engine.runtime import tune_malloc

    tune_malloc()  # large temporary tensors reuse memory instead of faulting pages in each call
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # --help, --version, or a flag's error (printed already)
        return exc.code if isinstance(exc.code, int) else 2
    except KeyboardInterrupt:
        print("interrupted (Ctrl+C)", file=sys.stderr)
        return 130
    handler = logging.StreamHandler()
    handler.setFormatter(
        (logging.Formatter if args.verbose else _QuietTracebacks)("%(levelname)s %(name)s: %(message)s")
    )
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[handler])
    func = getattr(args, "func", None)
    if func is None:
        # no command, or a group without a sub-command: that parser's help, on stderr (exit 2)
        target = getattr(args, "group_parser", parser)
        target.print_help(sys.stderr)
        return 2
    chosen = _chosen_parser(parser, args)
    try:
        if getattr(args, "device", None) is not None:  # --device: resolved before any work (exit 2 if absent)
            from engine.cli._common import device_from_args

            args.device = str(device_from_args(args))
        if getattr(args, "threads_job", None) is None:
            return int(func(args) or 0)
        from engine.threads import job_threads

        with job_threads(args.threads, job=args.threads_job):  # the job's torch threads, restored after
            return int(func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted (Ctrl+C): the command stopped before it finished", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head`: the reader has gone
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter closes it at exit
        except OSError:
            pass
        return 1
    except Exception as exc:  # noqa: BLE001 - the one place that turns failures into messages
        exc = _disk_full(exc)
        if is_user_error(exc):
            print(f"error: {user_message(exc, _flags(chosen))}", file=sys.stderr)
            return 2
        path = write_traceback(exc, context="python -m engine " + " ".join(arguments))
        print(
            f"internal error: {user_message(exc, _flags(chosen))} ({internal_error_note(path)})",
            file=sys.stderr,
        )
        if args.verbose:
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        return 1
