"""`python -m engine bench ...`: benchmarks that print ratios against reference libraries.

Each module ``engine/cli/bench_<name>.py`` that defines ``register_bench(subparsers)``
adds one benchmark (``rbd``, ``learn``, ``car``, ``eigenmode``...).
"""

from __future__ import annotations

import importlib
import pkgutil

from engine.cli._common import add_group


def register(subparsers) -> None:
    import engine.cli as pkg

    _, sub = add_group(subparsers, "bench", "benchmarks against reference libraries (speed is measured here, never in tests)")
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("bench_"):
            module = importlib.import_module(f"engine.cli.{info.name}")
            if hasattr(module, "register_bench"):
                module.register_bench(sub)
