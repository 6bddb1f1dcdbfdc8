"""What every sweep executor shares (local pool, inline, Ray): the task naming and the failure type.

Both :mod:`engine.training.executors` and :mod:`engine.training.ray_executor` import this module;
neither imports the other at module level.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["POLL_SECONDS", "TaskFailed", "describe_task"]

POLL_SECONDS = 0.05  # how often executors look for finished work and for a cancel (rule: <= 100 ms)


def describe_task(task: Any) -> str:
    """A short human name for a task: its ``name``, a sweep run's model/N/seed, or its repr."""
    if isinstance(task, Mapping):
        if "name" in task:
            return str(task["name"])
        config = task.get("config")
        if isinstance(config, Mapping) and "model" in config:
            keys = ("model", "system", "trajectories", "seed")
            return " ".join(f"{k}={config[k]}" for k in keys if k in config)
    text = repr(task)
    return text if len(text) <= 120 else text[:117] + "..."


class TaskFailed(RuntimeError):
    """A task raised; ``index`` and ``task`` say which one, ``__cause__`` holds the original error."""

    def __init__(self, index: int, task: Any, cause: BaseException | str):
        self.index, self.task = index, task
        detail = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        super().__init__(f"task {index} ({describe_task(task)}) failed: {detail}")
