"""The car plan reader (engine.car.scenarios.load_plan) under random JSON and one-field
changes of a valid plan: a plan or a ValueError (PlanError) naming the file; nothing else.

Kept apart from test_fuzz_json_readers.py: it fails until PlanWeights.from_dict
(engine/car/costs.py) refuses a 'weights' field that is not an object
of numbers with a PlanError (today: AttributeError / TypeError; see fuzz_corpus/json/plan-*)."""

from __future__ import annotations

import json

import pytest
from corpus import corpus, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SETTINGS = settings(max_examples=fuzz_examples(60), deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _valid() -> dict:
    from engine.car.scenarios import scenario

    return {"kind": "car_plan", **scenario("drifting-turn").to_dict()}


def _load(tmp_path, payload) -> None:
    from engine.car.scenarios import load_plan

    path = tmp_path / "plan.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    try:
        load_plan(path)
    except ValueError as exc:
        assert str(exc)


@_SETTINGS
@given(value=JSON)
def test_random_json(tmp_path, value):
    _load(tmp_path, value)


@_SETTINGS
@given(key_index=st.integers(0, 50), value=JSON, drop=st.booleans())
def test_one_field_changed_or_dropped(tmp_path, key_index, value, drop):
    valid = _valid()
    key = sorted(valid)[key_index % len(valid)]
    if drop:
        del valid[key]
    else:
        valid[key] = value
    _load(tmp_path, valid)


@pytest.mark.parametrize(
    "path", [p for p in corpus("json") if p.name.startswith("plan-")], ids=lambda p: p.name
)
def test_plan_corpus(tmp_path, path):
    _load(tmp_path, path.read_text())
