"""Training runs as folders (engine.runs with the trainer): exact resume, saves that never leave a
half-written model, divergence that says what it kept, the runs-table helpers, TensorBoard export."""

from __future__ import annotations

import json

import pytest
import torch

import engine.io
from engine.data import DatasetConfig, generate_dataset
from engine.io import DiskFullError
from engine.jobs import JobCancelled, run_job
from engine.models import load_model
from engine.runs import Run, RunError, config_diff, ema, list_runs, read_metrics
from engine.training import TrainConfig, TrainingDiverged, resume_job, train_job

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def data():
    return generate_dataset(DatasetConfig(train_trajectories=2, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=10, seed=3))


def _cfg(**kw):
    base = dict(
        model="node-midpoint", trajectories=2, epochs=4, hidden=8, learning_rate=3e-3, checkpoint_every=2
    )
    base.update(kw)
    return TrainConfig(**base)


def _weights(folder):
    model, meta = load_model(folder)
    return {k: v.clone() for k, v in model.state_dict().items()}, meta


def test_twenty_epochs_then_resume_to_forty_ends_where_forty_in_one_go_does(data, tmp_path):
    one = run_job(train_job(_cfg(epochs=40, checkpoint_every=7), out_dir=tmp_path / "one", dataset=data))
    half = run_job(train_job(_cfg(epochs=20, checkpoint_every=7), out_dir=tmp_path / "two", dataset=data))
    assert json.loads((tmp_path / "two" / "run.json").read_text())["status"] == "done"
    two = run_job(resume_job(tmp_path / "two", 40, dataset=data))
    assert len(half["losses"]) == 20 and len(two["losses"]) == 40
    assert two["losses"] == one["losses"]                      # every epoch's loss, bit for bit
    assert two["row"]["test_mse"] == one["row"]["test_mse"]
    w1, _ = _weights(tmp_path / "one")
    w2, meta = _weights(tmp_path / "two")
    assert meta["epoch"] == 40 and all(torch.equal(w1[k], w2[k]) for k in w1)
    rows = read_metrics(tmp_path / "two")
    assert [r["epoch"] for r in rows] == list(range(1, 41))
    assert [r["step"] for r in rows] == [r["step"] for r in read_metrics(tmp_path / "one")]
    assert all(b["wall_time"] >= a["wall_time"] for a, b in zip(rows, rows[1:]))
    # a finished run resumes only to extend it
    with pytest.raises(RunError, match="--epochs N above 40"):
        resume_job(tmp_path / "two")


def test_resume_after_a_cancel_continues_from_the_last_checkpoint(data, tmp_path):
    ref = run_job(train_job(_cfg(epochs=6), out_dir=tmp_path / "ref", dataset=data))

    class CancelAtEpoch5:
        def progress(self, fraction, message="", metrics=None):
            if metrics and metrics.get("epoch") == 5:
                raise JobCancelled("cancelled by the user")

        def check_cancelled(self):
            pass

        cancelled = False

    with pytest.raises(JobCancelled):
        train_job(_cfg(epochs=6), out_dir=tmp_path / "cut", dataset=data)(CancelAtEpoch5())
    info = json.loads((tmp_path / "cut" / "run.json").read_text())
    assert info["status"] == "cancelled" and info["epoch"] == 4 and "epoch 4" in info["message"]
    assert not (tmp_path / "cut" / "model.json").exists()
    again = run_job(resume_job(tmp_path / "cut", dataset=data))
    assert again["losses"] == ref["losses"]


def _finished_model(data, folder):
    run_job(train_job(_cfg(epochs=2, seed=7), out_dir=folder, dataset=data))
    return _weights(folder)


def test_a_failure_between_the_files_of_the_final_save_keeps_the_old_model(data, tmp_path, monkeypatch):
    old, old_meta = _finished_model(data, tmp_path / "m")
    real = engine.training.trainer.write_json

    def disk_full(path, obj):   # the weights are written, then the JSON fails
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.training.trainer, "write_json", disk_full)
    with pytest.raises(DiskFullError, match="disk full"):   # a user error naming the folder, not an OSError
        run_job(train_job(_cfg(epochs=3, seed=1), out_dir=tmp_path / "m", dataset=data))
    monkeypatch.setattr(engine.training.trainer, "write_json", real)
    now, meta = _weights(tmp_path / "m")
    assert meta == old_meta and all(torch.equal(now[k], old[k]) for k in old)
    assert not [p for p in (tmp_path / "m").iterdir() if p.name.startswith(".")]  # no temporary left inside


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_failure_after_any_checkpoint_keeps_the_old_model(data, tmp_path, monkeypatch, fail_at):
    old, old_meta = _finished_model(data, tmp_path / "m")
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir() if p.is_file()}
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
        run_job(train_job(_cfg(epochs=6, checkpoint_every=2, seed=1), out_dir=tmp_path / "m", dataset=data))
    after = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir() if p.is_file()}
    assert after == before                           # every file of the folder as it was
    now, meta = _weights(tmp_path / "m")
    assert meta == old_meta
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".m.run-")]
    assert len(staged) == 1 and json.loads((staged[0] / "run.json").read_text())["status"] == "cancelled"


def test_a_new_run_into_a_finished_folder_replaces_its_run_when_it_ends_well(data, tmp_path):
    _finished_model(data, tmp_path / "m")
    (tmp_path / "m" / "notes.txt").write_text("mine")
    run_job(train_job(_cfg(epochs=2, seed=1), out_dir=tmp_path / "m", dataset=data))
    _, meta = _weights(tmp_path / "m")
    assert meta["train_config"]["seed"] == 1 and Run.open(tmp_path / "m").config["train"]["seed"] == 1
    assert (tmp_path / "m" / "notes.txt").read_text() == "mine"   # not the run's: left alone
    assert [p.name for p in tmp_path.iterdir()] == ["m"]   # the staging folder is gone
    assert not [p for p in (tmp_path / "m").iterdir() if p.name.startswith(".")]


def _exploding_adam(real):
    """An Adam whose every step leaves NaN weights: a run that diverges at its first update."""
    def make(params, lr):
        opt = real(params, lr)
        step = opt.step

        def nan_step(*args, **kwargs):
            out = step(*args, **kwargs)
            with torch.no_grad():
                for group in opt.param_groups:
                    for p in group["params"]:
                        p.fill_(float("nan"))
            return out

        opt.step = nan_step
        return opt
    return make


def test_divergence_exits_non_zero_names_the_epoch_and_keeps_the_old_model(tmp_path, monkeypatch, capsys):
    import re

    import engine.training.trainer as trainer
    from engine.cli import main

    folder = tmp_path / "m"
    args = ["learn", "train", "--trajectories", "2", "--hidden", "8", "--out", str(folder)]
    assert main(args + ["--epochs", "2"]) == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    capsys.readouterr()
    # an absurd learning rate is refused before any work, naming the flag
    assert main(args + ["--epochs", "3", "--lr", "1000"]) == 2
    assert "--lr" in capsys.readouterr().err
    monkeypatch.setattr(trainer, "adam_optimizer", _exploding_adam(trainer.adam_optimizer))
    assert main(args + ["--epochs", "3"]) != 0
    err = capsys.readouterr().err
    assert re.search(r"diverged at epoch \d", err) and "Traceback" not in err
    assert f"{folder} is as it was" in err
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert main(args[:-1] + [str(tmp_path / "new"), "--epochs", "3"]) != 0
    assert not (tmp_path / "new" / "model.json").exists()
    assert json.loads((tmp_path / "new" / "run.json").read_text())["status"] == "diverged"
    model, meta = load_model(tmp_path / "new" / "checkpoints" / "last-finite")
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_divergence_in_the_metrics_alone_is_a_divergence(data, tmp_path, monkeypatch):
    import engine.training.trainer as trainer

    monkeypatch.setattr(trainer, "evaluate", lambda model, ds: {"train_mse": 0.1, "test_mse": float("nan")})
    with pytest.raises(TrainingDiverged, match="test_mse"):
        run_job(train_job(_cfg(epochs=2), out_dir=tmp_path / "m", dataset=data))
    assert not (tmp_path / "m" / "model.json").exists()
    assert json.loads((tmp_path / "m" / "run.json").read_text())["status"] == "diverged"


def test_runs_table_helpers(data, tmp_path):
    run_job(train_job(_cfg(epochs=2, seed=0), out_dir=tmp_path / "a", dataset=data))
    run_job(train_job(_cfg(epochs=2, seed=1, hidden=16), out_dir=tmp_path / "b", dataset=data))
    runs = {r["path"].rsplit("/", 1)[-1]: r for r in list_runs(tmp_path)}
    assert set(runs) == {"a", "b"} and runs["a"]["status"] == "done"
    assert runs["b"]["config"]["train.hidden"] == 16 and "test_mse" in runs["a"]["metrics"]
    assert runs["a"]["fingerprints"]["data"] == runs["b"]["fingerprints"]["data"] == data.fingerprint()
    diff = dict(
        (k, (a, b))
        for k, a, b in config_diff(Run.open(tmp_path / "a").config, Run.open(tmp_path / "b").config)
    )
    assert diff["train.seed"] == (0, 1) and diff["train.hidden"] == (8, 16) and "train.epochs" not in diff
    # EMA: weight 0 is the identity; the debiased average of a constant is that constant
    assert ema([1.0, 2.0, 3.0], 0.0) == [1.0, 2.0, 3.0]
    assert ema([5.0, 5.0, 5.0], 0.9) == pytest.approx([5.0, 5.0, 5.0])
    assert ema([0.0, 1.0], 0.5) == pytest.approx([0.0, 0.5 / 0.75])   # (0.5*0 + 0.5*1) / (1 - 0.25)
    with pytest.raises(ValueError, match="smoothing"):
        ema([1.0], 1.0)
    with pytest.raises(RunError, match="not a run folder"):
        Run.open(tmp_path)


def test_tensorboard_export_reads_back(data, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from engine.training.tensorboard import export_run

    run_job(train_job(_cfg(epochs=3), out_dir=tmp_path / "a", dataset=data))
    out = export_run(tmp_path / "a", tmp_path / "tb")
    acc = EventAccumulator(str(out))
    acc.Reload()
    losses = [e.value for e in acc.Scalars("train/loss")]
    assert losses == pytest.approx([r["loss"] for r in read_metrics(tmp_path / "a")], rel=1e-6)
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2, 3]
    plugin = acc.PluginTagToContent("hparams")
    assert plugin   # the HPARAMS tab's session


def test_cli_learn_train_resume_extends_a_finished_run(tmp_path, capsys):
    from engine.cli import main

    run = str(tmp_path / "r")
    base = ["learn", "train", "--model", "mlp", "--trajectories", "2", "--hidden", "8"]
    assert main(base + ["--epochs", "2", "--out", run, "--json"]) == 0
    capsys.readouterr()
    assert main(["learn", "train", "--resume", run, "--json"]) == 2
    assert "--epochs N above 2" in capsys.readouterr().err
    assert main(["learn", "train", "--resume", run, "--epochs", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["checkpoint"] == run and [r["epoch"] for r in read_metrics(run)] == [1, 2, 3]
    _, meta = load_model(run)
    assert meta["epoch"] == 3 and Run.open(run).config["train"]["epochs"] == 3
    assert main(["learn", "train", "--resume", str(tmp_path / "nothing")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_cli_learn_train_tensorboard_flag(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from engine.cli import main

    assert main(["learn", "train", "--model", "mlp", "--trajectories", "2", "--hidden", "8", "--epochs", "2",
                 "--out", str(tmp_path / "r"), "--tensorboard", str(tmp_path / "tb"), "--json"]) == 0
    acc = EventAccumulator(str(tmp_path / "tb" / "r"))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2]
