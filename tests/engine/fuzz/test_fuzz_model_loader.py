"""The model loader (engine.models.registry.load_model over engine.io.load_checkpoint) under
mutations of a saved model: flipped or inserted bytes and truncation of the weights, and
changed fields of the JSON. A model or a ValueError (CheckpointError, InputError) naming the
file; never another exception and never a model whose weights hold NaN."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from corpus import corpus, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.models.base import ModelSpec
from engine.models.registry import build_model, load_model, save_model

_SETTINGS = settings(max_examples=fuzz_examples(60), deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    for kind in ("mlp", "symo"):
        save_model(folder / kind, build_model(kind, ModelSpec(hidden=8)))
    return folder


def _load(folder) -> None:
    try:
        model, _ = load_model(folder)
    except ValueError as exc:
        assert str(exc)
        return
    for name, t in model.state_dict().items():
        assert torch.isfinite(t).all(), name


def _copy(saved, tmp_path, kind):
    dst = tmp_path / "m"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(saved / kind, dst)
    return dst


@_SETTINGS
@given(
    kind=st.sampled_from(["mlp", "symo"]),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["flip", "insert", "cut"]),
            st.integers(0, 10**6),
            st.binary(min_size=1, max_size=8),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_mutated_weights(saved, tmp_path, kind, edits):
    folder = _copy(saved, tmp_path, kind)
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    for op, at, payload in edits:
        at %= max(len(data), 1)
        if op == "flip":
            data[at:at + len(payload)] = payload
        elif op == "insert":
            data[at:at] = payload
        else:
            del data[at:]
    path.write_bytes(bytes(data))
    _load(folder)


@_SETTINGS
@given(kind=st.sampled_from(["mlp", "symo"]), where=st.sampled_from(["top", "hyperparameters"]),
       key_index=st.integers(0, 50), value=JSON)
def test_mutated_json(saved, tmp_path, kind, where, key_index, value):
    folder = _copy(saved, tmp_path, kind)
    path = folder / "model.json"
    meta = json.loads(path.read_text())
    target = meta if where == "top" else meta["hyperparameters"]
    key = sorted(target)[key_index % len(target)]
    target[key] = value
    path.write_text(json.dumps(meta))
    _load(folder)


@pytest.mark.parametrize("path", corpus("models"), ids=lambda p: p.name)
def test_model_corpus(saved, tmp_path, path):
    """Each corpus entry is a JSON edit ``{"kind": ..., "hyperparameters": {...}}`` or raw weights."""
    if path.suffix == ".json":
        edit = json.loads(path.read_text())
        folder = _copy(saved, tmp_path, edit["kind"])
        meta = json.loads((folder / "model.json").read_text())
        meta["hyperparameters"].update(edit.get("hyperparameters", {}))
        meta.update(edit.get("top", {}))
        (folder / "model.json").write_text(json.dumps(meta))
    else:
        folder = _copy(saved, tmp_path, "mlp")
        (folder / "model.safetensors").write_bytes(path.read_bytes())
    _load(folder)
