"""The one error type of the log engine: a ``ValueError`` that names file, line and column."""

from __future__ import annotations

import os

__all__ = ["LogError"]


class LogError(ValueError):
    """A log that cannot be read, mapped or prepared.

    The message names the file and, where known, the 1-based ``line`` of the file and the
    ``column`` (its name, or its 1-based index when the header is not known). The same facts
    are kept as attributes so a GUI can point at them.
    """

    def __init__(self, message: str, *, path: str | os.PathLike | None = None,
                 line: int | None = None, column: str | int | None = None, setting: str | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.column = column if setting is None else setting
        self.setting = setting
        self.reason = message
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"line {line}")
        if setting is not None:  # a preparation setting: named as the field and its flag
            where.append(f"setting {setting!r} (--{setting.replace('_', '-')})")
        elif column is not None:
            where.append(f"column {column!r}" if isinstance(column, str) else f"column {column}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
