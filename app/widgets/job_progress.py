"""One job at a time for a panel, mirrored on its progress bar, cancel button and summary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton

from app.errors import job_title
from app.widgets.text import error_html


def show_fraction(bar: QProgressBar, fraction: float | None, text: str) -> None:
    """A job's progress on ``bar``: ``fraction`` in [0, 1], or None for a busy indicator; ``text``
    on the bar."""
    if fraction is None:
        bar.setRange(0, 0)
    else:
        bar.setRange(0, 1000)
        bar.setValue(int(1000 * fraction))
    bar.setFormat(text)


class PanelJob(QObject):
    """Runs a panel's jobs through ``ctx.jobs``. A newer job cancels and supersedes an older
    one, whose late callbacks are then ignored. Errors go to the summary label (in red) and
    to ``ctx.show_error``; ``busy`` says when a job starts and ends."""

    busy = Signal(bool)

    def __init__(self, ctx, progress: QProgressBar, cancel_button: QPushButton,
                 summary: QLabel | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.progress = progress
        self.cancel_button = cancel_button
        self.summary = summary
        self.handle = None

    @property
    def is_running(self) -> bool:
        return self.handle is not None and self.handle.is_running

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()

    def start(self, job: Callable, name: str, on_result: Callable[[Any], None]) -> None:
        if self.is_running:
            self.handle.cancel()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat(name)
        self.cancel_button.setEnabled(True)
        self.busy.emit(True)
        holder: list = []   # this job's handle, to tell it from a newer job's

        def current() -> bool:
            return bool(holder) and self.handle is holder[0]

        def on_progress(update):
            if not current():
                return
            show_fraction(self.progress, update.fraction, f"{name}: {update.message}" if update.message else name)

        def finish(label: str) -> bool:
            if not current():
                return False
            self.handle = None
            self.cancel_button.setEnabled(False)
            self.progress.setRange(0, 1000)
            self.progress.setFormat(label)
            self.busy.emit(False)
            return True

        def on_error(message: str, tb: str) -> None:
            if finish("failed"):
                if self.summary is not None:
                    self.summary.setText(error_html(message))
                self.ctx.show_error(f"{job_title(name)} failed", message)

        def on_done(result) -> None:
            if finish("done"):
                self.progress.setValue(1000)
                on_result(result)

        self.handle = self.ctx.jobs.submit(job, name=name, on_result=on_done, on_error=on_error,
                                           on_progress=on_progress, on_cancelled=lambda: finish("cancelled"))
        holder.append(self.handle)
