"""Mappings: JSON round trip, reuse by column signature, preview after unit conversion."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.logs import (
    LogError,
    LogMapping,
    LogTable,
    column_signature,
    find_saved_mapping,
    preview_mapping,
    save_mapping,
)


def test_json_round_trip(tmp_path):
    m = LogMapping(time="t_ms", q=["a", "b"], qd=["ad", "bd"], u=["tau"],
                   units={"t_ms": "ms", "a": "deg", "b": "mm", "ad": "deg/s", "bd": "mm/s"}, name="rig")
    path = m.save(tmp_path / "m.json")
    assert json.loads(path.read_text())["units"]["a"] == "deg"
    assert LogMapping.load(path) == m
    assert LogMapping.from_dict(m.to_dict()) == m


def test_saved_mapping_is_found_for_files_of_the_same_shape(tmp_path):
    cols = ["t", "theta", "torque"]
    m = LogMapping(time="t", q=["theta"], u=["torque"], units={"theta": "deg"})
    saved = save_mapping(m, cols, tmp_path / "mappings")
    assert saved.name == f"{column_signature(cols)}.json"
    assert find_saved_mapping(list(cols), tmp_path / "mappings") == m
    assert find_saved_mapping(["t", "theta"], tmp_path / "mappings") is None
    assert find_saved_mapping(["theta", "t", "torque"], tmp_path / "mappings") is None  # other order
    assert find_saved_mapping(cols, tmp_path / "elsewhere") is None
    # a saved-mapping file also loads directly as a mapping
    assert LogMapping.load(saved) == m


def test_preview_converts_units():
    t = np.array([0.0, 10.0, 20.0, 30.0])
    table = LogTable(["t", "ang", "x", "f"], {"t": t, "ang": np.array([0, 90, 180, 270.0]),
                                            "x": np.array([1000.0, 0, 0, 0]), "f": np.ones(4)})
    m = LogMapping(time="t", q=["ang", "x"], u=["f"], units={"t": "ms", "ang": "deg", "x": "mm", "f": "N"})
    prev = preview_mapping(table, m, rows=3)
    assert list(prev) == ["t [s]", "q[0] ang [rad]", "q[1] x [m]", "u[0] f [N]"]
    np.testing.assert_allclose(prev["t [s]"], [0, 0.01, 0.02])
    np.testing.assert_allclose(prev["q[0] ang [rad]"], [0, math.pi / 2, math.pi])
    np.testing.assert_allclose(prev["q[1] x [m]"], [1, 0, 0])


def test_mapping_without_time_uses_sample_period():
    from engine.logs import apply_mapping

    table = LogTable(["q"], {"q": np.arange(5.0)})
    m = apply_mapping(table, LogMapping(q=["q"], sample_period=0.1))
    np.testing.assert_allclose(m.t, [0, 0.1, 0.2, 0.3, 0.4])


def test_a_unit_that_is_not_text_is_refused_naming_the_column(tmp_path):
    # found by the JSON fuzzing: {"units": {"a": []}} ended in a TypeError
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"time": "t", "q": ["a"], "units": {"a": []}}))
    with pytest.raises(LogError, match=r"units\['a'\] must be a unit name"):
        LogMapping.load(path)
