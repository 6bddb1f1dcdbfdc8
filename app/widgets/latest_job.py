"""Run a stream of requests as jobs, only the newest: stale requests are dropped.

For work that follows the user (IK while a target is dragged, readouts while a slider
moves): at most one job runs; a request arriving meanwhile replaces any request still
waiting, and runs when the current job ends. The UI thread never waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

__all__ = ["LatestJob"]


class LatestJob(QObject):
    """``submit(make_job)`` calls ``make_job()`` and runs the job it returns via the JobRunner
    unless one is running, in which case ``make_job`` becomes the pending request (replacing
    an older pending one, which is dropped). The job is made when it starts, so it sees the
    newest state (e.g. the pose the previous solve reached: a warm start).

    Signals: ``result(object)`` for each finished job, ``failed(str)``, ``idle()`` when
    nothing runs or waits any more. ``dropped`` counts the requests that were skipped.
    """

    result = Signal(object)
    failed = Signal(str)
    idle = Signal()

    def __init__(self, runner, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self._runner = runner
        self._name = name
        self._handle = None
        self._pending: Callable | None = None
        self.dropped = 0
        self.completed = 0

    @property
    def busy(self) -> bool:
        return self._handle is not None or self._pending is not None

    def submit(self, make_job: Callable[[], Callable[[Any], Any] | None]) -> None:
        if self._handle is not None:
            if self._pending is not None:
                self.dropped += 1
            self._pending = make_job
            return
        self._start(make_job)

    def cancel(self) -> None:
        """Drop the pending request and ask the running job to stop."""
        if self._pending is not None:
            self.dropped += 1
        self._pending = None
        if self._handle is not None:
            self._handle.cancel()

    def _start(self, make_job) -> None:
        job = make_job()
        if job is None:             # nothing to do any more (e.g. the targets were removed)
            self.idle.emit()
            return
        handle = self._runner.submit(job, name=self._name, on_result=self._on_result,
                                     on_error=self._on_error)
        handle.ended.connect(self._on_ended)
        self._handle = handle

    def _on_result(self, value) -> None:
        self.completed += 1
        self.result.emit(value)

    def _on_error(self, message: str, _traceback: str) -> None:
        self.failed.emit(message)

    def _on_ended(self) -> None:
        self._handle = None
        if self._pending is not None:
            make_job, self._pending = self._pending, None
            self._start(make_job)
        else:
            self.idle.emit()
