"""Help > Keyboard Shortcuts lists each shortcut once (the workspaces' Undo, whose text names the
step, was listed again as "Undo Load parallel-parking") and the 3D views' mouse controls, and
still fits a 1366 x 768 screen without scrolling."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from PySide6.QtGui import QKeySequence  # noqa: E402
from PySide6.QtWidgets import QAbstractScrollArea, QDialog, QLabel  # noqa: E402


def test_shortcuts_once_each_and_the_mouse_controls(make_window, qtbot):
    from app.help import MOUSE_CONTROLS

    window = make_window()
    window.show_workspace("robot")
    page = window.page("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=90_000)
    page.targets.add_target(page.robot.model.link_names[-1], np.eye(4))
    assert page.undo_action.text().startswith("Undo ") and page.undo_action.text() != "Undo"
    rows = window.shortcut_table()
    assert len(rows) == len(set(rows))
    undo_keys = QKeySequence(QKeySequence.StandardKey.Undo).toString(QKeySequence.SequenceFormat.NativeText)
    on_undo = [name for name, keys in rows if keys == undo_keys]
    assert on_undo == ["Undo"], on_undo
    assert not [name for name, _ in rows if name.startswith(("Undo ", "Redo "))]
    # the dialog from the Help menu: the keys, then the mouse
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Help")
    action = next(a for a in help_menu.actions() if a.text().replace("&", "") == "Keyboard Shortcuts")
    action.trigger()
    qtbot.waitUntil(lambda: window.findChild(QDialog, "shortcutsDialog") is not None)
    dialog = window.findChild(QDialog, "shortcutsDialog")
    qtbot.waitUntil(dialog.isVisible)
    texts = [label.text() for label in dialog.findChildren(QLabel)]
    assert sum(t == "Undo" for t in texts) == 1
    for what, how in MOUSE_CONTROLS:
        assert what in texts and f"<b>{how}</b>" in texts
    assert any("Orbit" in what for what, _ in MOUSE_CONTROLS) and any(
        "Wheel" in how for _, how in MOUSE_CONTROLS
    )
    size = dialog.sizeHint()
    assert size.width() <= 1366 - 40 and size.height() <= 768 - 80, size
    assert not dialog.findChildren(QAbstractScrollArea)
    dialog.close()
