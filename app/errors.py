"""Errors as the user sees them: one plain line in a dialog titled with what they were doing,
the traceback one click away ("Show Details..."), uncaught exceptions caught.

The one place where the app turns exceptions and job names into words (the wording itself comes
from :mod:`engine.messages`, shared with the command line): :func:`job_title` names what the
user was doing, :func:`plain_message` strips class names, :func:`remember_details` keeps a failed
job's traceback so that the dialog showing its message offers it.
"""

from __future__ import annotations

import logging
import re
import sys
import traceback
from collections import OrderedDict

from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from engine.messages import is_user_error, plain, user_message

log = logging.getLogger(__name__)

__all__ = ["ExceptionHook", "job_title", "plain_message", "remember_details", "show_error_dialog",
           "describe_exception", "is_user_error"]

# Job names (what pages pass to JobRunner.submit) -> what the user was doing.
_JOB_ACTIVITIES: list[tuple[re.Pattern, str]] = [
    (re.compile(r"^load robot (.+)$", re.I), r"Opening the robot \1"),
    (re.compile(r"^robot IK \(follow\)$", re.I), "Following the dragged target"),
    (re.compile(r"^robot IK$", re.I), "Reaching the targets"),
    (re.compile(r"^robot readouts$", re.I), "Computing the dynamics readouts"),
    (re.compile(r"^robot simulation$", re.I), "Simulating the robot"),
    (re.compile(r"^train (.+)$", re.I), r"Training \1"),
    (re.compile(r"^evaluate (.+)$", re.I), r"Evaluating \1"),
    (re.compile(r"^self-test$", re.I), "Running the self-test"),
    (re.compile(r"^learn eigenmode$", re.I), "Learning the eigenmode"),
    (re.compile(r"^stabilise eigenmode$", re.I), "Stabilising the eigenmode"),
    (re.compile(r"^optimise car trajectory$", re.I), "Optimising the car's trajectory"),
    (re.compile(r"^mpc laps$", re.I), "Driving the track with MPC"),
    (re.compile(r"^train car model$", re.I), "Training the car model"),
    (re.compile(r"^car model selection$", re.I), "Comparing car models"),
    (re.compile(r"^load car log (.+)$", re.I), r"Opening the driving log \1"),
    (re.compile(r"^robot identification$", re.I), "Identifying the robot's parameters"),
    (re.compile(r"^generate (.+)$", re.I), r"Generating the \1 data set"),
    (re.compile(r"^prepare (.+)$", re.I), r"Preparing the log \1"),
    (re.compile(r"^load (.+)$", re.I), r"Opening \1"),
]
_JOB_FAILED = re.compile(r"^Job failed:\s*(.+)$")


def job_title(name: str) -> str:
    """What the user was doing when job ``name`` ran ("robot IK" -> "Reaching the targets")."""
    name = name.strip()
    for pattern, activity in _JOB_ACTIVITIES:
        if pattern.match(name):
            return pattern.sub(activity, name)
    text = re.sub(r"[_-]+", " ", name)
    return text[:1].upper() + text[1:] if text else "A background task"


def dialog_title(title: str) -> str:
    """A dialog's title in the user's words ("Job failed: robot IK" -> "Reaching the targets failed")."""
    match = _JOB_FAILED.match(title.strip())
    if match:
        return f"{job_title(match.group(1))} failed"
    return plain(title)


def plain_message(message: str) -> str:
    """``message`` without Python class names ("LogError: x.csv: ..." -> "x.csv: ...")."""
    lines = [plain(line) for line in str(message).splitlines()]
    return "\n".join(lines).strip()


def describe_exception(exc: BaseException) -> str:
    """One plain line for ``exc`` (the same words as the command line)."""
    return user_message(exc)


_details: OrderedDict[str, str] = OrderedDict()
_MAX_DETAILS = 32


def remember_details(message: str, details: str) -> None:
    """Keep ``details`` (a traceback) for the dialog that will show ``message``."""
    if message and details:
        _details[message] = details
        _details.move_to_end(message)
        while len(_details) > _MAX_DETAILS:
            _details.popitem(last=False)


def recall_details(message: str) -> str:
    """The details remembered for ``message`` (or for a message it quotes), else ""."""
    if message in _details:
        return _details[message]
    for known in reversed(_details):
        if known and known in message:
            return _details[known]
    return ""


def show_error_dialog(parent: QWidget | None, title: str, message: str, details: str = "") -> QMessageBox:
    """A non-blocking error dialog (``open()``, not ``exec()``): the event loop keeps running.

    The title and message are put in plain words; the traceback of the failed job the
    message comes from (or ``details``) is behind the "Show Details..." button."""
    details = details or recall_details(message)
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle(dialog_title(title))
    box.setText(plain_message(message))
    if details:
        box.setDetailedText(details)
    box.setObjectName("errorDialog")
    box.open()
    return box


class ExceptionHook:
    """Replaces ``sys.excepthook`` (and threading's) while installed."""

    def __init__(self, parent_getter):
        self._parent_getter = parent_getter
        self._previous = sys.excepthook
        self.last_dialog: QMessageBox | None = None

    def __call__(self, exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            QApplication.quit()
            return
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("uncaught exception:\n%s", details)
        if QApplication.instance() is None:
            self._previous(exc_type, exc, tb)
            return
        message = user_message(exc) if exc is not None else "an unexpected error"
        self.last_dialog = show_error_dialog(
            self._parent_getter(), "Something went wrong",
            f"{message}\n\nThe application keeps running; the details are below and in the log.", details)

    def install(self) -> ExceptionHook:
        sys.excepthook = self
        return self

    def uninstall(self) -> None:
        if sys.excepthook is self:
            sys.excepthook = self._previous
