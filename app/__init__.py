"""Lagrange Studio desktop application (PySide6). Imports engine; nothing imports app."""

import engine as _engine  # noqa: F401  (first: its OpenMP settings must precede torch's import)
