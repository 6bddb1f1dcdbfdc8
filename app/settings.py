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


def recent_files(settings: QSettings, key: str = "recent_files") -> list[str]:
    """The paths kept under ``key``, newest first."""
    value = settings.value(key, [])
    if isinstance(value, str):  # QSettings returns a lone string for a one-item list
        value = [value]
    return [str(v) for v in (value or [])]


def add_recent_file(settings: QSettings, path: str, key: str = "recent_files",
                    limit: int = MAX_RECENT_FILES) -> list[str]:
    """Put ``path`` (made absolute) first in the list under ``key``, keeping ``limit`` entries."""
    path = os.path.abspath(path)
    files = [path] + [f for f in recent_files(settings, key) if f != path]
    files = files[:limit]
    settings.setValue(key, files)
    settings.sync()
    return files


def remove_recent_file(settings: QSettings, path: str) -> list[str]:
    """Forget ``path`` (a file that no longer exists) in the recent files."""
    path = os.path.abspath(path)
    files = [f for f in recent_files(settings) if f != path]
    settings.setValue("recent_files", files)
    settings.sync()
    return files
