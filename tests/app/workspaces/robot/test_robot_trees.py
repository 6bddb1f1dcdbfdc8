"""An MJCF scene with several kinematic trees in the Robot workspace: a robot fixed to the world
with coupled joints and its free objects beside it (tests/engine/robots/test_mjcf_trees.py),
Workspace > Kinematic Tree listing the trees, and choosing one loads it."""

from __future__ import annotations

from app.workspaces.robot.robot_jobs import load_robot_job
from engine.jobs import NullJobContext
from tests.engine.robots.mjcf_scene import write_scene

COUPLED = '<equality><joint joint1="j3" joint2="j2" polycoef="0.1 0.5 0 0 0"/></equality>'


def test_the_load_job_lists_the_trees_and_loads_the_one_asked_for(tmp_path):
    path = write_scene(tmp_path, extra=COUPLED)
    loaded = load_robot_job(str(path))(NullJobContext())
    assert [name for name, _ in loaded.trees] == ["world", "box", "ball"] and loaded.tree is None
    assert loaded.model.joint_names[:2] == ["j1", "j2"] and loaded.model.mimic_joint_names == ["j3"]   # the arm
    assert loaded.model.ball_joint_names == ["box_free", "ball_free"]          # and the objects beside it
    assert "'box' (free body, 7 DoF, 1.1 kg)" in dict(loaded.trees)["box"]
    box = load_robot_job(str(path), tree="box")(NullJobContext())
    assert box.tree == "box" and box.model.floating and box.model.joint_names == ["hinge"]
    (tmp_path / "plain").mkdir()
    kept = load_robot_job(str(write_scene(tmp_path / "plain")))(NullJobContext())
    assert kept.tree is None and len(kept.trees) == 3               # objects kept beside it, trees still listed
    assert kept.model.ball_joint_names == ["box_free", "ball_free"]


def test_the_kinematic_tree_menu_loads_another_tree(qtbot, tmp_path):
    from tests.app.workspaces.robot.test_robot_workspace import LOAD_MS, Env

    path = str(write_scene(tmp_path, extra=COUPLED))
    env = Env(qtbot, tmp_path)
    try:
        page = env.page()
        menu = page.tree_menu
        assert menu.menuAction() in page.menu_actions()          # Workspace > Kinematic Tree
        assert not menu.menuAction().isEnabled()                  # the default robot: one tree
        page.load_robot(path)
        qtbot.waitUntil(lambda: page.robot is not None and page.robot.path == path or bool(env.errors),
                        timeout=LOAD_MS)
        assert not env.errors, env.errors
        assert menu.menuAction().isEnabled()
        actions = menu.actions()
        assert [a.text() for a in actions] == ["Robot and Objects", "Tree world", "Tree box", "Tree ball"]
        assert actions[0].isChecked() and "7 DoF" in actions[2].toolTip()
        assert not page.robot.model.floating
        actions[2].trigger()                                      # the user picks the box
        qtbot.waitUntil(lambda: page.robot.tree == "box" or bool(env.errors), timeout=LOAD_MS)
        assert not env.errors, env.errors
        assert page.robot.model.floating and page.robot.model.joint_names == ["hinge"]
        assert [a.isChecked() for a in menu.actions()] == [False, False, True, False]
    finally:
        env.close(page)


def test_a_session_keeps_the_chosen_tree(qtbot, tmp_path):
    """The tree picked in Workspace > Kinematic Tree is saved with the session and loaded again on
    restore (the box, floating, with its hinge; not the loader's choice, the arm)."""
    import json

    from tests.app.workspaces.robot.test_robot_workspace import LOAD_MS, Env

    path = str(write_scene(tmp_path, extra=COUPLED))
    env = Env(qtbot, tmp_path)
    page = env.page()
    try:
        with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
            page.load_robot(path)
        assert page.session_state()["tree"] is None                 # the loader's choice
        with qtbot.waitSignal(page.robot_loaded, timeout=LOAD_MS):
            page.load_tree("box")
        saved = json.loads(json.dumps(page.session_state()))        # as a session file holds it
        assert saved["robot"] == path and saved["tree"] == "box"
    finally:
        env.close(page)
    page2 = env.page()
    try:
        with qtbot.waitSignal(page2.robot_loaded, timeout=LOAD_MS):
            page2.restore_session_state(saved)
        assert not env.errors, env.errors
        assert page2.robot.tree == "box" and page2.robot.model.floating
        assert page2.robot.model.joint_names == ["hinge"]
        assert [a.isChecked() for a in page2.tree_menu.actions()] == [False, False, True, False]
        # a session written before trees were saved (no "tree") loads the loader's choice
        with qtbot.waitSignal(page2.robot_loaded, timeout=LOAD_MS):
            page2.restore_session_state({k: v for k, v in saved.items() if k not in ("tree", "q")})
        assert page2.robot.tree is None and page2.robot.model.joint_names[:2] == ["j1", "j2"]
        assert page2.robot.model.ball_joint_names == ["box_free", "ball_free"]     # the objects beside it
    finally:
        env.close(page2)
