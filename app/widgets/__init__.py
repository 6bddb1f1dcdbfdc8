"""Widgets shared by several workspaces (plots, forms, job progress) and the Qt-free parts their states
share (events, the undo history)."""
