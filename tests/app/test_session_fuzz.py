"""Session files from strangers (issue 34): the reader and the Qt-free restore of the car
planner under random JSON and one-field changes of a real session part. Either the part is
restored, within the plan's and track's limits and consistent (the form shows what the
state holds), or it is skipped and named; never another exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _car_part() -> dict:
    from app.workspaces.car.state import CarPlannerState
    from engine.car.scenarios import scenario

    s = CarPlannerState()
    s.apply_plan(scenario("drifting-turn"))
    s.load_track("oval")
    return json.loads(json.dumps(s.session_state("sim")))


def _restore(part) -> None:
    from app.workspaces.car.state import CarPlannerState
    from engine.car.scenarios import MAX_HORIZON, MIN_HORIZON

    s = CarPlannerState()
    problems = s.restore_session(part)
    assert isinstance(problems, list) and all(isinstance(p, str) and p for p in problems)
    assert MIN_HORIZON <= s.horizon <= MAX_HORIZON
    plan = s.current_plan()                       # the state is a valid plan, whatever was skipped
    assert all(1 <= t.step <= plan.horizon for t in plan.targets)


@_SETTINGS
@given(value=JSON)
def test_random_car_session_part(monkeypatch, value):
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "256M")
    _restore(value)


@_SETTINGS
@given(section=st.sampled_from(["plan", "track"]), key_index=st.integers(0, 50), value=JSON,
       drop=st.booleans())
def test_one_field_of_a_car_session_part_changed(monkeypatch, section, key_index, value, drop):
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "256M")
    part = _car_part()
    inner = part[section]
    key = sorted(inner)[key_index % len(inner)]
    if drop:
        del inner[key]
    else:
        inner[key] = value
    _restore(part)


@_SETTINGS
@given(value=JSON)
def test_random_session_files(tmp_path, value):
    from app.main_window import read_session

    path = tmp_path / "s.lagrange.json"
    path.write_text(json.dumps(value))
    try:
        state = read_session(str(path))
    except ValueError as exc:
        assert str(path) in str(exc)
    else:
        assert isinstance(state, dict)


@_SETTINGS
@given(value=JSON | st.lists(st.integers(-10**40, 10**40) | st.floats(), max_size=4), count=st.integers(1, 4))
def test_session_numbers_are_in_range_or_refused_naming_the_field(value, count):
    from app.session_fields import MAX_SPLITTER_SIZE, session_float, session_int, splitter_sizes
    from engine.validation import InputError

    state = {"splitter": value, "parallel": value, "speed": value}
    for check in (lambda: splitter_sizes(state, "splitter", count),
                  lambda: session_int(state, "parallel", 1, 16, 2),
                  lambda: session_float(state, "speed", 0.01, 100.0, 1.0)):
        try:
            got = check()
        except InputError as exc:
            assert exc.field in ("splitter", "parallel", "speed")
            continue
        if got is None:                           # absent: the caller keeps what it has
            assert value is None
        elif isinstance(got, list):
            assert len(got) == count and all(0 <= v <= MAX_SPLITTER_SIZE for v in got)
        elif isinstance(got, int):
            assert 1 <= got <= 16
        else:
            assert 0.01 <= got <= 100.0
