"""Persistent settings (QSettings): window geometry, recent files, workspace options.

``LAGRANGE_SETTINGS_FILE`` points the app at an INI file instead of the platform's
store (tests and portable installs use it).
"""

from __future__ import annotations

import os

from PySide6.QtCore import QSettings

ORGANIZATION = "Lagrange Studio"
APPLICATION = "Lagrange Studio"
MAX_RECENT_FILES = 10


def open_settings(path: str | None = None) -> QSettings:
    path = path or os.environ.get("LAGRANGE_SETTINGS_FILE")
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)


def recent_files(settings: QSettings) -> list[str]:
    value = settings.value("recent_files", [])
    if isinstance(value, str):  # QSettings returns a lone string for a one-item list
        value = [value]
    return [str(v) for v in (value or [])]


def add_recent_file(settings: QSettings, path: str) -> list[str]:
    path = os.path.abspath(path)
    files = [path] + [f for f in recent_files(settings) if f != path]
    files = files[:MAX_RECENT_FILES]
    settings.setValue("recent_files", files)
    settings.sync()
    return files


def remove_recent_file(settings: QSettings, path: str) -> list[str]:
    """Forget ``path`` (a file that no longer exists) in the recent files."""
    path = os.path.abspath(path)
    files = [f for f in recent_files(settings) if f != path]
    settings.setValue("recent_files", files)
    settings.sync()
    return files
