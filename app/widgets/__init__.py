"""Widgets shared by several workspaces (plots, forms, job progress, placeholders)."""
