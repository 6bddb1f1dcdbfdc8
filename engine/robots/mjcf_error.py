"""The error of the MJCF loader (:mod:`engine.robots.mjcf`), in a module of its own so that the
loader's helpers (:mod:`engine.robots.mjcf_trees`) raise it without importing the loader."""

from __future__ import annotations

from engine.robots.urdf import URDFError

__all__ = ["MJCFError"]


class MJCFError(URDFError):
    """A MuJoCo file that cannot be loaded (a ValueError naming the file and the element)."""
