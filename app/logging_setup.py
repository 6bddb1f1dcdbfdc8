"""Python logging for the app: a rotating file in the user's log folder and a Qt relay.

The :class:`QtLogRelay` handler re-emits records as a Qt signal, delivered queued to the
UI thread, so that the log console can show messages logged from worker threads.
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from PySide6.QtCore import QObject, Signal

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def log_directory() -> Path:
    """The user's log folder (the same as the command line's, engine.messages)."""
    from engine.messages import log_directory as folder

    return folder()


PROJECT_LOGGERS = ("app", "engine", "__main__")


class ProjectOrWarnings(logging.Filter):
    """Records of the project's loggers at any level, others' (matplotlib, PIL, trimesh...)
    only from WARNING up: the console shows what concerns the user, the file keeps all."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        name = record.name
        return any(name == p or name.startswith(p + ".") for p in PROJECT_LOGGERS)


class QtLogRelay(QObject, logging.Handler):
    """A logging handler whose records come out of the ``record`` signal (any thread in)."""

    record = Signal(int, str)  # level, formatted message

    def __init__(self, level: int = logging.INFO):
        QObject.__init__(self)
        logging.Handler.__init__(self, level)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                            datefmt="%H:%M:%S"))
        self.addFilter(ProjectOrWarnings())

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D401 - logging API
        try:
            self.record.emit(record.levelno, self.format(record))
        except RuntimeError:  # the Qt object is gone at interpreter exit
            pass


_configured: dict = {}


def configure_logging(level: int = logging.INFO) -> tuple[Path | None, QtLogRelay]:
    """Set up the root logger once: rotating file (5 x 1 MB) plus the Qt relay."""
    if _configured:
        return _configured["path"], _configured["relay"]
    root = logging.getLogger()
    root.setLevel(level)
    path: Path | None = None
    try:
        directory = log_directory()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "lagrange-studio.log"
        file_handler = logging.handlers.RotatingFileHandler(path, maxBytes=1_000_000, backupCount=5,
                                                            encoding="utf-8")
        file_handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(file_handler)
    except OSError as exc:  # read-only home: keep going without a file
        logging.getLogger(__name__).warning("cannot write the log file: %s", exc)
        path = None
    relay = QtLogRelay(level)
    root.addHandler(relay)
    _configured.update(path=path, relay=relay)
    logging.getLogger(__name__).info("log file: %s", path)
    return path, relay
