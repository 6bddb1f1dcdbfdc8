"""Lagrange Studio engine: Qt-free, differentiable torch code and the `python -m engine` CLI."""

import os as _os

# torch's OpenMP threads spin between parallel regions (libgomp's default: 300,000 spins)
# before they sleep. The engine's hot loops are hundreds of small regions per call, and when
# the cores are shared (the GUI thread rendering, another job, another program) a spinning
# thread starves the peer it waits for: with two busy processes beside it, one MPC cycle took
# 5.1 s instead of 19 ms. 30,000 spins keeps the idle speed (18.2 against 18.6 ms here) and
# cuts that case to 0.14 s. libgomp reads this when torch loads it, so it is set before any
# torch import; a value the user set wins.
_os.environ.setdefault("GOMP_SPINCOUNT", "30000")

# The allocator setting of the command line and the app holds for a plain `import engine` too (a
# script, a notebook): large temporary tensors reuse freed heap memory instead of faulting fresh
# pages in on every call, which at batch 1024 costs more than the arithmetic (engine/runtime.py).
# LAGRANGE_NO_TUNE_MALLOC=1 keeps the process's malloc as it is.
if not _os.environ.get("LAGRANGE_NO_TUNE_MALLOC"):
    from engine.runtime import tune_malloc as _tune_malloc

    _tune_malloc()

__version__ = "0.1.0"
