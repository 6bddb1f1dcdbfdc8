"""Helpers shared by the log tests."""

from __future__ import annotations

import pytest


class RecordingContext:
    """A job context that records every progress call and can cancel after ``cancel_after`` calls."""

    def __init__(self, cancel_after: int | None = None):
        self.updates: list[tuple[float | None, str]] = []
        self.cancel_after = cancel_after
        self.checks = 0

    def progress(self, fraction, message="", metrics=None):
        self.updates.append((fraction, message))

    @property
    def cancelled(self) -> bool:
        return self.cancel_after is not None and len(self.updates) >= self.cancel_after

    def check_cancelled(self):
        from engine.jobs import JobCancelled

        self.checks += 1
        if self.cancelled:
            raise JobCancelled("cancelled by the test")


@pytest.fixture
def recording_context():
    return RecordingContext
