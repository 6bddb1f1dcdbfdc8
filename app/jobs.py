"""Run engine jobs on a QThreadPool and relay their progress to the UI thread.

``JobRunner.submit(job, name=...)`` returns a :class:`JobHandle` (a QObject living on the
UI thread) whose signals ``progress(ProgressUpdate)``, ``finished(result)``,
``failed(message, traceback)``, ``cancelled()`` and ``ended()`` are delivered through
queued connections. Progress is throttled to about 20 updates a second by the engine's
:class:`~engine.jobs.ThreadJobContext`. ``handle.cancel()`` asks the job to stop; the job
ends at its next ``check_cancelled()``.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from app.device_preference import preferred_threads
from app.errors import describe_exception, is_user_error, job_title, remember_details
from engine.jobs import JobCancelled, ProgressUpdate, ThreadJobContext
from engine.threads import job_threads

log = logging.getLogger(__name__)

__all__ = ["JobHandle", "JobRunner"]


class JobHandle(QObject):
    """The UI thread's view of one running job."""

    progress = Signal(object)          # ProgressUpdate
    finished = Signal(object)          # result
    failed = Signal(str, str)          # message, formatted traceback
    cancelled = Signal()
    ended = Signal()                   # after any of the three above
    # internal, emitted from the worker thread, delivered queued to this object's thread
    _relay_progress = Signal(object)
    _relay_done = Signal(str, object, object)

    def __init__(self, job_id: int, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self.id = job_id
        self.name = name
        self.state = "queued"          # queued, running, finished, failed, cancelled
        self.result: Any = None
        self.error: str | None = None
        self.user_error = False        # a failure caused by the user's input (ValueError family)
        self.last_progress: ProgressUpdate | None = None
        self.error_handled = False     # True when the submitter handles failures itself
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self._cancel_event = threading.Event()
        self._relay_progress.connect(self._on_progress)
        self._relay_done.connect(self._on_done)

    @property
    def is_running(self) -> bool:
        return self.state in ("queued", "running")

    def cancel(self) -> None:
        """Ask the job to stop at its next cancellation check."""
        if self.is_running:
            log.info("cancelling job %r", self.name)
            self._cancel_event.set()

    @Slot(object)
    def _on_progress(self, update: ProgressUpdate) -> None:
        if not self.is_running:
            return
        self.state = "running"
        self.last_progress = update
        self.progress.emit(update)

    @Slot(str, object, object)
    def _on_done(self, kind: str, payload: Any, tb: Any) -> None:
        self.ended_at = time.monotonic()
        self.state = kind
        if kind == "finished":
            self.result = payload
            self.finished.emit(payload)
        elif kind == "cancelled":
            self.cancelled.emit()
        else:
            message, user_error = payload
            self.error = message
            self.user_error = user_error
            remember_details(message, str(tb))
            if user_error:  # the user's mistake: one line, no traceback in the console
                log.warning("%s: %s", job_title(self.name), message)
            else:
                log.error("%s failed: %s\n%s", job_title(self.name), message, tb)
            self.failed.emit(message, str(tb))
        self.ended.emit()

    def summary(self) -> str:
        """One line for the log console: what ran, how it ended, how long it took."""
        took = ""
        if self.started_at is not None and self.ended_at is not None:
            took = f" in {self.ended_at - self.started_at:.1f} s"
        what = job_title(self.name)
        if self.state == "finished":
            return f"{what}: done{took}"
        if self.state == "cancelled":
            return f"{what}: cancelled{took}"
        return f"{what}: failed{took}: {self.error}"


class _JobRunnable(QRunnable):
    def __init__(self, job: Callable, handle: JobHandle):
        super().__init__()
        self.setAutoDelete(True)
        self._job = job
        self._handle = handle

    def run(self) -> None:  # worker thread
        handle = self._handle
        handle.started_at = time.monotonic()
        ctx = ThreadJobContext(on_progress=handle._relay_progress.emit,
                               cancel_event=handle._cancel_event)
        try:
            ctx.check_cancelled()
            handle._relay_progress.emit(ProgressUpdate(0.0, "started"))
            with job_threads(preferred_threads()):
                result = self._job(ctx)
        except JobCancelled:
            handle._relay_done.emit("cancelled", None, None)
        except BaseException as exc:  # noqa: BLE001 - a job's failure is reported, never raised here
            message = describe_exception(exc)  # plain words, no class names (app/errors.py)
            handle._relay_done.emit("failed", (message, is_user_error(exc)), traceback.format_exc())
        else:
            if handle._cancel_event.is_set():
                handle._relay_done.emit("cancelled", None, None)
            else:
                handle._relay_done.emit("finished", result, None)


class JobRunner(QObject):
    """Submits jobs to a thread pool; several run at once. Lives on the UI thread."""

    job_started = Signal(object)   # JobHandle
    job_ended = Signal(object)     # JobHandle

    def __init__(self, parent: QObject | None = None, max_threads: int | None = None):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        if max_threads:
            self._pool.setMaxThreadCount(max_threads)
        else:
            self._pool.setMaxThreadCount(max(4, self._pool.maxThreadCount()))
        self._ids = itertools.count(1)
        self._active: dict[int, JobHandle] = {}
        self._last_summary: dict[str, float] = {}

    def submit(self, job: Callable, *, name: str,
               on_result: Callable[[Any], None] | None = None,
               on_error: Callable[[str, str], None] | None = None,
               on_progress: Callable[[ProgressUpdate], None] | None = None,
               on_cancelled: Callable[[], None] | None = None) -> JobHandle:
        """Start ``job(ctx)`` in a worker thread; callbacks run on the UI thread.

        Without ``on_error``, a failure is shown by the main window in an error dialog.
        """
        handle = JobHandle(next(self._ids), name, parent=self)
        if on_result:
            handle.finished.connect(on_result)
        if on_error:
            handle.failed.connect(on_error)
            handle.error_handled = True
        if on_progress:
            handle.progress.connect(on_progress)
        if on_cancelled:
            handle.cancelled.connect(on_cancelled)
        handle.ended.connect(lambda h=handle: self._on_ended(h))
        self._active[handle.id] = handle
        self.job_started.emit(handle)
        self._pool.start(_JobRunnable(job, handle))
        return handle

    def _on_ended(self, handle: JobHandle) -> None:
        self._active.pop(handle.id, None)
        # every finished job leaves one line in the log console (failures logged their own);
        # a stream of the same job (readouts while a slider moves) only its first in 2 s
        if handle.state != "failed":
            now = time.monotonic()
            repeated = now - self._last_summary.get(handle.name, -1e9) < 2.0
            self._last_summary[handle.name] = now
            log.log(logging.DEBUG if repeated else logging.INFO, handle.summary())
        self.job_ended.emit(handle)
        handle.deleteLater()

    def active_jobs(self) -> list[JobHandle]:
        return list(self._active.values())

    def cancel_all(self) -> None:
        for handle in self.active_jobs():
            handle.cancel()

    def wait_for_done(self, msecs: int = -1) -> bool:
        """Block until the pool is idle (for shutdown and tests)."""
        return self._pool.waitForDone(msecs)
