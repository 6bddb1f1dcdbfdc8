"""The Robot workspace's messages clear when their cause is gone: "Add a target first" once a
target exists, "Add two keyframes" once there are two, and the Motion tab's "playing" once the
playback ends (it used to stay after the end)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

LOAD_MS = 90_000


def _page(make_window, qtbot):
    window = make_window()
    window.show_workspace("robot")
    page = window.page("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=LOAD_MS)
    return page


def test_add_a_target_first_clears_when_a_target_is_added(make_window, qtbot):
    page = _page(make_window, qtbot)
    assert not page.targets.targets
    assert page.optimise() is None
    label = page.targets.message_label
    assert label.text().startswith("Add a target first")
    page.targets.add_target(page.robot.model.link_names[-1], np.eye(4))
    assert page.targets.targets and label.text() == ""
    # a message with a cause that stays is kept when the targets change
    page.targets.set_message("Out of reach by 12 mm", 0.012, ok=False)
    page.targets.add_target(page.robot.model.link_names[-2], np.eye(4))
    assert label.text() == "Out of reach by 12 mm"


def test_the_motion_tab_says_playing_only_while_it_plays(make_window, qtbot):
    page = _page(make_window, qtbot)
    motion = page.motion
    motion.play()                                      # nothing to play: a hint
    assert motion.status_label.text().startswith("Add two keyframes")
    q0 = page.q
    motion.add_keyframe(q0)
    assert motion.status_label.text().startswith("Add two keyframes")   # one is not enough yet
    motion.interval_spin.setValue(0.3)
    motion.add_keyframe(q0 + 0.1)
    assert "Add two keyframes" not in motion.status_label.text()
    motion.play_keyframes()
    assert motion.playing and motion.status_label.text().endswith(", playing")
    qtbot.waitUntil(lambda: not motion.playing, timeout=20_000)
    assert "playing" not in motion.status_label.text() and "keyframes" in motion.status_label.text()
    # a simulated trajectory: described, "playing" while it plays, not after
    t = np.linspace(0.0, 0.2, 11)
    motion.play_trajectory(t, np.tile(q0, (11, 1)), "free fall: 0.20 s")
    assert motion.status_label.text() == "free fall: 0.20 s, playing"
    qtbot.waitUntil(lambda: not motion.playing, timeout=20_000)
    assert motion.status_label.text() == "free fall: 0.20 s"
    motion.play()                                      # played again, and stopped by hand
    assert motion.status_label.text().endswith(", playing")
    motion.stop()
    assert motion.status_label.text() == "free fall: 0.20 s"
