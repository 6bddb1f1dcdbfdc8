"""Build every compiled rigid-body kernel now, so that no first call of a session waits for the
compiler (``python build_scripts/dev.py setup`` runs :func:`warm_up`): the values and the
derivative matrices (:func:`engine.robots.compiled_dynamics.warm_up`, about a minute of CPU on a
first build) and the backward's passes (:mod:`engine.robots.compiled_vjp`, about two). Each is
compiled and cached on disk by numba, or loaded from that cache. A packaged app runs it once per
build in a process of its own (``LagrangeStudio --warm-up-kernels``, started by the app at a low
priority), which leaves :func:`engine.robots.kernel_cache.warmed_marker` behind (:func:`warmed`)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from engine.robots import compiled_dynamics, compiled_vjp

__all__ = ["warm_up", "warmed"]


def warm_up() -> bool:
    """Build (or load) every kernel; False where the compiled kernels are not available."""
    if not compiled_dynamics.warm_up():
        return False
    consts, a0 = compiled_dynamics.two_bodies(), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 9.81])
    for floating in (False, True):      # RNEA's and ABA's forward and reverse passes, CRBA's
        q = np.zeros((1, 9 if floating else 2))
        if floating:
            q[0, 6] = 1.0
        v = np.zeros((1, q.shape[1] - (1 if floating else 0)))
        compiled_vjp.rnea_vjp(consts, q, v, v, a0, np.zeros(2), floating, v, want_pi=True)
        compiled_vjp.aba_vjp(consts, q, v, v, a0, np.zeros(2), floating, v, want_pi=True)
        compiled_vjp.crba_vjp(consts, q, floating, np.zeros((1, v.shape[1], v.shape[1])), want_pi=True)
    if getattr(sys, "frozen", False):
        from engine.robots.kernel_cache import warmed_marker

        Path(warmed_marker()).touch()
    return True


def warmed() -> bool:
    """Whether every kernel of this packaged app's build is in the cache (always False from sources,
    where ``dev.py setup`` builds them)."""
    if not getattr(sys, "frozen", False):
        return False
    from engine.robots.kernel_cache import warmed_marker

    return Path(warmed_marker()).exists()
