"""The Robot workspace keeps the window on a 1366 x 768 screen in every state of a log replay: the
log open (the Model lab's "Show on robot"), playing, the rigid-body ghost shown, a plot readout
with long joint names, and a long status. The window used to grow to 1733 px on opening the log
and 1760 px on Play (the plots' readout line asked for its whole width), and stayed that wide on
every workspace. Each state: the window is no wider than the screen, without being resized, and
the shared check of tests/app/geometry.py finds nothing cut off."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from engine.logs.mapping import LogMapping  # noqa: E402
from engine.paths import resource  # noqa: E402
from tests.app.geometry import layout_problems, settle  # noqa: E402

WIDTH, HEIGHT = 1366, 768


def _source(name):
    path = resource("logs", f"{name}.csv")
    mapping = LogMapping.load(path.with_suffix(".mapping.json"))
    return {"kind": "log", "path": str(path), "mapping": mapping.to_dict()}


def _fits(window, state: str) -> None:
    settle()
    assert window.width() <= WIDTH, f"{state}: the window grew to {window.width()} px"
    assert window.minimumSizeHint().width() <= WIDTH, (
        f"{state}: it asks for {window.minimumSizeHint().width()} px"
    )
    assert layout_problems(window, WIDTH, HEIGHT) == [], state


def test_every_replay_state_fits_a_laptop_screen(make_window, qtbot):
    from app.main import _make_application

    _make_application([])
    window = make_window()
    window.resize(WIDTH, HEIGHT)
    settle()
    window.show_log_on_robot(_source("panda_joints"))
    page = window.pages["robot"]
    replay = page.replay
    qtbot.waitUntil(lambda: replay.state.replay is not None, timeout=120_000)
    assert replay.plots.isVisible() and replay.timeline.isVisible()
    _fits(window, "log open")
    replay.state.set_cursor(12.345)          # the readout and the time label show values
    replay.plots._update_readout(12.345, "q")
    assert replay.plots.readout.text()
    _fits(window, "cursor moved")
    replay.state.play()
    qtbot.waitUntil(lambda: replay.state.cursor > 12.4, timeout=10_000)
    _fits(window, "playing")
    replay.state.pause()
    # the rigid-body ghost rolled out from the cursor
    replay.ghost_box.setCurrentIndex(1)
    replay._on_ghost_choice(1)
    replay.request_ghost()
    qtbot.waitUntil(lambda: replay.state.ghost is not None, timeout=60_000)
    _fits(window, "ghost shown")
    # its fourth plot (ghost − log) is whole, a scroll away when the room is short, not squeezed out
    from app.widgets.linked_plots import PLOT_MIN_HEIGHT
    assert list(replay.plots.plots) == ["q", "qd", "tau", "error"]
    assert all(p.geometry().height() >= PLOT_MIN_HEIGHT - 1 for p in replay.plots.plots.values())
    # long joint names in the readout, a long status
    t = np.linspace(0.0, 30.0, 50)
    names = [f"a_very_long_joint_name_from_a_vendor_urdf_{i}_revolute" for i in range(7)]
    replay.plots.set_curves("q", t, np.zeros((50, 7)), names)
    replay.plots._update_readout(3.0, "q")
    assert names[0] in replay.plots.readout.text()
    page._status("a long status " * 100)
    replay._message("a long replay message " * 100)
    _fits(window, "long names")
    # another robot, which the log does not fit: the panel stays with its message, whole on
    # one line (a wrapped message was cut off by the short pane)
    with qtbot.waitSignal(page.robot_loaded, timeout=90_000):
        page.load_robot("go2")
    settle()
    assert replay.isVisible() and "does not fit" in replay.status.full_text()
    _fits(window, "a robot the log does not fit")
    assert replay.status.height() >= replay.status.sizeHint().height()
    # and every other workspace keeps the laptop width afterwards
    for name in ("model_lab", "robot"):
        window.show_workspace(name)
        _fits(window, f"back on {name}")
