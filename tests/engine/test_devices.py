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
