"""The JSON readers (car plan, track, log mapping, preparation and training settings, data-set
sidecar) under random JSON and mutations of valid files: an object or a ValueError naming the
file or field; never another exception."""

from __future__ import annotations

import json

import pytest
from corpus import corpus, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SETTINGS = settings(
    max_examples=fuzz_examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _valid_plan() -> dict:
    from engine.car.scenarios import scenario

    plan = scenario("drifting-turn")
    return {"kind": "car_plan", **plan.to_dict()}


def _object(path) -> dict:
    """What a settings reader does first: a JSON object, or a ValueError naming the file."""
    from engine.io import read_json

    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _readers():
    from engine.car.scenarios import load_plan
    from engine.car.tracks import load_track
    from engine.data.config import DatasetConfig
    from engine.logs import LogMapping, PrepareConfig
    from engine.training.config import TrainConfig

    return {
        "plan": (load_plan, "plan.json", _valid_plan()),
        "track": (
            load_track,
            "track.json",
            {"name": "t", "centre": [[0, 0], [1, 0], [1, 1], [0, 1]], "width": 0.5},
        ),
        "mapping": (
            LogMapping.load,
            "map.json",
            {"time": "t", "q": ["q"], "u": ["u"], "units": {"q": "deg"}},
        ),
        "prepare": (
            lambda p: PrepareConfig.from_dict(_object(p)).validate(),
            "prep.json",
            PrepareConfig().to_dict(),
        ),
        "train": (lambda p: TrainConfig.from_dict(_object(p)), "train.json", TrainConfig().to_dict()),
        "dataset": (lambda p: DatasetConfig.from_dict(_object(p)), "data.json", DatasetConfig().to_dict()),
    }


READERS = ["track", "mapping", "prepare", "train", "dataset"]  # the car plan: test_fuzz_plan_reader.py


def _read(tmp_path, which, payload) -> None:
    reader, name, _ = _readers()[which]
    path = tmp_path / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    try:
        reader(path)
    except ValueError as exc:
        assert str(exc)


@_SETTINGS
@given(which=st.sampled_from(READERS), value=JSON)
def test_random_json(tmp_path, which, value):
    _read(tmp_path, which, value)


@_SETTINGS
@given(which=st.sampled_from(READERS), key_index=st.integers(0, 50), value=JSON, drop=st.booleans())
def test_one_field_changed_or_dropped(tmp_path, which, key_index, value, drop):
    valid = dict(_readers()[which][2])
    key = sorted(valid)[key_index % len(valid)]
    if drop:
        del valid[key]
    else:
        valid[key] = value
    _read(tmp_path, which, valid)


@_SETTINGS
@given(which=st.sampled_from(READERS), cut=st.integers(0, 400), junk=st.text(max_size=5))
def test_truncated_or_garbled_text(tmp_path, which, cut, junk):
    text = json.dumps(_readers()[which][2])
    _read(tmp_path, which, text[:cut] + junk)


@pytest.mark.parametrize("path", [p for p in corpus("json") if p.name.split("-")[0] in READERS],
                         ids=lambda p: p.name)
def test_json_corpus(tmp_path, path):
    which = path.name.split("-")[0]
    _read(tmp_path, which, path.read_text())
