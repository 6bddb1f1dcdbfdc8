"""Atomic writes and safetensors checkpoints."""

from __future__ import annotations

import os

import pytest
import torch

from engine.io import (
    CheckpointError,
    atomic_write_text,
    load_checkpoint,
    read_json,
    save_checkpoint,
    write_json,
)


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
    state = {
        "opt": opt.state_dict(),
        "gen": torch.Generator().manual_seed(3).get_state(),
        "best": float("inf"),
    }
    skeleton, tensors = flatten_state(state)
    save_tensors(tmp_path / "s.safetensors", tensors)
    write_json(tmp_path / "s.json", skeleton)
    back = unflatten_state(read_json(tmp_path / "s.json"), load_tensors(tmp_path / "s.safetensors"))
    assert back["best"] == float("inf") and torch.equal(back["gen"], state["gen"])
    assert back["opt"]["param_groups"] == state["opt"]["param_groups"]
    for key in ("exp_avg", "exp_avg_sq", "step"):
        assert torch.equal(back["opt"]["state"][0][key], state["opt"]["state"][0][key])


# ----- loads check before they build (reliability) ----------------------------------------------

def test_truncated_weights_are_named_before_any_read(tmp_path):
    from engine.io import tensor_header

    save_checkpoint(tmp_path, {"w": torch.randn(64, 64, dtype=torch.float64)}, {"type": "demo"})
    path = tmp_path / "model.safetensors"
    full = path.read_bytes()
    assert tensor_header(path) == {"w": ("F64", (64, 64))}
    for cut in (3, 8, 20, len(full) - 1):
        path.write_bytes(full[:cut])
        with pytest.raises(
            CheckpointError,
            match=r"model\.safetensors: not a valid safetensors file \(.*(truncated|unreadable)",
        ):
            load_checkpoint(tmp_path)


def test_header_with_a_huge_shape_is_refused_without_allocating(tmp_path):
    import json
    import struct

    header = json.dumps({"w": {"dtype": "F64", "shape": [10**6, 10**6], "data_offsets": [0, 16]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    (tmp_path / "model.json").write_text("{}")
    with pytest.raises(
        CheckpointError, match=r"tensor 'w': shape \[1000000, 1000000\] does not match its 16 bytes"
    ):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused_by_name(tmp_path, bad):
    w = torch.zeros(3, 3)
    w[1, 2] = bad
    save_checkpoint(tmp_path, {"net.0.weight": w, "steps": torch.tensor([3])}, {"type": "demo"})
    with pytest.raises(CheckpointError, match=r"tensor 'net\.0\.weight' holds 1 (NaN|infinite) value"):
        load_checkpoint(tmp_path)


def test_declared_shapes_are_compared_with_the_header(tmp_path):
    from engine.io import check_tensor_shapes

    save_checkpoint(tmp_path, {"a": torch.zeros(2, 3), "b": torch.zeros(4)}, {"hidden": 3})
    weights = tmp_path / "model.safetensors"
    check_tensor_shapes(weights, {"a": (2, 3), "b": (4,)})
    with pytest.raises(
        CheckpointError, match=r"tensor 'a' has shape \[2, 3\] but the model needs \[2, 300\]"
    ):
        check_tensor_shapes(weights, {"a": (2, 300), "b": (4,)})
    with pytest.raises(CheckpointError, match=r"missing 'c'; unexpected 'b'"):
        check_tensor_shapes(weights, {"a": (2, 3), "c": (4,)})
    with pytest.raises(CheckpointError, match="needs"):
        load_checkpoint(tmp_path, expected_shapes=lambda meta: {"a": (2, meta["hidden"] * 100), "b": (4,)})


def test_model_json_declaring_other_sizes_is_refused_before_building(tmp_path):
    from engine.models.base import ModelSpec
    from engine.models.registry import build_model, load_model, save_model

    for kind in ("mlp", "symo"):
        save_model(tmp_path / kind, build_model(kind, ModelSpec(hidden=16)))
        meta_path = tmp_path / kind / "model.json"
        meta = read_json(meta_path)
        meta["hyperparameters"]["hidden"] = 32
        write_json(meta_path, meta)
        with pytest.raises(CheckpointError, match="model.safetensors|model.json"):
            load_model(tmp_path / kind)
        meta["hyperparameters"]["hidden"] = 10**8  # would be terabytes: refused, not built
        write_json(meta_path, meta)
        with pytest.raises(CheckpointError, match=r"model\.json: model setting hidden \(--hidden\)"):
            load_model(tmp_path / kind)


def test_model_with_nan_weights_is_refused_at_load_naming_the_tensor(tmp_path):
    from engine.models.base import ModelSpec
    from engine.models.registry import build_model, load_model, save_model

    model = build_model("symo", ModelSpec(hidden=8))
    name, param = next(iter(model.named_parameters()))
    with torch.no_grad():
        param.view(-1)[0] = float("nan")
    save_model(tmp_path, model)
    with pytest.raises(CheckpointError, match=f"tensor '{name}' holds 1 NaN"):
        load_model(tmp_path)


def test_a_file_or_pipe_where_a_model_folder_or_json_is_meant(tmp_path):
    (tmp_path / "m").write_text("x")
    with pytest.raises(CheckpointError, match="a file, not a model folder"):
        load_checkpoint(tmp_path / "m")
    d = tmp_path / "d"
    d.mkdir()
    os.mkfifo(d / "model.json")
    with pytest.raises(CheckpointError, match="not a regular file"):
        load_checkpoint(d)
