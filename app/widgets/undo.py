"""Undo and redo actions for a page with its own QUndoStack."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QUndoStack
from PySide6.QtWidgets import QWidget


def add_undo_redo_actions(widget: QWidget, stack: QUndoStack) -> tuple[QAction, QAction]:
    """Ctrl+Z / Ctrl+Shift+Z (the platform's keys) for ``stack``, active while focus is in ``widget``."""
    actions = []
    for create, key in ((stack.createUndoAction, QKeySequence.StandardKey.Undo),
                        (stack.createRedoAction, QKeySequence.StandardKey.Redo)):
        action = create(widget, "Undo" if key == QKeySequence.StandardKey.Undo else "Redo")
        action.setShortcut(key)
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        widget.addAction(action)
        actions.append(action)
    return actions[0], actions[1]
