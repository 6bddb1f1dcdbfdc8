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


def test_staged_files_replace_all_or_none(tmp_path, monkeypatch):
    from engine.io import staged_files

    (tmp_path / "a.txt").write_text("old a")
    (tmp_path / "b.txt").write_text("old b")
    (tmp_path / "other.txt").write_text("mine")
    with pytest.raises(RuntimeError):
        with staged_files(tmp_path) as tmp:
            (tmp / "a.txt").write_text("new a")
            raise RuntimeError("disk full while writing b")
    assert (tmp_path / "a.txt").read_text() == "old a"
    # a failure between the renames of the swap puts the old set back
    real = os.replace

    def rename_of_new_b_fails(src, dst):
        if str(dst).endswith("b.txt") and ".saving-" in str(src):
            raise OSError(5, "I/O error")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", rename_of_new_b_fails)
    with pytest.raises(OSError):
        with staged_files(tmp_path) as tmp:
            (tmp / "a.txt").write_text("new a")
            (tmp / "b.txt").write_text("new b")
    monkeypatch.setattr(os, "replace", real)
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt")] == ["old a", "old b"]
    with staged_files(tmp_path) as tmp:
        (tmp / "a.txt").write_text("new a")
        (tmp / "b.txt").write_text("new b")
    assert [(tmp_path / n).read_text() for n in ("a.txt", "b.txt", "other.txt")] == ["new a", "new b", "mine"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "other.txt"]


def test_move_entries_replaces_namesakes_and_keeps_the_rest(tmp_path):
    from engine.io import move_entries

    dest, src = tmp_path / "dest", tmp_path / "src"
    (dest / "checkpoints").mkdir(parents=True)
    (dest / "checkpoints" / "old.txt").write_text("old")
    (dest / "model.json").write_text("old model")
    (dest / "notes.txt").write_text("mine")
    (src / "checkpoints").mkdir(parents=True)
    (src / "checkpoints" / "new.txt").write_text("new")
    (src / "model.json").write_text("new model")
    move_entries(src, dest)
    assert [p.name for p in (dest / "checkpoints").iterdir()] == ["new.txt"]
    assert (dest / "model.json").read_text() == "new model" and (dest / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in dest.iterdir()) == ["checkpoints", "model.json", "notes.txt"]
    assert not list(src.iterdir())


def test_flatten_state_round_trips_an_optimiser_state(tmp_path):
    from engine.io import flatten_state, load_tensors, save_tensors, unflatten_state, write_json

    w = torch.nn.Parameter(torch.randn(3, 2))
    opt = torch.optim.Adam([w], lr=1e-2)
    w.grad = torch.ones_like(w)
    opt.step()
    state = {"opt": opt.state_dict(), "gen": torch.Generator().manual_seed(3).get_state(), "best": float("inf")}
    skeleton, tensors = flatten_state(state)
    save_tensors(tmp_path / "s.safetensors", tensors)
    write_json(tmp_path / "s.json", skeleton)
    back = unflatten_state(read_json(tmp_path / "s.json"), load_tensors(tmp_path / "s.safetensors"))
    assert back["best"] == float("inf") and torch.equal(back["gen"], state["gen"])
    assert back["opt"]["param_groups"] == state["opt"]["param_groups"]
    for key in ("exp_avg", "exp_avg_sq", "step"):
        assert torch.equal(back["opt"]["state"][0][key], state["opt"]["state"][0][key])
