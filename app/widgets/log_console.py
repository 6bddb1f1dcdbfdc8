"""A dock that shows the app's Python log, coloured by level, with a level filter, and the
status bar's badge that counts the warnings and errors logged while the dock is hidden.

The dock starts hidden (:meth:`LogConsole.install` puts the badge on the status bar and hides
it); a click on the badge, or Ctrl+L, opens it at a readable height, scrolled to the newest line
(from the badge with warnings counted: filtered to warnings and errors). The level filter applies
to every line kept, not only to those logged after it changed. Third-party libraries' INFO messages never
reach it (app/logging_setup.py filters them); the log file keeps everything."""

from __future__ import annotations

import logging
from collections import deque

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCharFormat
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.logging_setup import QtLogRelay

LEVEL_COLOURS = {logging.DEBUG: "#8a8f98", logging.INFO: "#d8dee9", logging.WARNING: "#ebcb8b",
                 logging.ERROR: "#bf616a", logging.CRITICAL: "#ff5555"}
MAX_LINES = 5000
OPEN_LINES = 12          # the console opens at least this many text lines high


class LogConsole(QDockWidget):
    def __init__(self, relay: QtLogRelay, parent: QWidget | None = None):
        super().__init__("Log", parent)
        self.setObjectName("logConsole")
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.level_box = QComboBox()
        for name in ("DEBUG", "INFO", "WARNING", "ERROR"):
            self.level_box.addItem(name, getattr(logging, name))
        self.level_box.setCurrentIndex(1)
        self.level_box.setToolTip("Show lines of this level and above")
        self.level_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        widest = max(self.level_box.fontMetrics().horizontalAdvance(self.level_box.itemText(i))
                     for i in range(self.level_box.count()))
        self.level_box.setMinimumWidth(widest + 56)      # text, padding and the arrow: never elided
        self.records: deque[tuple[int, str]] = deque(maxlen=MAX_LINES)
        clear = QPushButton("Clear")
        bar.addWidget(self.level_box)
        bar.addStretch(1)
        bar.addWidget(clear)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LINES)
        self.text.setObjectName("logText")
        layout.addLayout(bar)
        layout.addWidget(self.text)
        self.setWidget(body)
        clear.clicked.connect(self.clear)
        self.level_box.currentIndexChanged.connect(lambda _i: self._show_records())
        relay.record.connect(self.append)
        self.badge = LogBadge(self)
        relay.record.connect(self.badge.note)
        self.visibilityChanged.connect(lambda visible: self.badge.reset() if visible else None)

    def install(self, window: QMainWindow) -> None:
        """Put the badge on ``window``'s status bar and start hidden (the badge opens it)."""
        window.statusBar().addPermanentWidget(self.badge)
        self.hide()

    def open_console(self) -> None:
        """Show the console at a readable height, scrolled to the newest line; opened while the badge
        counts warnings or errors, it shows those (the level filter set to WARNING)."""
        if self.badge.count and self.level_box.currentData() < logging.WARNING:
            self.level_box.setCurrentIndex(self.level_box.findData(logging.WARNING))
        self.show()
        self.raise_()
        self.badge.reset()
        window = self.parentWidget()
        if isinstance(window, QMainWindow) and window.dockWidgetArea(self) in (
                Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea):
            want = min(self.open_height(), int(0.45 * window.height()))
            if self.height() < want:
                window.resizeDocks([self], [want], Qt.Orientation.Vertical)
        self.scroll_to_newest()

    def open_height(self) -> int:
        """Pixels for :data:`OPEN_LINES` lines of text plus the filter row and the dock's title."""
        line = self.text.fontMetrics().lineSpacing()
        return OPEN_LINES * line + self.level_box.sizeHint().height() + 48

    def scroll_to_newest(self) -> None:
        bar = self.text.verticalScrollBar()
        bar.setValue(bar.maximum())

    def append(self, level: int, message: str) -> None:
        self.records.append((level, message))
        if level >= self.level_box.currentData():
            self._write(level, message)
            self.scroll_to_newest()

    def clear(self) -> None:
        self.records.clear()
        self.text.clear()

    def _write(self, level: int, message: str) -> None:
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(LEVEL_COLOURS.get(level, "#d8dee9")))
        cursor = self.text.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        cursor.insertText(message + "\n", fmt)

    def _show_records(self) -> None:
        """Write the kept lines again through the current level filter (newest in view)."""
        threshold = self.level_box.currentData()
        self.text.clear()
        for level, message in self.records:
            if level >= threshold:
                self._write(level, message)
        self.scroll_to_newest()

    def plain_text(self) -> str:
        return self.text.toPlainText()


class LogBadge(QToolButton):
    """"Log" on the status bar; while the console is hidden it counts new warnings and errors
    ("⚠ 3", red once an error is among them). A click opens the console."""

    def __init__(self, console: LogConsole):
        super().__init__()
        self.setObjectName("logBadge")
        self.setAutoRaise(True)
        self.console = console
        self.warnings = 0
        self.errors = 0
        self.clicked.connect(console.open_console)
        self._update()

    @property
    def count(self) -> int:
        return self.warnings + self.errors

    def note(self, level: int, _message: str = "") -> None:
        if level < logging.WARNING or self.console.isVisible():
            return
        if level >= logging.ERROR:
            self.errors += 1
        else:
            self.warnings += 1
        self._update()

    def reset(self) -> None:
        self.warnings = self.errors = 0
        self._update()

    def _update(self) -> None:
        if not self.count:
            self.setText("Log")
            self.setToolTip("Open the log console (Ctrl+L)")
            self.setStyleSheet("")
            return
        self.setText(f"⚠ {self.count}")
        parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((self.errors, "error"),
                                                                      (self.warnings, "warning")) if n]
        self.setToolTip(f"{' and '.join(parts)} since the log console was last open: click to open it")
        colour = LEVEL_COLOURS[logging.ERROR if self.errors else logging.WARNING]
        self.setStyleSheet(f"QToolButton#logBadge {{ color: {colour}; font-weight: bold; }}")
