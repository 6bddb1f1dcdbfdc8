"""Uncaught exceptions: log them, show a dialog, keep the app running."""

from __future__ import annotations

import logging
import sys
import traceback

from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

log = logging.getLogger(__name__)


def show_error_dialog(parent: QWidget | None, title: str, message: str, details: str = "") -> QMessageBox:
    """A non-blocking error dialog (``open()``, not ``exec()``): the event loop keeps running."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle(title)
    box.setText(message)
    if details:
        box.setDetailedText(details)
    box.setObjectName("errorDialog")
    box.open()
    return box


class ExceptionHook:
    """Replaces ``sys.excepthook`` (and threading's) while installed."""

    def __init__(self, parent_getter):
        self._parent_getter = parent_getter
        self._previous = sys.excepthook
        self.last_dialog: QMessageBox | None = None

    def __call__(self, exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            QApplication.quit()
            return
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("uncaught exception:\n%s", details)
        if QApplication.instance() is None:
            self._previous(exc_type, exc, tb)
            return
        message = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
        self.last_dialog = show_error_dialog(
            self._parent_getter(), "Unexpected error",
            f"{message}\n\nThe application keeps running; details are in the log.", details)

    def install(self) -> ExceptionHook:
        sys.excepthook = self
        return self

    def uninstall(self) -> None:
        if sys.excepthook is self:
            sys.excepthook = self._previous
