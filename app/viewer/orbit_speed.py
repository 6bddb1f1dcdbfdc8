"""View > Orbit Speed: how far the 3D view turns per pixel of a left-button drag, for every 3D view
of the app. The choice is kept in the app's QSettings under :data:`SETTINGS_KEY` and applied at
once to the views that are open and to those opened later."""

from __future__ import annotations

import weakref

from PySide6.QtGui import QAction, QActionGroup

__all__ = ["DEFAULT", "SETTINGS_KEY", "SPEEDS", "add_orbit_speed_menu", "current", "load", "register",
           "save", "set_speed"]

SETTINGS_KEY = "view/orbit_deg_per_px"
# (degrees per pixel, the menu's words); pyqtgraph's own speed is 1.0, which turns the view half
# round across a laptop-sized view
SPEEDS = ((0.15, "Slow"), (0.25, "Gentle"), (0.4, "Normal"), (0.7, "Fast"), (1.0, "Very fast"))
DEFAULT = 0.4

_current = DEFAULT
_views: weakref.WeakSet = weakref.WeakSet()


def _known(value) -> float | None:
    """``value`` as one of :data:`SPEEDS` (None when it is not one: a hand-edited settings file)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return next((s for s, _ in SPEEDS if abs(s - v) < 1e-9), None)


def current() -> float:
    return _current


def register(view) -> None:
    """A 3D view (with an ``orbit_deg_per_px`` attribute) that follows the chosen speed."""
    view.orbit_deg_per_px = _current
    _views.add(view)


def set_speed(deg_per_px: float) -> None:
    global _current
    _current = float(deg_per_px)
    for view in list(_views):
        view.orbit_deg_per_px = _current


def load(settings) -> float:
    """The stored speed (the default when none or not a known one), applied."""
    value = _known(settings.value(SETTINGS_KEY, DEFAULT)) or DEFAULT
    set_speed(value)
    return value


def save(settings, deg_per_px: float) -> float:
    value = _known(deg_per_px)
    if value is None:
        raise ValueError(f"orbit speed {deg_per_px!r}: choose one of {', '.join(str(s) for s, _ in SPEEDS)}")
    settings.setValue(SETTINGS_KEY, value)
    set_speed(value)
    return value


def add_orbit_speed_menu(parent_menu, settings, status=None):
    """Add the "Orbit Speed" sub-menu to ``parent_menu``; loads and applies the stored choice."""
    menu = parent_menu.addMenu("&Orbit Speed (3D view)")
    menu.setObjectName("orbitSpeedMenu")
    chosen_now = load(settings)
    group = QActionGroup(menu)
    group.setExclusive(True)
    for speed, words in SPEEDS:
        text = f"{words} ({speed:g}° per pixel)" + (", the default" if speed == DEFAULT else "")
        action = QAction(text, menu)
        action.setObjectName(f"orbit_{speed:g}")
        action.setCheckable(True)
        action.setChecked(speed == chosen_now)
        action.setStatusTip("How far the 3D view turns as the mouse drags it with the left button")

        def chosen(checked=False, speed=speed, words=words):
            if checked:
                save(settings, speed)
                if status is not None:
                    status(f"Orbit speed: {words.lower()} ({speed:g}° per pixel of mouse motion)")

        action.toggled.connect(chosen)
        group.addAction(action)
        menu.addAction(action)
    return menu
