"""The status bar's list of running jobs: a progress bar, a message and a cancel button each."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from app.errors import job_title
from app.jobs import JobHandle, JobRunner
from engine.jobs import ProgressUpdate


def format_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


# below this share a bar would look empty: the busy indicator shows the job is working
MIN_SHOWN_FRACTION = 0.01


def says_time_left(message: str) -> bool:
    """Whether a job's message already gives its time left ("…, at most 2 min 03 s left")."""
    return message.rstrip().endswith(" left")


class JobRow(QWidget):
    """One running job in the status bar."""

    def __init__(self, handle: JobHandle, parent: QWidget | None = None):
        super().__init__(parent)
        self.handle = handle
        self._started = time.monotonic()
        self.setObjectName(f"jobRow{handle.id}")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 0, 0)
        layout.setSpacing(4)
        self.name_label = QLabel(job_title(handle.name))  # what the user started, in words
        self.name_label.setObjectName("jobName")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFixedWidth(120)
        self.bar.setTextVisible(False)
        self.message_label = QLabel("queued")
        self.message_label.setObjectName("jobMessage")
        self.message_label.setMinimumWidth(160)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("✕")
        self.cancel_button.setToolTip(f"Cancel: {job_title(handle.name)}")
        self.cancel_button.setObjectName("jobCancel")
        self.cancel_button.clicked.connect(self._cancel)
        for w in (self.name_label, self.bar, self.message_label, self.cancel_button):
            layout.addWidget(w)
        handle.progress.connect(self.on_progress)

    def _cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.message_label.setText("cancelling…")
        self.handle.cancel()

    def on_progress(self, update: ProgressUpdate) -> None:
        if update.fraction is None or update.fraction < MIN_SHOWN_FRACTION:
            self.bar.setRange(0, 0)  # busy indicator: a working job's bar is never empty
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(1000 * update.fraction))
        text = update.message
        # a job that says its own time left (the car optimiser: its time per iteration) keeps it
        if update.fraction and 0.02 < update.fraction < 1.0 and not says_time_left(text):
            elapsed = time.monotonic() - self._started
            text = f"{text}  (ETA {format_eta(elapsed * (1 - update.fraction) / update.fraction)})"
        if self.cancel_button.isEnabled():
            self.message_label.setText(text)


class JobStatusWidget(QWidget):
    """Lists the runner's active jobs; rows appear on start and vanish on end."""

    def __init__(self, runner: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("jobStatus")
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.rows: dict[int, JobRow] = {}
        runner.job_started.connect(self.add_job)
        runner.job_ended.connect(self.remove_job)

    def add_job(self, handle: JobHandle) -> None:
        row = JobRow(handle, self)
        self.rows[handle.id] = row
        self._layout.addWidget(row)

    def remove_job(self, handle: JobHandle) -> None:
        row = self.rows.pop(handle.id, None)
        if row is not None:
            self._layout.removeWidget(row)
            row.deleteLater()
