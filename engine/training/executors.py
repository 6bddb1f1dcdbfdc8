"""Where sweep runs execute: an executor maps a picklable function over tasks.

- ``inline``: in the calling thread, one after another (progress of each run is forwarded);
- ``local`` (default): a pool of local processes (spawned, one torch thread each);
- ``ray``: remote tasks on a Ray cluster (the optional ``cluster`` extra), one CPU and one
  torch thread each; see :mod:`engine.training.ray_executor`.

Interface: ``executor.run(fn, tasks, on_done, ctx)`` calls ``fn(task)`` for every task and
``on_done(index, result)`` as each finishes; it checks ``ctx`` for cancellation at least
every 100 ms and stops the remaining work when cancelled. A task that raises ends the run
with :class:`TaskFailed`, which names the task (the original error is its ``__cause__``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from engine.jobs import JobContext, NullJobContext
from engine.training.executor_base import POLL_SECONDS, TaskFailed, describe_task

__all__ = ["EXECUTORS", "InlineExecutor", "LocalProcessExecutor", "TaskFailed", "describe_task",
           "get_executor"]

class InlineExecutor:
    name = "inline"

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], on_done, ctx: JobContext | None = None):
        ctx = ctx or NullJobContext()
        for i, task in enumerate(tasks):
            ctx.check_cancelled()
            try:
                result = fn(task)
            except Exception as exc:
                raise TaskFailed(i, task, exc) from exc
            on_done(i, result)


def _init_worker(threads: int):
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    import torch

    torch.set_num_threads(threads)


class LocalProcessExecutor:
    """A spawned process pool; ``workers`` defaults to the number of CPU cores."""

    name = "local"

    def __init__(self, workers: int | None = None, threads_per_worker: int = 1):
        self.workers = max(1, int(workers or os.cpu_count() or 1))
        self.threads = threads_per_worker

    def run(self, fn, tasks, on_done, ctx: JobContext | None = None):
        ctx = ctx or NullJobContext()
        if not tasks:
            return
        pool = mp.get_context("spawn").Pool(min(self.workers, len(tasks)), initializer=_init_worker,
                                            initargs=(self.threads,))
        try:
            pending = {i: pool.apply_async(fn, (task,)) for i, task in enumerate(tasks)}
            while pending:
                ctx.check_cancelled()
                for i in [i for i, r in pending.items() if r.ready()]:
                    try:
                        result = pending.pop(i).get()
                    except Exception as exc:
                        raise TaskFailed(i, tasks[i], exc) from exc
                    on_done(i, result)
                time.sleep(POLL_SECONDS)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()


def _ray_executor(address: str | None = None, workers: int | None = None, **kw):
    from engine.training.ray_executor import RayExecutor

    return RayExecutor(address=address, max_in_flight=workers)


EXECUTORS: dict[str, Callable[..., Any]] = {"inline": lambda **kw: InlineExecutor(),
             "local": lambda workers=None, **kw: LocalProcessExecutor(workers),
             "ray": _ray_executor}


def get_executor(name: str = "local", **kwargs):
    """Build the executor ``name`` (a key of :data:`EXECUTORS`); options it does not use are ignored.

    ``workers``: local processes (``local``) or runs in flight at once (``ray``, default: all,
    the cluster's CPUs bound it); ``address``: the Ray cluster (``ray`` only).
    """
    try:
        factory = EXECUTORS[name]
    except KeyError:
        raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}") from None
    return factory(**kwargs)
