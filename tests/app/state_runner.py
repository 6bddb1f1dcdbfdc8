"""A job runner without Qt for tests that drive workspace state objects directly.

``SyncRunner().submit(job, name=..., on_result=..., ...)`` runs the job at once in the calling
thread (progress reported as it goes) and calls exactly one of on_result / on_error /
on_cancelled, as the app's ``JobRunner`` does on the UI thread. ``cancel_after_progress=n``
asks the job to stop after its n-th progress report (to test cancel paths).
"""

from __future__ import annotations

import threading
import traceback

from engine.jobs import JobCancelled, ThreadJobContext


class _Handle:
    def __init__(self, name):
        self.name = name
        self.state = "running"
        self._cancel = threading.Event()

    @property
    def is_running(self):
        return self.state == "running"

    def cancel(self):
        self._cancel.set()


class SyncRunner:
    def __init__(self, cancel_after_progress: int | None = None):
        self.names: list[str] = []
        self.cancel_after_progress = cancel_after_progress

    def submit(self, job, *, name, on_result=None, on_error=None, on_progress=None, on_cancelled=None):
        self.names.append(name)
        handle = _Handle(name)
        count = [0]

        def progress(update):
            count[0] += 1
            if on_progress:
                on_progress(update)
            if self.cancel_after_progress is not None and count[0] >= self.cancel_after_progress:
                handle.cancel()

        ctx = ThreadJobContext(on_progress=progress, cancel_event=handle._cancel, min_interval=0.0)
        try:
            result = job(ctx)
        except JobCancelled:
            handle.state = "cancelled"
            if on_cancelled:
                on_cancelled()
            return handle
        except Exception as exc:  # noqa: BLE001 - delivered to on_error as the app does
            handle.state = "failed"
            if on_error:
                on_error(str(exc), traceback.format_exc())
            else:
                raise
            return handle
        handle.state = "finished"
        if on_result:
            on_result(result)
        return handle
