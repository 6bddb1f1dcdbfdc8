"""Data-set paths: messages name the file the user gave; sizes are checked before generation."""

from __future__ import annotations

import pytest

from engine.data.config import DatasetConfig
from engine.data.dataset import DatasetError, generate_dataset, load_dataset, save_dataset
from engine.training.config import TrainConfig
from engine.validation import InputError


def test_missing_or_foreign_file_names_what_the_user_gave(tmp_path):
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / "x.pt")
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'x.pt'}: file not found") and "x.npz" in msg
    (tmp_path / "y.pt").write_bytes(b"\x80\x02")
    with pytest.raises(DatasetError, match=r"y\.pt: not a data set"):
        load_dataset(tmp_path / "y.pt")


def test_missing_sidecar_names_its_path_once(tmp_path):
    path = save_dataset(generate_dataset(DatasetConfig(train_trajectories=2, test_trajectories=2,
                                                       long_term_trajectories=1, long_term_steps=3)),
                        tmp_path / "d.npz")
    path.with_suffix(".json").unlink()
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value).count(str(path.with_suffix(".json"))) == 1


@pytest.mark.parametrize("kwargs, flag", [
    ({"hidden": 100_000_000}, "--hidden"), ({"trajectories": 100_000_000}, "--trajectories"),
    ({"learning_rate": 1000.0}, "--lr"), ({"learning_rate": float("nan")}, "--lr"), ({"seed": -1}, "--seed"),
    ({"hidden": 40_000}, "LAGRANGE_MEMORY_BUDGET"),
])
def test_train_config_refuses_absurd_values_naming_the_flag(kwargs, flag, monkeypatch):
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "2G")
    with pytest.raises(InputError) as info:
        TrainConfig(**kwargs)
    assert flag in str(info.value)
    TrainConfig(hidden=256, trajectories=128)  # the protocol's sizes pass


def test_dataset_config_estimates_memory_before_generating(monkeypatch):
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "1G")
    with pytest.raises(InputError, match=r"a data set of .* would need about .* GiB"):
        DatasetConfig(train_trajectories=10_000_000)
    with pytest.raises(InputError, match="--seed"):
        DatasetConfig(seed=-1)
    DatasetConfig(train_trajectories=128)
