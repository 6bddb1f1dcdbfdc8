"""The status bar's job row (issue 32): a working job's bar is never empty, and a job that says
its own time left (the car optimiser) is not given a second, different ETA."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.widgets.job_status import JobRow
from engine.jobs import ProgressUpdate


class _Handle(QObject):
    progress = Signal(object)

    def __init__(self):
        super().__init__()
        self.id, self.name = 1, "Optimise car trajectory"

    def cancel(self):
        pass


def _row(qtbot):
    handle = _Handle()
    row = JobRow(handle)
    qtbot.addWidget(row)
    return handle, row


def test_a_job_at_its_start_shows_a_busy_bar_not_an_empty_one(qtbot):
    handle, row = _row(qtbot)
    handle.progress.emit(ProgressUpdate(0.0, "cost of the first guess (iteration 0 of at most 400)"))
    assert row.bar.maximum() == 0                       # the busy indicator
    handle.progress.emit(ProgressUpdate(0.0025, "iteration 1 of at most 400"))
    assert row.bar.maximum() == 0
    handle.progress.emit(ProgressUpdate(0.25, "iteration 100 of at most 400"))
    assert row.bar.maximum() == 1000 and row.bar.value() == 250


def test_a_job_that_says_its_time_left_keeps_it_others_get_an_eta(qtbot):
    handle, row = _row(qtbot)
    said = "iteration 100 of at most 400, 0.3 s each, at most 1 min 30 s left"
    handle.progress.emit(ProgressUpdate(0.25, said))
    assert row.message_label.text() == said
    handle.progress.emit(ProgressUpdate(0.25, "epoch 5 of 20"))
    assert row.message_label.text().startswith("epoch 5 of 20  (ETA ")
