"""Layout pieces of the widget kit: side panels that scroll vertically only, splitters that remember.

- :class:`SidePanel` a vertical-only scroll area for a column of controls: its minimum width is
  its content's minimum width (so nothing is clipped and nothing scrolls sideways), its height
  whatever the window gives it.
- :class:`ElidedLabel` a one-line label that ends in "…" when short of room (the full text in
  its tooltip) instead of widening its row.
- :func:`remember_splitter` restores a splitter's sizes from QSettings and saves them on every
  move; its panels collapse (dragging the handle to the edge) and the sizes come back next time.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QSplitter, QToolButton, QWidget

__all__ = ["ElidedLabel", "SidePanel", "collapse_button", "expanding", "remember_splitter"]


def expanding(widget: QWidget) -> QWidget:
    """``widget`` with a horizontally expanding size policy (it takes its share of a row's spare
    width, by the stretch it is added with; its minimum width still holds on a small screen)."""
    policy = widget.sizePolicy()
    policy.setHorizontalPolicy(QSizePolicy.Policy.Expanding)
    widget.setSizePolicy(policy)
    return widget


class ElidedLabel(QLabel):
    """A status line that never widens its layout: cut with "…" to its width, whole in the tooltip."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt name
        self._full = str(text)
        self.setToolTip(self._full)
        self._elide()

    def full_text(self) -> str:
        return self._full

    def _elide(self) -> None:
        super().setText(self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight,
                                                      max(self.width(), 1)))

    def resizeEvent(self, event):  # noqa: N802 - Qt name
        super().resizeEvent(event)
        self._elide()


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


def collapse_button(splitter: QSplitter, index: int = 0, what: str = "settings") -> QToolButton:
    """A small button that hides or shows pane ``index`` of ``splitter`` (its size comes back).

    The splitter's ``splitterMoved`` is emitted after a toggle, so :func:`remember_splitter`
    saves the collapsed state too."""
    button = QToolButton()
    button.setObjectName("collapseButton")
    button.setAutoRaise(True)
    button.setCheckable(True)
    last = {"size": 0}

    def refresh():
        sizes = splitter.sizes()
        collapsed = sizes[index] == 0 and sum(sizes) > 0       # not yet laid out: not collapsed
        button.blockSignals(True)
        button.setChecked(collapsed)
        button.blockSignals(False)
        left = index == 0
        button.setText(("▶" if left else "◀") if collapsed else ("◀" if left else "▶"))
        button.setToolTip(f"{'Show' if collapsed else 'Hide'} the {what} panel")

    def toggle(collapse: bool):
        sizes = splitter.sizes()
        total = sum(sizes)
        if collapse and sizes[index] > 0:
            last["size"] = sizes[index]
            other = (index + 1) % len(sizes)
            sizes[other] += sizes[index]
            sizes[index] = 0
        elif not collapse and sizes[index] == 0:
            want = last["size"] or splitter.widget(index).sizeHint().width()
            other = (index + 1) % len(sizes)
            sizes[index] = min(want, max(0, total - 200))
            sizes[other] = max(0, sizes[other] - sizes[index])
        splitter.setSizes(sizes)
        splitter.splitterMoved.emit(splitter.handle(1).x() if splitter.count() > 1 else 0, 1)
        refresh()

    button.toggled.connect(toggle)
    splitter.splitterMoved.connect(lambda *_: refresh())
    refresh()
    return button
