"""The log console (issue 32, item 7): the level filter hides lines already shown, the badge opens
it at a readable height on the newest warnings, and the filter menu is never elided."""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt


def _lines(console) -> list[str]:
    return [line for line in console.plain_text().splitlines() if line]


def test_the_level_filter_applies_to_lines_already_shown(make_window, qtbot):
    window = make_window()
    console = window.log_console
    console.open_console()
    log = logging.getLogger("engine.console_test")
    log.info("info one")
    log.warning("warning one")
    log.info("info two")
    qtbot.waitUntil(lambda: "info two" in console.plain_text())
    console.level_box.setCurrentText("WARNING")
    lines = [line for line in _lines(console) if "console_test" in line]
    assert len(lines) == 1 and lines[0].endswith("warning one")
    log.info("info three")                        # logged while filtered: kept, not shown
    log.error("error one")
    qtbot.waitUntil(lambda: "error one" in console.plain_text())
    assert "info" not in console.plain_text().split("console_test")[-1]
    console.level_box.setCurrentText("INFO")      # back: every kept line, in order
    lines = [line.rsplit(": ", 1)[-1] for line in _lines(console) if "console_test" in line]
    assert lines == ["info one", "warning one", "info two", "info three", "error one"]
    console.clear()
    console.level_box.setCurrentText("DEBUG")
    assert console.plain_text() == ""


def test_the_badge_opens_a_readable_console_on_the_newest_warnings(make_window, qtbot):
    window = make_window()
    window.resize(1366, 768)
    console, badge = window.log_console, window.log_console.badge
    log = logging.getLogger("engine.console_test")
    for i in range(60):
        log.info("startup line %d", i)
    log.warning("the warning to read")
    qtbot.waitUntil(lambda: badge.count == 1)
    qtbot.mouseClick(badge, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(console.isVisible)
    qtbot.waitUntil(lambda: console.height() >= min(console.open_height(), int(0.45 * window.height())) - 4)
    text = console.text
    line = text.fontMetrics().lineSpacing()
    assert text.viewport().height() >= 8 * line               # not a 4-line slit
    assert console.level_box.currentText() == "WARNING"         # what the badge counted
    assert [line for line in _lines(console) if "console_test" in line][-1].endswith("the warning to read")
    assert "startup line" not in console.plain_text()
    bar = text.verticalScrollBar()
    assert bar.value() == bar.maximum()                         # the newest line in view
    console.level_box.setCurrentText("INFO")
    ours = [line for line in _lines(console) if "console_test" in line]   # other loggers may add lines
    assert bar.value() == bar.maximum()
    assert ours[-2].endswith("startup line 59") and ours[-1].endswith("the warning to read")


def test_the_level_menu_shows_whole_names(make_window):
    window = make_window()
    box = window.log_console.level_box
    window.log_console.open_console()
    for i in range(box.count()):
        assert box.width() >= box.fontMetrics().horizontalAdvance(box.itemText(i)) + 30
