"""The two questions a xacro file asks before it is expanded: its arguments (when the user opens
it) and whether to expand it at all (when a session or a recent entry names it)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QInputDialog, QMessageBox, QWidget

from engine.robots.files import parse_xacro_args

__all__ = ["XACRO_ARGS_KEY", "ask_expand_xacro", "ask_xacro_args"]

XACRO_ARGS_KEY = "robot/xacro_args"


def ask_xacro_args(parent: QWidget, settings, path: str) -> dict | None:
    """The open dialog's small arguments field: ``name:=value`` pairs, separated by spaces
    ({name: value}; None when the user cancels). The last answer is offered again."""
    last = str(settings.value(XACRO_ARGS_KEY, ""))
    while True:
        text, ok = QInputDialog.getText(
            parent,
            "xacro arguments",
            f"{Path(path).name}: arguments (name:=value, separated by spaces; empty for the defaults)",
            text=last,
        )
        if not ok:
            return None
        try:
            args = parse_xacro_args(text.split())
        except ValueError as exc:
            QMessageBox.warning(parent, "xacro arguments", str(exc))
            last = text
            continue
        settings.setValue(XACRO_ARGS_KEY, text)
        return args


def ask_expand_xacro(parent: QWidget, path: str, why: str) -> bool:
    """Whether the user agrees to expand xacro file ``path``, which a session (``why`` =
    "session") or a recent-robots entry ("recent") names; No is the default."""
    source = "This session loads the robot" if why == "session" else "This robot is loaded"
    answer = QMessageBox.question(
        parent, "Expand a xacro file?",
        f"{source} from a xacro file, {path}. A xacro file is a program. Expand it?\n\n"
        "It runs in a sandbox (arithmetic, its own properties and its own package's files only); "
        "say yes only for a file you trust.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
