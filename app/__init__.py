"""Lagrange Studio desktop application (PySide6). Imports engine; nothing imports app."""
