"""The Robot workspace draws a closed-chain robot's constraints (a connect's anchors, a weld's
frames, a tendon's coupled joints) where MuJoCo puts them, follows the pose, colours them by
violation, and View > Show Constraints hides them (remembered in the settings)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QSettings, Qt
from PySide6.QtWidgets import QMenu

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from app.context import AppContext  # noqa: E402  (after the GL attribute)
from app.jobs import JobRunner  # noqa: E402
from app.viewer import constraints_layer  # noqa: E402

mujoco = pytest.importorskip("mujoco")

FILE = Path(__file__).parent / "data" / "closed_chain.xml"


@pytest.fixture
def page(qtbot, tmp_path):
    from app.workspaces.robot.page import RobotPage

    errors: list = []
    runner = JobRunner()
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    ctx = AppContext(jobs=runner, settings=settings, show_error=lambda t, m: errors.append((t, m)),
                     options={"robot": str(FILE)})
    p = RobotPage(ctx)
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    qtbot.waitExposed(p)
    qtbot.waitUntil(lambda: p.robot is not None or bool(errors), timeout=90_000)
    assert not errors, errors
    yield p
    p.shutdown()
    runner.wait_for_done(60_000)
    constraints_layer.set_shown(True)             # app-wide: leave the default


def _mujoco_at(q):
    m = mujoco.MjModel.from_xml_path(str(FILE))
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    return d


def _drawn(page):
    return {m.name: m for m in page.view.constraints.marks}


def test_markers_are_where_mujoco_puts_them_and_follow_the_pose(page):
    layer = page.view.constraints
    marks = _drawn(page)
    assert set(marks) == {"four_bar", "tips", "mirror", "left_t"}
    assert all(m.satisfied for m in marks.values())         # the file's pose closes every loop
    assert {"four_bar", "tips", "mirror = 0", "left_t = 0"} == {item.text for item in layer.labels}
    listed = page.dynamics.constraints_label                 # and listed under the Dynamics readouts
    assert not listed.isHidden() and "connect &#x27;four_bar&#x27; (holds)" in listed.text()
    assert "tendon limit &#x27;left_t&#x27;: length 0 (in range)" in listed.text()
    names = list(page.robot.model.joint_names)
    q = np.zeros(len(names))
    q[names.index("a")], q[names.index("h1")], q[names.index("fl")] = 0.4, -0.3, 0.02
    page.set_q(q)                                             # sliders move joints one by one: loops open
    d = _mujoco_at(q)
    marks = _drawn(page)
    np.testing.assert_allclose(marks["four_bar"].points, [d.site("coupler_end").xpos, d.site("rocker_end").xpos],
                               atol=1e-9)
    gap = np.linalg.norm(d.site("coupler_end").xpos - d.site("rocker_end").xpos)
    assert marks["four_bar"].violation == pytest.approx(gap, abs=1e-9) and gap > 0.01
    arm = d.body("arm")
    np.testing.assert_allclose(marks["tips"].points[1], arm.xpos + arm.xmat.reshape(3, 3) @ [0.3, 0, 0], atol=1e-9)
    np.testing.assert_allclose(marks["tips"].frames[0], d.body("l2").xmat.reshape(3, 3), atol=1e-9)
    np.testing.assert_allclose(marks["tips"].frames[1], arm.xmat.reshape(3, 3), atol=1e-9)
    np.testing.assert_allclose(marks["mirror"].points, [d.body("left").xpos, d.body("right").xpos], atol=1e-9)
    assert not any(m.satisfied for m in marks.values() if m.kind != "tendon limit")   # red: violated
    assert marks["left_t"].satisfied and marks["left_t"].value == pytest.approx(0.02)  # in its range
    q[names.index("fl")] = 0.03                                     # beyond the tendon's range [-0.025, 0.025]
    page.set_q(q)
    assert _drawn(page)["left_t"].violation == pytest.approx(0.005)
    assert "left_t = 0.03 (0.005 off)" in {lab.text for lab in layer.labels}
    text = listed.text()
    assert f"connect &#x27;four_bar&#x27; (off by {gap:.3g})</span>" in text
    assert "tendon limit &#x27;left_t&#x27;: length 0.03 (0.005 beyond its range)</span>" in text
    np.testing.assert_allclose(layer.dots.pos[0], d.site("coupler_end").xpos, atol=1e-6)   # what GL holds
    assert tuple(layer.dots.color[0]) == constraints_layer.BAD_RGBA
    assert "four_bar (" in next(lab.text for lab in layer.labels if lab.text.startswith("four_bar"))
    page.set_q(np.zeros(len(names)))
    assert tuple(page.view.constraints.dots.color[0]) == constraints_layer.OK_RGBA


def test_show_constraints_hides_them_and_is_remembered(page, tmp_path):
    layer = page.view.constraints
    assert layer.shown_items()
    settings = QSettings(str(tmp_path / "menu.ini"), QSettings.Format.IniFormat)
    menu = QMenu()
    action = constraints_layer.add_show_constraints_action(menu, settings)
    assert action.isChecked()                                  # on by default
    said = []
    menu2 = QMenu()
    action = constraints_layer.add_show_constraints_action(menu2, settings, said.append)
    action.trigger()
    assert not layer.shown_items() and not action.isChecked()
    assert said == ["Constraints hidden in the 3D view"]
    page.set_q(page.q + 0.1)                                   # still hidden as the robot moves
    assert not layer.shown_items() and layer.marks
    settings.sync()
    again = QSettings(str(tmp_path / "menu.ini"), QSettings.Format.IniFormat)
    assert constraints_layer.load(again) is False              # the choice is kept
    action.trigger()
    assert layer.shown_items()


def test_drawn_constraints_show_in_the_rendered_view(page, qtbot):
    """The connect's dot is drawn over the links that meet there (the marks are drawn after the
    meshes), in the satisfied colour; hidden, the pixel is the robot's again."""
    from tests.app.workspaces.robot.test_robot_workspace import _pixels

    view = page.view
    view.fit_to_robot()
    anchor = _drawn(page)["four_bar"].points[0]
    (x, y), = view.project(anchor[None])[0]
    ratio = view.screenshot().width() / view.width()

    def colour_there():
        img = _pixels(view.screenshot())
        return img[int(round(y * ratio)), int(round(x * ratio))]

    shown = colour_there()
    np.testing.assert_allclose(shown, np.array(constraints_layer.OK_RGBA[:3]) * 255, atol=40)
    constraints_layer.set_shown(False)
    hidden = colour_there()
    assert np.abs(hidden - shown).max() > 60, (shown, hidden)


def test_markers_follow_a_simulation_that_keeps_the_loops_closed(page, qtbot):
    """A free fall simulated from the page and played back: at every frame shown, the drawn
    anchors are the engine's at that pose and every constraint holds (the simulation keeps the
    loops closed), while the four-bar's anchor moves."""
    seen = []
    page.state.events.q.connect(lambda q: seen.append({m.name: m for m in page.view.constraints.marks}))
    start = _drawn(page)["four_bar"].points[0].copy()
    page.motion.mode_box.setCurrentIndex(page.motion.mode_box.findData("free_fall"))
    page.motion.duration_spin.setValue(0.3)
    with qtbot.waitSignal(page.motion.q_requested, timeout=120_000):
        page.simulate(page.motion.simulation_options())
    qtbot.waitUntil(lambda: not page.motion.playing, timeout=20_000)
    assert len(seen) > 5
    assert all(m.violation < 1e-6 for frame in seen for m in frame.values())
    assert np.linalg.norm(seen[-1]["four_bar"].points[0] - start) > 0.01
    engine = {m.name: m for m in page.state.constraint_marks()}
    np.testing.assert_allclose(_drawn(page)["tips"].points, engine["tips"].points, atol=1e-12)


def test_the_main_windows_view_menu_holds_show_constraints(make_window, settings_path):
    """View > Show Constraints in the app's menu bar: unticked, the Robot workspace's layer hides
    and the next window starts with it off (the settings file keeps it)."""
    window = make_window({"robot": str(FILE), "workspace": "robot"})
    action = window.constraints_action
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert action in view_menu.actions() and action.isChecked()
    try:
        action.trigger()
        assert not constraints_layer.shown()
        window.settings.sync()
        second = make_window(path=settings_path)
        assert not second.constraints_action.isChecked()
    finally:
        constraints_layer.set_shown(True)
