"""The Car planner's Qt-free state: targets, undo, selection, the problem, stale plans, drives,
files and sessions, driven directly (no widgets)."""

import json
import math

import numpy as np
import pytest

from app.widgets.undo import Change, UndoHistory
from app.workspaces.car.jobs import Latest, optimise_job
from app.workspaces.car.state import (
    CUSTOM,
    CarPlannerState,
    PlanResult,
    PlanVariant,
    file_kind,
    skid_marks,
)
from engine.car.costs import PlanWeights
from engine.car.optimiser import OptimiserConfig
from engine.car.scenarios import SCENARIOS
from engine.car.tracks import load_track
from engine.jobs import NullJobContext
from engine.systems.rc_car import CarParams


class Recorder:
    def __init__(self, state):
        self.events = []
        for e in ("targets", "selection", "problem", "plan", "track", "drive", "history"):
            state.connect(e, lambda e=e: self.events.append(e))

    def take(self):
        out, self.events = self.events, []
        return out


def _fake_result(state, n=None) -> PlanResult:
    """A finished plan for the state's current inputs (numbers only, no optimisation)."""
    n = state.horizon if n is None else n
    pose = np.zeros((n + 1, 3))
    pose[:, 0] = np.linspace(0, 1, n + 1)
    v = PlanVariant("plan", "sim", "simulator", True, 3, 0.1, np.array([3.0, 2.0, 1.0]), pose,
                    np.zeros((n, 2)), [], pose.copy(), np.zeros((n, 4)), 0.1, 0.05)
    return PlanResult(state.current_plan(), (v,))


def test_place_targets_steps_undo_redo_and_events():
    s = CarPlannerState()
    rec = Recorder(s)
    s.set_horizon(24)
    rec.take()
    assert s.place_target(0.7, 0.1, math.pi / 2) == 0
    assert "targets" in rec.take()
    s.place_target(1.4, 0.5, 0.0)
    s.place_target(2.0, 0.5, 0.0)
    # half a horizon after the previous target, never past the horizon
    assert [t.step for t in s.targets] == [12, 24, 24]
    assert s.selected == 2
    s.move_target(0, 0.9, 0.2)
    assert (s.targets[0].x, s.targets[0].y, s.targets[0].yaw) == (0.9, 0.2, math.pi / 2)
    s.set_target_step(0, 500)                      # clamped to the horizon
    assert s.targets[0].step == 24
    s.edit_target(1, yaw=1.0)
    assert s.history.undo_text == "Edit target"
    s.undo()
    s.undo()
    assert s.targets[0].step == 12 and s.targets[1].yaw == 0.0
    s.redo()
    assert s.targets[0].step == 24
    s.select(1)
    assert rec.take()[-1] == "selection" and s.selected == 1
    s.delete_selected()
    assert len(s.targets) == 2 and s.selected == 1
    s.undo()
    assert len(s.targets) == 3
    s.select(99)                                   # out of range: nothing selected
    assert s.selected == -1
    s.delete_selected()
    assert len(s.targets) == 3
    # a new edit after an undo drops the redo branch
    s.undo()
    s.place_target(3.0, 0.0, 0.0)
    assert not s.history.can_redo


def test_undo_history_alone():
    h = UndoHistory()
    assert not h.can_undo and h.undo() is None and h.redo() is None and len(h) == 0
    h.push(Change("a", (), (1,)))
    h.push(Change("b", (1,), (1, 2)))
    assert h.undo_text == "b" and not h.can_redo
    assert h.undo().before == (1,) and h.undo().before == () and h.undo() is None
    assert h.redo_text == "a" and h.redo().after == (1,) and h.redo_text == "b"
    h.push(Change("c", (1,), (3,)))            # a new change drops the redo branch ("b")
    assert not h.can_redo and len(h) == 2 and h.undo_text == "c"
    h.clear()
    assert not h.can_undo and not h.can_redo and h.undo_text == h.redo_text == ""


def test_scenario_sets_the_problem_and_clears_the_old_plan():
    s = CarPlannerState()
    s.place_target(1.0, 0.0, 0.0)
    s.finish_optimise(_fake_result(s))
    assert s.plan is not None and s.can_play
    rec = Recorder(s)
    s.load_scenario("drifting-turn")
    ref = SCENARIOS["drifting-turn"]
    assert s.scenario == "drifting-turn" and s.horizon == ref.horizon
    assert s.targets == tuple(ref.targets) and s.weights == ref.weights
    assert s.start_speed == ref.start_velocity[0]
    assert s.result is None and s.plan is None and not s.can_play
    assert {"problem", "targets", "plan"} <= set(rec.take())
    with pytest.raises(ValueError, match="unknown scenario"):
        s.load_scenario("nope")
    # placing a target makes the problem a custom one
    s.place_target(0.5, 0.5, 0.0)
    assert s.scenario == CUSTOM and s.current_plan().name == CUSTOM


def test_a_plan_is_shown_only_with_the_inputs_that_made_it():
    s = CarPlannerState()
    s.set_horizon(10)
    s.place_target(1.0, 0.0, 0.0)
    s.finish_optimise(_fake_result(s))
    assert s.can_play
    for change, back in (
        (lambda: s.move_target(0, 1.2, 0.0), s.undo),
        (lambda: s.set_horizon(12), lambda: s.set_horizon(10)),
        (lambda: s.set_start_speed(1.0), lambda: s.set_start_speed(0.0)),
        (lambda: s.set_weights(PlanWeights(position=1.0)), lambda: s.set_weights(PlanWeights())),
    ):
        change()
        assert s.plan is None and not s.can_play
        back()
        assert s.plan is not None and s.can_play       # the same inputs again: the plan is theirs


def test_cancel_or_failure_leaves_no_partial_plan():
    s = CarPlannerState()
    with pytest.raises(ValueError, match="at least one target"):
        s.begin_optimise()
    s.place_target(1.0, 0.0, 0.0)
    s.finish_optimise(_fake_result(s))
    s.begin_optimise()
    assert s.optimising and s.result is None and s.plan is None and not s.can_play
    s.update_live({"variant": 0, "label": "plan", "iteration": 3, "costs": [5.0, 4.0, 3.0],
                   "pose": np.zeros((s.horizon + 1, 3))})
    assert s.live.iteration == 3 and s.live.costs == (5.0, 4.0, 3.0)
    s.end_optimise()                                   # cancelled
    assert not s.optimising and s.live is None and s.plan is None and not s.can_play
    s.update_live({"iteration": 1, "costs": [1.0]})    # a late update after the end is ignored
    assert s.live is None


def test_a_real_optimisation_through_the_state():
    """The optimise job (no Qt) on the simulator: the state's plan reaches the target."""
    params = CarParams(substeps=2)
    s = CarPlannerState(params)
    s.set_horizon(20)
    s.set_start_speed(1.0)
    s.place_target(0.7, 0.1, 0.0)
    plan = s.begin_optimise()
    live = Latest()
    res = optimise_job(
        plan, [("plan", "sim")], None, params, OptimiserConfig(candidates=32, max_iterations=80), live
    )(NullJobContext())
    s.update_live(live.take())
    assert s.live is not None and s.live.iteration >= 1
    s.finish_optimise(PlanResult.from_job(plan, res))
    p = s.plan
    assert p is not None and s.can_play and not p.compared
    m = p.main
    assert m.pose.shape == (21, 3) and m.controls.shape == (20, 2) and m.executed_pose.shape == (21, 3)
    assert m.final_cost < 0.5 * m.costs[0]
    k = s.targets[0].step                              # half the horizon: the target's time
    assert k == 10 and math.hypot(m.pose[k, 0] - 0.7, m.pose[k, 1] - 0.1) < 0.25
    assert m.target_errors[0]["position_error"] == pytest.approx(
        math.hypot(m.pose[k, 0] - 0.7, m.pose[k, 1] - 0.1), abs=1e-4)


def test_skid_marks_at_the_rear_wheels():
    P = CarParams()
    pose = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, math.pi / 2]])
    slip = np.array([[0.0, 0.0, 0.1, 0.1], [0.0, 0.0, 0.5, 0.0]])
    pts = skid_marks(pose, slip, P)
    # only the sliding step; the rear axle half a wheelbase behind, the wheels half a track apart
    assert pts == pytest.approx(np.array([[1.0 - P.track_width / 2, -P.wheelbase / 2],
                                          [1.0 + P.track_width / 2, -P.wheelbase / 2]]))


def test_drive_cycles_result_and_stop():
    s = CarPlannerState()
    with pytest.raises(ValueError, match="track"):
        s.begin_drive()
    s.load_track("default")
    d = s.begin_drive()
    assert s.driving and d.path == []
    cycle = {"time": 0.05, "pose": (1.0, 2.0, 0.0), "u": (1.0, 0.2), "slip": (0.0, 0.0, 0.5, 0.5),
             "plan": [[1.0, 2.0, 0.0], [1.1, 2.0, 0.0]], "speed": 1.5, "deviation": 0.1,
             "achieved_hz": 20.0, "compute_ms": 5.0, "wall": 0.05}
    s.add_cycles([cycle, {**cycle, "time": 0.1, "pose": (1.1, 2.0, 0.0), "slip": (0, 0, 0, 0)}])
    assert d.path == [(1.0, 2.0), (1.1, 2.0)] and d.speed == [(0.05, 1.5), (0.1, 1.5)]
    assert len(d.skid) == 2 and d.pose == (1.1, 2.0, 0.0, 0.2) and d.plan.shape == (2, 3)
    s.end_drive(stopped=True)
    assert not s.driving and d.stopped
    # a finished drive replaces the cycles by the engine's result
    s.begin_drive()
    s.finish_drive({"pose": [[0, 0, 0], [1, 0, 0], [2, 0, 0.1]], "speed": [0.0, 1.0, 2.0]})
    s.end_drive()
    assert s.drive.path == [(0, 0), (1, 0), (2, 0)] and s.drive.speed[-1] == (2 * s.params.dt, 2.0)
    s.load_track("oval")                               # a new track: no drive
    assert s.drive is None


def test_plan_and_track_files(tmp_path):
    s = CarPlannerState()
    s.load_scenario("parallel-parking")
    s.finish_optimise(_fake_result(s))
    path = tmp_path / "p.json"
    s.save_plan(str(path))
    data = json.loads(path.read_text())
    assert data["kind"] == "car_plan" and len(data["controls"]) == s.horizon   # controls of this plan
    assert file_kind(path) == "plan"
    other = CarPlannerState()
    other.load_plan(str(path))
    assert other.targets == s.targets and other.horizon == s.horizon and other.weights == s.weights
    s.load_track("oval")
    tpath = tmp_path / "t.json"
    s.save_track(str(tpath))
    assert file_kind(tpath) == "track" and file_kind(tmp_path / "x.csv") == "track"
    (tmp_path / "other.json").write_text('{"kind": "something"}')
    assert file_kind(tmp_path / "other.json") is None and file_kind(tmp_path / "missing.json") is None
    other.load_track(str(tpath))
    assert other.track.width == s.track.width and np.allclose(other.track.centre, load_track("oval").centre)
    with pytest.raises(ValueError):
        CarPlannerState().save_track(str(tmp_path / "none.json"))


def test_session_round_trip_and_a_damaged_part():
    s = CarPlannerState()
    s.load_scenario("dynamic-reverse")
    s.load_track("oval")
    data = json.loads(json.dumps(s.session_state("sim")))
    r = CarPlannerState()
    assert r.restore_session(data) == []
    assert r.targets == s.targets and r.horizon == s.horizon and r.track.name == "oval"
    assert data["model"] == "sim"
    data["plan"]["horizon"] = -3
    r2 = CarPlannerState()
    problems = r2.restore_session(data)
    assert len(problems) == 1 and problems[0].startswith("plan")
    assert r2.track is not None and r2.track.name == "oval"          # the rest restored
    assert r2.targets == ()
    assert CarPlannerState().restore_session(["not", "a", "dict"]) == [
        "the car planner's part (not a JSON object)"
    ]
    # a shipped scenario's name comes back with it
    assert r.scenario == "dynamic-reverse"


def test_observer_of_an_unknown_event_is_refused():
    with pytest.raises(KeyError):
        CarPlannerState().connect("nothing", lambda: None)


def test_the_state_modules_import_no_qt():
    """state.py, models.py and jobs.py are Qt-free: scripts and tests use them without a GUI."""
    import subprocess
    import sys

    code = ("import sys, app.workspaces.car.state, app.workspaces.car.models, app.workspaces.car.jobs; "
            "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_open_dialogs_start_in_the_shipped_examples():
    from pathlib import Path

    from app.workspaces.car.models import example_folder

    assert (Path(example_folder("track")) / "default.csv").is_file()
    assert (Path(example_folder("model")) / "default" / "car_model.json").is_file()
    assert (Path(example_folder("log")) / "rc_car_mocap.csv").is_file()
    assert example_folder("plan") == ""                   # no shipped plans: the last folder or the default
