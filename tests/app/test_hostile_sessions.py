"""Sessions from strangers (issue 34): every number is range-checked before it reaches a widget
or the state; a bad part is skipped with one line naming the field, the rest restores, and the
form never shows something other than the state holds (real windows on Xvfb)."""

from __future__ import annotations

import json

from PySide6.QtWidgets import QMessageBox


def _errors(window) -> list[QMessageBox]:
    return [b for b in window.error_dialogs if b.isVisible()]


def _session(tmp_path, pages: dict, name="hostile.lagrange.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"format": "lagrange-studio-session", "version": 1, "pages": pages}))
    return path


def test_huge_splitter_sizes_are_skipped_naming_the_field_and_the_rest_restores(make_window, qtbot, tmp_path):
    window = make_window()
    page = window.show_workspace("model_lab")
    before = page.splitter.sizes()
    spin = page.runs_panel.parallel
    wanted = spin.maximum() if spin.value() != spin.maximum() else spin.minimum()
    path = _session(tmp_path, {"model_lab": {"splitter": [10**30, -5, 2**40][:page.splitter.count()],
                                             "parallel": wanted}})
    assert window.open_file(str(path))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    text = " | ".join(b.text() for b in _errors(window))
    assert "pane sizes" in text and "'splitter'" in text and "OverflowError" not in text
    assert page.splitter.sizes() == before                       # skipped, not half-applied
    assert spin.value() == wanted                                # the rest was restored
    assert window.exception_hook.last_dialog is None


def test_a_parallel_count_out_of_range_is_named_not_clamped(make_window, qtbot, tmp_path):
    window = make_window()
    page = window.show_workspace("model_lab")
    before = page.runs_panel.parallel.value()
    assert window.open_file(str(_session(tmp_path, {"model_lab": {"parallel": 10**12}})))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    assert "'parallel'" in _errors(window)[-1].text()
    assert page.runs_panel.parallel.value() == before


def test_a_car_session_with_a_50_million_step_plan_is_refused_whole_and_the_track_restores(
        make_window, qtbot, tmp_path):
    from engine.car.scenarios import scenario
    from engine.car.tracks import load_track

    window = make_window()
    page = window.show_workspace("car")
    page.state.apply_plan(scenario("parallel-parking"))
    horizon, targets = page.state.horizon, page.state.targets
    plan = scenario("drifting-turn").to_dict()
    plan["horizon"] = 50_000_000
    plan["targets"][-1]["step"] = 50_000_000
    oval = load_track("oval")
    path = _session(tmp_path, {"car": {"plan": plan, "track": oval.to_dict(), "model": "sim"}})
    assert window.open_file(str(path))
    qtbot.waitUntil(lambda: bool(_errors(window)))
    text = _errors(window)[-1].text()
    assert "plan" in text and "'horizon': must be between 1 and 1000" in text
    # nothing of the refused plan was applied, and the form shows what the state holds
    assert page.state.horizon == horizon and page.state.targets == targets
    assert page.plan_panel.horizon_spin.value() == page.state.horizon
    assert page.state.track is not None and page.state.track.name == "oval"
    assert window.exception_hook.last_dialog is None


def test_the_car_form_takes_its_ranges_from_the_plan_limits(make_window):
    from engine.car.costs import Target
    from engine.car.scenarios import MAX_HORIZON, MAX_START_SPEED, MIN_HORIZON, Plan

    window = make_window()
    page = window.show_workspace("car")
    spin = page.plan_panel.horizon_spin
    assert spin.allowed == (MIN_HORIZON, MAX_HORIZON)
    assert page.plan_panel.start_speed.allowed == (-MAX_START_SPEED, MAX_START_SPEED)
    page.state.apply_plan(Plan("long", MAX_HORIZON, start_velocity=(MAX_START_SPEED, 0, 0),
                               targets=(Target(MAX_HORIZON, 1.0, 0.0),)))
    assert spin.value() == page.state.horizon == MAX_HORIZON       # any valid plan is shown as it is
    assert page.plan_panel.start_speed.value() == page.state.start_speed == MAX_START_SPEED
