"""Plain observer callbacks for the workspaces' Qt-free state objects (napari's ``events``, small).

``events = Events("mode", "progress")``; ``events.mode.connect(fn)``; ``events.mode.emit(value)``
calls every connected ``fn(value)`` in order. No Qt: state objects stay testable without a window.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Event", "Events"]


class Event:
    """One kind of change; ``connect(fn)`` / ``disconnect(fn)`` / ``emit(*args)``."""

    def __init__(self, name: str):
        self.name = name
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> Callable:
        self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        for callback in list(self._callbacks):
            callback(*args)


class Events:
    """A namespace of :class:`Event` by name."""

    def __init__(self, *names: str):
        for name in names:
            setattr(self, name, Event(name))
