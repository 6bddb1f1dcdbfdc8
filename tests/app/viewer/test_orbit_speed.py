"""View > Orbit Speed (issue 32: orbiting was too sensitive): the choice is kept in the settings,
applied at once to the open 3D views and to those opened later, and a drag turns by it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPointF, QSettings, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QMenu

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from app.viewer import orbit_speed  # noqa: E402  (after the GL attribute)


@pytest.fixture(autouse=True)
def _default_speed_after():
    yield
    orbit_speed.set_speed(orbit_speed.DEFAULT)        # the choice is app-wide: leave the default


def _view(qtbot):
    from app.viewer.scene import RobotView

    view = RobotView()
    view.resize(480, 360)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    return view


def _drag_right(view, pixels):
    left = Qt.MouseButton.LeftButton
    for kind, x, buttons in ((QEvent.Type.MouseButtonPress, 200, left), (QEvent.Type.MouseMove, 200 + pixels, left),
                             (QEvent.Type.MouseButtonRelease, 200 + pixels, Qt.MouseButton.NoButton)):
        ev = QMouseEvent(kind, QPointF(x, 150), view.mapToGlobal(QPointF(x, 150)),
                         left if kind != QEvent.Type.MouseMove else Qt.MouseButton.NoButton, buttons,
                         Qt.KeyboardModifier.NoModifier)
        QCoreApplication.sendEvent(view, ev)


def _actions(menu):
    return {a.objectName(): a for a in menu.actions() if a.objectName().startswith("orbit_")}


def test_the_orbit_speed_is_chosen_kept_and_applied_to_every_view(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    menu = QMenu()
    orbit_speed.add_orbit_speed_menu(menu, settings)
    sub = menu.actions()[0].menu()
    actions = _actions(sub)
    assert [a.isChecked() for a in actions.values()].count(True) == 1
    assert actions["orbit_0.4"].isChecked() and "the default" in actions["orbit_0.4"].text()
    open_view = _view(qtbot)
    assert open_view.orbit_deg_per_px == 0.4
    said = []
    menu2 = QMenu()
    orbit_speed.add_orbit_speed_menu(menu2, settings, said.append)
    _actions(menu2.actions()[0].menu())["orbit_0.15"].trigger()          # the user picks "Slow"
    assert said == ["Orbit speed: slow (0.15° per pixel of mouse motion)"]
    assert float(settings.value(orbit_speed.SETTINGS_KEY)) == 0.15
    assert open_view.orbit_deg_per_px == 0.15 and _view(qtbot).orbit_deg_per_px == 0.15
    open_view.setCameraPosition(distance=2.0, elevation=20, azimuth=30)
    _drag_right(open_view, 100)
    assert open_view.opts["azimuth"] == pytest.approx(30 - 100 * 0.15)
    # the next start reads it back; a hand-edited value that is not a choice falls back to the default
    orbit_speed.set_speed(orbit_speed.DEFAULT)
    again = QMenu()
    orbit_speed.add_orbit_speed_menu(again, settings)
    assert _actions(again.actions()[0].menu())["orbit_0.15"].isChecked() and orbit_speed.current() == 0.15
    settings.setValue(orbit_speed.SETTINGS_KEY, "very fast please")
    assert orbit_speed.load(settings) == orbit_speed.DEFAULT
    with pytest.raises(ValueError, match="choose one of"):
        orbit_speed.save(settings, 3.0)


def test_the_view_menu_offers_the_orbit_speed(make_window):
    window = make_window()
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert window.orbit_menu.menuAction() in view_menu.actions()
    assert window.orbit_menu.title() == "&Orbit Speed (3D view)"
