"""The Qt-free job protocol."""

from __future__ import annotations

import threading
import time

import pytest

from engine.jobs import JobCancelled, ProgressSpan, ThreadJobContext, run_job


def test_run_job_returns_the_result_and_forwards_progress():
    updates = []

    def job(ctx):
        ctx.progress(0.0, "start")
        time.sleep(0.06)
        ctx.progress(0.5, "half", {"loss": 0.25})
        ctx.progress(1.0, "done")
        return "result"

    assert run_job(job, on_progress=updates.append) == "result"
    assert [u.message for u in updates] == ["start", "half", "done"]
    assert updates[1].metrics == {"loss": 0.25}


def test_progress_fraction_is_clamped_and_final_update_always_passes():
    updates = []
    ctx = ThreadJobContext(on_progress=updates.append, min_interval=10.0)
    ctx.progress(-1.0, "a")
    ctx.progress(0.3, "dropped: too soon")
    ctx.progress(7.0, "final")
    assert [u.fraction for u in updates] == [0.0, 1.0]
    assert ctx.last_update.message == "final"


def test_cancellation_raises_at_the_next_check():
    event = threading.Event()
    checks = []

    def job(ctx):
        while True:
            checks.append(1)
            ctx.check_cancelled()
            if len(checks) == 5:
                event.set()

    with pytest.raises(JobCancelled):
        run_job(job, cancel_event=event)
    assert len(checks) == 6


def test_a_progress_span_maps_a_part_into_its_slice_of_the_parent():
    seen = []

    class Parent:
        cancelled = False

        def progress(self, fraction, message="", metrics=None):
            seen.append((fraction, message, metrics))

        def check_cancelled(self):
            raise JobCancelled("stop")

    span = ProgressSpan(Parent(), 0.2, 0.6, label="lambda=0.1")
    span.progress(0.5, "epoch 5/10", {"loss": 1.0})
    span.progress(2.0, "over")          # clamped to the part's end
    span.progress(None, "unknown")
    assert seen == [(pytest.approx(0.4), "lambda=0.1: epoch 5/10", {"loss": 1.0}),
                    (pytest.approx(0.6), "lambda=0.1: over", None), (None, "lambda=0.1: unknown", None)]
    capped = ProgressSpan(Parent(), 0.5, 1.0, ceiling=0.99)
    capped.progress(1.0, "last epoch")
    assert seen[-1] == (0.99, "last epoch", None)
    assert not span.cancelled
    with pytest.raises(JobCancelled):
        span.check_cancelled()
