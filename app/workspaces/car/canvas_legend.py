"""The Car planner canvas's legend: one line of coloured samples above the canvas (never over
the drawing), naming what the current layer draws: targets, paths, the track and the car."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy

__all__ = ["CanvasLegend", "sample"]

# a pen's style as a text sample of its line
_LINES = {Qt.PenStyle.DashLine: "╍╍╍", Qt.PenStyle.DotLine: "┈┈┈", Qt.PenStyle.DashDotLine: "━ ━"}


def sample(item) -> tuple[str, str]:
    """(colour, line text) drawing ``item``'s pen (a PlotDataItem's), or its brush for markers."""
    opts = getattr(item, "opts", {})
    pen = pg.mkPen(opts.get("pen")) if opts.get("pen") is not None else None
    if pen is not None and pen.style() != Qt.PenStyle.NoPen:
        return pen.color().name(), _LINES.get(pen.style(), "━━━")
    brush = pg.mkBrush(opts.get("brush", "#888888"))
    return brush.color().name(), "●"


class CanvasLegend(QLabel):
    """Entries as ``(colour, line text, name)``; hidden when there are none. The text wraps
    rather than widen the window."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("carCanvasLegend")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.setStyleSheet("QLabel { padding: 2px 6px; }")
        self.entries: list[tuple[str, str, str]] = []
        self.setVisible(False)

    def set_entries(self, entries: list[tuple[str, str, str]]) -> None:
        self.entries = list(entries)
        parts = [f'<span style="color:{colour}; font-weight: bold;">{html.escape(line)}</span>'
                 f"&nbsp;{html.escape(name)}" for colour, line, name in self.entries]
        self.setText("&nbsp;&nbsp;&nbsp; ".join(parts))
        self.setToolTip("What the canvas draws")
        self.setVisible(bool(self.entries))

    def names(self) -> list[str]:
        return [name for _, _, name in self.entries]
