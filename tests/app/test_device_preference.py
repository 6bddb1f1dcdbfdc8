"""app/device_preference.py: the Device preference (cpu / auto / cuda), without Qt."""

from __future__ import annotations

import pytest

from app import device_preference as pref
from engine.devices import DeviceError


class Settings:
    """The two QSettings methods the preference uses, on a dict."""

    def __init__(self, values=None):
        self.values = dict(values or {})

    def value(self, key, default=None):
        return self.values.get(key, default)

    def setValue(self, key, value):  # noqa: N802 - QSettings' name
        self.values[key] = value


@pytest.fixture(autouse=True)
def _restore_current():
    before = pref.preferred_device()
    yield
    pref.set_preferred_device(before)


def test_cuda_is_greyed_out_with_a_reason_where_there_is_no_gpu():
    off = {c.name: c for c in pref.device_choices(has_cuda=False)}
    assert [*off] == ["cpu", "auto", "cuda"]
    assert off["cpu"].enabled and off["auto"].enabled and not off["cuda"].enabled
    assert off["cuda"].reason.startswith("No CUDA GPU") and "torch" in off["cuda"].reason
    on = {c.name: c for c in pref.device_choices(has_cuda=True)}
    assert on["cuda"].enabled and on["cuda"].reason == ""


def test_the_choice_is_stored_and_becomes_the_jobs_device():
    settings = Settings()
    assert pref.load_preference(settings, has_cuda=False) == "cpu"   # nothing stored yet
    assert pref.save_preference(settings, "AUTO", has_cuda=False) == "auto"
    assert settings.values[pref.SETTINGS_KEY] == "auto" and pref.preferred_device() == "auto"
    assert pref.load_preference(settings, has_cuda=False) == "auto"
    assert pref.save_preference(settings, "cuda", has_cuda=True) == "cuda"
    assert pref.preferred_device() == "cuda" and pref.load_preference(settings, has_cuda=True) == "cuda"


def test_cuda_is_refused_where_there_is_none_and_a_stored_cuda_falls_back_to_cpu():
    settings = Settings({pref.SETTINGS_KEY: "cuda"})
    assert pref.load_preference(settings, has_cuda=False) == "cpu"
    pref.set_preferred_device("cpu")
    with pytest.raises(DeviceError, match="Device preference cuda: .*choose CPU or Auto"):
        pref.save_preference(settings, "cuda", has_cuda=False)
    assert settings.values[pref.SETTINGS_KEY] == "cuda" and pref.preferred_device() == "cpu"  # unchanged
    with pytest.raises(DeviceError, match="not one of cpu, cuda"):
        pref.save_preference(settings, "gpu", has_cuda=True)
    assert pref.load_preference(Settings({pref.SETTINGS_KEY: "tpu"}), has_cuda=True) == "cpu"


def test_the_jobs_that_train_follow_the_preference(monkeypatch):
    from engine.data import DatasetConfig, generate_dataset
    from engine.training import compare

    from app.workspaces.model_lab import lab_jobs
    from engine.training.config import TrainConfig

    ds = generate_dataset(DatasetConfig(system="pendulum", train_trajectories=2, test_trajectories=2,
                                        long_term_trajectories=1, long_term_steps=10))
    seen = []
    monkeypatch.setattr(compare, "train_and_evaluate", lambda model_type, dataset, cfg, *a, **k: seen.append(cfg.device))
    pref.set_preferred_device("auto")
    lab_jobs.train_job("node-rk4", ds, TrainConfig(model="node-rk4", trajectories=2, epochs=1), None)(None)
    assert seen == ["auto"]


def test_the_view_menu_offers_the_devices_and_remembers_the_choice(make_window, monkeypatch):
    from engine import devices

    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    monkeypatch.setattr(pref, "cuda_available", lambda: False)
    window = make_window()
    actions = {a.objectName(): a for a in window.device_menu.actions()}
    assert [*actions] == ["device_cpu", "device_auto", "device_cuda"]
    assert actions["device_cpu"].isChecked() and not actions["device_cuda"].isEnabled()
    assert "No CUDA GPU" in actions["device_cuda"].toolTip()
    actions["device_auto"].trigger()
    assert pref.preferred_device() == "auto" and window.settings.value(pref.SETTINGS_KEY) == "auto"
    window.settings.sync()
    again = make_window()   # the same settings file: the choice is back, and is the jobs' device
    assert {a.objectName(): a for a in again.device_menu.actions()}["device_auto"].isChecked()
    assert pref.preferred_device() == "auto"
