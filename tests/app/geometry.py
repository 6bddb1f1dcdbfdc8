"""The layout check every workspace's tests share: does a window fit a screen, with nothing clipped?

``layout_problems(window, width, height)`` resizes a shown top-level window to the screen size
and lists, in words, what does not fit:

- the window's minimum size (``minimumSizeHint``/``minimumSize``) wider or taller than the screen,
  or the window larger than asked (a page forcing it wider);
- a visible widget whose rectangle lies outside the window;
- a visible widget cut off by its parent (its rectangle outside the parent's), which is how
  a too-narrow splitter pane or a squeezed form shows, except inside a scroll area's
  viewport (scrolled content is meant to extend past it);
- a scroll area (a side panel) that scrolls sideways, or whose content is wider than it.

Use: ``assert layout_problems(window, 1366, 768) == []`` (the whole window), or with
``page=window.page("car")`` for one workspace; ``SCREENS`` lists the sizes to check. Show the
window with the app's style (``app.main._make_application``): the style sheet changes sizes.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QScrollArea, QWidget

__all__ = ["SCREENS", "layout_problems", "settle"]

SCREENS = ((1366, 768), (1400, 900), (1920, 1080))


def settle(rounds: int = 5) -> None:
    for _ in range(rounds):
        QApplication.processEvents()


def _name(w: QWidget) -> str:
    return f"{type(w).__name__}({w.objectName() or '-'})"


def _in_scroll_viewport(w: QWidget, top: QWidget) -> bool:
    p = w.parentWidget()
    while p is not None and p is not top:
        gp = p.parentWidget()
        if isinstance(gp, QAbstractScrollArea) and gp.viewport() is p:
            return True
        p = gp
    return False


def layout_problems(window: QWidget, width: int, height: int, tolerance: int = 1,
                    page: QWidget | None = None) -> list[str]:
    """Everything that does not fit when ``window`` is shown at ``width`` x ``height``.

    ``page``: check only this part of the window (a workspace page): its minimum size against
    the room the window leaves it at that screen size, and the widgets inside it (another
    workspace forcing the window wider is then that workspace's problem, not this one's)."""
    window.resize(width, height)
    settle()
    problems = []
    if page is None:
        hint = window.minimumSizeHint().expandedTo(window.minimumSize())
        if hint.width() > width:
            problems.append(f"the window needs at least {hint.width()} px of width, the screen has {width}")
        if hint.height() > height:
            problems.append(
                f"the window needs at least {hint.height()} px of height, the screen has {height}"
            )
        if window.width() > width + tolerance or window.height() > height + tolerance:
            problems.append(f"the window is {window.width()} x {window.height()}, asked {width} x {height}")
        top = window
    else:
        room_w = width - (window.width() - page.width())
        room_h = height - (window.height() - page.height())
        hint = page.minimumSizeHint().expandedTo(page.minimumSize())
        if hint.width() > room_w:
            problems.append(
                f"{_name(page)} needs at least {hint.width()} px of width, the window leaves it {room_w}"
            )
        if hint.height() > room_h:
            problems.append(
                f"{_name(page)} needs at least {hint.height()} px of height, the window leaves it {room_h}"
            )
        top = page
    outer = top.rect().adjusted(-tolerance, -tolerance, tolerance, tolerance)
    for w in top.findChildren(QWidget):
        if w.isWindow() or not w.isVisible() or w.width() <= 0 or w.height() <= 0:
            continue
        if _in_scroll_viewport(w, top):
            continue
        r = QRect(w.mapTo(top, QPoint(0, 0)), w.size())
        if not outer.contains(r):
            problems.append(f"{_name(w)} at {r.getRect()} lies outside {_name(top)} {top.rect().getRect()}")
            continue
        parent = w.parentWidget()
        if parent is not None and not parent.isWindow():
            inner = parent.rect().adjusted(-tolerance, -tolerance, tolerance, tolerance)
            if not inner.contains(w.geometry()):
                problems.append(f"{_name(w)} at {w.geometry().getRect()} is cut off by {_name(parent)} "
                                f"of size {parent.width()} x {parent.height()}")
        if isinstance(w, QScrollArea) and w.widget() is not None:
            if w.horizontalScrollBar().isVisible():
                problems.append(f"{_name(w)} scrolls sideways (a side panel scrolls vertically only)")
            elif (w.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
                  and w.widget().width() > w.viewport().width() + tolerance):
                problems.append(f"{_name(w)}: its content ({w.widget().width()} px) is cut off at "
                                f"{w.viewport().width()} px")
    return problems
