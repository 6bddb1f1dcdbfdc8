"""The job protocol: long work that reports progress and can be cancelled (no Qt here).

A *job* is any callable ``job(ctx) -> result``. It calls ``ctx.progress(fraction, message,
metrics)`` now and then (the context throttles to about 20 updates a second) and
``ctx.check_cancelled()`` at least every 100 ms, which raises :class:`JobCancelled` once a
cancel was asked for. It returns its result or raises; the runner (``app/jobs.py`` in the
GUI, :func:`run_job` on the command line) delivers either.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "JobCancelled",
    "JobContext",
    "Job",
    "ProgressUpdate",
    "ThreadJobContext",
    "NullJobContext",
    "ProgressSpan",
    "run_job",
    "StderrProgress",
]

DEFAULT_MIN_INTERVAL = 0.05  # seconds between forwarded progress updates (20 per second)


class JobCancelled(Exception):
    """Raised by :meth:`JobContext.check_cancelled` when the job was asked to stop."""


@dataclass(frozen=True)
class ProgressUpdate:
    """One progress report: ``fraction`` in [0, 1] (or None when unknown)."""

    fraction: float | None
    message: str = ""
    metrics: Mapping[str, float] | None = None
    time: float = field(default_factory=time.monotonic)


class JobContext(Protocol):
    """What a job sees of its runner."""

    def progress(self, fraction: float | None, message: str = "",
                 metrics: Mapping[str, float] | None = None) -> None: ...

    def check_cancelled(self) -> None: ...

    @property
    def cancelled(self) -> bool: ...


Job = Callable[[JobContext], Any]


class ThreadJobContext:
    """A thread-safe context: a cancel event plus a throttled progress callback.

    ``on_progress(update)`` is called from the job's thread, at most once every
    ``min_interval`` seconds, except that the first update, a final ``fraction >= 1``
    and any update carrying new metrics after a quiet period always pass.
    """

    def __init__(self, on_progress: Callable[[ProgressUpdate], None] | None = None,
                 cancel_event: threading.Event | None = None,
                 min_interval: float = DEFAULT_MIN_INTERVAL):
        self._on_progress = on_progress
        self._cancel = cancel_event or threading.Event()
        self._min_interval = min_interval
        self._last_sent = -float("inf")
        self._lock = threading.Lock()
        self.last_update: ProgressUpdate | None = None

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise JobCancelled("cancelled by the user")

    def progress(self, fraction: float | None, message: str = "",
                 metrics: Mapping[str, float] | None = None) -> None:
        if fraction is not None:
            fraction = min(max(float(fraction), 0.0), 1.0)
        update = ProgressUpdate(fraction, message, dict(metrics) if metrics else None)
        with self._lock:
            self.last_update = update
            now = update.time
            final = fraction is not None and fraction >= 1.0
            if not final and now - self._last_sent < self._min_interval:
                return
            self._last_sent = now
        if self._on_progress is not None:
            self._on_progress(update)


class NullJobContext(ThreadJobContext):
    """A context that reports nothing and is never cancelled: for plain function calls."""

    def __init__(self):
        super().__init__(on_progress=None)


class ProgressSpan:
    """A job context for one part of a longer job: the part's fractions (clamped to [0, 1]) are
    mapped into ``[lo, hi]`` of the parent's, its messages prefixed with ``label`` (``"label: msg"``)
    when one is given, and never above ``ceiling`` (a part that is not the job's end stays below
    1, the fraction that always passes the throttle and ends a terminal's progress line).
    Cancellation is the parent's."""

    def __init__(self, ctx: JobContext, lo: float, hi: float, label: str = "", ceiling: float = 1.0):
        self.ctx, self.lo, self.hi, self.label, self.ceiling = ctx, lo, hi, label, ceiling

    def progress(self, fraction: float | None, message: str = "",
                 metrics: Mapping[str, float] | None = None) -> None:
        f = (
            None
            if fraction is None
            else min(self.lo + (self.hi - self.lo) * min(max(float(fraction), 0.0), 1.0), self.ceiling)
        )
        self.ctx.progress(f, f"{self.label}: {message}" if self.label else message, metrics)

    def check_cancelled(self) -> None:
        self.ctx.check_cancelled()

    @property
    def cancelled(self) -> bool:
        return self.ctx.cancelled


class StderrProgress:
    """Progress printer for the CLI: one rewritten line on a terminal, sparse lines otherwise."""

    def __init__(self, stream=None, every: float = 1.0):
        self.stream = stream or sys.stderr
        self.every = every
        self._last = -float("inf")
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, update: ProgressUpdate) -> None:
        if not self._tty and update.time - self._last < self.every and (update.fraction or 0) < 1:
            return
        self._last = update.time
        pct = "" if update.fraction is None else f"{100 * update.fraction:5.1f}% "
        metrics = ""
        if update.metrics:
            metrics = " " + " ".join(f"{k}={v:.4g}" for k, v in update.metrics.items()
                                     if isinstance(v, (int, float)))
        line = f"{pct}{update.message}{metrics}"
        if self._tty:
            self.stream.write("\r\x1b[K" + line)
            if (update.fraction or 0) >= 1:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def run_job(job: Job, *, on_progress: Callable[[ProgressUpdate], None] | None = None,
            cancel_event: threading.Event | None = None) -> Any:
    """Run ``job`` synchronously in this thread (the CLI's runner) and return its result."""
    ctx = ThreadJobContext(on_progress=on_progress, cancel_event=cancel_event)
    return job(ctx)
