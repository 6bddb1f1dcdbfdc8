"""A dock that shows the app's Python log, coloured by level, with a level filter."""

from __future__ import annotations

import logging

from PySide6.QtGui import QColor, QTextCharFormat
from PySide6.QtWidgets import (QComboBox, QDockWidget, QHBoxLayout, QPlainTextEdit, QPushButton,
                               QVBoxLayout, QWidget)

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
