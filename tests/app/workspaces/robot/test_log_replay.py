"""The Robot workspace's log replay: the Qt-free state directly, then one real window where
scrubbing moves the plots' cursor and the robot, and exports write files.

The log is the shipped Panda log copied the way a stranger would record it: other column
names, degrees, milliseconds. References: pandas reading of the original CSV, the engine's
forward kinematics at those positions, imageio reading the video back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from app.workspaces.robot.log_replay_state import LogReplayState  # noqa: E402
from engine.logs import LogMapping, read_log  # noqa: E402
from engine.paths import resource  # noqa: E402
from engine.robots.library import load_robot, resolve_robot  # noqa: E402


@pytest.fixture(scope="module")
def original():
    return pd.read_csv(resource("logs", "panda_joints.csv"), comment="#")


@pytest.fixture(scope="module")
def stranger_log(tmp_path_factory, original):
    out = pd.DataFrame({"time_ms": original.t * 1e3})
    for i in range(1, 8):
        out[f"Axis{i}_angle"] = np.degrees(original[f"q{i}"])
        out[f"Axis{i}_speed"] = np.degrees(original[f"qd{i}"])
        out[f"Axis{i}_torque"] = original[f"tau{i}"]
    path = tmp_path_factory.mktemp("log") / "stranger.csv"
    out.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def panda():
    return load_robot("panda")


def _q_ref(original, t):
    return np.stack([np.interp(t, original.t, original[f"q{i}"]) for i in range(1, 8)])


def test_state_load_map_cursor_play_and_session(stranger_log, panda, original):
    state = LogReplayState()
    seen = {"cursor": [], "replay": [], "playing": []}
    state.events.cursor.connect(seen["cursor"].append)
    state.events.replay.connect(seen["replay"].append)
    state.events.playing.connect(seen["playing"].append)
    state.set_robot(panda)
    replay = state.open_file(stranger_log)
    assert state.rmap.joints == panda.joint_names
    assert state.rmap.mapping.units["Axis1_angle"] == "deg" and state.rmap.mapping.units["time_ms"] == "ms"
    assert seen["replay"] == [replay] and state.t_range == (0.0, 30.0)
    np.testing.assert_allclose(replay.q, original[[f"q{i}" for i in range(1, 8)]].to_numpy(), atol=1e-9)
    # cursor and poses
    state.set_cursor(2.345)
    np.testing.assert_allclose(state.q_at(), _q_ref(original, 2.345), atol=1e-9)
    poses = state.link_poses_at()
    fk = panda.forward_kinematics(torch.as_tensor(_q_ref(original, 2.345))).numpy()
    np.testing.assert_allclose(poses["panda_link7"], fk[panda.link_names.index("panda_link7")], atol=1e-9)
    state.set_cursor(99.0)
    assert state.cursor == 30.0                        # clamped
    state.set_cursor(1.0)
    state.step(3)
    assert state.cursor == pytest.approx(1.03)
    state.step(-1)
    assert state.cursor == pytest.approx(1.02)
    # playing: wall time times speed; a loop wraps; the end stops
    state.set_speed(2.0)
    state.play()
    state.advance(0.5)
    assert state.cursor == pytest.approx(2.02)
    state.set_loop(2.0, 2.5)
    state.advance(0.3)                                 # 2.62 -> wraps into the range
    assert 2.0 <= state.cursor <= 2.5 and state.cursor == pytest.approx(2.12)
    state.set_loop(None)
    state.set_cursor(29.9)
    state.advance(1.0)
    assert state.cursor == 30.0 and not state.playing and seen["playing"] == [True, False]
    # the session keeps the mapping; a new state restores it without matching again
    state.set_cursor(4.0)
    saved = state.to_dict()
    other = LogReplayState()
    other.set_robot(panda)
    other.from_dict(saved)
    assert other.rmap.to_dict() == state.rmap.to_dict() and other.cursor == 4.0 and other.speed == 2.0


def test_state_mapping_from_the_dialog_and_ghost(stranger_log, panda, original):
    state = LogReplayState()
    state.set_robot(panda)
    table = read_log(stranger_log)
    state.open_table(table)
    # the mapping dialog gives a LogMapping (q columns in any order): joints are matched by name
    cols = [f"Axis{i}_angle" for i in (3, 1, 2, 4, 5, 6, 7)]
    state.set_mapping(LogMapping(time="time_ms", q=cols, units={**{c: "deg" for c in cols}, "time_ms": "ms"}))
    assert state.rmap.joints[:3] == ["panda_joint3", "panda_joint1", "panda_joint2"]
    np.testing.assert_allclose(state.replay.q, original[[f"q{i}" for i in range(1, 8)]].to_numpy(), atol=1e-9)
    assert state.replay.tau is None and not state.replay.qd_logged
    # the ghost from the cursor: the rigid-body model, torques of the full mapping
    state.open_table(table)
    state.set_cursor(5.0)
    state.set_ghost_model("rigid")
    state.set_horizon(0.2)
    ghost = state.compute_ghost()
    assert ghost.t[0] == pytest.approx(5.0) and ghost.t[-1] == pytest.approx(5.2)
    np.testing.assert_allclose(ghost.q[0], _q_ref(original, 5.0), atol=1e-9)   # starts on the log
    q_log = np.stack([_q_ref(original, t) for t in ghost.t])
    np.testing.assert_allclose(ghost.error, ghost.q - q_log, atol=1e-9)
    assert state.ghost_link_poses() is not None


@pytest.fixture
def replay_window(qtbot, ctx, panda):
    from PySide6.QtWidgets import QSplitter

    from app.viewer.geometry import GeometryOptions, load_robot_geometry
    from app.viewer.scene import RobotView
    from app.workspaces.robot.log_replay import LogReplayPanel

    split = QSplitter(Qt.Orientation.Vertical)
    view = RobotView()
    view.set_robot(load_robot_geometry(resolve_robot("panda"), GeometryOptions(max_triangles=20_000)))
    panel = LogReplayPanel(ctx, view)
    split.addWidget(view)
    split.addWidget(panel)
    split.resize(1100, 800)
    qtbot.addWidget(split)
    with qtbot.waitExposed(split):
        split.show()
    panel.set_robot(panda)
    yield panel, view
    split.close()


def test_scrubbing_moves_plots_cursor_and_robot_and_exports(
    replay_window, qtbot, stranger_log, panda, original, tmp_path
):
    import imageio.v2 as iio

    panel, view = replay_window[:2]
    panel.open_log(str(stranger_log))
    qtbot.waitUntil(lambda: panel.state.replay is not None, timeout=20000)
    assert set(panel.plots.plots) == {"q", "qd", "tau"}
    assert panel.timeline.isEnabled()
    # scrub the timeline: the plots' cursor and the robot follow
    panel.timeline.scrub_to(12.5)
    t = panel.state.cursor
    assert t == pytest.approx(12.5, abs=1e-3)
    assert all(line.value() == pytest.approx(t) for line in panel.plots.cursors.values())
    fk = panda.forward_kinematics(torch.as_tensor(_q_ref(original, t))).numpy()
    np.testing.assert_allclose(
        view.link_poses()["panda_link7"], fk[panda.link_names.index("panda_link7")], atol=1e-9
    )
    # drag a plot's cursor: the timeline follows; zooming one plot zooms all
    panel.plots.drag_cursor("qd", 20.0)
    assert panel.state.cursor == pytest.approx(20.0) and panel.timeline.time == pytest.approx(20.0)
    assert panel.plots.cursors["q"].value() == pytest.approx(20.0)
    panel.plots.plots["tau"].setXRange(3.0, 4.0, padding=0)
    lo, hi = panel.plots.x_range("q")
    assert lo == pytest.approx(3.0) and hi == pytest.approx(4.0)
    assert panel.plots.values_at(20.0, "q")["panda_joint1"] == pytest.approx(
        _q_ref(original, 20.0)[0], abs=1e-9
    )
    # a loop range set on the timeline is shaded on the plots; dragging the shade sets the loop
    panel.timeline.loop_box.setChecked(True)
    panel.timeline.loop_start.setValue(5.0)
    panel.timeline.loop_end.setValue(6.0)
    assert panel.state.loop == (5.0, 6.0)
    assert panel.plots._regions["qd"].getRegion() == pytest.approx((5.0, 6.0))
    panel.plots._regions["tau"].setRegion((7.0, 8.0))
    panel.plots._on_region_dragged(panel.plots._regions["tau"])
    assert panel.state.loop == (7.0, 8.0) and panel.timeline.loop_start.value() == 7.0
    assert panel.plots._regions["q"].getRegion() == pytest.approx((7.0, 8.0))
    # the ghost from the cursor, in a job: its error plot appears
    panel.ghost_box.setCurrentIndex(1)
    panel._on_ghost_choice(1)
    panel.horizon.setValue(0.1)
    panel.request_ghost()
    qtbot.waitUntil(lambda: panel.state.ghost is not None, timeout=20000)
    assert "error" in panel.plots.plots and panel._ghost_items
    # exports: plots as CSV / PNG, the view with its timeline as a short GIF and MP4
    csv_path = panel.export_plots(str(tmp_path / "plots.csv"))
    exported = pd.read_csv(csv_path)
    assert "q/panda_joint1" in exported.columns and len(exported) >= 3001
    assert panel.export_plots(str(tmp_path / "plots.png")).stat().st_size > 1000
    panel.state.set_loop(None)
    export = panel.export_video(str(tmp_path / "clip.mp4"), fps=10, start=1.0, end=1.5)
    qtbot.waitUntil(lambda: export.done, timeout=60000)
    info = export.result
    reader = iio.get_reader(tmp_path / "clip.mp4")
    assert info["frames"] == 6 and reader.count_frames() == 6
    assert reader.get_meta_data()["size"] == (info["width"], info["height"])
    assert panel.state.cursor == pytest.approx(20.0)     # the cursor comes back after the export


def _open_replay(panel, qtbot, path):
    panel.open_log(str(path))
    qtbot.waitUntil(lambda: panel.state.replay is not None, timeout=20000)
    panel.state.set_loop(None)


def test_video_export_leaves_the_ui_thread_free_and_reports_progress(replay_window, qtbot, stranger_log,
                                                                     tmp_path):
    """Issue 29: the export is a job fed by frames rendered in slices; the event loop runs
    throughout (a zero-interval timer keeps firing), progress climbs to 1, the file is right."""
    import imageio.v2 as iio
    from PySide6.QtCore import QTimer

    panel, _ = replay_window
    _open_replay(panel, qtbot, stranger_log)
    panel.state.set_cursor(3.0)
    export = panel.export_video(str(tmp_path / "clip.gif"), fps=20, start=1.0, end=2.0)
    assert export.running and export.result is None          # it returned before the clip was rendered
    assert not panel.video_button.isEnabled()
    seen = []
    ticker = QTimer(interval=0)
    ticker.timeout.connect(lambda: seen.append(export.running))
    ticker.start()
    qtbot.waitUntil(lambda: export.done, timeout=60000)
    ticker.stop()
    assert seen.count(True) >= 5                             # events were processed while it ran
    assert export.fractions[-1] == 1.0 and export.fractions == sorted(export.fractions)
    assert export.result["frames"] == 21 == len(iio.mimread(tmp_path / "clip.gif"))
    assert panel.state.cursor == pytest.approx(3.0) and panel.video_button.isEnabled()
    assert [p.name for p in tmp_path.iterdir()] == ["clip.gif"]


def test_cancelling_a_video_export_keeps_the_older_file(replay_window, qtbot, stranger_log, tmp_path):
    from PySide6.QtWidgets import QProgressDialog, QPushButton

    panel, _ = replay_window
    _open_replay(panel, qtbot, stranger_log)
    target = tmp_path / "clip.mp4"
    target.write_bytes(b"an older video")
    export = panel.export_video(str(target), fps=30, start=0.0, end=20.0)      # 601 frames: time to cancel
    qtbot.waitUntil(lambda: export._next >= 3, timeout=60000)
    dialog = panel.findChild(QProgressDialog, "videoProgress")
    dialog.findChild(QPushButton).click()                                      # the dialog's Cancel button
    qtbot.waitUntil(lambda: export.done, timeout=60000)
    assert export.result is None and "cancelled" in export.message
    assert export._next < len(export.times)                                   # rendering stopped too
    assert target.read_bytes() == b"an older video"
    assert [p.name for p in tmp_path.iterdir()] == ["clip.mp4"]                # no partial file left


def test_eta_text_and_frames_fitted_to_the_first_size():
    from app.workspaces.robot.log_replay_export import eta_text, fit_frame

    assert eta_text(0.25, 3.0) == "25 %, about 9 s left"
    assert eta_text(0.5, 120.0) == "50 %, about 2 min left"
    assert eta_text(1.0, 5.0) == "100 %"
    frame = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    np.testing.assert_array_equal(fit_frame(frame, (2, 4)), frame[:2, :4])      # a window made smaller
    grown = fit_frame(frame, (5, 8))                                              # ... or larger
    np.testing.assert_array_equal(grown[:4, :6], frame)
    assert grown.shape == (5, 8, 3) and not grown[4:].any() and not grown[:, 6:].any()


def test_show_on_robot_with_a_learned_model(tmp_path):
    """The Model lab's entry: a log, its LogMapping and a learned model (the pendulum's robot
    model at the true parameters) give a ghost that follows a scipy reference."""
    from scipy.integrate import solve_ivp

    from engine.models.base import ModelSpec
    from engine.models.registry import build_model
    from engine.paths import urdf_dir
    from engine.robots.model import RobotModel
    from engine.systems import get_system

    h, n = 0.01, 150
    xs = [np.array([0.2, 0.0])]
    for _ in range(n):
        sol = solve_ivp(
            lambda _t, s: [s[1], 1.5 * 9.81 * np.sin(s[0])], (0, h), xs[-1], rtol=1e-12, atol=1e-12
        )
        xs.append(sol.y[:, -1])
    xs = np.array(xs)
    pd.DataFrame({"t": np.arange(n + 1) * h, "angle": xs[:, 0], "rate": xs[:, 1], "u": 0.0}).to_csv(
        tmp_path / "p.csv", index=False)
    state = LogReplayState()
    state.set_robot(RobotModel.from_urdf(urdf_dir() / "pendulum.urdf"))
    model = build_model("robot-rk4", ModelSpec.for_system(get_system("pendulum"), h, robot_perturb=0.0))
    state.show_log(
        str(tmp_path / "p.csv"), LogMapping(time="t", q=["angle"], qd=["rate"], u=["u"]), model, "robot"
    )
    assert state.rmap.joints == ["theta"] and state.ghost_name == "robot"
    state.set_cursor(0.5)
    state.set_horizon(0.5)
    ghost = state.compute_ghost()
    np.testing.assert_allclose(ghost.q[:, 0], xs[50:101, 0], atol=1e-6)


def test_robot_page_plays_a_log_and_keeps_it_with_the_session(qtbot, ctx, stranger_log, panda, original):
    """The Robot workspace itself: a log file opened on the page plays on its robot (the panel
    under the 3D view), and the session brings the log, its mapping and the cursor back."""
    from app.workspaces.robot.page import RobotPage

    ctx.options["robot"] = "panda"
    page = RobotPage(ctx)
    qtbot.addWidget(page)
    page.resize(1300, 900)
    with qtbot.waitExposed(page):
        page.show()
    qtbot.waitUntil(lambda: page.robot is not None, timeout=90_000)
    assert str(stranger_log).endswith(".csv") and page.open_file(str(stranger_log))
    qtbot.waitUntil(lambda: page.replay.state.replay is not None, timeout=20_000)
    page.replay.timeline.scrub_to(7.5)
    fk = panda.forward_kinematics(torch.as_tensor(_q_ref(original, page.replay.state.cursor))).numpy()
    np.testing.assert_allclose(
        page.view.link_poses()["panda_link7"], fk[panda.link_names.index("panda_link7")], atol=1e-9
    )
    saved = page.session_state()
    assert (
        saved["replay"]["path"] == str(stranger_log)
        and saved["replay"]["mapping"]["joints"][0] == "panda_joint1"
    )
    page.replay.state.close()
    page.restore_session_state(saved)
    qtbot.waitUntil(lambda: page.replay.state.replay is not None, timeout=90_000)
    assert page.replay.state.cursor == pytest.approx(7.5, abs=1e-3) and not ctx.errors
    page.shutdown()
