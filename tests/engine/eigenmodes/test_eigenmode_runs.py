"""`eigenmode learn` as a run: exact resume, saves that are all three files or none, divergence and
interrupts that leave an existing mode folder as it was."""

from __future__ import annotations

import json

import pytest
import torch

import engine.io
from engine.cli import main
from engine.eigenmodes.config import DesignConfig
from engine.eigenmodes.storage import learn_into, load_mode, save_mode
from engine.io import DiskFullError
from engine.runs import Run, read_metrics
from engine.training_loop import TrainingDiverged


def _design(epochs: int, **train) -> DesignConfig:
    d = DesignConfig()
    d.train.epochs = epochs
    for k, v in train.items():
        setattr(d.train, k, v)
    return d


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_three_epochs_then_resume_to_six_ends_where_six_in_one_go_does(tmp_path):
    one = learn_into(_design(6), tmp_path / "one")
    learn_into(_design(3), tmp_path / "two")
    two = learn_into(None, resume_dir=tmp_path / "two", epochs=6)
    assert two.history == one.history and two.period == one.period
    for a, b in zip(one.potential.state_dict().values(), two.potential.state_dict().values()):
        assert torch.equal(a, b)
    assert [r["epoch"] for r in read_metrics(tmp_path / "two")] == list(range(1, 7))
    loaded = load_mode(tmp_path / "two")
    assert loaded.period == one.period and (tmp_path / "two" / "trajectory.csv").is_file()


def test_a_failure_between_the_files_of_a_save_keeps_the_old_mode(tmp_path, monkeypatch):
    mode = learn_into(_design(2), tmp_path / "m")
    before = _files(tmp_path / "m")
    real = engine.io.write_json

    def fail_on_mode_json(path, obj):
        if str(path).endswith("mode.json"):
            raise OSError(28, "No space left on device")
        return real(path, obj)

    monkeypatch.setattr(engine.io, "write_json", fail_on_mode_json)
    mode.period = 3.0
    with pytest.raises(DiskFullError, match="disk full"):   # a user error, not an OSError
        save_mode(mode, tmp_path / "m")      # weights written, then the JSON fails
    monkeypatch.setattr(engine.io, "write_json", real)
    assert _files(tmp_path / "m") == before
    assert load_mode(tmp_path / "m").period == 2.5


@pytest.mark.parametrize("fail_at", [1, 2])
def test_an_interrupt_after_any_checkpoint_leaves_the_folder_as_it_was(tmp_path, monkeypatch, fail_at):
    learn_into(_design(2), tmp_path / "m")
    before = _files(tmp_path / "m")
    real = Run.save_state
    calls = {"n": 0}

    def save_then_die(self, *a, **k):
        out = real(self, *a, **k)
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise KeyboardInterrupt("SIGTERM")
        return out

    monkeypatch.setattr(Run, "save_state", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        learn_into(_design(4, seed=1), tmp_path / "m", checkpoint_every=2)   # checkpoints at epochs 2 and 4
    assert _files(tmp_path / "m") == before


def test_divergence_names_the_epoch_keeps_the_last_finite_potential_and_the_old_mode(tmp_path, monkeypatch):
    import engine.eigenmodes.train as train

    learn_into(_design(2), tmp_path / "m")
    before = _files(tmp_path / "m")
    real, calls = train.design_losses, {"n": 0}

    def nan_at_epoch_3(*a, **k):
        calls["n"] += 1
        parts = real(*a, **k)
        return {**parts, "task": parts["task"] * float("nan")} if calls["n"] == 3 else parts

    monkeypatch.setattr(train, "design_losses", nan_at_epoch_3)
    with pytest.raises(TrainingDiverged, match=r"diverged at epoch 3 .*epoch 2") as info:
        learn_into(_design(6), tmp_path / "m")
    assert _files(tmp_path / "m") == before and "last finite potential" in str(info.value)
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".m.run-")]
    assert len(staged) == 1
    assert json.loads((staged[0] / "run.json").read_text())["status"] == "diverged"
    kept = load_mode(staged[0] / "checkpoints" / "last-finite")
    assert all(torch.isfinite(p).all() for p in kept.potential.parameters())


def test_cli_learn_resume_extends_a_finished_run(tmp_path, capsys):
    assert main(["eigenmode", "learn", "--epochs", "2", "--out", str(tmp_path / "m"), "--json"]) == 0
    capsys.readouterr()
    assert main(["eigenmode", "learn", "--resume", str(tmp_path / "m"), "--json"]) == 2
    assert "--epochs N above 2" in capsys.readouterr().err
    assert main(["eigenmode", "learn", "--resume", str(tmp_path / "m"), "--epochs", "3", "--json"]) == 0
    info = json.loads((tmp_path / "m" / "run.json").read_text())
    assert info["status"] == "done" and info["epoch"] == 3
    assert len(json.loads((tmp_path / "m" / "mode.json").read_text())["history"]["total"]) == 3


def test_a_full_disk_during_a_checkpoint_is_recorded_in_plain_words(tmp_path, monkeypatch):
    """run.json says what the user reads on the terminal ("disk full: ..."), not the class name."""
    def full(self, *a, **k):
        raise DiskFullError(tmp_path / "m" / "checkpoints", needed=5_000_000)

    monkeypatch.setattr(Run, "save_state", full)
    with pytest.raises(DiskFullError):
        learn_into(_design(4, seed=1), tmp_path / "m", checkpoint_every=2)
    info = json.loads((tmp_path / "m" / "run.json").read_text())
    assert info["status"] == "failed"
    assert info["message"].startswith("disk full: 5")
    assert "DiskFullError" not in info["message"]
