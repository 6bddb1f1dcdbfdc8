"""Dragging a legged robot's base with its feet held ("keep in place") is whole-body IK: on the
Go2 the feet stay where they stood (within 1 mm, measured by the engine's forward kinematics at
the result) while the base goes where it is dragged and the legs bend. Without held feet the
robot moves rigidly (the joints unchanged). The base's own gizmo yields to a target's gizmo on
the same spot, so a base target can still be grabbed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from app.workspaces.robot.robot_jobs import load_robot_job
from app.workspaces.robot.state import RobotState
from engine.jobs import NullJobContext


@pytest.fixture(scope="module")
def go2():
    return load_robot_job("go2")(NullJobContext())


def test_dragging_the_base_with_the_feet_held_bends_the_legs(go2):
    s = RobotState()
    s.set_robot(go2)
    feet = s.contact_links
    assert len(feet) == 4 and s.held_links == feet
    base = s.base_link()
    np.testing.assert_allclose(s.link_pose(base), s.base_pose(), atol=1e-12)
    start_q = s.q.copy()
    start = s.link_poses()
    joints0 = s.joint_q.copy()
    goal = s.base_pose()
    # a drag in small steps, as the mouse moves: 6 cm down, 3 cm forward, turned 5 degrees about z
    for f in np.linspace(0.2, 1.0, 5):
        T = start[base].copy()
        T[:3, 3] += f * np.array([0.03, 0.0, -0.06])
        T[:3, :3] = Rotation.from_euler("z", f * 5, degrees=True).as_matrix() @ T[:3, :3]
        s.drag_base(T, start_q)
        goal = T
    now = s.link_poses()
    for foot in feet:
        assert np.linalg.norm(now[foot][:3, 3] - start[foot][:3, 3]) < 1e-3, foot
    assert np.linalg.norm(now[base][:3, 3] - goal[:3, 3]) < 1e-3
    assert np.linalg.norm(now[base][:3, 3] - start[base][:3, 3]) > 0.05      # the base moved
    assert np.abs(s.joint_q - joints0).max() > 0.05                          # the legs bent
    # a rigid move would have put the feet 6 cm under the floor; the feet' meshes roll a little
    assert s.lowest_contact_z() > -3e-3


def test_without_held_links_the_base_moves_rigidly(go2):
    s = RobotState()
    s.set_robot(go2)
    s.set_held_links(())
    start_q, joints0 = s.q.copy(), s.joint_q.copy()
    T = s.base_pose()
    T[:3, 3] += [0.1, 0.0, 0.05]
    assert s.base_drag_request(T, start_q) is None
    s.drag_base(T, start_q)
    np.testing.assert_allclose(s.base_pose(), T, atol=1e-12)
    np.testing.assert_array_equal(s.joint_q, joints0)


def test_a_target_on_the_base_wins_the_pick_over_the_base_gizmo(qtbot):
    from PySide6.QtCore import QCoreApplication, Qt

    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    from app.viewer.gizmo import TargetGizmo
    from app.viewer.scene import RobotView

    view = RobotView()
    view.resize(480, 360)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    view.setCameraPosition(distance=1.5, elevation=25, azimuth=30)
    pose = np.eye(4)
    pose[:3, 3] = [0.0, 0.0, 0.3]
    from app.workspaces.robot.floating_base import BASE_GIZMO_SCALE

    base = TargetGizmo(pose=pose, size=0.2 * BASE_GIZMO_SCALE, label="base")
    base.pick_last = True                          # as FloatingBaseView makes it
    target = TargetGizmo(pose=pose, size=0.2, label="trunk")
    view.add_gizmo(base)
    view.add_gizmo(target)
    (c,), _ = view.project(pose[None, :3, 3])
    assert view.gizmo_at(*c) == (target, "free")
    # the base's own arrows, longer than the target's, still grab the base at their tips
    (tip,), _ = view.project(np.array([pose[:3, 3] + [0.2 * BASE_GIZMO_SCALE * 0.97, 0, 0]]))
    assert view.gizmo_at(*tip) == (base, "x")
