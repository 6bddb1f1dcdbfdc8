"""The car's track readers (CSV and JSON) and the plan reader under random text, random centre
lines and extreme numbers: a track or plan within the limits, or a ValueError (TrackError,
PlanError, InputError) naming the file; never another exception, a numpy warning, or an
allocation beyond the limits (issue 34)."""

from __future__ import annotations

import json
import warnings

import numpy as np
from corpus import fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SETTINGS = settings(max_examples=fuzz_examples(60), deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])

NUMBERS = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**30, 10**30)
           | st.sampled_from([0, 0.0, -0.0, 1e-300, 1e308, 1e9, 5e7, 0.5, 3.0]))
POINTS = st.lists(st.tuples(NUMBERS, NUMBERS), max_size=12)
SMALL_POINTS = st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5)), min_size=0, max_size=12)
TOKEN = st.sampled_from(["x", "y", "width", "1", "-2.5", "nan", "inf", "", "#", "1e400", "0", " ", "a"])


def _accepted_track_is_within_the_limits(track) -> None:
    from engine.car.tracks import MAX_TRACK_EXTENT, MAX_TRACK_LENGTH, MAX_TRACK_POINTS, _first_crossing

    c = track.centre
    assert 3 <= len(c) <= MAX_TRACK_POINTS and np.isfinite(c).all()
    assert (c.max(0) - c.min(0)).max() <= MAX_TRACK_EXTENT and 0 < track.length <= MAX_TRACK_LENGTH
    assert _first_crossing(c) is None


def _load_track(path):
    from engine.car.tracks import load_track

    with warnings.catch_warnings():
        warnings.simplefilter("error")           # a numpy warning would reach the user's terminal
        try:
            track = load_track(path)
        except ValueError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            return None
    _accepted_track_is_within_the_limits(track)
    return track


@_SETTINGS
@given(rows=st.lists(st.lists(TOKEN, max_size=4), max_size=10))
def test_random_csv_tracks(tmp_path, rows):
    path = tmp_path / "t.csv"
    path.write_text("\n".join(",".join(r) for r in rows))
    _load_track(path)


@_SETTINGS
@given(points=POINTS | SMALL_POINTS, width=NUMBERS, as_json=st.booleans())
def test_random_centre_lines(tmp_path, points, width, as_json):
    if as_json:
        path = tmp_path / "t.json"
        try:
            text = json.dumps({"kind": "car_track", "centre": [list(p) for p in points], "width": width})
        except (ValueError, OverflowError):
            return
    else:
        path = tmp_path / "t.csv"
        text = "x,y,width\n" + "".join(f"{x},{y},{width}\n" for x, y in points)
    path.write_text(text)
    _load_track(path)


@_SETTINGS
@given(horizon=NUMBERS, steps=st.lists(NUMBERS, max_size=5), coordinate=NUMBERS, speed=NUMBERS)
def test_plans_with_extreme_numbers(tmp_path, horizon, steps, coordinate, speed):
    from engine.car.scenarios import MAX_HORIZON, MAX_TARGETS, load_plan

    data = {"kind": "car_plan", "horizon": horizon, "start_velocity": [speed, 0, 0],
            "targets": [{"step": s, "x": coordinate, "y": 0.0} for s in steps]}
    path = tmp_path / "p.json"
    try:
        path.write_text(json.dumps(data))
    except (ValueError, OverflowError):
        return
    try:
        plan, _ = load_plan(path)
    except ValueError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        return
    assert 1 <= plan.horizon <= MAX_HORIZON and len(plan.targets) <= MAX_TARGETS
    assert all(1 <= t.step <= plan.horizon for t in plan.targets)
