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
    before, threads = pref.preferred_device(), pref.preferred_threads()
    yield
    pref.set_preferred_device(before)
    pref.set_preferred_threads(threads)


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
    from app.workspaces.model_lab import lab_jobs
    from engine.data import DatasetConfig, generate_dataset
    from engine.training import compare
    from engine.training.config import TrainConfig

    ds = generate_dataset(DatasetConfig(system="pendulum", train_trajectories=2, test_trajectories=2,
                                        long_term_trajectories=1, long_term_steps=10))
    seen = []
    monkeypatch.setattr(
        compare, "train_and_evaluate", lambda model_type, dataset, cfg, *a, **k: seen.append(cfg.device)
    )
    pref.set_preferred_device("auto")
    lab_jobs.train_job("node-rk4", ds, TrainConfig(model="node-rk4", trajectories=2, epochs=1), None)(None)
    assert seen == ["auto"]


def test_the_view_menu_offers_the_devices_and_remembers_the_choice(make_window, monkeypatch):
    from engine import devices

    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    monkeypatch.setattr(pref, "cuda_available", lambda: False)
    window = make_window()
    actions = {
        a.objectName(): a for a in window.device_menu.actions() if a.objectName().startswith("device_")
    }
    assert [*actions] == ["device_cpu", "device_auto", "device_cuda"]
    assert actions["device_cpu"].isChecked() and not actions["device_cuda"].isEnabled()
    assert "No CUDA GPU" in actions["device_cuda"].toolTip()
    actions["device_auto"].trigger()
    assert pref.preferred_device() == "auto" and window.settings.value(pref.SETTINGS_KEY) == "auto"
    window.settings.sync()
    again = make_window()   # the same settings file: the choice is back, and is the jobs' device
    assert {a.objectName(): a for a in again.device_menu.actions()}["device_auto"].isChecked()
    assert pref.preferred_device() == "auto"


# -- threads per job (issue 33) ------------------------------------------------------------------

def test_the_threads_choice_is_stored_and_becomes_the_jobs_threads():
    from engine.threads import ThreadsError

    assert [v for v, _ in pref.thread_choices(cores=2)] == ["auto", 1, 2]
    settings = Settings()
    assert pref.load_threads_preference(settings) == "auto"      # nothing stored yet
    assert pref.save_threads_preference(settings, "2") == 2
    assert settings.values[pref.THREADS_KEY] == "2" and pref.preferred_threads() == 2
    assert pref.load_threads_preference(settings) == 2
    with pytest.raises(ThreadsError, match="^Threads preference 0: give a whole number"):
        pref.save_threads_preference(settings, 0)
    assert settings.values[pref.THREADS_KEY] == "2" and pref.preferred_threads() == 2   # unchanged
    assert pref.load_threads_preference(Settings({pref.THREADS_KEY: "many"})) == "auto"


def test_every_job_the_app_runs_gets_the_preferred_threads_on_its_worker_thread(qtbot, ctx):
    import torch

    ui_threads = torch.get_num_threads()
    seen = []
    for i, choice in enumerate((3, "auto", 1)):
        pref.set_preferred_threads(choice)   # read when the job starts, so one job at a time
        ctx.jobs.submit(lambda job_ctx: torch.get_num_threads(), name="threads", on_result=seen.append)
        qtbot.waitUntil(lambda i=i: len(seen) == i + 1, timeout=20000)
    assert seen == [3, 1, 1]
    assert torch.get_num_threads() == ui_threads      # the UI thread's own count is not touched


def test_the_menu_offers_the_threads_and_remembers_the_choice(make_window):
    window = make_window()
    actions = {
        a.objectName(): a for a in window.device_menu.actions() if a.objectName().startswith("threads_")
    }
    assert [*actions][:2] == ["threads_auto", "threads_1"] and actions["threads_auto"].isChecked()
    actions["threads_1"].trigger()
    assert pref.preferred_threads() == 1 and window.settings.value(pref.THREADS_KEY) == "1"
    window.settings.sync()
    pref.set_preferred_threads("auto")
    again = make_window()   # the same settings file: the choice is back, and is the jobs' threads
    assert {a.objectName(): a for a in again.device_menu.actions()}["threads_1"].isChecked()
    assert pref.preferred_threads() == 1
