"""Lagrange Studio engine: Qt-free, differentiable torch code and the `python -m engine` CLI."""

__version__ = "0.1.0"
