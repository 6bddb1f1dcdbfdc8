"""A dock that shows the app's Python log, coloured by level, with a level filter, and the
status bar's badge that counts the warnings and errors logged while the dock is hidden.

The dock starts hidden (:meth:`LogConsole.install` puts the badge on the status bar and hides
it); a click on the badge, or Ctrl+L, opens it. Third-party libraries' INFO messages never
reach it (app/logging_setup.py filters them); the log file keeps everything."""

from __future__ import annotations

import logging

from PySide6.QtGui import QColor, QTextCharFormat
from PySide6.QtWidgets import (QComboBox, QDockWidget, QHBoxLayout, QMainWindow, QPlainTextEdit,
                               QPushButton, QToolButton, QVBoxLayout, QWidget)

from app.logging_setup import QtLogRelay

LEVEL_COLOURS = {logging.DEBUG: "#8a8f98", logging.INFO: "#d8dee9", logging.WARNING: "#ebcb8b",
                 logging.ERROR: "#bf616a", logging.CRITICAL: "#ff5555"}
MAX_LINES = 5000


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
        clear.clicked.connect(self.text.clear)
        relay.record.connect(self.append)
        self.badge = LogBadge(self)
        relay.record.connect(self.badge.note)
        self.visibilityChanged.connect(lambda visible: self.badge.reset() if visible else None)

    def install(self, window: QMainWindow) -> None:
        """Put the badge on ``window``'s status bar and start hidden (the badge opens it)."""
        window.statusBar().addPermanentWidget(self.badge)
        self.hide()

    def open_console(self) -> None:
        self.show()
        self.raise_()
        self.badge.reset()

    def append(self, level: int, message: str) -> None:
        if level < self.level_box.currentData():
            return
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(LEVEL_COLOURS.get(level, "#d8dee9")))
        cursor = self.text.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        cursor.insertText(message + "\n", fmt)
        self.text.setTextCursor(cursor)
        self.text.ensureCursorVisible()

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
