"""The Robot workspace in a real window (pytest-qt on Xvfb).

References are independent of the page: a RobotModel loaded separately for poses, the
solve checked by forward kinematics, errors captured from ctx.show_error (no modal).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import QCoreApplication, QPoint, QSettings, Qt
from PySide6.QtGui import QImage, QKeySequence

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)



from app.context import AppContext  # noqa: E402  (after the GL attribute)
from app.jobs import JobRunner  # noqa: E402

LOAD_MS = 90_000
SOLVE_MS = 120_000


def _pixels(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGBA8888)
    arr = np.frombuffer(img.constBits(), np.uint8, img.sizeInBytes())
    return arr.reshape(img.height(), img.bytesPerLine() // 4, 4)[:, :img.width(), :3].astype(int)


class Env:
    def __init__(self, qtbot, tmp_path, options=None, settings_file="s.ini"):
        self.qtbot = qtbot
        self.errors: list[tuple[str, str]] = []
        self.settings = QSettings(str(tmp_path / settings_file), QSettings.Format.IniFormat)
        self.runner = JobRunner()
        self.ctx = AppContext(jobs=self.runner, settings=self.settings,
                              show_error=lambda title, message: self.errors.append((title, message)),
                              options=dict(options or {}))

    def page(self):
        from app.workspaces.robot.page import RobotPage
        page = RobotPage(self.ctx)
        self.qtbot.addWidget(page)
        page.resize(1300, 800)
        page.show()
        self.qtbot.waitExposed(page)
        self.qtbot.waitUntil(lambda: page.robot is not None or bool(self.errors), timeout=LOAD_MS)
        assert not self.errors, self.errors
        return page

    def close(self, page):
        page.shutdown()
        self.runner.wait_for_done(60_000)


@pytest.fixture
def env(qtbot, tmp_path):
    e = Env(qtbot, tmp_path)
    yield e
    e.runner.cancel_all()
    e.runner.wait_for_done(60_000)


def _reference(path):
    from engine.robots import RobotModel
    try:
        return RobotModel.from_urdf(path, dtype=torch.float64)
    except ValueError:
        return RobotModel.from_urdf(path, dtype=torch.float64, strict=False)


def _wait_solved(qtbot, page, timeout=SOLVE_MS):
    with qtbot.waitSignal(page.ik_finished, timeout=timeout) as blocker:
        handle = page.optimise()
        assert handle is not None
    qtbot.waitUntil(lambda: not page.animating, timeout=5000)
    return blocker.args[0]


def test_shipped_panda_is_shown_and_sliders_move_the_pose_readout(env, qtbot):
    from app.viewer.scene import RobotView
    from engine.paths import urdf_dir

    page = env.page()
    assert Path(page.robot.path).resolve() == (urdf_dir() / "panda.urdf").resolve()
    assert env.settings.value("robot/last") == "panda"
    view = page.view
    shot = _pixels(view.screenshot())
    assert shot.reshape(-1, 3).std(axis=0).max() > 5          # not blank
    empty_view = RobotView()
    qtbot.addWidget(empty_view)
    empty_view.resize(view.size())
    empty_view.show()
    qtbot.waitExposed(empty_view)
    empty_view.setCameraParams(**view.cameraParams())
    empty = _pixels(empty_view.screenshot())
    assert empty.shape == shot.shape
    assert (np.abs(shot - empty).sum(axis=2) > 30).mean() > 0.005   # the robot's pixels

    ref = _reference(page.robot.path)
    link = page.targets.end_effector
    assert link == "panda_hand_tcp"
    slider = page.joints.slider(1)
    slider.setValue(slider.value() + 300)        # as a user drag does: valueChanged
    q = page.q
    assert abs(q[1]) > 0.1
    expected = ref.link_pose(torch.as_tensor(q), link).numpy()
    qtbot.waitUntil(lambda: page.dynamics.readouts is not None
                    and bool(np.allclose(page.dynamics.readouts.q, q)), timeout=30_000)
    np.testing.assert_allclose(page.dynamics.readouts.pose, expected, atol=1e-9)
    x, y, z = expected[:3, 3]
    assert f"x {x:+.4f}  y {y:+.4f}  z {z:+.4f}" in page.dynamics.pose_label.text()
    # gravity torques and mass matrix of the same state, from the reference model
    np.testing.assert_allclose(
        page.dynamics.readouts.gravity, ref.gravity_torques(torch.as_tensor(q)).numpy(), atol=1e-9
    )
    np.testing.assert_allclose(
        page.dynamics.readouts.mass_matrix, ref.mass_matrix(torch.as_tensor(q)).numpy(), atol=1e-9
    )
    # the view's link transform is the engine's pose
    np.testing.assert_allclose(view.link_poses()[link], expected, atol=1e-9)
    # clicking a link in the view makes it the end effector
    clicked = None
    for name in ("panda_link3", "panda_link4", "panda_link5", "panda_link2"):
        pose = ref.link_pose(torch.as_tensor(q), name).numpy()
        part = page.robot.geometry.links[name].visual
        centre = pose[:3, :3] @ part.vertices.mean(axis=0) + pose[:3, 3]
        (x, y), = view.project(centre[None])[0]
        if view.link_at(x, y) == name:      # not hidden behind another link from here
            clicked = name
            break
    assert clicked is not None
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(int(np.rint(x)), int(np.rint(y))))
    assert page.targets.end_effector == clicked
    env.close(page)


def test_reachable_target_is_reached_unreachable_is_reported_and_undo(env, qtbot):
    page = env.page()
    ref = _reference(page.robot.path)
    link = page.targets.end_effector
    lo, hi = (ref.joint_limits.lower.numpy(), ref.joint_limits.upper.numpy())
    q_goal = lo + (hi - lo) * np.array([0.6, 0.55, 0.45, 0.6, 0.5, 0.55, 0.4])
    goal = ref.link_pose(torch.as_tensor(q_goal), link).numpy()
    q_before = page.q
    page.targets.add_target(link)                # at the current pose: already reached
    out = _wait_solved(qtbot, page)
    assert out.converged and out.position_error < 1e-12
    np.testing.assert_allclose(page.q, q_before, atol=1e-12)
    page.state.history.clear()
    page.targets.set_target_pose(link, goal)
    # the solver options form is bound to the engine's IKOptions: a tighter tolerance is kept
    page.targets.options_form.set_value({"tol_pos": 1e-5})
    assert page.targets.ik_options().tol_pos == pytest.approx(1e-5)
    out = _wait_solved(qtbot, page)
    assert out.converged
    reached = ref.link_pose(torch.as_tensor(page.q), link).numpy()
    assert np.linalg.norm(reached[:3, 3] - goal[:3, 3]) < 1e-5
    assert np.all(page.q >= lo - 1e-12) and np.all(page.q <= hi + 1e-12)
    assert "Reached" in page.targets.message_label.text()
    assert page.targets.residual_label.text().startswith("residual: ")
    # Ctrl+Z undoes the solve
    solved_q = page.q
    # Ctrl+Z undoes the solve (the page's undo action, bound to Ctrl+Z for the page and its
    # children; triggered directly: Xvfb has no window manager to make the window active)
    assert (
        page.undo_action.shortcut().matches(QKeySequence("Ctrl+Z")) == QKeySequence.SequenceMatch.ExactMatch
    )
    assert page.undo_action in page.actions()
    page.undo_action.trigger()
    np.testing.assert_allclose(page.q, q_before, atol=1e-12)
    page.redo_action.trigger()
    qtbot.waitUntil(lambda: not page.animating, timeout=5000)
    np.testing.assert_allclose(page.q, solved_q, atol=1e-12)

    # typed values move the target: x in metres, yaw in degrees (URDF roll-pitch-yaw)
    from scipy.spatial.transform import Rotation
    spins = page.targets.value_spins
    spins[0].setValue(2.5)
    spins[5].setValue(30.0)
    typed = page.targets.target_for(link).pose
    assert typed[0, 3] == pytest.approx(2.5)
    np.testing.assert_allclose(typed[1:3, 3], goal[1:3, 3], atol=1e-4)
    rpy = np.radians([spins[3].value(), spins[4].value(), 30.0])
    np.testing.assert_allclose(typed[:3, :3], Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-12)
    # the typed target is 2.5 m away: the Panda reaches about 0.85 m
    out = _wait_solved(qtbot, page)
    assert not out.converged
    assert "out of reach" in page.targets.message_label.text().lower()
    assert np.all(page.q >= lo - 1e-12) and np.all(page.q <= hi + 1e-12)
    assert page.robot is not None and page.targets.optimise_button.isEnabled()
    env.close(page)


def test_malformed_urdf_shows_the_engine_error_and_keeps_the_robot(env, qtbot, tmp_path):
    page = env.page()
    shown = page.robot
    bad = tmp_path / "broken.urdf"
    bad.write_text('<robot name="broken"><link name="a"></link><joint name="j" type="revolute">')
    with qtbot.waitSignal(page.robot_failed, timeout=LOAD_MS):
        assert page.open_file(str(bad))
    assert len(env.errors) == 1
    _title, message = env.errors[0]
    assert "broken.urdf" in message and "URDFError" not in message   # plain words, no class names
    from engine.robots import RobotModel
    with pytest.raises(ValueError) as engine_error:
        RobotModel.from_urdf(bad)
    assert str(engine_error.value) in message           # the engine's own words
    assert page.robot is shown
    assert page.view.geometry_data is shown.geometry
    assert not page.open_file(str(tmp_path / "notes.docx"))   # neither a robot nor a log (.txt is a log)
    env.close(page)


def test_allegro_two_fingertips_at_once(env, qtbot):
    page = env.page()
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot("allegro-right")
    ref = _reference(page.robot.path)
    tips = ["link_3.0_tip", "link_7.0_tip"]
    assert all(t in page.robot.model.link_names for t in tips)
    lo, hi = (ref.joint_limits.lower.numpy(), ref.joint_limits.upper.numpy())
    q_goal = lo + (hi - lo) * np.linspace(0.3, 0.7, ref.dof)
    goals = {t: ref.link_pose(torch.as_tensor(q_goal), t).numpy() for t in tips}
    for t in tips:
        page.targets.add_target(t, goals[t], position_only=True)
    assert len(page.view.gizmos) == 2
    out = _wait_solved(qtbot, page)
    assert out.converged
    for t in tips:
        reached = ref.link_pose(torch.as_tensor(page.q), t).numpy()
        assert np.linalg.norm(reached[:3, 3] - goals[t][:3, 3]) < 1e-3, t
    # the last robot opens the next time
    env.close(page)
    page2 = env.page()
    assert page2.robot.source == "allegro-right"
    env.close(page2)


def test_follow_mode_solves_only_the_latest_drag(env, qtbot):
    page = env.page()
    ref = _reference(page.robot.path)
    link = page.targets.end_effector
    start = ref.link_pose(torch.as_tensor(page.q), link).numpy()
    target = page.targets.add_target(link, start, position_only=True)
    page.targets.follow_box.setChecked(True)
    last = start.copy()
    for k in range(1, 9):                       # a drag: many moves, faster than the solves
        last = start.copy()
        last[:3, 3] += [0.0, 0.01 * k, -0.005 * k]
        target.gizmo.set_pose(last, emit=True)
    qtbot.waitUntil(lambda: not page._follow.busy, timeout=SOLVE_MS)
    assert page._follow.completed >= 1 and page._follow.dropped >= 1
    assert page._follow.completed + page._follow.dropped == 8
    reached = ref.link_pose(torch.as_tensor(page.q), link).numpy()
    assert np.linalg.norm(reached[:3, 3] - last[:3, 3]) < 1e-3
    env.close(page)


def test_simulation_gravity_compensation_holds_and_free_fall_falls(env, qtbot):
    from app.workspaces.robot.robot_jobs import SimulationOptions, simulate_job
    from engine.jobs import NullJobContext

    page = env.page()
    model = page.robot.model
    q0 = page.q
    q0[1] = 0.6
    hold = simulate_job(
        model, q0, np.zeros(model.dof), SimulationOptions("gravity_compensation", duration=0.2)
    )(NullJobContext())
    np.testing.assert_allclose(hold.q[-1], q0, atol=1e-6)
    fall = simulate_job(
        model, q0, np.zeros(model.dof), SimulationOptions("free_fall", duration=0.2, damping=False)
    )(NullJobContext())
    # over a short time, q(t) ~ q0 + 1/2 qdd0 t^2 with qdd0 the engine's forward dynamics
    qdd0 = model.forward_dynamics(torch.as_tensor(q0), torch.zeros(model.dof, dtype=torch.float64),
                                  torch.zeros(model.dof, dtype=torch.float64)).numpy()
    k = np.searchsorted(fall.t, 0.05)
    np.testing.assert_allclose(fall.q[k] - q0, 0.5 * qdd0 * fall.t[k] ** 2, atol=2e-3)
    # PD to a keyframe: the arm settles on it (kp = 100 /s^2, kd = 20 /s: critically damped)
    goal = np.clip(q0 + 0.2, *page.joints.limits)
    pd = simulate_job(
        model,
        q0,
        np.zeros(model.dof),
        SimulationOptions("pd_keyframes", duration=0.8, dt=0.004),
        [0.0],
        [goal],
    )(NullJobContext())
    assert np.abs(pd.q[-1] - goal).max() < 0.02
    assert np.abs(pd.q[-1] - goal).max() < 0.2 * np.abs(q0 - goal).max()
    with pytest.raises(ValueError, match="keyframe"):
        simulate_job(model, q0, np.zeros(model.dof), SimulationOptions("pd_keyframes"))
    # from the page: a simulation job, then real-time playback
    page.set_q(q0)
    page.motion.mode_box.setCurrentIndex(page.motion.mode_box.findData("free_fall"))
    page.motion.duration_spin.setValue(0.3)
    with qtbot.waitSignal(page.motion.q_requested, timeout=SOLVE_MS):
        page.simulate(page.motion.simulation_options())
    qtbot.waitUntil(lambda: not page.motion.playing, timeout=10_000)
    assert np.abs(page.q - q0).max() > 1e-3
    env.close(page)


def test_keyframes_interpolate_in_joint_space(env, qtbot):
    page = env.page()
    a = page.q
    b = a + 0.3
    page.motion.add_keyframe(a)
    page.motion.add_keyframe(b)
    page.motion.time_slider.setValue(page.motion.time_slider.maximum() // 4)
    np.testing.assert_allclose(page.q, np.clip(0.75 * a + 0.25 * b, *page.joints.limits), atol=1e-9)
    env.close(page)


def test_start_robot_option_and_degrees_setting(qtbot, tmp_path):
    e = Env(qtbot, tmp_path, options={"robot": "planar_2link"})
    e.settings.setValue("robot/angle_units", "rad")
    page = e.page()
    assert page.robot.source == "planar_2link" and page.robot.model.dof == 2
    assert page.joints.units == "rad"
    page.joints.spin(0).setValue(0.5)
    assert page.q[0] == pytest.approx(0.5)
    page.joints.set_units("deg")
    assert page.joints.spin(0).value() == pytest.approx(np.degrees(0.5), abs=0.05)
    e.close(page)
    e.runner.wait_for_done(60_000)


def test_drop_a_urdf_file_loads_it_and_remembers_it(env, qtbot, tmp_path):
    import shutil

    from PySide6.QtCore import QMimeData, QPoint, QUrl
    from PySide6.QtGui import QDropEvent

    from engine.paths import urdf_dir

    page = env.page()
    copy = tmp_path / "my_pendulum.urdf"
    shutil.copy(urdf_dir() / "pendulum.urdf", copy)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(copy))])
    drop = QDropEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.dropEvent(drop)
    assert drop.isAccepted()
    assert Path(page.robot.path) == copy.resolve()
    ref = _reference(str(copy))
    assert page.robot.model.dof == ref.dof and list(page.robot.model.joint_names) == list(ref.joint_names)
    recent = env.settings.value("robot/recent")
    recent = [recent] if isinstance(recent, str) else list(recent)
    assert recent[0] == str(copy.resolve())
    assert page.picker.findData(str(copy.resolve())) >= 0
    # a session round trip: same robot, pose and targets
    page.set_q(np.array([0.4]))
    link = page.targets.end_effector
    page.targets.add_target(link, ref.link_pose(torch.as_tensor([0.2]), link).numpy())
    state = page.session_state()
    env.close(page)
    page2 = env.page()
    with qtbot.waitSignal(page2.robot_loaded, timeout=LOAD_MS):
        page2.restore_session_state(state)
    np.testing.assert_allclose(page2.q, [0.4])
    assert [t.link for t in page2.targets.targets] == [link]
    np.testing.assert_allclose(page2.targets.targets[0].pose, state["targets"][0]["pose"])
    env.close(page2)


def test_a_bad_start_robot_is_reported_and_the_default_opens(qtbot, tmp_path):
    from app.workspaces.robot.page import RobotPage

    e = Env(qtbot, tmp_path, options={"robot": str(tmp_path / "missing.urdf")})
    page = RobotPage(e.ctx)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.robot is not None, timeout=LOAD_MS)
    assert len(e.errors) == 1 and "missing.urdf" in e.errors[0][1]
    assert page.robot.source == "panda"
    e.close(page)


def test_drop_mjcf_and_open_xacro_with_arguments(env, qtbot, monkeypatch):
    from PySide6.QtCore import QMimeData, QUrl
    from PySide6.QtGui import QDropEvent

    from engine.robots import RobotModel

    robots = Path(__file__).parents[3] / "engine" / "robots"
    page = env.page()
    mjcf = robots / "mjcf" / "arm.xml"
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(mjcf))])
    drop = QDropEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.dropEvent(drop)
    assert drop.isAccepted() and page.robot.model.joint_names == ["j1", "j2", "j3", "j4"]
    shown = {n for n, g in page.robot.geometry.links.items() if g.visual is not None}
    assert {"base", "l1", "l2", "l3"} <= shown                  # box, capsule, cylinder, sphere geoms
    # a xacro file: the open dialog's arguments field (name:=value pairs)
    asked = []

    def get_text(parent, title, label, text=""):
        asked.append(label)
        return "links:=3 tool:=true", True
    monkeypatch.setattr("app.workspaces.robot.xacro_dialogs.QInputDialog.getText", get_text)
    xacro = robots / "xacro_arm" / "arm.urdf.xacro"
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        assert page.open_file(str(xacro))
    assert asked and "arm.urdf.xacro" in asked[0]
    ref = RobotModel.from_file(xacro, xacro_args={"links": "3", "tool": "true"})
    assert page.robot.model.joint_names == ref.joint_names and "tool" in page.robot.model.link_names
    assert page.session_state()["xacro_args"] == {"links": "3", "tool": "true"}
    assert env.settings.value("robot/xacro_args") == "links:=3 tool:=true"
    assert not env.errors
    env.close(page)


def test_a_xacro_robot_of_a_session_recent_entry_or_last_run_expands_only_with_the_users_say_so(
        env, qtbot, tmp_path, monkeypatch):
    from app.workspaces.robot.page import LAST_KEY, RECENT_KEY
    from app.workspaces.robot.robot_jobs import load_robot_job
    from engine.jobs import ThreadJobContext
    from engine.robots import URDFError, xacro_loader

    xacro = Path(__file__).parents[3] / "engine" / "robots" / "xacro_arm" / "arm.urdf.xacro"
    expanded = []
    expand = xacro_loader.expand_xacro
    monkeypatch.setattr(
        xacro_loader, "expand_xacro", lambda *a, **k: expanded.append(a[0]) or expand(*a, **k)
    )
    # the Qt-free job refuses a xacro file unless the caller says the user agreed
    with pytest.raises(URDFError, match="arm.urdf.xacro: a xacro file is a program"):
        load_robot_job(str(xacro))(ThreadJobContext())
    assert not expanded
    # the last robot of an earlier run: the default robot instead, and a word in the status line
    env.settings.setValue(LAST_KEY, str(xacro))
    page = env.page()
    assert page.robot.source == "panda" and not expanded
    assert "arm.urdf.xacro" in page.status_label.full_text()
    asked = []
    page.confirm_xacro = lambda path, why: asked.append((path, why)) or False
    # a session: asked, declined, nothing expanded, the shown robot stays
    session = {"robot": str(xacro), "xacro_args": {"links": "3"}, "q": [0.1, 0.2, -0.3]}
    page.restore_session_state(session)
    assert asked == [(str(xacro), "session")] and page._load_handle is None
    # an entry of the robot list's recent files: asked too
    env.settings.setValue(RECENT_KEY, [str(xacro)])
    page._fill_picker()
    page.picker.activated.emit(page.picker.findData(str(xacro)))          # as a click on the entry
    assert asked[-1] == (str(xacro), "recent") and page._load_handle is None
    env.runner.wait_for_done(10_000)
    assert page.robot.source == "panda" and not expanded and not env.errors
    # yes: the session's robot, arguments and pose
    page.confirm_xacro = lambda path, why: asked.append((path, why)) or True
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.restore_session_state(session)
    qtbot.waitUntil(lambda: np.allclose(page.q, session["q"]), timeout=5000)
    assert page.robot.model.joint_names == ["joint1", "joint2", "joint3"] and expanded == [xacro]
    env.close(page)


def test_inertia_boxes_toggle_and_follow_the_robot(env, qtbot):
    from app.viewer.geometry import inertia_box

    page = env.page()
    model = page.robot.model
    massive = [l for l in model.link_names if float(model.link_mass(l)) > 0]
    assert set(page.robot.inertia_boxes) == set(massive)
    button = page.overlay_buttons["inertia"]
    button.click()
    assert page.view.overlay_visible("inertia")
    page.set_q(page.q + 0.2)
    link = "panda_link4"
    T_box, _ = inertia_box(
        float(model.link_mass(link)), model.link_com(link).numpy(), model.link_inertia(link).numpy()
    )
    np.testing.assert_allclose(page.view.inertia_box_poses()[link], page.link_pose(link) @ T_box, atol=1e-12)
    button.click()
    assert not page.view.overlay_visible("inertia")
    env.close(page)


def test_quadruped_stands_with_its_support_polygon_and_the_base_gizmo_moves_it(env, qtbot, tmp_path):
    page = env.page()
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot("solo12")
    state = page.state
    assert state.floating and len(state.contact_links) == 4
    b = state.balance()
    assert len(b.support) >= 4 and b.inside                   # standing: the CoM above its four feet
    assert state.lowest_contact_z() == pytest.approx(0.0, abs=1e-9)  # the feet on the ground plane
    feet = [state.link_poses()[l][:3, 3] for l in state.contact_links]
    assert all(np.min(np.linalg.norm(b.support[:, :2] - f[:2], axis=1)) < 0.03 for f in feet)
    gizmo = page.floating_base.gizmo
    assert gizmo in page.view.gizmos
    np.testing.assert_allclose(gizmo.pose, state.base_pose(), atol=1e-12)
    page.view.save_screenshot(str(tmp_path / "robot-solo12-standing.png"))
    assert (tmp_path / "robot-solo12-standing.png").stat().st_size > 10_000
    # the feet held (the default): a drag of the base is whole-body IK in the follow job, the
    # feet stay and the legs bend; one undo step once the last solve is in
    start = state.q.copy()
    assert state.held_links == state.contact_links
    feet0 = {l: state.link_poses()[l][:3, 3] for l in state.contact_links}
    T = state.base_pose()
    for dz in (-0.01, -0.02, -0.03):
        T[:3, 3] = start[:3] + [0.0, 0.0, dz]
        gizmo.set_pose(T, emit=True)
    gizmo.drag_finished.emit()
    qtbot.waitUntil(lambda: state.history.undo_text == "move base", timeout=30_000)
    assert np.linalg.norm(state.base_pose()[:3, 3] - T[:3, 3]) < 2e-3
    for link, p in feet0.items():
        assert np.linalg.norm(state.link_poses()[link][:3, 3] - p) < 2e-3, link
    assert np.abs(state.joint_q - start[7:]).max() > 0.02
    page.undo_action.trigger()
    np.testing.assert_allclose(page.q, start, atol=1e-12)
    # no link held: the base moves the robot rigidly
    state.set_held_links(())
    T = state.base_pose()
    T[:3, 3] += [0.1, 0.0, 0.05]
    gizmo.set_pose(T, emit=True)                               # a drag of the base gizmo
    gizmo.drag_finished.emit()
    np.testing.assert_allclose(state.base_pose(), T, atol=1e-12)
    np.testing.assert_allclose(state.joint_q, start[7:])
    page.undo_action.trigger()
    np.testing.assert_allclose(page.q, start, atol=1e-12)
    assert len(page.joints.q) == page.robot.model.dof == 12
    env.close(page)


def test_whole_body_choices_in_the_targets_panel_reach_the_ik_request(env, qtbot):
    from PySide6.QtCore import Qt

    page = env.page()
    panel = page.targets
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot("panda")
    assert panel.whole_body_box.isHidden()                     # a fixed-base arm: nothing to hold
    with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
        page.load_robot("solo12")
    state = page.state
    assert not panel.whole_body_box.isHidden()
    assert not panel.value_spins[0].isEnabled() and panel.value_spins[0].text().strip() == ""  # no target yet
    assert panel.held_links() == list(state.contact_links) == list(state.held_links)   # the feet, checked
    panel.hold_list.item(0).setCheckState(Qt.CheckState.Unchecked)                   # a click on its box
    assert state.held_links == state.contact_links[1:]
    panel.base_box.setCurrentIndex(panel.base_box.findData("fixed"))
    assert state.ik_base == "fixed"
    panel.add_target(state.contact_links[1])                   # a held foot that is also a target
    assert panel.value_spins[0].isEnabled() and panel.value_spins[0].text().endswith(" m")
    request = page._ik_request({})
    assert request.base == "fixed" and request.hold == state.contact_links[2:]
    saved = state.session_state()
    assert saved["held_links"] == list(state.contact_links[1:]) and saved["ik_base"] == "fixed"
    page.set_whole_body(list(state.contact_links), "free")     # as a session restore does
    assert panel.held_links() == list(state.contact_links) and panel.ik_base() == "free"
    env.close(page)


def test_the_gizmos_show_the_states_targets_and_a_mouse_drag_edits_them_undoably(env, qtbot):
    page = env.page()
    view, state = page.view, page.state
    link = page.targets.end_effector
    start = state.link_pose(link)
    page.targets.add_target(link, start)
    gizmo = page.targets.target_for(link).gizmo
    assert view.gizmos == [gizmo]
    # a target edited through the state moves its gizmo
    moved = start.copy()
    moved[:3, 3] += [0.0, 0.05, 0.03]
    state.set_target_pose(link, moved)
    np.testing.assert_array_equal(gizmo.pose, moved)
    state.undo()
    np.testing.assert_array_equal(gizmo.pose, start)
    # a real mouse drag of the gizmo's centre: the state's target follows, one undo step
    (x, y), = view.project(start[:3, 3][None])[0]
    press = QPoint(int(np.rint(x)), int(np.rint(y)))
    assert view.gizmo_at(press.x(), press.y()) is not None
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, pos=press)
    for dx in (10, 25, 40):
        qtbot.mouseMove(view, QPoint(press.x() + dx, press.y() - dx // 2))
    qtbot.mouseRelease(view, Qt.MouseButton.LeftButton, pos=QPoint(press.x() + 40, press.y() - 20))
    dragged = state.target(link).pose
    assert np.linalg.norm(dragged[:3, 3] - start[:3, 3]) > 1e-3
    np.testing.assert_array_equal(gizmo.pose, dragged)
    (x2, y2), = view.project(dragged[:3, 3][None])[0]
    assert abs(x2 - press.x() - 40) < 2 and abs(y2 - press.y() + 20) < 2     # it followed the cursor
    assert state.history.undo_text == "move target" and not state.history.can_redo
    page.undo_action.trigger()
    assert state.history.undo_text == "add target"           # the whole drag was one step
    np.testing.assert_array_equal(state.target(link).pose, start)
    np.testing.assert_array_equal(gizmo.pose, start)
    # removing through the panel removes the state's target and the gizmo
    page.targets.remove_selected()
    assert state.targets == () and view.gizmos == []
    env.close(page)
