"""Open dialogs that start where the files are: the shipped examples' folder the first time, then
the folder the user last opened a file of that kind from (remembered in QSettings).

``open_file_name(parent, title, filters, settings, kind, default_folder)`` shows the dialog and
returns the chosen path ("" when cancelled); ``start_folder``/``remember_folder`` are its two
halves, for dialogs built elsewhere."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

__all__ = ["example_folder", "open_file_name", "remember_folder", "start_folder"]

KEY = "dialogs/last_folder/{kind}"


def example_folder(kind: str, settings=None) -> Path | None:
    """Where the shipped examples of ``kind`` are: ``robot`` urdf/, ``log`` resources/logs/,
    ``model`` the Model lab's kept runs in the user's data folder (else resources/)."""
    from engine.paths import resources_dir, urdf_dir

    try:
        if kind == "robot":
            return urdf_dir()
        if kind == "log":
            return resources_dir() / "logs"
        if kind == "model":
            from engine.paths import user_runs_dir

            saved = user_runs_dir("model_lab")  # the Model lab's kept runs (app/workspaces/model_lab/page.py)
            if saved.is_dir():
                return saved
            return resources_dir()
    except FileNotFoundError:          # data folders not found: the dialog's own choice
        return None
    return None


def start_folder(settings, kind: str, default_folder: str | Path | None) -> str:
    """The folder last used for ``kind`` when it still exists, else ``default_folder`` (if it
    exists), else "" (the dialog's own choice)."""
    if settings is not None:
        last = settings.value(KEY.format(kind=kind))
        if last and Path(str(last)).is_dir():
            return str(last)
    if default_folder and Path(default_folder).is_dir():
        return str(default_folder)
    return ""


def remember_folder(settings, kind: str, path: str | Path) -> None:
    if settings is not None and path:
        settings.setValue(KEY.format(kind=kind), str(Path(path).resolve().parent))


def open_file_name(parent: QWidget | None, title: str, filters: str, settings, kind: str,
                   default_folder: str | Path | None) -> str:
    path, _ = QFileDialog.getOpenFileName(
        parent, title, start_folder(settings, kind, default_folder), filters
    )
    if path:
        remember_folder(settings, kind, path)
    return path
