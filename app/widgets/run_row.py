"""The one Run / Cancel row of the widget kit: a run button, a cancel button, optionally a progress bar.

Every workspace that starts a job from a button uses it, so the rule is the same everywhere:
Run is enabled only when nothing runs and every watched form is valid (a value out of range
disables it, and the button's tooltip says which field); Cancel is enabled only while a job
runs. ``set_running(True/False)`` follows the job (``PanelJob.busy`` or a handle's ``ended``).
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

__all__ = ["RunRow"]


class RunRow(QWidget):
    """``[Run] [Cancel] [progress…]``. Signals: ``run_clicked``, ``cancel_clicked``.

    ``run_text``/``cancel_text``: the buttons' text (``run_text=None``: no run button, for jobs
    started elsewhere); ``progress``: add a progress bar (for
    :class:`app.widgets.job_progress.PanelJob`); ``run_name``: the run button's object name;
    ``run_tooltip``: the run button's tooltip when Run is not blocked (else the reason shows).
    """

    run_clicked = Signal()
    cancel_clicked = Signal()

    def __init__(self, run_text: str | None = "Run", cancel_text: str = "Cancel", *, progress: bool = False,
                 run_name: str | None = None, run_tooltip: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self._run_tooltip = run_tooltip
        self._running = False
        self._ready = True
        self._ready_reason = ""
        self._forms: list = []
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.run_button = QPushButton(run_text)
        if run_name:
            self.run_button.setObjectName(run_name)
        self.cancel_button = QPushButton(cancel_text)
        self.cancel_button.setEnabled(False)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        if run_text is None:         # a job row started elsewhere (menus, dialogs): cancel and progress only
            self.run_button.hide()
        self.progress: QProgressBar | None = None
        if progress:
            self.progress = QProgressBar()
            self.progress.setRange(0, 1000)
            self.progress.setTextVisible(True)
            self.progress.setFormat("idle")
            self.progress.setMinimumWidth(60)
            row.addWidget(self.progress, 1)
        self.run_button.clicked.connect(self.run_clicked)
        self.cancel_button.clicked.connect(self.cancel_clicked)
        self._update()

    def add_widget(self, widget: QWidget, stretch: int = 0) -> None:
        """A further widget at the end of the row (e.g. a Save button)."""
        self.layout().addWidget(widget, stretch)

    @property
    def running(self) -> bool:
        return self._running

    def set_running(self, running: bool) -> None:
        self._running = bool(running)
        self.cancel_button.setEnabled(self._running)
        self._update()

    def set_ready(self, ready: bool, reason: str = "") -> None:
        """Whether there is something to run (e.g. a mode to stabilise); ``reason`` when not."""
        self._ready, self._ready_reason = bool(ready), reason
        self._update()

    def watch_forms(self, *forms) -> None:
        """Keep Run disabled while any of these :class:`DataclassForm` has a rejected value."""
        for form in forms:
            self._forms.append(form)
            form.validity_changed.connect(lambda *_: self._update())
        self._update()

    def problem(self) -> str:
        """Why Run is disabled ("" when it is enabled or only because a job runs)."""
        if not self._ready:
            return self._ready_reason
        for form in self._forms:
            problems = form.problems()
            if problems:
                name, why = next(iter(problems.items()))
                return f"fix {form._labels.get(name, name)} first: {why}"
        return ""

    def _update(self) -> None:
        why = self.problem()
        self.run_button.setEnabled(not self._running and not why)
        self.run_button.setToolTip(why or self._run_tooltip)
