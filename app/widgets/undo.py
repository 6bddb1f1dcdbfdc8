"""The one undo history of the workspaces' Qt-free state objects (a linear list of changes).

A change is any object with a ``text`` (what the Undo/Redo menu entries say); :class:`Change`
is the plain one (``before`` and ``after`` values of one thing). The state decides what undoing
and redoing a change mean: ``undo()`` returns the change to revert (restore its ``before``),
``redo()`` the change to apply again (its ``after``). A new change drops the redo branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Change", "UndoHistory"]


@dataclass(frozen=True)
class Change:
    """One undoable change: ``text`` for the menus, the value ``before`` and ``after`` it."""

    text: str
    before: Any
    after: Any


class UndoHistory:
    """A linear undo history of changes (objects with a ``text``)."""

    def __init__(self) -> None:
        self._changes: list = []
        self._index = 0          # changes[:index] are done

    def push(self, change) -> None:
        """Record a change that has just been made (the redo branch is dropped)."""
        del self._changes[self._index:]
        self._changes.append(change)
        self._index += 1

    def clear(self) -> None:
        self._changes.clear()
        self._index = 0

    @property
    def can_undo(self) -> bool:
        return self._index > 0

    @property
    def can_redo(self) -> bool:
        return self._index < len(self._changes)

    @property
    def undo_text(self) -> str:
        return self._changes[self._index - 1].text if self.can_undo else ""

    @property
    def redo_text(self) -> str:
        return self._changes[self._index].text if self.can_redo else ""

    def undo(self):
        """The change to revert (None when there is none); it becomes the next redo."""
        if not self.can_undo:
            return None
        self._index -= 1
        return self._changes[self._index]

    def redo(self):
        """The change to make again (None when there is none)."""
        if not self.can_redo:
            return None
        self._index += 1
        return self._changes[self._index - 1]

    def __len__(self) -> int:
        return len(self._changes)
