"""A million-row CSV loads as a job with progress, and cancelling stops it."""

from __future__ import annotations

import numpy as np
import pytest

from engine.jobs import JobCancelled, run_job
from engine.logs import load_log_job


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    n = 1_000_000
    path = tmp_path_factory.mktemp("big") / "big.csv"
    i = np.arange(n)
    body = "\n".join(map("{},{}".format, i.tolist(), (i % 97).tolist()))
    path.write_text("# a million rows\nt_ms,count\n" + body + "\n")
    return path, n


def test_million_rows_load_with_progress(big_csv, recording_context):
    path, n = big_csv
    ctx = recording_context()
    table = load_log_job(path)(ctx)
    assert table.n_rows == n
    np.testing.assert_array_equal(table["t_ms"][[0, 1, n - 1]], [0, 1, n - 1])
    np.testing.assert_array_equal(table["count"][-3:], np.arange(n - 3, n) % 97)
    assert table.line_of(n - 1) == n + 2
    fractions = [f for f, _ in ctx.updates if f is not None]
    assert len(fractions) >= 5 and fractions == sorted(fractions) and fractions[-1] == 1.0
    assert ctx.checks >= 5  # cancellation was checked between blocks


def test_cancelling_the_load(big_csv, recording_context):
    path, _ = big_csv
    ctx = recording_context(cancel_after=2)
    with pytest.raises(JobCancelled):
        load_log_job(path)(ctx)
    assert len(ctx.updates) == 2


def test_cancel_event_through_run_job(big_csv):
    import threading

    path, _ = big_csv
    event = threading.Event()
    seen = []

    def on_progress(update):
        seen.append(update)
        event.set()  # cancel as soon as the first progress arrives

    with pytest.raises(JobCancelled):
        run_job(load_log_job(path), on_progress=on_progress, cancel_event=event)
    assert len(seen) == 1
