"""Saved sessions reopen through every way a file opens; damaged parts are named, the rest
restored; the GUI loads robots with the API's rules (real windows on Xvfb)."""

from __future__ import annotations

import json

import numpy as np
import torch
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMessageBox

LOAD_MS = 90_000


def _errors(window) -> list[QMessageBox]:
    return [b for b in window.error_dialogs if b.isVisible()]


def _robot_session(window, qtbot, tmp_path):
    """A session with the pendulum at q = 0.4 and one target, saved as *.lagrange.json."""
    from engine.robots import RobotModel

    page = window.show_workspace("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=LOAD_MS)
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot("pendulum")
    page.set_q(np.array([0.4]))
    ref = RobotModel.from_urdf(page.robot.path, dtype=torch.float64)
    link = page.targets.end_effector
    pose = ref.link_pose(torch.as_tensor([0.2], dtype=torch.float64), link).numpy()
    page.targets.add_target(link, pose)
    path = tmp_path / "work.lagrange.json"
    window.save_session(str(path))
    return page, path, link, pose


def _reset(page, qtbot):
    page.targets.clear()
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot("double_pendulum")


def _restored(page, qtbot, link, pose):
    qtbot.waitUntil(lambda: page.robot is not None and page.robot.model.dof == 1
                    and len(page.targets.targets) >= 1, timeout=LOAD_MS)
    np.testing.assert_allclose(page.q, [0.4])
    assert page.targets.targets[-1].link == link
    np.testing.assert_allclose(page.targets.targets[-1].pose, pose)


def test_a_session_reopens_through_open_file_recent_drop_and_plain_json(make_window, qtbot, tmp_path):
    window = make_window()
    page, path, link, pose = _robot_session(window, qtbot, tmp_path)

    # --open and File > Open dialogs go through open_file
    _reset(page, qtbot)
    window.show_workspace("model_lab")
    assert window.open_file(str(path))
    _restored(page, qtbot, link, pose)
    assert window.current_workspace() == "robot" and not _errors(window)

    # File > Open Recent: the menu's action for the session
    _reset(page, qtbot)
    window._fill_recent_menu()
    actions = [a for a in window.recent_menu.actions() if a.text() == str(path)]
    assert actions, [a.text() for a in window.recent_menu.actions()]
    actions[0].trigger()
    _restored(page, qtbot, link, pose)

    # drag-and-drop onto the window
    _reset(page, qtbot)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    drop = QDropEvent(QPointF(QPoint(10, 10)), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    window.dropEvent(drop)
    _restored(page, qtbot, link, pose)

    # a session saved under a plain .json name is recognised by its content
    plain = tmp_path / "session.json"
    plain.write_text(path.read_text())
    _reset(page, qtbot)
    assert window.open_file(str(plain))
    _restored(page, qtbot, link, pose)
    assert not _errors(window)
    assert window.exception_hook.last_dialog is None


def test_a_damaged_part_is_named_and_the_rest_restored(make_window, qtbot, tmp_path):
    window = make_window()
    page, path, link, pose = _robot_session(window, qtbot, tmp_path)
    state = json.loads(path.read_text())
    state["pages"]["robot"]["q"] = ["not", "numbers", {}]          # a malformed joint list
    state["pages"]["robot"]["targets"].insert(0, {"link": link})    # a target without a pose
    state["pages"]["eigenmode"] = [1, 2, 3]                         # a part that is not an object
    damaged = tmp_path / "damaged.lagrange.json"
    damaged.write_text(json.dumps(state))
    _reset(page, qtbot)
    assert window.open_file(str(damaged))
    qtbot.waitUntil(lambda: len(page.targets.targets) == 1 and page.robot.model.dof == 1, timeout=LOAD_MS)
    np.testing.assert_allclose(page.targets.targets[0].pose, pose)   # the good target is back
    qtbot.waitUntil(lambda: len(_errors(window)) >= 2)
    texts = " | ".join(b.text() for b in _errors(window))
    assert "joint positions 'q'" in texts and "target 1" in texts
    assert "Eigenmode" in texts and "not an object" in texts
    assert window.exception_hook.last_dialog is None                 # no uncaught exception


def test_not_a_session_and_unreadable_sessions_are_named(make_window, qtbot, tmp_path):
    window = make_window()
    other = tmp_path / "x.lagrange.json"
    other.write_text(json.dumps({"format": "something-else"}))
    assert not window.open_file(str(other))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    assert "not a Lagrange Studio session file" in _errors(window)[-1].text()
    newer = tmp_path / "newer.lagrange.json"
    newer.write_text(json.dumps({"format": "lagrange-studio-session", "version": 99, "pages": {}}))
    assert not window.open_session(str(newer))
    assert "newer than this app" in _errors(window)[-1].text()
    assert not window.open_session(str(tmp_path / "missing.lagrange.json"))
    assert "file not found" in _errors(window)[-1].text()


def test_negative_mass_is_refused_not_loaded_leniently(make_window, qtbot, tmp_path):
    from engine.paths import urdf_dir

    text = (urdf_dir() / "pendulum.urdf").read_text()
    import re

    masses = re.findall(r'<mass value="([^"]+)"', text)
    assert masses
    bad = tmp_path / "negative.urdf"
    bad.write_text(re.sub(r'<mass value="[^"]+"', '<mass value="-1"', text, count=1))
    window = make_window()
    page = window.show_workspace("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=LOAD_MS)
    shown = page.robot
    with qtbot.waitSignal(page.robot_failed, timeout=LOAD_MS):
        page.load_robot(str(bad))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    message = _errors(window)[-1].text()
    assert "negative.urdf" in message and "mass must be positive, got -1" in message
    assert "physically impossible" in message and "strict=False" not in message
    assert page.robot is shown


def test_fuzzed_sessions_never_reach_the_uncaught_exception_dialog(make_window, qtbot, tmp_path):
    """Random JSON in each workspace's part (and around it): open_session restores what it can and
    names the rest; no exception escapes to the uncaught-exception dialog."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from app.workspaces import WORKSPACES

    window = make_window()
    keys = [spec.key for spec in WORKSPACES if spec.key != "robot"]  # the robot part loads a robot (slow)
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats() | st.text(max_size=6),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8)
    path = tmp_path / "fuzz.lagrange.json"

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(pages=st.dictionaries(st.sampled_from(keys + ["nope"]), values, max_size=3),
           workspace=st.one_of(st.sampled_from(keys), values), version=st.sampled_from([1, 0, None, "1"]))
    def run(pages, workspace, version):
        path.write_text(json.dumps({"format": "lagrange-studio-session", "version": version,
                                    "workspace": workspace, "pages": pages}))
        window.open_file(str(path))
        qtbot.wait(20)
        for box in _errors(window):
            box.close()
        assert window.exception_hook.last_dialog is None

    run()


def test_a_missing_recent_file_is_named_and_forgotten(make_window, qtbot, tmp_path):
    from app.settings import recent_files

    window = make_window()
    gone = tmp_path / "gone.lagrange.json"
    gone.write_text("{}")
    window.add_recent_file(str(gone))
    gone.unlink()
    assert str(gone) in recent_files(window.settings)
    assert not window.open_file(str(gone))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    assert "file not found" in _errors(window)[-1].text() and str(gone) in _errors(window)[-1].text()
    assert str(gone) not in recent_files(window.settings)


def test_a_damaged_model_file_gets_one_message_naming_the_problem(make_window, qtbot, tmp_path):
    from engine.models.base import ModelSpec
    from engine.models.registry import build_model, save_model

    model = build_model("mlp", ModelSpec(hidden=8))
    name, param = next(iter(model.named_parameters()))
    with torch.no_grad():
        param.view(-1)[0] = float("nan")
    save_model(tmp_path / "m", model)
    window = make_window()
    assert not window.open_file(str(tmp_path / "m" / "model.json"))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    texts = [b.text() for b in _errors(window)]
    assert len(texts) == 1 and f"tensor '{name}' holds 1 NaN" in texts[0], texts
    assert "no workspace opens" not in texts[0]
