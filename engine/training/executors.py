"""Where sweep runs execute: an executor maps a picklable function over tasks.

- ``inline``: in the calling thread, one after another (progress of each run is forwarded);
- ``local`` (default): a pool of local processes (spawned, one torch thread each).

More executors (e.g. a cluster) register in :data:`EXECUTORS` with the same ``run`` method.

Interface: ``executor.run(fn, tasks, on_done, ctx)`` calls ``fn(task)`` for every task and
``on_done(index, result)`` as each finishes; it checks ``ctx`` for cancellation at least
every 100 ms and stops the remaining work when cancelled.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any, Callable, Sequence

from engine.jobs import JobContext, NullJobContext

__all__ = ["InlineExecutor", "LocalProcessExecutor", "get_executor", "EXECUTORS"]


class InlineExecutor:
    name = "inline"

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], on_done, ctx: JobContext | None = None):
        ctx = ctx or NullJobContext()
        for i, task in enumerate(tasks):
            ctx.check_cancelled()
            on_done(i, fn(task))


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
                    on_done(i, pending.pop(i).get())
                time.sleep(0.05)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()


EXECUTORS = {"inline": lambda **kw: InlineExecutor(),
             "local": lambda workers=None, **kw: LocalProcessExecutor(workers)}


def get_executor(name: str = "local", **kwargs):
    try:
        factory = EXECUTORS[name]
    except KeyError:
        raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}") from None
    return factory(**kwargs)
