"""xacro files (``.xacro``, ``.urdf.xacro``): expanded by the ``xacro`` package in a sandboxed child
process, then read as URDF.

A xacro file is a program (its ``${...}`` expressions are Python), so it is never expanded in this
process. ``expand_xacro(path, args)`` runs :mod:`engine.robots.xacro_worker` as a child process,
which evaluates every expression with a restricted interpreter (arithmetic, comparisons, strings,
the file's own properties and math functions), reads only files inside the robot's package folders,
reads no environment variables, and refuses a result over :class:`XacroLimits` (links, text size,
memory); this process stops the child after ``XacroLimits.time_s`` seconds, or as soon as the
``check_cancelled`` of :func:`xacro_cancellation` raises. Each child has its own xacro globals, so
expansions run side by side and a stuck one holds up no other.

``args`` are the ``name:=value`` arguments (``<xacro:arg>`` defaults apply to the others).
``load_xacro(path, args, ...)`` parses the text with :func:`engine.robots.urdf.parse_urdf_string`,
relative mesh names resolving from the xacro file's folder. Every failure or refusal is a one-line
:class:`URDFError` naming the file, the expression or element, and why.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.robots.description import RobotDescription
from engine.robots.urdf import URDFError, description_package_roots, parse_urdf_string

__all__ = ["XacroLimits", "expand_xacro", "load_xacro", "xacro_cancellation"]

log = logging.getLogger(__name__)

TIME_LIMIT_VARIABLE = "LAGRANGE_XACRO_TIME_LIMIT"
_POLL_S = 0.05
_WORKER = Path(__file__).with_name("xacro_worker.py")
_CANCEL: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "xacro_cancel", default=None
)


def _default_time_s() -> float:
    text = os.environ.get(TIME_LIMIT_VARIABLE, "")
    try:
        value = float(text)
    except ValueError:
        return 30.0
    return value if value > 0 else 30.0


@dataclass(frozen=True)
class XacroLimits:
    """What one xacro expansion may use: ``time_s`` seconds of wall-clock time (default 30, or
    the environment variable LAGRANGE_XACRO_TIME_LIMIT), ``max_links`` links and ``max_bytes``
    characters of URDF text in its result, and ``memory_bytes`` of memory in the child process."""

    time_s: float = field(default_factory=_default_time_s)
    max_links: int = 20_000
    max_bytes: int = 50_000_000
    memory_bytes: int = 3 * 2**30


@contextlib.contextmanager
def xacro_cancellation(check_cancelled: Callable[[], None] | None):
    """Within the block, expansions on this thread poll ``check_cancelled()`` (a job's), which
    stops them by raising; the child process is ended at once."""
    token = _CANCEL.set(check_cancelled)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def _worker_command() -> list[str]:
    if getattr(sys, "frozen", False):        # the bundled app: its launcher runs the worker
        return [sys.executable, "--xacro-worker"]
    return [sys.executable, "-I", str(_WORKER)]


def _package_roots() -> list[str]:
    roots = [p for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    return roots + [str(p) for p in description_package_roots()]


def expand_xacro(path: str | Path, args: Mapping[str, str] | None = None, limits: XacroLimits | None = None,
                 check_cancelled: Callable[[], None] | None = None) -> str:
    """The URDF text of a xacro file with ``args`` ({name: value}) substituted, expanded in a
    sandboxed child process within ``limits``; raises URDFError (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise URDFError("no such xacro file", file=str(path))
    limits = limits or XacroLimits()
    check_cancelled = check_cancelled or _CANCEL.get()
    request = {"path": str(path), "args": {str(k): str(v) for k, v in (args or {}).items()},
               "package_roots": _package_roots(), "max_links": limits.max_links,
               "max_bytes": limits.max_bytes, "memory_bytes": limits.memory_bytes}
    try:
        proc = subprocess.Popen(_worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as exc:
        raise URDFError(
            f"could not start the process that expands xacro files: {exc}", file=str(path)
        ) from None
    data: bytes | None = json.dumps(request).encode("utf-8")
    deadline = time.monotonic() + limits.time_s
    try:
        while True:
            try:
                out, err = proc.communicate(data, timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                data = None
            if check_cancelled is not None:
                check_cancelled()
            if time.monotonic() > deadline:
                raise URDFError(
                    f"expanding the file took longer than {limits.time_s:g} s, the limit, and was "
                    "stopped: a xacro whose macros expand without end, or a robot too large to "
                    f"load (a larger limit: set {TIME_LIMIT_VARIABLE} to a number of seconds)",
                    file=str(path),
                )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    try:
        answer = json.loads(out.decode("utf-8"))
    except ValueError:
        detail = " ".join(err.decode("utf-8", "replace").split())[-300:]
        if proc.returncode and proc.returncode < 0 or not detail:
            detail = f"it ended with status {proc.returncode} (out of memory?)"
        raise URDFError(f"xacro could not expand the file: {detail}", file=str(path)) from None
    for line in str(answer.get("warnings") or "").splitlines():
        if line.strip():
            log.warning("%s: xacro: %s", path, line.strip())
    if not answer.get("ok"):
        raise URDFError(str(answer.get("message")), file=str(answer.get("file") or path),
                        element=answer.get("element"))
    return str(answer["urdf"])


def load_xacro(path: str | Path, args: Mapping[str, str] | None = None, limits: XacroLimits | None = None,
               **urdf_options) -> RobotDescription:
    """Expand a xacro file and load the result as URDF (``urdf_options``: mimic, strict, as for URDF)."""
    path = Path(path)
    text = expand_xacro(path, args, limits)
    return parse_urdf_string(text, base_dir=path.resolve().parent, source=str(path), **urdf_options)
