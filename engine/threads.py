"""Threads per job: how many intra-op threads torch uses while a job runs (issue 33, part 2).

Every job the command line or the app runs is wrapped once, at its entry, in
:func:`job_threads` (``python -m engine ... --threads N|auto``: ``engine/cli/__init__.py``;
the app's runner: ``app/jobs.py``, with the Compute menu's preference)::

    with job_threads("auto", job="car train"):
        train_car_model(...)

Why one thread. The engine's jobs are small networks (an 8x64 car model, 64- to 256-unit
dynamics models, an eigenmode potential) or loops of small steps (MPC cycles, RK4 rollouts,
L-BFGS on a 7-DOF arm, IK). Each tensor operation is just above torch's parallel grain, so
torch opens an OpenMP region over all its threads for each, and on a machine where another
program holds a core a thread waits for a descheduled peer at every join: measured on 2 cores
with ``yes > /dev/null`` running, ``car train`` went from 18.8 s to 315 s with torch's default
(one thread per core) and took 16.5 s with one thread, faster than idle with two. The table of
every job, idle and loaded, old and new, is ``results/benchmarks/jobs.md`` (``python -m engine
bench jobs``); no job there gains from a second thread idle by more than run-to-run noise, so
``auto`` is one thread for every job kind (:data:`JOB_THREADS` keeps the per-kind choice in
one place for when one does).

Which threads it touches. torch (OpenMP build) keeps the intra-op thread count per calling
thread (OpenMP's ``nthreads-var``, MKL's ``mkl_set_num_threads_local``), plus one process-wide
value that a thread takes when it first runs parallel torch work. So a job on an app worker
thread changes its own thread and the default of threads that have not computed yet, never the
UI thread's or another running job's; it is set at each job's start and restored at its end
(on that thread), and since ``auto`` is the same for every job kind, concurrent jobs agree.
Not touched: torch's inter-op pool (only ``torch.jit.fork`` uses it, and it can be sized only
before first use), numba (the compiled rigid-body kernels are serial: no ``prange``), and the
BLAS of NumPy/SciPy (small matrices here). Spawned worker processes (``learn sweep``) set one
thread each themselves (``engine/training/executors.py``).
"""

from __future__ import annotations

import contextlib
import os

__all__ = [
    "AUTO",
    "JOB_THREADS",
    "MAX_THREADS",
    "ThreadsError",
    "job_threads",
    "parse_threads",
    "threads_for",
]

AUTO = "auto"
MAX_THREADS = 1024
DEFAULT_JOB_THREADS = 1

# job kind (the command's path on the command line) -> intra-op threads under ``auto``; a kind not
# listed gets DEFAULT_JOB_THREADS. Measured: results/benchmarks/jobs.md (python -m engine bench jobs).
JOB_THREADS: dict[str, int] = {
    "learn train": 1, "learn compare": 1, "learn sweep": 1, "learn reproduce": 1,
    "identify log": 1, "robot identify": 1, "robot ik": 1, "robot simulate": 1,
    "car train": 1, "car plan": 1, "car mpc": 1, "car select": 1,
    "eigenmode learn": 1, "eigenmode stabilise": 1, "eigenmode sweep": 1,
}


class ThreadsError(ValueError):
    """A thread count that is neither a whole number from 1 nor ``auto`` (a user error)."""


def parse_threads(value, flag: str = "--threads") -> int | str:
    """``auto`` or a whole number of threads in [1, MAX_THREADS]; else :class:`ThreadsError`
    naming ``flag`` and what to give."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_THREADS:
        raise ThreadsError(
            f"{flag} {value}: give a whole number of threads from 1 to {MAX_THREADS} "
            f"(this machine has {os.cpu_count() or 1} cores), or auto (one per job: measured fastest)"
        )
    return n


def threads_for(job: str | None = None, threads: int | str | None = AUTO) -> int:
    """The intra-op thread count a job runs with: ``threads`` when it is a number, else the
    measured choice for ``job`` (:data:`JOB_THREADS`, default one)."""
    choice = AUTO if threads is None else parse_threads(threads)
    if choice != AUTO:
        return int(choice)
    return JOB_THREADS.get(job or "", DEFAULT_JOB_THREADS)


@contextlib.contextmanager
def job_threads(threads: int | str | None = AUTO, job: str | None = None):
    """Run the body (``with``) or the decorated function with :func:`threads_for` ``(job, threads)``
    torch intra-op threads on this thread, and restore this thread's count after, also on error.
    Yields the count. Each use (or decorated call) is independent, so it nests and is thread-safe."""
    import torch

    n = threads_for(job, threads)
    previous = torch.get_num_threads()
    if previous != n:
        torch.set_num_threads(n)
    try:
        yield n
    finally:
        if (
            torch.get_num_threads() != previous
        ):  # also undoes a job that set its own (trainer's config.threads)
            torch.set_num_threads(previous)
