"""View > Compute Device: cpu / auto / cuda (greyed out, with the reason, where there is no GPU),
and below them the threads per job: auto / 1 / 2 ... (engine/threads.py).

The choice is kept in the app's QSettings (app/settings.py) and read by the jobs that train and
plan through :func:`app.device_preference.preferred_device`; the threads by the job runner
(app/jobs.py) through :func:`app.device_preference.preferred_threads`.
"""

from __future__ import annotations

from PySide6.QtGui import QAction, QActionGroup

from app.device_preference import (
    device_choices,
    load_preference,
    load_threads_preference,
    save_preference,
    save_threads_preference,
    set_preferred_device,
    set_preferred_threads,
    thread_choices,
)


def add_device_menu(parent_menu, settings, status=None):
    """Add the "Compute Device" sub-menu to ``parent_menu``; loads the stored preference."""
    menu = parent_menu.addMenu("Compute &Device")
    menu.setObjectName("deviceMenu")
    menu.setToolTipsVisible(True)
    current = load_preference(settings)
    set_preferred_device(current)
    group = QActionGroup(menu)
    group.setExclusive(True)
    for choice in device_choices():
        action = QAction(choice.label if choice.enabled else f"{choice.label} (not available here)", menu)
        action.setObjectName(f"device_{choice.name}")
        action.setCheckable(True)
        action.setEnabled(choice.enabled)
        action.setChecked(choice.name == current)
        action.setToolTip(choice.reason or f"train and plan on: {choice.name}")
        action.setStatusTip(choice.reason or f"Training and planning jobs compute on: {choice.name}")

        def chosen(checked=False, name=choice.name):
            if checked:
                stored = save_preference(settings, name)
                if status is not None:
                    status(f"Compute device: {stored} (for the next training or planning job)")

        action.toggled.connect(chosen)
        group.addAction(action)
        menu.addAction(action)
    _add_thread_actions(menu, settings, status)
    return menu


def _add_thread_actions(menu, settings, status=None) -> None:
    """The threads per job, under a separator in the same menu; loads the stored preference."""
    menu.addSection("Threads per job")
    current = load_threads_preference(settings)
    set_preferred_threads(current)
    group = QActionGroup(menu)
    group.setExclusive(True)
    for value, label in thread_choices():
        action = QAction(label, menu)
        action.setObjectName(f"threads_{value}")
        action.setCheckable(True)
        action.setChecked(value == current)
        action.setToolTip("torch threads for each job; auto is one, measured fastest for every job here, "
                          "above all when another program is using a core")

        def chosen(checked=False, value=value):
            if checked:
                stored = save_threads_preference(settings, value)
                if status is not None:
                    status(f"Threads per job: {stored} (for the next job)")

        action.toggled.connect(chosen)
        group.addAction(action)
        menu.addAction(action)
