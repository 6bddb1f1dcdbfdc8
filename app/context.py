"""What every workspace receives from the main window."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QSettings

from app.jobs import JobRunner


@dataclass
class AppContext:
    """Shared services: the job runner, persistent settings, status messages, options.

    ``options`` holds the command-line options (e.g. ``robot`` for ``--robot``).
    ``add_recent_file(path)`` records a file in File > Open Recent.
    ``show_error(title, message)`` shows a dialog (or logs, in a headless self-test).
    """

    jobs: JobRunner
    settings: QSettings
    status: Callable[[str], None] = lambda message: None
    add_recent_file: Callable[[str], None] = lambda path: None
    show_error: Callable[[str, str], None] = lambda title, message: None
    options: dict = field(default_factory=dict)
