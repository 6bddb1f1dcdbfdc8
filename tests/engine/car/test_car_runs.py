"""`car train` as a run folder (engine/car/car_runs.py): an interrupted run resumed ends where the
uninterrupted one does (optimiser, schedule and random streams restored); a finished run extends."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from engine.car.car_runs import resume_job, train_job
from engine.car.data import validation_trajectories
from engine.car.model import CarMLPConfig, load_car_model
from engine.car.training import CarTrainConfig
from engine.jobs import JobCancelled, NullJobContext
from engine.runs import RunError
from engine.systems.rc_car import CarParams


@pytest.fixture(scope="module")
def data():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(600, 5, generator=gen)
    y = torch.tanh(x[:, :3] + 0.3 * x[:, 3:4]) + 0.01 * torch.randn(600, 3, generator=gen)
    return {"inputs": x, "targets": y}


@pytest.fixture(scope="module")
def validation():
    return validation_trajectories(CarParams(), 2, 0.5)


def _config(epochs: int) -> CarTrainConfig:
    return CarTrainConfig(model=CarMLPConfig(hidden=8, layers=2, epochs=epochs, batch_size=64, seed=5),
                          validation_count=2, validation_seconds=0.5)


class _StopAfter(NullJobContext):
    """Cancels at the first check after ``epochs`` epochs were reported."""

    def __init__(self, epochs: int):
        super().__init__()
        self.epochs, self.seen = epochs, 0

    def progress(self, fraction, message="", metrics=None):
        if metrics and "train_loss" in metrics:
            self.seen += 1

    def check_cancelled(self):
        if self.seen >= self.epochs:
            raise JobCancelled("stop")


def _metrics(folder):
    with open(folder / "metrics.csv", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _weights(folder):
    model, _ = load_car_model(folder)
    return model.state_dict()


def test_twenty_of_forty_epochs_then_resume_ends_where_forty_in_one_go_does(data, validation, tmp_path):
    one = train_job(_config(40), tmp_path / "one", dataset=data, validation=validation)(NullJobContext())
    with pytest.raises(JobCancelled):
        train_job(_config(40), tmp_path / "two", dataset=data, validation=validation)(_StopAfter(20))
    info = json.loads((tmp_path / "two" / "run.json").read_text(encoding="utf-8"))
    assert info["status"] == "cancelled" and info["epoch"] == 20
    assert not (tmp_path / "two" / "car_model.safetensors").exists()   # no model before the run ends well
    two = resume_job(tmp_path / "two", dataset=data, validation=validation)(NullJobContext())
    assert two["epochs"] == 40 and len(two["history"]["train_loss"]) == 40
    assert two["train_loss"] == one["train_loss"] and two["val_loss"] == one["val_loss"]
    assert two["history"]["train_loss"] == one["history"]["train_loss"]
    w1, w2 = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    assert [r["train_loss"] for r in _metrics(tmp_path / "two")] == [
        r["train_loss"] for r in _metrics(tmp_path / "one")
    ]
    assert json.loads((tmp_path / "two" / "run.json").read_text(encoding="utf-8"))["status"] == "done"


def test_a_finished_run_extends_to_more_epochs_and_keeps_its_first_ones(data, validation, tmp_path):
    first = train_job(_config(20), tmp_path / "run", dataset=data, validation=validation)(NullJobContext())
    before = _metrics(tmp_path / "run")
    with pytest.raises(RunError, match="finished .*--epochs N above 20"):
        resume_job(tmp_path / "run", dataset=data, validation=validation)
    more = resume_job(tmp_path / "run", epochs=30, dataset=data, validation=validation)(NullJobContext())
    after = _metrics(tmp_path / "run")
    assert len(after) == 30 and after[:20] == before and more["epochs"] == 30
    assert more["history"]["train_loss"][:20] == first["history"]["train_loss"]
    assert json.loads((tmp_path / "run" / "car_model.json").read_text(encoding="utf-8"))["epoch"] == 30


def test_resume_refuses_other_data(data, validation, tmp_path):
    train_job(_config(2), tmp_path / "run", dataset=data, validation=validation)(NullJobContext())
    other = {"inputs": data["inputs"] + 1.0, "targets": data["targets"]}
    with pytest.raises(RunError, match="not the data the run trained on"):
        resume_job(tmp_path / "run", epochs=3, dataset=other, validation=validation)(NullJobContext())


def test_cli_car_train_resume(tmp_path, capsys):
    from engine.cli import main

    out = tmp_path / "car"
    args = ["car", "train", "--minutes", "0.1", "--hidden", "8", "--layers", "2", "--json"]
    assert main([*args, "--epochs", "2", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["epochs"] == 2
    assert main(["car", "train", "--resume", str(out), "--json"]) == 2
    assert "--epochs N above 2" in capsys.readouterr().err
    assert main(["car", "train", "--resume", str(out), "--epochs", "3", "--device", "auto", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["epochs"] == 3 and len(_metrics(out)) == 3
    assert main(["car", "train", "--resume", str(out), "--epochs", "4", "--hidden", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--hidden" in err[0] and "own settings" in err[0]
