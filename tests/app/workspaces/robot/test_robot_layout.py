"""The Robot workspace fits a laptop screen and gives the 3D view most of the window: shown in the
main window at 1366 x 768, 1400 x 900 and 1920 x 1080, with each side tab in front, nothing is
cut off and the page asks for no more room than the window leaves it (tests/app/geometry.py); at
1400 x 900 the GL widget covers at least half of the window's area, measured from its geometry."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from tests.app.geometry import SCREENS, layout_problems, settle  # noqa: E402

LOAD_MS = 90_000


def _robot_window(make_window, qtbot):
    from app.main import _make_application

    _make_application([])           # the app's style sheet: it changes every size
    window = make_window()
    settle()
    window.show_workspace("robot")
    page = window.page("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=LOAD_MS)
    settle()
    return window, page


def test_robot_workspace_fits_every_screen(make_window, qtbot):
    window, page = _robot_window(make_window, qtbot)
    assert window.current_workspace() == "robot" and page.isVisible()
    for index in range(page.tabs.count()):          # joints, targets, dynamics, motion
        page.tabs.setCurrentIndex(index)
        for width, height in SCREENS:
            problems = layout_problems(window, width, height, page=page)
            assert problems == [], f"{page.tabs.tabText(index)} tab at {width} x {height}"
            # the side column scrolls vertically only: its content is no wider than it
            side = page.tabs.currentWidget()
            assert side.widget().width() <= side.viewport().width()
    # a long status does not widen the page
    page._status("x" * 2000)
    assert layout_problems(window, 1366, 768, page=page) == []
    # the picker may elide a long entry at 1366; its tooltip says the chosen one in full, and its
    # list opens wide enough for whole names
    picker = page.tool_row.picker
    longest = max(range(picker.count()), key=lambda i: len(picker.itemText(i)))
    picker.setCurrentIndex(longest)
    assert picker.toolTip().splitlines()[0] == picker.itemText(longest)
    assert picker.view().minimumWidth() >= 420


def test_the_3d_view_has_half_the_window_at_1400_x_900(make_window, qtbot):
    window, page = _robot_window(make_window, qtbot)
    window.resize(1400, 900)
    settle()
    assert (window.width(), window.height()) == (1400, 900)
    view = page.view
    assert view.isVisible()
    rect = view.rect().translated(view.mapTo(window, view.rect().topLeft()))
    assert window.rect().contains(rect)
    share = rect.width() * rect.height() / (window.width() * window.height())
    assert share >= 0.5, f"the 3D view covers {share:.0%} of the window ({rect.width()} x {rect.height()})"


def test_the_side_column_collapses_and_its_width_is_remembered(make_window, qtbot, settings_path):
    window, page = _robot_window(make_window, qtbot)
    window.resize(1400, 900)
    settle()
    wide = page.view.width()
    page.collapse_button.click()
    settle()
    assert page.splitter.sizes()[1] == 0 and page.view.width() > wide
    page.collapse_button.click()
    settle()
    assert page.splitter.sizes()[1] > 0
    page.splitter.setSizes([700, 480])
    page.splitter.splitterMoved.emit(700, 1)
    remembered = page.splitter.sizes()
    window.close()
    again, page2 = _robot_window(make_window, qtbot)
    again.resize(window.width(), window.height())
    settle()
    assert page2.splitter.sizes()[1] == remembered[1]


def _corners(bounds):
    return np.array([[x, y, z] for x in bounds[:, 0] for y in bounds[:, 1] for z in bounds[:, 2]])


@pytest.mark.parametrize("robot", ["acrobot", "panda"])
def test_the_camera_frames_the_robot_from_above_the_ground(make_window, qtbot, robot):
    """The acrobot hangs 2 m below its pivot at the origin (the camera used to sit below the
    ground); the panda stands on it. After loading, the 8 corners of the posed robot's bounding
    box project inside the view, and the camera looks down from above the ground plane."""
    window, page = _robot_window(make_window, qtbot)
    window.resize(1400, 900)
    settle()
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot(robot)
    settle()
    view = page.view
    # the box is the posed links' (forward kinematics at the shown q, the engine's poses)
    for link, pose in view.link_poses().items():
        np.testing.assert_allclose(pose, page.link_pose(link), atol=1e-9)
    bounds = view.robot_bounds()
    if robot == "acrobot":
        assert bounds[0, 2] < -1.5           # hangs below the ground plane
    pixels, in_front = view.project(_corners(bounds))
    assert in_front.all()
    assert (pixels[:, 0] >= 0).all() and (pixels[:, 0] <= view.width()).all(), pixels
    assert (pixels[:, 1] >= 0).all() and (pixels[:, 1] <= view.height()).all(), pixels
    assert view.cameraParams()["elevation"] > 0
    assert view.camera_position()[2] > 0      # above the ground plane z = 0
    # and it stays framed when the view changes size (the side column collapsed)
    page.collapse_button.click()
    settle()
    pixels, in_front = view.project(_corners(view.robot_bounds()))
    assert in_front.all() and (pixels >= 0).all()
    assert (pixels[:, 0] <= view.width()).all() and (pixels[:, 1] <= view.height()).all()


def test_the_targets_tab_says_what_to_do_until_a_target_exists(make_window, qtbot):
    window = make_window()
    page = window.page("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=90_000)
    panel = page.targets
    assert not panel.targets and not panel.hint.isHidden() and "Optimise" in panel.hint.text()
    panel.add_target(page.robot.model.link_names[-1], np.eye(4))
    assert panel.hint.isHidden()
    panel.clear()
    assert not panel.hint.isHidden()
