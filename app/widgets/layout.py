"""Layout pieces of the widget kit: side panels that scroll vertically only, splitters that remember.

- :class:`SidePanel` a vertical-only scroll area for a column of controls: its minimum width is
  its content's minimum width (so nothing is clipped and nothing scrolls sideways), its height
  whatever the window gives it.
- :func:`remember_splitter` restores a splitter's sizes from QSettings and saves them on every
  move; its panels collapse (dragging the handle to the edge) and the sizes come back next time.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QSplitter, QWidget

__all__ = ["SidePanel", "remember_splitter"]


class SidePanel(QScrollArea):
    """Wraps ``content`` in a scroll area that never scrolls sideways."""

    def __init__(self, content: QWidget, parent: QWidget | None = None, preferred_width: int = 340):
        super().__init__(parent)
        self.content = content
        self.preferred_width = preferred_width
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

    def _extra(self) -> int:
        return self.verticalScrollBar().sizeHint().width() + 2 * self.frameWidth() + 2

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt name
        w = self.content.minimumSizeHint().width() + self._extra()
        return QSize(w, 80)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(max(self.preferred_width, self.minimumSizeHint().width()), 400)


def remember_splitter(splitter: QSplitter, settings, key: str, default: list[int] | None = None) -> None:
    """Restore ``splitter``'s sizes from ``settings[key]`` (or ``default``), save them when moved.

    Every panel may be collapsed by dragging the handle to the edge; a collapsed panel is
    remembered as 0 and comes back when its handle is dragged out again."""
    for i in range(splitter.count()):
        splitter.setCollapsible(i, True)
    sizes = None
    if settings is not None:
        raw = settings.value(key)
        if raw:
            try:
                sizes = [int(s) for s in (raw if isinstance(raw, (list, tuple)) else str(raw).split(","))]
            except (TypeError, ValueError):
                sizes = None
    if sizes and len(sizes) == splitter.count() and any(sizes):
        splitter.setSizes(sizes)
    elif default:
        splitter.setSizes(default)
    if settings is not None:
        splitter.splitterMoved.connect(
            lambda *_: settings.setValue(key, ",".join(str(s) for s in splitter.sizes())))
