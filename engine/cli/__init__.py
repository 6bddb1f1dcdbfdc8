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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m engine",
        description="Lagrange Studio engine: everything the desktop app does, from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"lagrange-studio {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from engine.runtime import tune_malloc

    tune_malloc()  # large temporary tensors reuse memory instead of faulting pages in each call
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    func = getattr(args, "func", None)
    if func is None:
        # A group without a sub-command: show that group's help.
        target = getattr(args, "group_parser", parser)
        target.print_help()
        return 0 if args.command is None else 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, OSError) as exc:
        # Engine errors are ValueError subclasses with messages that name the file and field.
        print(f"error: {exc}", file=sys.stderr)
        return 2
