"""What a person reads when something fails: the one place that turns an exception into a message.

Used by the command line (engine/cli) and the app (app/errors.py). Two kinds of failure:

- a **user error** (:func:`is_user_error`): bad input the user can fix, i.e. the ``ValueError``
  family (every engine error class derives from it) and the file errors (not found, permission,
  a folder where a file is meant). It gets one plain line naming the file, field or flag;
- an **internal error** (anything else): one line, and the traceback goes to a log file in the
  user's log folder (:func:`log_directory`).

A bad value is an :class:`engine.validation.InputError` raised where it is found (owner, field,
reason): the app shows its text, which names the field (``epochs: must be ...``), and the command
line names the flag that sets the field instead (``--epochs: must be ...``, from the command's
parser). Messages never start with Python class names: ``LogError: x`` becomes ``x``.
"""

from __future__ import annotations

import datetime
import os
import re
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

from engine.validation import InputError

__all__ = ["USER_ERRORS", "is_user_error", "user_message", "plain", "log_directory", "write_traceback"]

USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError, FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError)

_FILE_PROBLEMS = {
    FileNotFoundError: "not found; check the path",
    PermissionError: "permission denied; check its permissions or choose another place",
    IsADirectoryError: "is a folder where a file is expected; name a file",
    NotADirectoryError: "part of this path is a file where a folder is expected; check the path",
    FileExistsError: "already exists; choose another name or remove it first",
}
# "LogError: ", "engine.logs.errors.LogError: ", "ValueError: " at the start of a message
_CLASS_PREFIX = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Exit)\s*:\s*")


def is_user_error(exc: BaseException) -> bool:
    """True for bad input the user can fix (see the module's docstring)."""
    return isinstance(exc, USER_ERRORS)


def plain(text: str) -> str:
    """``text`` without leading class names (``"LogError: x.csv: ..."`` -> ``"x.csv: ..."``)."""
    previous = None
    while previous != text:
        previous, text = text, _CLASS_PREFIX.sub("", text, count=1)
    return text


def user_message(exc: BaseException, fields: Mapping[str, str] | None = None, one_line: bool = True) -> str:
    """The plain-language message of ``exc`` (its file, field or flag and what to do). ``fields``:
    field or option name -> the command-line flag that sets it; a bad value's message then names
    the flag (:meth:`engine.validation.InputError.message`)."""
    if isinstance(exc, InputError):
        text = exc.message(fields)
    elif isinstance(exc, OSError) and exc.filename is not None:
        problem = next((text for kind, text in _FILE_PROBLEMS.items() if isinstance(exc, kind)),
                       (exc.strerror or "cannot be used").lower())
        text = f"{os.fsdecode(exc.filename)}: {problem}"
    else:
        text = str(exc).strip()
        if isinstance(exc, KeyError) and text.startswith("'"):
            text = f"missing entry {text}"
        if not text:
            text = _describe_class(type(exc))
    text = plain(text)
    if one_line:
        text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    return text


def _describe_class(kind: type) -> str:
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", kind.__name__.removesuffix("Error")).lower().strip()
    return f"{words or 'unknown'} error"


def log_directory() -> Path:
    """The user's log folder (``LAGRANGE_LOG_DIR`` overrides it): the app's log and the
    command line's tracebacks are written there."""
    override = os.environ.get("LAGRANGE_LOG_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_log_dir("lagrange-studio", "Lagrange Studio"))


def write_traceback(exc: BaseException, name: str = "engine-cli.log", context: str = "",
                    max_bytes: int = 2_000_000) -> Path | None:
    """Append ``exc``'s traceback (with ``context``, e.g. the command line) to ``name`` in the
    log folder; the path, or None when the folder cannot be written."""
    try:
        directory = log_directory()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        if path.exists() and path.stat().st_size > max_bytes:
            path.replace(path.with_name(name + ".1"))
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"--- {stamp} {context}\npython {sys.version.split()[0]}\n{details}\n")
        return path
    except OSError:
        return None
