"""The Car planner fits a laptop screen: at 1366 x 768, 1400 x 900 and 1920 x 1080 the main window
shows the car workspace with Optimise and Play in view without scrolling, nothing off the window,
a side panel that scrolls vertically only, and a canvas that gets most of the room. The side
panel collapses and its width is remembered."""

import os

import pytest
from PySide6.QtCore import QPoint, QRect, QSettings
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QTabBar, QWidget

SIZES = [(1366, 768), (1400, 900), (1920, 1080)]


def _rect_in(widget: QWidget, ancestor: QWidget) -> QRect:
    return QRect(widget.mapTo(ancestor, QPoint(0, 0)), widget.size())


def _car_window(make_window, qtbot, size):
    window = make_window({"workspace": "car"})
    window.show_workspace("car")
    qtbot.waitUntil(lambda: window.current_workspace() == "car")
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size, timeout=5000)
    qtbot.wait(50)
    return window, window.pages["car"]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_car_workspace_fits_the_window(make_window, qtbot, size):
    window, page = _car_window(make_window, qtbot, size)
    assert (window.width(), window.height()) == size          # no page forces the window larger
    win = window.rect()
    assert win.contains(_rect_in(page, window))
    # the canvas gets most of the page and lies in the window
    canvas = _rect_in(page.canvas, window)
    assert win.contains(canvas)
    side = page.side_scroll
    assert canvas.width() * canvas.height() > 0.35 * page.width() * page.height()
    assert canvas.width() > 1.5 * side.width()
    # the side panel: no horizontal scrollbar, its content no wider than its view
    assert not side.horizontalScrollBar().isVisible()
    view = side.viewport()
    assert side.widget().width() <= view.width()
    view_rect = _rect_in(view, window)
    assert win.contains(_rect_in(side, window))
    # Optimise and Play on the first screen of the Plan tab, without scrolling
    assert side.verticalScrollBar().value() == 0
    for button in (
        page.plan_panel.optimise_button,
        page.plan_panel.play_button,
        page.plan_panel.cancel_button,
    ):
        assert button.isVisible()
        assert view_rect.contains(_rect_in(button, window)), button.text()
    # every visible button, label, combo and tab bar of the Plan tab is as wide as it asks to be
    # or inside the side panel's width (nothing cut off at the right edge)
    for w in page.plan_panel.findChildren(QWidget):
        if not w.isVisible() or not isinstance(w, (QAbstractButton, QComboBox, QLabel, QTabBar)):
            continue
        r = _rect_in(w, window)
        assert r.left() >= view_rect.left() - 1 and r.right() <= view_rect.right() + 1, (w, r, view_rect)
    # the Track tab's Drive button is on its first screen too
    page.tabs.setCurrentWidget(page.track_panel)
    qtbot.wait(20)
    drive = page.track_panel.drive_button
    assert drive.isVisible() and view_rect.contains(_rect_in(drive, window))
    page.tabs.setCurrentWidget(page.plan_panel)
    if os.environ.get("CAR_LAYOUT_SCREENSHOTS"):               # for looking at, not for asserting
        qtbot.wait(100)
        window.grab().save(os.path.join(os.environ["CAR_LAYOUT_SCREENSHOTS"], f"car-{size[0]}x{size[1]}.png"))


def test_side_panel_collapses_and_its_width_is_remembered(make_window, qtbot, settings_path):
    window, page = _car_window(make_window, qtbot, (1400, 900))
    split = page.splitter
    total = sum(split.sizes())
    split.moveSplitter(total - 450, 1)            # a wider side panel, as by dragging the handle
    qtbot.wait(20)
    width = split.sizes()[1]
    assert width > page.side_scroll.minimumWidth()
    window.close()
    settings = QSettings(settings_path, QSettings.Format.IniFormat)
    assert settings.value("car/side_panel") is not None
    window2, page2 = _car_window(make_window, qtbot, (1400, 900))
    assert abs(page2.splitter.sizes()[1] - width) <= 2
    # collapsed: the canvas takes the whole width
    page2.splitter.moveSplitter(sum(page2.splitter.sizes()), 1)
    qtbot.wait(20)
    assert page2.splitter.sizes()[1] == 0
    assert page2.canvas.width() > 0.9 * page2.width()
