"""Plans and tracks read from files (and sessions, which use the same readers) pass the same
range and memory checks as the command-line flags, before anything is allocated; degenerate
tracks are refused with one line naming the file and what is wrong (issue 34)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from engine.car.costs import PlanError, Target
from engine.car.optimiser import OptimiserConfig
from engine.car.scenarios import (
    MAX_HORIZON,
    MAX_PLAN_FILE_BYTES,
    MAX_TARGETS,
    Plan,
    check_plan_memory,
    load_plan,
    scenario,
)
from engine.car.tracks import (
    MAX_TRACK_FILE_BYTES,
    MAX_TRACK_POINTS,
    Track,
    TrackError,
    TrackField,
    _first_crossing,
    load_track,
)
from engine.cli import main


def _plan_file(tmp_path, **fields):
    data = {"kind": "car_plan", **scenario("parallel-parking").to_dict(), **fields}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    return path


# ----- plans ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, words", [
    ({"horizon": 1e9}, "'horizon': must be between 1 and 1000"),
    ({"horizon": 50, "targets": [{"step": 50_000_000, "x": 1.0, "y": 0.0}]}, "target step 50000000"),
    ({"horizon": 40, "targets": [{"step": 1, "x": 0.0, "y": 0.0}] * (MAX_TARGETS + 1)}, "at most 1000"),
    ({"start_velocity": [1e6, 0, 0]}, "'start_velocity': must be in [-20, 20] m/s"),
    ({"targets": [{"step": 5, "x": 1e300, "y": 0}]}, "'x': must be in"),
    ({"weights": {"position": -1.0}}, "'position': must be in [0, 1e+09]"),
    ({"targets": [{"step": 2.5, "x": 0, "y": 0}]}, "expected a whole number"),
    ({"name": "n" * 1000}, "at most 200 characters"),
])
def test_a_plan_file_out_of_range_is_refused_naming_the_file_and_field(tmp_path, fields, words):
    path = _plan_file(tmp_path, **fields)
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert str(path) in str(info.value) and words in str(info.value)


def test_a_huge_plan_file_is_refused_by_its_size_before_it_is_parsed(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    with path.open("w") as fh:                       # a million targets: ~30 MB
        fh.write('{"kind": "car_plan", "horizon": 40, "targets": [')
        fh.write(", ".join(['{"step": 1, "x": 0.0, "y": 0.0}'] * 1_000_000))
        fh.write("]}")
    assert path.stat().st_size > MAX_PLAN_FILE_BYTES

    def no_parse(*_a, **_k):
        raise AssertionError("the file was parsed")

    monkeypatch.setattr("engine.io.read_json", no_parse)
    with pytest.raises(PlanError, match=r"big\.json: .* too big for a car plan"):
        load_plan(path)


def test_the_plan_checks_are_the_same_for_files_the_form_and_code():
    """One check: the dataclass refuses what the file reader refuses, with the same words."""
    with pytest.raises(PlanError, match="'horizon': must be between 1 and 1000"):
        Plan(horizon=MAX_HORIZON + 1)
    with pytest.raises(PlanError, match="'horizon': must be between 1 and 1000"):
        Plan.from_dict({"horizon": MAX_HORIZON + 1})
    Plan(horizon=MAX_HORIZON, targets=(Target(MAX_HORIZON, 1.0, 0.0),))      # the limit itself is fine
    with pytest.raises(PlanError, match="target step 0"):
        Target(0, 1.0, 1.0)
    with pytest.raises(PlanError, match="'y': must be a finite number"):
        Target(3, 1.0, math.nan)


def test_plan_memory_is_checked_against_the_budget_before_optimising(monkeypatch):
    plan = Plan("long", MAX_HORIZON, targets=(Target(MAX_HORIZON, 1.0, 0.0),))
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "64M")
    with pytest.raises(
        ValueError, match=r"1000 steps per line search\) would need about .* more than the budget"
    ):
        check_plan_memory(plan, OptimiserConfig(candidates=512))
    assert check_plan_memory(scenario("drifting-turn"), OptimiserConfig()) < 64 << 20


def test_cli_plan_file_with_a_huge_horizon_is_one_line_exit_2(tmp_path, capsys):
    path = _plan_file(tmp_path, horizon=1e9)
    assert main(["car", "plan", "--scenario", str(path), "--model", "sim"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "horizon" in err and "Traceback" not in err


# ----- tracks ---------------------------------------------------------------------------------

def _circle(n=120, r=3.0):
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([r * np.cos(t), r * np.sin(t)], -1)


def _eight(n=120):
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([3 * np.sin(t), 3 * np.sin(t) * np.cos(t)], -1)


def _csv(tmp_path, name, points, width=1.0):
    path = tmp_path / f"{name}.csv"
    path.write_text("x,y,width\n" + "".join(f"{float(x)!r},{float(y)!r},{width}\n" for x, y in points))
    return path


@pytest.mark.parametrize(
    "name, points, width, words",
    [
        ("zero", [[1.0, 1.0]] * 6, 1.0, "zero length"),
        ("eight", _eight(), 1.0, "crosses or touches itself"),
        ("collinear", [[0, 0], [1, 0], [2, 0], [3, 0], [4, 0]], 1.0, "lie on one line"),
        ("sliver", [[0, 0], [10, 0], [10, 1e-3], [0, 1e-3]], 0.5, "encloses (almost) no area"),
        ("duplicate", [[0, 0], [4, 0], [4, 0], [4, 4], [0, 4]], 1.0, "points 2 and 3 are the same"),
        (
            "spike",
            [[0, 0], [4, 0], [4, 4], [4, 2], [4, 6], [0, 4]],
            1.0,
            "turns straight back on itself at point 3",
        ),
        ("touching", [[0, 0], [4, 0], [4, 4], [2, 0], [0, 4]], 1.0, "crosses or touches itself"),
        ("tiny", [[0, 0], [0.1, 0], [0.1, 0.1], [0, 0.1]], 1.0, "too short for a 1 m wide track"),
        ("vast", [[0, 0], [500, 0], [500, 500], [0, 500]], 1.0, "spans 500 m, at most 100 m"),
        ("wide", _circle(), 50.0, "'width': must be in [0.05, 10] m"),
    ],
)
def test_degenerate_tracks_are_refused_in_one_line_naming_the_file(tmp_path, name, points, width, words):
    path = _csv(tmp_path, name, points, width)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no numpy warning reaches the terminal
        with pytest.raises(TrackError) as info:
            load_track(path)
    message = str(info.value)
    assert message.startswith(str(path)) and words in message and "\n" not in message


def test_cli_mpc_on_a_zero_length_track_is_a_plain_error(tmp_path, capfd):
    path = _csv(tmp_path, "zero", [[0.0, 0.0]] * 5)
    assert main(["car", "mpc", "--track", str(path), "--model", "sim"]) == 2
    out = capfd.readouterr()
    assert "zero length" in out.err and str(path) in out.err
    assert "division" not in out.err and "Warning" not in out.err and "internal error" not in out.err


def test_simple_tracks_are_accepted_closed_or_not():
    for points in (_circle(), np.vstack([_circle(), _circle()[:1]]), [[0, 0], [4, 0], [4, 4], [0, 4]]):
        track = Track("ok", points, 1.0)
        assert track.length > 0 and len(track.centre) >= 4
    load_track("default"), load_track("oval")


def test_the_crossing_test_agrees_with_shapely_on_random_polygons():
    """Independent reference: shapely's LinearRing.is_simple (GEOS)."""
    shapely = pytest.importorskip("shapely")
    rng = np.random.default_rng(3)
    simple = crossing = 0
    for n in range(4, 200):
        k = int(rng.integers(4, 12))
        if n % 2:   # star-shaped (simple) polygons with noise in the radius; some become non-simple by jitter
            t = np.sort(rng.uniform(0, 2 * np.pi, k))
            r = rng.uniform(1, 3, k)
            pts = np.stack([r * np.cos(t), r * np.sin(t)], -1) + rng.normal(0, 0.3, (k, 2))
        else:       # random points: mostly self-intersecting
            pts = rng.uniform(-3, 3, (k, 2))
        expected_simple = shapely.LinearRing(pts).is_simple
        assert (_first_crossing(pts) is None) == expected_simple, pts.tolist()
        simple += expected_simple
        crossing += not expected_simple
    assert simple > 30 and crossing > 30


def test_track_sizes_are_refused_before_parsing_and_the_grid_against_the_memory_budget(tmp_path, monkeypatch):
    big = tmp_path / "big.csv"
    big.write_text("x,y\n" + "0.0,0.0\n" * (MAX_TRACK_FILE_BYTES // 8 + 1))
    with pytest.raises(TrackError, match=r"big\.csv: .* too big for a car track"):
        load_track(big)
    many = _csv(tmp_path, "many", _circle(MAX_TRACK_POINTS + 1))
    with pytest.raises(TrackError, match=f"at most {MAX_TRACK_POINTS}"):
        load_track(many)
    many_json = tmp_path / "many.json"
    many_json.write_text(json.dumps({"kind": "car_track", "centre": _circle(MAX_TRACK_POINTS + 1).tolist()}))
    with pytest.raises(TrackError, match=f"many.json: field 'centre' has {MAX_TRACK_POINTS + 1} points"):
        load_track(many_json)
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "1M")
    with pytest.raises(ValueError, match="coordinate grid of track .* more than the budget"):
        TrackField(Track("ring", _circle(r=40.0), 1.0))
