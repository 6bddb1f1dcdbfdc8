"""The Car planner as a new user walks it (issue 32): the chosen track is drawn when the Track
tab opens, the Plan canvas shows no track and fits the plan, and the plots' legends list only
what is drawn."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.car.scenarios import SCENARIOS


def _view(page):
    (x0, x1), (y0, y1) = page.canvas.getViewBox().viewRange()
    return x0, x1, y0, y1


def test_the_chosen_track_is_drawn_when_the_track_tab_opens(car_page, qtbot):
    page = car_page
    assert page.track_panel.track_combo.currentText() == "default" and page.state.track is None
    page.tabs.setCurrentWidget(page.track_panel)
    assert page.state.track is not None and page.state.track.name == "default"
    x, _ = page.canvas.track_left.getData()
    assert x is not None and len(x) > 10 and page.canvas.track_left.isVisible()
    left, right = page.state.track.edges()
    edges = np.vstack([left, right])
    x0, x1, y0, y1 = _view(page)                       # the whole track in view
    assert x0 <= edges[:, 0].min() and edges[:, 0].max() <= x1
    assert y0 <= edges[:, 1].min() and edges[:, 1].max() <= y1


def test_the_plan_canvas_shows_no_track_and_fits_the_plan(car_page, qtbot):
    page = car_page
    page.tabs.setCurrentWidget(page.track_panel)         # a race track loaded and shown
    track_width = np.ptp(np.vstack(page.state.track.edges())[:, 0])
    page.tabs.setCurrentWidget(page.plan_panel)
    assert page.canvas.layer == "plan"
    assert not any(it.isVisible() for it in (page.canvas.track_left, page.canvas.track_right,
                                             page.canvas.track_centre))
    page.plan_panel.scenario_combo.setCurrentIndex(page.plan_panel.scenario_combo.findData("parallel-parking"))
    page.tabs.setCurrentWidget(page.track_panel)
    page.tabs.setCurrentWidget(page.plan_panel)
    x0, x1, y0, y1 = _view(page)
    targets = SCENARIOS["parallel-parking"].targets
    for t in targets:                                    # every target and its label inside the view
        assert x0 < t.x - 0.3 and t.x + 0.8 < x1 and y0 < t.y - 0.3 and t.y + 0.4 < y1
    assert x1 - x0 < 0.5 * track_width                  # the plan's scale, not the race track's


def test_a_plan_job_reports_a_rising_fraction_and_names_its_iteration_budget():
    """Two plans in one job share one bar (the second in its upper half); every report names
    the iteration budget the fraction counts against, so the bar and its ETA are not empty."""
    from app.workspaces.car.jobs import Latest, optimise_job
    from engine.car.dynamics import CarParams
    from engine.car.optimiser import OptimiserConfig
    from engine.jobs import ThreadJobContext

    reports = []
    ctx = ThreadJobContext(on_progress=reports.append, min_interval=0.0)
    base = SCENARIOS["parallel-parking"]
    plan = base.with_(horizon=12, targets=tuple(replace(t, step=min(t.step, 12)) for t in base.targets))
    cfg = OptimiserConfig(candidates=8, max_iterations=5)
    optimise_job(plan, [("a", "sim"), ("b", "sim")], None, CarParams(substeps=2), cfg, Latest())(ctx)
    fractions = [r.fraction for r in reports if r.fraction is not None]
    assert fractions == sorted(fractions) and 0 <= fractions[0] <= 0.5 < fractions[-1] < 1
    assert all("of at most 5" in r.message for r in reports)
    # after each iteration: its time and the most time left (the ETA, an upper bound)
    timed = [r.message for r in reports if "s each, at most" in r.message]
    assert timed and all(m.endswith(" s left") for m in timed)
    assert any(r.message.startswith("b: ") for r in reports)


def _plan_parking(page, qtbot):
    """Plan the parallel-parking scenario on the simulator, briefly."""
    from engine.car.dynamics import CarParams

    page.params = CarParams(substeps=2)
    combo = page.plan_panel.scenario_combo
    combo.setCurrentIndex(combo.findData("parallel-parking"))
    sim = page.plan_panel.model_combo.findData("sim")
    if sim >= 0:
        page.plan_panel.model_combo.setCurrentIndex(sim)
    page.plan_panel.opt_form.editor("candidates").setValue(16)
    page.plan_panel.opt_form.editor("max_iterations").setValue(8)
    page.optimise()
    qtbot.waitUntil(lambda: page.state.plan is not None and page.optimiser.job is None, timeout=240_000)


def test_the_canvas_legend_names_what_is_drawn_and_sits_above_the_drawing(car_page, qtbot):
    page = car_page
    page.show()
    qtbot.waitExposed(page)
    canvas, legend = page.canvas, page.canvas.legend
    assert canvas.legend_names() == [] and legend.isHidden()          # nothing drawn, nothing named
    _plan_parking(page, qtbot)
    names = canvas.legend_names()
    assert names == ["targets", "plan", "executed on simulator", "car"]
    assert "other model" not in names and "other model" not in legend.text()
    assert legend.isVisible()
    # outside the canvas, above it: the legend covers none of the drawing
    top_left = legend.mapTo(page, legend.rect().topLeft())
    legend_box = legend.rect().translated(top_left)
    canvas_box = canvas.rect().translated(canvas.mapTo(page, canvas.rect().topLeft()))
    assert not legend_box.intersects(canvas_box) and legend_box.bottom() <= canvas_box.top()
    # the track layer names the track, the plan layer again its own
    page.tabs.setCurrentWidget(page.track_panel)
    assert canvas.legend_names()[0] == "track edges" and "targets" not in canvas.legend_names()
    page.tabs.setCurrentWidget(page.plan_panel)
    assert canvas.legend_names() == names


def test_optimise_says_its_time_left_and_the_status_clears_when_done(car_page, qtbot):
    page = car_page
    said = []
    say = page.optimiser.say                       # the status line, as the optimiser writes it
    page.optimiser.say = lambda text: (said.append(text), say(text))
    _plan_parking(page, qtbot)
    during = [s for s in said if "iteration" in s and "cost" in s]
    assert during and all("of at most 8" in s for s in during)
    assert any("s each, at most" in s and " left" in s for s in during)
    final = page.status.text()
    assert final.startswith(("Converged", "Stopped")) and "iteration" in final and "left" not in final


def test_the_guided_example_at_1366_shows_its_outcome_and_clears_its_status(make_window, qtbot):
    """Help > Getting started > the car: the window stays on a laptop screen, the planner's own
    status (the outcome) is in view without scrolling, and the status bar's "is being optimised"
    goes when the optimisation ends."""
    from PySide6.QtCore import QPoint, QRect

    from app.help import run_example

    window = make_window()
    window.resize(1366, 768)
    said = run_example(window, "car")
    assert "being optimised" in said and window.statusBar().currentMessage() == said
    page = window.pages["car"]
    qtbot.waitUntil(lambda: page.optimiser.job is None and page.state.plan is not None, timeout=240_000)
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() != said, timeout=5_000)
    assert window.width() <= 1366
    status = page.status
    assert status.text().startswith(("Converged", "Stopped")) and status.isVisible()
    qtbot.waitUntil(lambda: status.height() >= status.heightForWidth(status.width()) - 1, timeout=3_000)
    box = QRect(status.mapTo(window, QPoint(0, 0)), status.size())
    assert window.rect().contains(box)                       # whole, in view, without scrolling
    assert page.plan_panel.optimise_button.isEnabled() and page.plan_panel.play_button.isEnabled()


def test_a_scenario_loaded_after_the_track_tab_is_in_view(car_page, qtbot):
    """The walk: Track tab, back to Plan (an empty plan: the default view, not a close-up of the
    car), then a scenario: its targets are all in view."""
    page = car_page
    page.tabs.setCurrentWidget(page.track_panel)
    page.tabs.setCurrentWidget(page.plan_panel)
    x0, x1, y0, y1 = _view(page)
    assert x1 - x0 > 3.0                                   # not zoomed onto the 0.36 m car
    page.state.load_scenario("parallel-parking")
    x0, x1, y0, y1 = _view(page)
    for t in SCENARIOS["parallel-parking"].targets:
        assert x0 < t.x < x1 and y0 < t.y < y1
