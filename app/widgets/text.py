"""Small presentation helpers shared by the workspaces (one place for each)."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem

__all__ = ["ERROR_COLOUR", "error_html", "readonly_item"]

ERROR_COLOUR = "#d9534f"


def error_html(message: str, title: str = "") -> str:
    """A message in the error colour for a rich-text label (escaped; ``title`` in bold before it)."""
    head = f"<b>{html.escape(title)}:</b> " if title else ""
    return f"<span style='color:{ERROR_COLOUR}'>{head}{html.escape(str(message))}</span>"


def readonly_item(text: str) -> QTableWidgetItem:
    """A table cell the user can select and copy but not edit."""
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    return item
