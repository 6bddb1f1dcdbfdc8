"""Atomic writes and safetensors checkpoints."""

from __future__ import annotations

import os

import pytest
import torch

from engine.io import (CheckpointError, atomic_write_text, load_checkpoint, read_json, save_checkpoint,
                       write_json)


def test_atomic_write_replaces_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "a.txt"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    assert os.listdir(tmp_path) == ["a.txt"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.json"
    write_json(path, {"v": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_json(path, {"v": 2})
    monkeypatch.undo()
    assert read_json(path) == {"v": 1}
    assert sorted(os.listdir(tmp_path)) == ["keep.json"]


def test_checkpoint_round_trips_exactly(tmp_path):
    state = {"w": torch.randn(3, 4, dtype=torch.float64), "b": torch.arange(5, dtype=torch.float32)}
    save_checkpoint(tmp_path, state, {"type": "demo", "hidden": [8, 8]})
    loaded, meta = load_checkpoint(tmp_path)
    assert meta == {"type": "demo", "hidden": [8, 8]}
    for k in state:
        assert torch.equal(loaded[k], state[k]) and loaded[k].dtype == state[k].dtype


def test_corrupt_checkpoint_names_the_file(tmp_path):
    save_checkpoint(tmp_path, {"w": torch.zeros(2)}, {"type": "demo"})
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(tmp_path)
    (tmp_path / "model.json").write_text("{bad")
    with pytest.raises(CheckpointError, match="model.json"):
        load_checkpoint(tmp_path)
