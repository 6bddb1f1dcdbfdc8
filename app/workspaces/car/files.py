"""The Car planner's files: saving and loading plans and tracks (atomic writes in the state), the
dialogs that ask for them, and the folder each dialog starts in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from app.workspaces.car.models import example_folder
from app.workspaces.car.state import CarPlannerState

__all__ = ["CarFiles", "guarded"]


def guarded(ctx, say: Callable[[str], None], title: str, action, path: str | None = None) -> bool:
    """Run ``action()``; a ValueError / OSError becomes an error (naming ``path``) and False."""
    try:
        action()
    except (OSError, ValueError) as exc:
        msg = str(exc) if path is None or str(path) in str(exc) else f"{path}: {exc}"
        ctx.show_error(title, msg)
        say(msg)
        return False
    return True


class CarFiles:
    """Plans and tracks to and from files; ``load_track(path)`` is the Track tab's loader."""

    def __init__(self, ctx, state: CarPlannerState, dialog_parent: QWidget,
                 load_track: Callable[[str], bool], say: Callable[[str], None]):
        self.ctx, self.state, self.parent = ctx, state, dialog_parent
        self._load_track, self._say = load_track, say

    def save_plan(self, path: str) -> bool:
        """Write the plan (and the optimised controls, when they fit it) as JSON, atomically."""
        if not guarded(self.ctx, self._say, "Save plan", lambda: self.state.save_plan(path), path):
            return False
        self.ctx.add_recent_file(path)
        self._say(f"Plan saved to {path}.")
        return True

    def save_track(self, path: str) -> bool:
        """Write the current track as JSON, atomically."""
        if self.state.track is None or not guarded(
            self.ctx, self._say, "Save track", lambda: self.state.save_track(path), path
        ):
            return False
        self.ctx.add_recent_file(path)
        self._say(f"Track saved to {path}.")
        return True

    def load_plan(self, path: str) -> bool:
        if not guarded(self.ctx, self._say, "Load plan", lambda: self.state.load_plan(path)):
            return False
        self.ctx.add_recent_file(path)
        return True

    # -- dialogs -----------------------------------------------------------------------------
    def save_plan_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.parent, "Save plan", "plan.json", "Car plan (*.json)")
        if path:
            self.save_plan(path)

    def load_plan_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent, "Load plan", self.start_folder("plan"),
                                              "Car plan (*.json)")
        if path:
            self.remember_folder("plan", str(Path(path).parent))
            self.load_plan(path)

    def load_track_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent, "Load track", self.start_folder("track"),
                                              "Tracks (*.csv *.json)")
        if path:
            self.remember_folder("track", str(Path(path).parent))
            self._load_track(path)

    def save_track_dialog(self) -> None:
        if self.state.track is None:
            return
        path, _ = QFileDialog.getSaveFileName(self.parent, "Save track", f"{self.state.track.name}.json",
                                              "Car track (*.json)")
        if path:
            self.save_track(path)

    def start_folder(self, kind: str) -> str:
        """The folder an open dialog for ``kind`` starts in: the last one used, else the examples'."""
        last = str(self.ctx.settings.value(f"car/last_folder/{kind}", "") or "")
        return last if last and Path(last).is_dir() else example_folder(kind)

    def remember_folder(self, kind: str, folder: str) -> None:
        self.ctx.settings.setValue(f"car/last_folder/{kind}", folder)
