"""`python -m engine bench ...`: benchmarks that print ratios against reference libraries.

Each module ``engine/cli/bench_<name>.py`` that defines ``register_bench(subparsers)``
adds one benchmark (``rbd``, ``learn``, ``car``, ``eigenmode``...).
"""

from __future__ import annotations

import importlib
import pkgutil

from engine.cli._common import add_group


def _bench_modules():
    import engine.cli as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("bench_"):
            module = importlib.import_module(f"engine.cli.{info.name}")
            if hasattr(module, "register_bench"):
                yield info.name[len("bench_"):], module


def bench_names() -> list[str]:
    """The names of the available benchmarks (``python -m engine bench NAME``)."""
    return [name for name, _ in _bench_modules()]


def register(subparsers) -> None:
    _, sub = add_group(subparsers, "bench",
                       "benchmarks against reference libraries (speed is measured here, never in tests)")
    for _, module in _bench_modules():
        module.register_bench(sub)
