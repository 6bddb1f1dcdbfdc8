"""The Car planner page: place targets with the mouse, optimise as a job, draw the trajectory."""

import math

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from engine.systems.rc_car import CarParams


@pytest.fixture
def page(car_page):
    return car_page

def _drag(qtbot, canvas, start, end):
    vp = canvas.viewport()
    a = canvas.to_pixels(*start)
    b = canvas.to_pixels(*end)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=a)
    qtbot.mouseMove(vp, pos=QPoint((a.x() + b.x()) // 2, (a.y() + b.y()) // 2))
    qtbot.mouseMove(vp, pos=b)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=b)


def test_place_two_targets_optimise_and_draw(page, qtbot, tmp_path):
    from engine.car.model import default_model_dir

    # on first open the shipped learned model is chosen: plans run on it, execution on the simulator
    assert page.current_model_folder() == str(default_model_dir())
    assert "Shipped model (GELU 8×64)" == page.plan_panel.model_combo.currentText()
    page.params = CarParams(substeps=2)        # a cheaper simulator keeps the test short
    page.plan_panel.horizon_spin.setValue(24)
    page.plan_panel.start_speed.setValue(1.0)
    page.plan_panel.opt_form.editor("candidates").setValue(64)
    page.plan_panel.opt_form.editor("max_iterations").setValue(40)
    canvas = page.canvas
    # first target: position, then heading by the drag direction (towards +y: 90 degrees)
    _drag(qtbot, canvas, (0.7, 0.1), (0.7, 0.8))
    _drag(qtbot, canvas, (1.4, 0.5), (2.1, 0.5))
    assert len(page.state.targets) == 2
    t1, t2 = page.state.targets
    assert (t1.x, t1.y) == pytest.approx((0.7, 0.1), abs=0.03)
    assert t1.yaw == pytest.approx(math.pi / 2, abs=0.08)
    assert t2.yaw == pytest.approx(0.0, abs=0.08)
    assert (t1.step, t2.step) == (12, 24)
    assert page.plan_panel.table.rowCount() == 2 and page.plan_panel.table.item(1, 0).text() == "24"
    # heading is optional for the first target: edit its step, then undo it (Ctrl+Z)
    page.state.set_target_step(0, 10)
    assert page.state.targets[0].step == 10
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    page.canvas.setFocus()
    qtbot.keyClick(page.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert page.state.targets[0].step == 12

    qtbot.mouseClick(page.plan_panel.optimise_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.state.plan is not None, timeout=240000)
    x, y = page.canvas.nominal.xData, page.canvas.nominal.yData
    assert len(x) == 25
    assert math.hypot(x[-1] - t2.x, y[-1] - t2.y) < 0.25
    assert len(page.canvas.executed.xData) == 25
    costs = page.cost_curve.yData
    assert costs[-1] < 0.5 * costs[0]
    assert page.throttle_curves["plan"].xData is not None
    assert page.plan_panel.play_button.isEnabled()
    qtbot.mouseClick(page.plan_panel.play_button, Qt.MouseButton.LeftButton)
    assert page.playing
    qtbot.waitUntil(lambda: not page.playing, timeout=10000)
    assert len(page.canvas.skid.data) == 0     # no wheel marks left once Play has ended
    legend = page.throttle_plot.getPlotItem().legend
    assert [label.text for _, label in legend.items] == ["plan"]    # no "other model" without one
    shot = page.grab()
    assert not shot.isNull() and shot.save(str(tmp_path / "car.png"))


def test_move_delete_undo_and_plan_file(page, qtbot, tmp_path):
    _drag(qtbot, page.canvas, (1.0, 0.0), (1.5, 0.0))
    assert len(page.state.targets) == 1
    _drag(qtbot, page.canvas, (1.0, 0.0), (1.5, 1.0))      # drag the target: a move
    assert (page.state.targets[0].x, page.state.targets[0].y) == pytest.approx((1.5, 1.0), abs=0.03)
    page.state.undo()
    assert (page.state.targets[0].x, page.state.targets[0].y) == pytest.approx((1.0, 0.0), abs=0.03)
    page.state.select(0)
    page.state.delete_selected()
    assert page.state.targets == ()
    page.state.undo()
    assert len(page.state.targets) == 1
    page.save_plan(str(tmp_path / "p.json"))
    page.state.undo()
    assert page.state.targets == ()
    assert page.open_file(str(tmp_path / "p.json"))
    assert len(page.state.targets) == 1
    assert page.open_file(str(tmp_path / "missing.json")) is False


def test_track_mode_loads_the_default_track(page):
    assert page.track_panel.track_combo.findData("default") >= 0
    assert page.load_track("default")
    assert len(page.canvas.track_left.xData) > 10


def test_draw_a_track_by_clicking(page, qtbot):
    page.tabs.setCurrentIndex(1)
    page.track_panel.draw_button.setChecked(True)
    for x, y in [(0.0, -1.0), (2.0, -1.0), (3.0, 0.5), (1.0, 2.0), (-1.0, 0.5)]:
        qtbot.mouseClick(page.canvas.viewport(), Qt.MouseButton.LeftButton, pos=page.canvas.to_pixels(x, y))
    assert len(page.canvas.draw_points) == 5
    assert page.state.targets == ()                    # drawing does not place targets
    assert page.finish_drawn_track()
    assert page.state.track.name == "drawn" and page.state.track.length > 8
    assert page.canvas.mode == "targets"


def test_session_round_trip_and_a_damaged_plan(page, ctx):
    import json

    from engine.car.scenarios import SCENARIOS

    page.state.load_scenario("drifting-turn")
    assert page.load_track("oval")
    data = json.loads(json.dumps(page.session_state()))
    page.state.load_scenario("parallel-parking")
    page.load_track("default")
    page.restore_session_state(data)
    panel = page.plan_panel
    assert panel.scenario_combo.currentData() == "drifting-turn"
    assert panel.horizon_spin.value() == SCENARIOS["drifting-turn"].horizon
    assert panel.table.rowCount() == len(SCENARIOS["drifting-turn"].targets)
    assert page.state.track.name == "oval" and panel.model_combo.currentData() == data["model"]
    assert ctx.errors == []
    data["plan"]["targets"] = "junk"
    page.restore_session_state(data)
    assert ctx.errors[-1][0] == "Restore car planner" and "plan" in ctx.errors[-1][1]
    assert page.state.track.name == "oval" and panel.scenario_combo.currentData() == "drifting-turn"
