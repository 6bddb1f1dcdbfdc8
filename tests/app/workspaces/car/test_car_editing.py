"""Car planner editing like a user: type a target's step in the table, Delete key, Ctrl+Z /
Ctrl+Shift+Z, tracks saved and loaded as JSON, bad files answered with a clear error."""

import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication


@pytest.fixture
def page(car_page):
    return car_page

def _drag(qtbot, canvas, start, end):
    vp = canvas.viewport()
    a, b = canvas.to_pixels(*start), canvas.to_pixels(*end)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=a)
    qtbot.mouseMove(vp, pos=QPoint((a.x() + b.x()) // 2, (a.y() + b.y()) // 2))
    qtbot.mouseMove(vp, pos=b)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=b)


def test_type_a_step_delete_key_and_shortcuts(page, qtbot):
    _drag(qtbot, page.canvas, (0.8, 0.0), (0.8, -0.6))          # heading -90 degrees
    _drag(qtbot, page.canvas, (1.6, 0.4), (2.2, 0.4))
    assert [t.step for t in page.state.targets] == [20, 40]
    assert page.plan_panel.table.item(0, 3).text() == "-90"
    # type a new step into the table
    table = page.plan_panel.table
    rect = table.visualItemRect(table.item(0, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.keyClick(table, Qt.Key.Key_F2)                         # edit the cell
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not table)
    editor = QApplication.focusWidget()
    assert editor is not table
    editor.selectAll()
    qtbot.keyClicks(editor, "7")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: page.state.targets[0].step == 7)
    assert page.canvas._targets[0][3] == 7                     # the canvas label follows
    # select the second target on the canvas and delete it with the Delete key
    qtbot.mouseClick(page.canvas.viewport(), Qt.MouseButton.LeftButton, pos=page.canvas.to_pixels(1.6, 0.4))
    assert page.state.selected == 1
    page.canvas.setFocus()
    qtbot.keyClick(page.canvas, Qt.Key.Key_Delete)
    assert len(page.state.targets) == 1
    qtbot.keyClick(page.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(page.state.targets) == 2
    qtbot.keyClick(page.canvas, Qt.Key.Key_Z,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert len(page.state.targets) == 1


def _choose_simulator(page):
    combo = page.plan_panel.model_combo
    combo.setCurrentIndex(combo.findData("sim"))


def test_live_cost_curve_while_optimising(page, qtbot):
    _choose_simulator(page)                                      # slow enough to see several iterations
    page.plan_panel.horizon_spin.setValue(20)
    page.plan_panel.start_speed.setValue(1.0)
    page.plan_panel.opt_form.editor("candidates").setValue(32)
    page.plan_panel.opt_form.editor("max_iterations").setValue(200)
    _drag(qtbot, page.canvas, (1.0, 0.6), (1.5, 1.2))
    qtbot.mouseClick(page.plan_panel.optimise_button, Qt.MouseButton.LeftButton)
    assert not page.plan_panel.optimise_button.isEnabled() and page.plan_panel.cancel_button.isEnabled()
    # while the job runs, the cost curve grows and the trajectory is redrawn
    seen = []
    page.state.connect("plan", lambda: seen.append(
        (0 if page.cost_curve.xData is None else len(page.cost_curve.xData),
         0 if page.canvas.nominal.xData is None else len(page.canvas.nominal.xData))))
    qtbot.waitUntil(lambda: not page.state.optimising, timeout=240000)
    assert page.state.plan is not None
    assert any(n_cost >= 2 and n_pose == 21 for n_cost, n_pose in seen), seen
    assert len(page.canvas.nominal.xData) == 21
    assert "Executed on the simulator" in page.status.text()


def test_cancel_and_a_new_scenario_leave_nothing_stale(page, qtbot):
    """Optimise, play, then Cancel a second optimisation half way: the old plan, its skid marks
    and the partial plan leave the canvas and Play stays off; a new scenario clears a plan too."""
    _choose_simulator(page)
    panel = page.plan_panel
    panel.opt_form.editor("candidates").setValue(32)
    panel.opt_form.editor("max_iterations").setValue(12)
    _drag(qtbot, page.canvas, (1.0, 0.6), (1.5, 1.2))
    qtbot.mouseClick(panel.optimise_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.state.plan is not None, timeout=240000)
    assert panel.play_button.isEnabled() and len(page.canvas.nominal.xData) == 41
    page.canvas.skid.setData([0.0, 0.1], [0.0, 0.1])             # as playback leaves them
    panel.opt_form.editor("max_iterations").setValue(400)
    qtbot.mouseClick(panel.optimise_button, Qt.MouseButton.LeftButton)
    assert not panel.play_button.isEnabled()
    assert page.canvas.nominal.xData is None or len(page.canvas.nominal.xData) == 0
    assert len(page.canvas.skid.getData()[0]) == 0
    qtbot.waitUntil(lambda: page.state.live is not None and page.canvas.nominal.xData is not None
                    and len(page.canvas.nominal.xData) == 41, timeout=120000)    # a partial plan drawn
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not page.state.optimising, timeout=60000)
    for item in (page.canvas.nominal, page.canvas.executed, page.cost_curve):
        assert item.xData is None or len(item.xData) == 0
    assert not panel.play_button.isEnabled() and panel.optimise_button.isEnabled()
    assert page.status.text() == "Cancelled."
    # a finished plan, then a scenario: the plan goes, the scenario's targets come
    panel.opt_form.editor("max_iterations").setValue(5)
    qtbot.mouseClick(panel.optimise_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.state.plan is not None, timeout=240000)
    panel.scenario_combo.setCurrentIndex(panel.scenario_combo.findData("parallel-parking"))
    assert page.state.plan is None and not panel.play_button.isEnabled()
    assert page.canvas.nominal.xData is None or len(page.canvas.nominal.xData) == 0
    assert len(page.state.targets) == len(page.canvas._targets) > 0


def test_tracks_and_plans_as_json_and_bad_files(page, qtbot, ctx, tmp_path):
    assert page.load_track("oval")
    assert page.tabs.currentIndex() == 1
    path = tmp_path / "my_track.json"
    page.save_track(str(path))
    data = json.loads(path.read_text())
    assert data["kind"] == "car_track"
    page.load_track("default")
    assert page.open_file(str(path))
    assert page.state.track.width == pytest.approx(data["width"])
    assert not list(tmp_path.glob("*.tmp*"))                     # atomic: no temporary left behind
    bad = tmp_path / "bad_track.csv"
    bad.write_text("x,y\n0,0\n1,nope\n")
    assert not page.load_track(str(bad))
    assert ctx.errors and str(bad) in ctx.errors[-1][1]
    assert page.state.track.name == data["name"]                       # the loaded track stays
    broken = tmp_path / "plan.json"
    broken.write_text(json.dumps({"kind": "car_plan", "horizon": -3}))
    assert not page.load_plan(str(broken))
    assert str(broken) in ctx.errors[-1][1] or "plan" in ctx.errors[-1][1]
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert not page.save_plan(str(blocker / "plan.json"))       # its folder is a file
    assert str(blocker) in ctx.errors[-1][1]
    assert page.isVisible()
