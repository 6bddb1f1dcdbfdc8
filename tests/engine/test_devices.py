"""engine/devices.py: --device cpu|cuda|auto resolved against what torch can use here."""

from __future__ import annotations

import pytest
import torch

from engine import devices
from engine.devices import DeviceError, resolve_device


def test_cpu_and_auto_resolve(monkeypatch):
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu") and resolve_device(None) == torch.device("cpu")
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")


def test_cuda_where_there_is_none_is_a_clear_user_error(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    with pytest.raises(DeviceError) as info:
        resolve_device("cuda")
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "--device cuda" in message and "no usable CUDA GPU" in message and "--device cpu" in message


def test_a_gpu_index_beyond_the_gpus_there_are_is_refused(monkeypatch):
    monkeypatch.setattr(devices, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(DeviceError, match="only 1 CUDA device"):
        resolve_device("cuda:3")
    assert resolve_device("cuda:0") == torch.device("cuda:0")


@pytest.mark.parametrize("name", ["gpu", "cpu:1", "cuda:x", "", "tpu"])
def test_names_that_are_not_devices_are_refused(name):
    with pytest.raises(DeviceError, match="not one of cpu, cuda"):
        resolve_device(name)


def test_this_machine_agrees_with_torch():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


# -- the engine follows the device it is given (issue 23) ------------------------------------------

def _small_dataset():
    from engine.data import DatasetConfig, generate_dataset

    return generate_dataset(DatasetConfig(system="pendulum", train_trajectories=2, test_trajectories=2,
                                          long_term_trajectories=1, long_term_steps=10))


def test_a_learned_model_is_built_on_the_configs_device(monkeypatch):
    from engine.training import trainer
    from engine.training.config import TrainConfig

    ds = _small_dataset()
    model = trainer.build_for(TrainConfig(model="symo", trajectories=2, hidden=8, device="cpu"), ds)
    params = list(model.parameters())
    assert params and all(
        p.device.type == "cpu" and p.dtype == torch.float32 for p in params
    )  # float32 unless asked
    # the config's name is what is resolved, and the model goes where it says (torch's "meta" device
    # stands in for a GPU here)
    asked = []
    monkeypatch.setattr(trainer, "resolve_device", lambda name: asked.append(name) or torch.device("meta"))
    model = trainer.build_for(TrainConfig(model="symo", trajectories=2, hidden=8, device="cuda:1"), ds)
    assert asked == ["cuda:1"] and all(p.device.type == "meta" for p in model.parameters())


def test_asking_the_engine_for_cuda_where_there_is_none_is_the_clear_error(monkeypatch):
    from engine.car.model import CarMLPConfig
    from engine.car.training import fit_car_model
    from engine.training.config import TrainConfig
    from engine.training.trainer import build_for

    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    with pytest.raises(DeviceError, match="--device cuda: this machine has no usable CUDA GPU"):
        build_for(TrainConfig(model="symo", trajectories=2, hidden=8, device="cuda"), _small_dataset())
    x, y = torch.randn(50, 5), torch.randn(50, 3)
    with pytest.raises(DeviceError, match="no usable CUDA GPU"):
        fit_car_model(x, y, CarMLPConfig(hidden=8, layers=2, epochs=1), device="cuda")
    with pytest.raises(ValueError, match="not one of cpu, cuda"):
        TrainConfig(device="gpu")


def test_the_rigid_body_engine_stays_float64_on_the_device_it_is_loaded_on():
    from engine.robots.library import load_robot

    model = load_robot("panda", device=resolve_device("auto"))
    q = torch.zeros(3, model.dof, dtype=torch.float64, device=model.device)
    M = model.mass_matrix(q)
    assert model.dtype == torch.float64 and M.dtype == torch.float64 and M.device == model.device


def test_car_training_runs_where_it_is_told_and_hands_back_a_cpu_model(monkeypatch):
    from engine.car import training
    from engine.car.model import CarMLPConfig

    asked = []
    real = training.resolve_device
    monkeypatch.setattr(training, "resolve_device", lambda name: asked.append(name) or real(name))
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(200, 5, generator=gen), torch.randn(200, 3, generator=gen)
    model, hist = training.fit_car_model(x, y, CarMLPConfig(hidden=8, layers=2, epochs=2), device="auto")
    assert asked == ["auto"] and all(p.device.type == "cpu" for p in model.parameters())
    assert len(hist["train_loss"]) == 2


def test_an_eigenmode_learns_on_the_designs_device_and_comes_back_on_the_cpu_in_float64(monkeypatch):
    from engine.eigenmodes import train
    from engine.eigenmodes.config import DesignConfig

    asked = []
    real = train.resolve_device
    monkeypatch.setattr(train, "resolve_device", lambda name: asked.append(name) or real(name))
    design = DesignConfig()
    design.train.epochs, design.train.device = 1, "auto"
    mode = train.learn_mode(design)
    assert asked == ["auto"]
    assert all(p.device.type == "cpu" and p.dtype == torch.float64 for p in mode.potential.parameters())
