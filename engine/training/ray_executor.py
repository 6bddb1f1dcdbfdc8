"""Sweep runs on a Ray cluster: ``--executor ray --address ADDR`` (the optional ``cluster`` extra).

Each task is one Ray remote task that asks for one CPU and runs with one torch thread, so a
run computes the same numbers as on the local process pool. Results come back as they
finish (``ray.wait``); the job's cancel is checked every 100 ms and cancels the remaining
tasks (``ray.cancel``, which also stops the running ones); a task that raises ends the run
with :class:`~engine.training.executor_base.TaskFailed` naming it, and cancels the rest.

Connecting: ``address`` is a running cluster's GCS address (``HOST:PORT``, what ``ray start
--head`` prints), ``"auto"`` for the cluster started on this machine, or None for Ray's own
default (``RAY_ADDRESS`` if set, else a new local instance for this run). If this process is
already connected (``ray.init`` was called), that connection is used as it is and kept.

What the cluster's nodes need: this package importable by the workers' Python (the task
function is sent by reference) and the sweep's files (the data set, the output folder) on a
path every node sees, e.g. a shared file system.

A single-machine cluster bound to the loopback interface only (nothing reachable from the
network) needs ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` in the environment of both ``ray start
--head --node-ip-address=127.0.0.1`` and this process; without it Ray swaps 127.0.0.1 for the
machine's network address.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from typing import Any

from engine.jobs import JobContext, NullJobContext
from engine.training.executor_base import TaskFailed

__all__ = ["RayExecutor", "import_ray"]

WAIT_SECONDS = 0.1  # ray.wait's timeout: the longest the job goes without checking for a cancel
CONNECT_TIMEOUT_SECONDS = 5.0


def import_ray():
    """Import ray, or raise an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "the 'ray' executor needs Ray, which is not installed: install the 'cluster' extra "
            "(pip install 'lagrange-studio[cluster]', or pip install ray)") from exc
    return ray


def _call_with_one_thread(fn: Callable[[Any], Any], task: Any) -> Any:
    """Runs in a Ray worker: one torch thread (one CPU was reserved), then ``fn(task)``."""
    import os

    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    return fn(task)


class RayExecutor:
    """Remote tasks on a Ray cluster; ``max_in_flight`` bounds the runs submitted at once (None: all)."""

    name = "ray"

    def __init__(self, address: str | None = None, max_in_flight: int | None = None):
        self.address = address
        self.max_in_flight = None if max_in_flight is None else max(1, int(max_in_flight))
        import_ray()  # fail now, before a sweep generates its data, when ray is missing

    def _check_reachable(self) -> None:
        """Fail in seconds when nothing answers at ``address`` (ray.init would retry for many minutes)."""
        if not self.address or self.address == "auto" or "://" in self.address:
            return
        try:  # the address Ray will dial: it swaps a loopback host for this machine's network address
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address(self.address) or self.address
        except Exception:  # noqa: BLE001 (a private helper: if it moved or failed, dial the address as given)
            target = self.address
        host, _, port = target.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_SECONDS).close()
        except (OSError, ValueError) as exc:
            hint = ""
            if target != self.address:
                hint = (f" (Ray dials {target} for {self.address}; for a cluster bound to the loopback "
                        "interface only, set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 for `ray start` and for "
                        "this command)")
            raise ConnectionError(f"no Ray cluster answers at {self.address}{hint}: {exc}. Start one with "
                                  "`ray start --head` and pass the address it prints as --address.") from exc

    def _connect(self, ray) -> bool:
        """Connect to the cluster unless already connected; True when this call connected."""
        if ray.is_initialized():
            return False
        self._check_reachable()
        try:
            # log_to_driver=False: the workers' output stays in the cluster's logs, so that --json
            # leaves only JSON on stdout; a task's error comes back as its exception.
            ray.init(address=self.address, log_to_driver=False, configure_logging=False)
        except Exception as exc:
            where = f"at {self.address}" if self.address else "(default address)"
            raise ConnectionError(f"could not connect to the Ray cluster {where}: {exc}. Start one with "
                                  "`ray start --head` and pass the address it prints as --address.") from exc
        return True

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any], on_done, ctx: JobContext | None = None):
        ctx = ctx or NullJobContext()
        if not tasks:
            return
        ray = import_ray()
        ctx.check_cancelled()
        limit = self.max_in_flight or len(tasks)
        pending: dict[Any, int] = {}  # object ref -> task index
        next_task = 0
        connected_here = self._connect(ray)
        try:
            remote = ray.remote(num_cpus=1)(_call_with_one_thread)
            while next_task < len(tasks) or pending:
                while next_task < len(tasks) and len(pending) < limit:
                    pending[remote.remote(fn, tasks[next_task])] = next_task
                    next_task += 1
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=WAIT_SECONDS)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
                        raise TaskFailed(i, tasks[i], cause) from exc
                    except ray.exceptions.RayError as exc:  # the worker died, the node was lost...
                        raise TaskFailed(i, tasks[i], exc) from exc
                    on_done(i, result)
                ctx.check_cancelled()
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001, S110 (already finished, or the connection is gone)
                    pass
            if connected_here:
                ray.shutdown()
