"""Opening a robot in the Robot workspace as a job: a library robot or a URDF, xacro or MJCF file,
its progress in the tool row, and a failure that keeps the robot already shown."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from app.workspaces.robot.robot_jobs import load_robot_job, xacro_file_of
from app.workspaces.robot.toolbar import RobotToolRow

__all__ = ["DEFAULT_ROBOT", "RobotLoader"]

DEFAULT_ROBOT = "panda"


class RobotLoader(QObject):
    """Loads robots one at a time (a new load cancels the running one).

    ``confirm_xacro(path, why)`` asks before expanding a xacro file the user did not open,
    ``showing()`` is the robot shown (None before the first), ``say(text)`` the status line."""

    loaded = Signal(object)      # LoadedRobot
    failed = Signal(str)         # the error message shown

    def __init__(self, ctx, row: RobotToolRow, confirm_xacro: Callable[[str, str], bool],
                 showing: Callable, say: Callable[[str], None], parent: QObject | None = None):
        super().__init__(parent)
        self.ctx, self.row = ctx, row
        self._confirm, self._showing, self._say = confirm_xacro, showing, say
        self.handle = None

    def load(self, name_or_path: str, xacro_args: dict | None = None, xacro_allowed: bool = False,
             why: str = "recent", tree: str | None = None):
        """Load a library robot or a robot file as a job; returns its JobHandle (None when the
        user declined to expand a xacro file: without ``xacro_allowed``, the user did not open
        it, so ``confirm_xacro`` asks first; ``why``: "session" or "recent"; ``tree``: which
        kinematic tree of an MJCF file). On failure the error is shown (ctx.show_error, quoting the
        engine) and the robot already shown stays."""
        xacro_path = None if xacro_allowed else xacro_file_of(str(name_or_path))
        if xacro_path is not None and not self._confirm(str(xacro_path), why):
            self._say(f"Did not expand {xacro_path.name} (a xacro file)")
            if self._showing() is None and self.handle is None:
                self.load(DEFAULT_ROBOT)
            return None
        xacro_allowed = xacro_allowed or xacro_path is not None
        if self.handle is not None and self.handle.is_running:
            self.handle.cancel()
        progress = self.row.progress
        progress.setValue(0)
        progress.setVisible(True)
        self.row.select(str(name_or_path))
        self._say(f"Loading {name_or_path}…")
        handle = self.ctx.jobs.submit(
            load_robot_job(name_or_path, xacro_args=xacro_args, xacro_allowed=xacro_allowed, tree=tree),
            name=f"load robot {name_or_path}", on_result=self.loaded.emit,
            on_error=lambda msg, tb, src=name_or_path: self._on_failed(src, msg),
            on_progress=self._on_progress)
        handle.ended.connect(lambda h=handle: self._on_ended(h))
        self.handle = handle
        return handle

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()

    def _on_progress(self, update) -> None:
        if update.fraction is not None:
            self.row.progress.setValue(int(1000 * update.fraction))
        self.row.progress.setFormat(update.message[:40] or "%p%")

    def _on_ended(self, handle) -> None:
        if handle is self.handle:
            self.row.progress.setVisible(False)
            self.handle = None

    def _on_failed(self, source: str, message: str) -> None:
        robot = self._showing()
        self._say(f"Could not open {source}; still showing {robot.name if robot is not None else 'none'}")
        self.ctx.show_error("Cannot open robot", f"{source}\n\n{message}")
        self.failed.emit(message)
        if robot is None and source != DEFAULT_ROBOT:
            # nothing shown yet (a stale last robot, a bad --robot): fall back to the default
            self.load(DEFAULT_ROBOT)

