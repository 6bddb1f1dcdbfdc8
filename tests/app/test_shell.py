"""The app shell in a real window: workspaces, jobs, errors, settings, headless runs."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import pytest
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QDialog, QMessageBox

from app.workspaces import WORKSPACES
from engine.jobs import JobCancelled


def _visible_error_dialogs(window):
    return [w for w in window.findChildren(QMessageBox) if w.isVisible()]


def test_window_shows_the_four_workspaces(make_window, qtbot):
    window = make_window()
    titles = [window.sidebar.item(i).text() for i in range(window.sidebar.count())]
    assert titles == ["Robot", "Model lab", "Eigenmode designer", "Car planner"]
    assert window.current_workspace() == "robot"
    # click the sidebar entry of the car planner: its page is shown
    item = window.sidebar.item(3)
    rect = window.sidebar.visualItemRect(item)
    qtbot.mouseClick(window.sidebar.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.pages.get("car"))
    # keyboard shortcut Ctrl+2 shows the model lab
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.current_workspace() == "model_lab")
    assert window.stack.currentWidget() is window.pages["model_lab"]
    assert {spec.key for spec in WORKSPACES} == set(window.workspace_keys())


def test_menus_have_the_promised_entries(make_window):
    window = make_window()
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    assert {"File", "View", "Help"} <= set(menus)
    file_items = [a.text().replace("&", "") for a in menus["File"].actions()]
    for wanted in ("Open URDF…", "Open Log…", "Open Model…", "Save Session…", "Open Session…",
                   "Export Screenshot…"):
        assert wanted in file_items
    help_items = [a.text().replace("&", "") for a in menus["Help"].actions()]
    assert "Keyboard Shortcuts" in help_items and "About Lagrange Studio" in help_items
    shortcuts = dict(window.shortcut_table())
    assert shortcuts["Save Session…"] and shortcuts["Robot"]


def test_job_progress_and_result_reach_the_ui(make_window, qtbot):
    window = make_window()
    seen = []

    def job(ctx):
        for i in range(20):
            ctx.check_cancelled()
            ctx.progress(i / 20, f"step {i}", {"loss": 1.0 / (i + 1)})
            time.sleep(0.02)
        return 42

    handle = window.jobs.submit(job, name="counting", on_progress=seen.append)
    # while running, the status bar lists it with a progress bar
    qtbot.waitUntil(lambda: handle.id in window.job_status.rows)
    row = window.job_status.rows[handle.id]
    assert row.name_label.text() == "Counting"  # the job name in words (app.errors.job_title)
    with qtbot.waitSignal(handle.finished, timeout=10_000) as blocker:
        pass
    assert blocker.args == [42]
    assert seen and seen[-1].message.startswith("step")
    assert any(u.metrics and "loss" in u.metrics for u in seen)
    qtbot.waitUntil(lambda: handle.id not in window.job_status.rows)


def test_progress_is_throttled_to_about_20_per_second(make_window, qtbot):
    window = make_window()
    received = []
    calls = {"n": 0, "span": 0.0}

    def chatty(ctx):
        start = time.monotonic()
        for i in range(20_000):
            ctx.progress(i / 20_000, "chatty")
            calls["n"] += 1
        calls["span"] = time.monotonic() - start
        return None

    handle = window.jobs.submit(chatty, name="chatty", on_progress=received.append)
    qtbot.waitSignal(handle.ended, timeout=20_000).wait()
    assert calls["n"] == 20_000
    # one forwarded update per 50 ms window at most, plus the start and the final one
    allowed = calls["span"] / 0.05 + 3
    assert len(received) <= allowed, (len(received), allowed)


def test_cancel_button_stops_a_running_job(make_window, qtbot):
    window = make_window()
    stopped = threading.Event()

    def endless(ctx):
        try:
            while True:
                ctx.check_cancelled()
                ctx.progress(None, "working")
                time.sleep(0.01)
        except JobCancelled:
            stopped.set()
            raise

    handle = window.jobs.submit(endless, name="endless")
    qtbot.waitUntil(lambda: handle.id in window.job_status.rows and handle.state == "running")
    button = window.job_status.rows[handle.id].cancel_button
    with qtbot.waitSignal(handle.cancelled, timeout=1000):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert stopped.is_set()
    assert handle.state == "cancelled"
    qtbot.waitUntil(lambda: handle.id not in window.job_status.rows)


def test_failing_job_shows_an_error_and_the_app_stays_usable(make_window, qtbot):
    window = make_window()

    def broken(ctx):
        ctx.progress(0.5, "about to fail")
        raise RuntimeError("the solver diverged at step 17")

    handle = window.jobs.submit(broken, name="broken job")
    qtbot.waitSignal(handle.ended, timeout=10_000).wait()
    qtbot.waitUntil(lambda: bool(_visible_error_dialogs(window)))
    dialog = _visible_error_dialogs(window)[-1]
    assert "the solver diverged at step 17" in dialog.text()
    dialog.close()
    # still usable: another job runs to completion and the workspaces still switch
    ok = window.jobs.submit(lambda ctx: "fine", name="after")
    with qtbot.waitSignal(ok.finished, timeout=10_000) as blocker:
        pass
    assert blocker.args == ["fine"]
    window.show_workspace("eigenmode")
    assert window.stack.currentWidget() is window.pages["eigenmode"]


def test_several_jobs_run_at_once(make_window, qtbot):
    window = make_window()
    barrier = threading.Barrier(3, timeout=10)

    def meet(ctx):
        barrier.wait()  # only returns if all three run concurrently
        return threading.get_ident()

    handles = [window.jobs.submit(meet, name=f"parallel {i}") for i in range(3)]
    for h in handles:
        qtbot.waitSignal(h.ended, timeout=15_000).wait() if h.state in ("queued", "running") else None
    qtbot.waitUntil(lambda: all(h.state == "finished" for h in handles), timeout=15_000)
    assert len({h.result for h in handles}) == 3


@pytest.mark.qt_no_exception_capture
def test_uncaught_exception_in_the_ui_shows_a_dialog(make_window, qtbot):
    window = make_window()

    def bad_slot():
        raise ValueError("a bug in a slot")

    QTimer.singleShot(0, bad_slot)
    qtbot.waitUntil(lambda: bool(_visible_error_dialogs(window)), timeout=5000)
    dialog = _visible_error_dialogs(window)[-1]
    assert "a bug in a slot" in dialog.text()
    dialog.close()
    assert window.isVisible()
    window.activateWindow()  # no window manager on the virtual screen gives focus back
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.current_workspace() == "eigenmode")


def test_event_loop_keeps_serving_while_a_cpu_heavy_job_runs(make_window, qtbot):
    import torch

    window = make_window()
    ticks = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))

    def heavy(ctx):
        a = torch.randn(400, 400, dtype=torch.float64)
        total = 0.0
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            ctx.check_cancelled()
            a = torch.tanh(a @ a / 400.0)          # torch work (releases the GIL)
            total += sum(i * i for i in range(20_000))  # pure Python work (holds the GIL)
            ctx.progress(None, "crunching")
        return total

    timer.start()
    handle = window.jobs.submit(heavy, name="heavy")
    qtbot.waitSignal(handle.ended, timeout=30_000).wait()
    timer.stop()
    assert handle.state == "finished"
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) > 10
    longest_stall = max(gaps)
    assert longest_stall < 0.5, f"the UI thread stalled for {longest_stall:.3f} s"


def test_log_console_shows_messages_from_worker_threads(make_window, qtbot):
    window = make_window()

    def chatty(ctx):
        logging.getLogger("engine.test").warning("hello from a worker thread")
        return None

    handle = window.jobs.submit(chatty, name="log")
    qtbot.waitSignal(handle.ended, timeout=10_000).wait()
    qtbot.waitUntil(lambda: "hello from a worker thread" in window.log_console.plain_text())


def test_settings_survive_a_restart(make_window, qtbot, settings_path, tmp_path):
    first = make_window()
    first.resize(1111, 777)
    first.show_workspace("car")
    some_file = tmp_path / "robot.urdf"
    some_file.write_text("<robot name='x'/>")
    first.add_recent_file(str(some_file))
    size = (first.width(), first.height())  # a page's minimum size may have grown it
    first.close()

    second = make_window()
    qtbot.waitUntil(lambda: second.current_workspace() == "car")
    assert (second.width(), second.height()) == size
    from app.settings import recent_files

    assert recent_files(QSettings(settings_path, QSettings.Format.IniFormat))[0] == str(some_file)


def test_session_round_trip_and_bad_session_file(make_window, qtbot, tmp_path):
    window = make_window()
    window.show_workspace("eigenmode")
    path = tmp_path / "work.lagrange.json"
    window.save_session(str(path))
    assert path.exists() and not list(tmp_path.glob(".*.tmp"))
    window.show_workspace("robot")
    assert window.open_session(str(path))
    assert window.current_workspace() == "eigenmode"
    broken = tmp_path / "broken.lagrange.json"
    broken.write_text("{ not json")
    assert not window.open_session(str(broken))
    qtbot.waitUntil(lambda: bool(_visible_error_dialogs(window)))
    assert str(broken) in _visible_error_dialogs(window)[-1].text()


def test_export_screenshot_writes_a_png(make_window, qtbot, tmp_path):
    window = make_window()
    path = tmp_path / "window.png"
    assert window.screenshot(str(path))
    image = QImage(str(path))
    assert not image.isNull() and image.width() > 200


def _is_blank(image: QImage) -> bool:
    first = image.pixel(0, 0)
    step = max(1, image.width() // 50)
    return all(image.pixel(x, y) == first for x in range(0, image.width(), step)
               for y in range(0, image.height(), step))


def _run_headless(cmd, env, timeout=180):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def test_dev_run_writes_a_screenshot(repo_root, tmp_path, subprocess_env):
    """`dev.py run --screenshot PATH --quit-after S` on the virtual screen pytest-xvfb gives."""
    shot = tmp_path / "run.png"
    result = _run_headless([sys.executable, str(repo_root / "build_scripts" / "dev.py"), "run",
                            "--screenshot", str(shot), "--quit-after", "6"], subprocess_env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert shot.exists() and shot.stat().st_size > 1000
    image = QImage(str(shot))
    assert not image.isNull() and not _is_blank(image)


def test_app_without_a_display_starts_its_own_virtual_screen(repo_root, tmp_path, subprocess_env):
    env = dict(subprocess_env)
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(var, None)
    shot = tmp_path / "headless.png"
    result = _run_headless([sys.executable, "-m", "app", "--screenshot", str(shot), "--quit-after", "6"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No display found" in result.stderr
    assert shot.exists() and not _is_blank(QImage(str(shot)))


def test_warm_up_kernels_option_builds_them_and_exits(subprocess_env):
    """``--warm-up-kernels`` (what a packaged app starts on its first run) builds or loads every
    kernel without a window and exits 0."""
    result = _run_headless([sys.executable, "-m", "app", "--warm-up-kernels"], subprocess_env, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_packaged_app_warms_its_kernels_up_in_a_low_priority_process(tmp_path, monkeypatch):
    """start_kernel_warm_up: nothing once the build is warmed; else a process of its own, niced
    (its command replaced here by one that writes its niceness)."""
    import os

    from app import main as app_main
    from engine.robots import kernel_warm_up

    out = tmp_path / "nice.txt"
    command = [sys.executable, "-c", f"import os; open({str(out)!r}, 'w').write(str(os.nice(0)))"]
    monkeypatch.setattr(kernel_warm_up, "warmed", lambda: True)
    assert app_main.start_kernel_warm_up(command) is None
    monkeypatch.setattr(kernel_warm_up, "warmed", lambda: False)
    process = app_main.start_kernel_warm_up(command)
    assert process is not None and process.wait(timeout=60) == 0
    assert int(out.read_text()) >= os.nice(0) + 10 or int(out.read_text()) == 19


def test_self_test_runs_an_engine_job_through_the_runner(repo_root, subprocess_env):
    result = _run_headless([sys.executable, "-m", "app", "--self-test"], subprocess_env)
    assert result.returncode == 0, result.stdout + result.stderr
    import json

    report = json.loads(result.stdout[result.stdout.index("{"):])
    assert report["ok"] and report["job"]["energy_drift"] < 1e-6


# ----------------------------------------------------------------------------- messages and first screen


def _console(window):
    return window.log_console.plain_text()


def test_a_users_mistake_in_a_job_is_one_plain_line_with_the_traceback_behind_details(make_window, qtbot):
    from engine.logs.errors import LogError

    window = make_window()

    def bad_log(ctx):
        raise LogError("cart.csv, line 3: 'abc' is not a number; fix the value or remove the line")

    handle = window.jobs.submit(bad_log, name="robot IK")
    qtbot.waitSignal(handle.ended, timeout=10_000).wait()
    qtbot.waitUntil(lambda: bool(_visible_error_dialogs(window)))
    dialog = _visible_error_dialogs(window)[-1]
    assert dialog.windowTitle() == "Reaching the targets failed"
    assert (
        dialog.text().startswith("cart.csv, line 3: 'abc' is not a number")
        and "LogError" not in dialog.text()
    )
    assert "Traceback" in dialog.detailedText() and "bad_log" in dialog.detailedText()
    dialog.close()
    qtbot.waitUntil(lambda: "'abc' is not a number" in _console(window))
    line = next(x for x in _console(window).splitlines() if "'abc' is not a number" in x)
    assert "WARNING" in line and "Traceback" not in _console(window)


def test_an_internal_error_in_a_job_keeps_its_traceback_in_the_console(make_window, qtbot):
    window = make_window()

    def broken(ctx):
        return {}["mass"]

    handle = window.jobs.submit(broken, name="train symo #1")
    qtbot.waitSignal(handle.ended, timeout=10_000).wait()
    qtbot.waitUntil(lambda: bool(_visible_error_dialogs(window)))
    dialog = _visible_error_dialogs(window)[-1]
    assert dialog.windowTitle() == "Training symo #1 failed" and "KeyError" not in dialog.text()
    assert "KeyError: 'mass'" in dialog.detailedText()
    dialog.close()
    qtbot.waitUntil(lambda: "KeyError: 'mass'" in _console(window))
    assert "ERROR" in _console(window) and "Traceback" in _console(window)


def test_class_names_never_reach_a_dialog(make_window, qtbot):
    window = make_window()
    window.show_error("Eigenmode design", "ConfigError: target: (5, 5) is 7.1 m from the pivot, out of reach")
    window.show_error("Job failed: load robot foo.urdf", "URDFError: foo.urdf line 3: negative mass")
    qtbot.waitUntil(lambda: len(_visible_error_dialogs(window)) == 2)
    first, second = _visible_error_dialogs(window)
    assert first.text() == "target: (5, 5) is 7.1 m from the pivot, out of reach"
    assert second.windowTitle() == "Opening the robot foo.urdf failed"
    assert second.text() == "foo.urdf line 3: negative mass"
    for dialog in (first, second):
        dialog.close()


def test_every_finished_job_leaves_one_summary_line(make_window, qtbot):
    window = make_window()
    handle = window.jobs.submit(lambda ctx: 42, name="evaluate mlp #2")
    qtbot.waitSignal(handle.ended, timeout=10_000).wait()
    qtbot.waitUntil(lambda: "Evaluating mlp #2: done" in _console(window))
    assert sum("Evaluating mlp #2" in line for line in _console(window).splitlines()) == 1


def test_the_log_console_starts_hidden_and_its_badge_counts_warnings(make_window, qtbot):
    window = make_window()
    console, badge = window.log_console, window.log_console.badge
    assert not console.isVisible() and badge.isVisible() and badge.text() == "Log"
    logging.getLogger("engine.test").warning("a first warning")
    logging.getLogger("app.test").error("an error")
    qtbot.waitUntil(lambda: badge.count == 2)
    assert badge.text() == "⚠ 2" and "1 error and 1 warning" in badge.toolTip()
    qtbot.mouseClick(badge, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(console.isVisible)
    assert badge.count == 0 and "a first warning" in _console(window)
    logging.getLogger("engine.test").warning("seen at once")
    qtbot.waitUntil(lambda: "seen at once" in _console(window))
    assert badge.count == 0  # the console is open: nothing to count


def test_third_party_info_stays_out_of_the_console(make_window, qtbot):
    window = make_window()
    logging.getLogger("matplotlib.font_manager").info("font cache rebuilt (noise)")
    logging.getLogger("engine.test").info("the project's own info")
    logging.getLogger("trimesh").warning("a third-party warning")
    qtbot.waitUntil(lambda: "a third-party warning" in _console(window))
    qtbot.waitUntil(lambda: "the project's own info" in _console(window))
    assert "noise" not in _console(window)


def _help_entries(window):
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    return [a for a in menus["Help"].actions() if not a.isSeparator()]


def test_the_shortcuts_dialog_fits_a_laptop_screen_without_scrolling(make_window, qtbot):
    from PySide6.QtWidgets import QAbstractScrollArea, QLabel

    window = make_window()
    action = next(a for a in _help_entries(window) if a.text().replace("&", "") == "Keyboard Shortcuts")
    action.trigger()
    qtbot.waitUntil(lambda: window.findChild(QDialog, "shortcutsDialog") is not None)
    dialog = window.findChild(QDialog, "shortcutsDialog")
    qtbot.waitUntil(dialog.isVisible)
    size = dialog.sizeHint()
    assert size.width() <= 1366 - 40 and size.height() <= 768 - 80, size
    assert dialog.height() <= 768 - 80 and not dialog.findChildren(QAbstractScrollArea)
    texts = {label.text() for label in dialog.findChildren(QLabel)}
    rows = window.shortcut_table()
    assert len(rows) > 10 and all(name in texts for name, _ in rows)
    dialog.close()



def _start_example(window, qtbot, key):
    action = _help_entries(window)[0]
    assert action.text().replace("&", "") == "Getting Started…"
    action.trigger()
    dialog = window.getting_started_dialog
    qtbot.waitUntil(dialog.isVisible)
    assert set(dialog.buttons) == {"robot", "car", "model_lab"}
    qtbot.mouseClick(dialog.buttons[key], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.isVisible())


def test_getting_started_reaches_a_target_with_the_robot_in_one_click(make_window, qtbot):
    import numpy as np

    window = make_window()
    _start_example(window, qtbot, "robot")
    page = window.pages["robot"]
    assert window.current_workspace() == "robot"
    with qtbot.waitSignal(page.ik_finished, timeout=120_000) as blocker:
        pass
    outcome = blocker.args[0]
    target = page.targets.targets[0]
    reached = page.link_pose(target.link, q=outcome.q)  # the solution (the arm then animates to it)
    assert np.linalg.norm(reached[:3, 3] - np.asarray(target.gizmo.pose)[:3, 3]) < 2e-3


def test_getting_started_plans_a_car_manoeuvre_in_one_click(make_window, qtbot):
    window = make_window()
    _start_example(window, qtbot, "car")
    page = window.pages["car"]
    assert window.current_workspace() == "car"
    assert page.state.scenario == "parallel-parking" and len(page.state.targets) > 0
    qtbot.waitUntil(lambda: any(h.name == "Optimise car trajectory" for h in window.jobs.active_jobs()),
                    timeout=10_000)
    window.jobs.cancel_all()


def test_getting_started_compares_models_on_a_log_in_one_click(make_window, qtbot):
    window = make_window()
    _start_example(window, qtbot, "model_lab")
    page = window.pages["model_lab"]
    assert window.current_workspace() == "model_lab"
    qtbot.waitUntil(lambda: len(page.runs_panel.runs) >= 2, timeout=120_000)
    names = [run.name for run in page.runs_panel.runs.values()]
    assert sum("(example)" in name for name in names) == 2   # the example's two trained models
    # one click on: the log on the pendulum in the Robot workspace, a trained model as its ghost
    panel = page.compare_panel
    qtbot.waitUntil(panel.robot_button.isEnabled, timeout=30_000)
    qtbot.mouseClick(panel.robot_button, Qt.MouseButton.LeftButton)
    robot = window.pages["robot"]
    qtbot.waitUntil(
        lambda: robot.replay.state.replay is not None and robot.robot.model.dof == 1, timeout=120_000
    )
    assert window.current_workspace() == "robot" and robot.replay.ghost_button.isEnabled()
    window.jobs.cancel_all()
