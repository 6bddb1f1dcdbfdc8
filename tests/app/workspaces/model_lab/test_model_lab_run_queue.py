"""The Model lab's run queue without a widget (app/workspaces/model_lab/run_queue.py): two queued
runs train one after the other, the ETA follows the pace so far, a queued run and a running one
are cancelled. Jobs run at once in this thread (tests/app/state_runner.py); a fake clock."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.run_queue import Run, RunQueue, eta_seconds
from engine.data import DatasetConfig, generate_dataset
from tests.app.state_runner import SyncRunner

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def data():
    return generate_dataset(DatasetConfig(train_trajectories=2, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=10, seed=3))


class Clock:
    """Each reading is 2 s after the previous one."""

    def __init__(self):
        self.now = 100.0
        self.readings: list[float] = []

    def __call__(self) -> float:
        self.now += 2.0
        self.readings.append(self.now)
        return self.now


def _queue(data, runner, tmp_path, parallel=1):
    clock = Clock()
    q = RunQueue(runner.submit, tmp_path / "models", parallel=parallel, clock=clock)
    q.dataset, q.source = data, {"kind": "generated", "config": data.config.to_dict()}
    tc = lab_jobs.with_changes(lab_jobs.default_train_config(), trajectories=2, epochs=3, hidden=8)
    for i, name in enumerate(("first", "second")):
        q.add(Run(key=f"run{i + 1}", name=name, model_type="mlp", train_config=tc, spec=None, index=i))
    log = []
    for event in ("changed", "curve", "started", "finished", "error"):
        getattr(q.events, event).connect(lambda *a, event=event: log.append((event, a)))
    return q, clock, log


def test_the_queue_module_imports_no_qt():
    code = ("import sys, app.workspaces.model_lab.run_queue; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_two_queued_runs_train_in_order_with_an_eta(data, tmp_path):
    runner = SyncRunner()
    q, clock, log = _queue(data, runner, tmp_path)
    seen = []                   # (run, its fraction, its eta, the other run's state) at each change

    def watch(run):
        other = q.runs["run2" if run.key == "run1" else "run1"]
        seen.append((run.key, run.state, run.fraction, run.eta, other.state, clock.now, run.started))
    q.events.changed.connect(watch)
    q.train(["run1", "run2"])
    assert runner.names == ["train first", "train second"]
    assert [a[0].key for e, a in log if e == "started"] == ["run1", "run2"]
    assert [a[0].key for e, a in log if e == "finished"] == ["run1", "run2"]
    # while the first trains, the second waits in the queue (one slot)
    first = [s for s in seen if s[0] == "run1" and s[1] == "running"]
    assert first and all(s[4] == "queued" for s in first)
    # the ETA: the time so far (fake clock, 2 s a reading) times the part left over the part done
    with_eta = [s for s in first if s[2] > 0]
    assert with_eta
    for _key, _state, fraction, eta, _other, now, started in with_eta:
        assert eta == pytest.approx((now - started) * (1 - fraction) / fraction)
    for run in q.runs.values():
        assert run.state == "finished" and run.fraction == 1.0 and run.eta == 0.0
        assert len(run.losses) == 3 and [h["epoch"] for h in run.history] == [1, 2, 3]
        assert run.row["model"] == run.name and run.model is not None
    assert not q.busy and q.queue == []
    assert eta_seconds(10.0, 0.25) == pytest.approx(30.0) and eta_seconds(1.0, 0.0) is None


def test_cancel_a_queued_run_and_a_running_one(data, tmp_path):
    runner = SyncRunner(cancel_after_progress=2)      # the running job is asked to stop
    q, _clock, log = _queue(data, runner, tmp_path)

    def cancel_second(run):
        if run.key == "run1" and run.state == "running" and "run2" in q.queue:
            q.cancel(["run2"])                         # still queued: it never starts
    q.events.changed.connect(cancel_second)
    q.train(["run1", "run2"])
    assert q.runs["run1"].state == "cancelled" and q.runs["run2"].state == "cancelled"
    assert runner.names == ["train first"]
    assert not [e for e, _ in log if e in ("finished", "error")]
    assert not q.busy
    with pytest.raises(ValueError, match="no data"):
        RunQueue(runner.submit).train(["run1"])


def test_parallel_slots_start_the_queue_as_they_open(data, tmp_path):
    started = []

    class Deferred:                                    # a runner that holds jobs until told
        def submit(self, job, *, name, **callbacks):
            started.append(name)
            return type("H", (), {"is_running": True, "cancel": lambda self: None})()

    q, _clock, _log = _queue(data, Deferred(), tmp_path, parallel=1)
    q.train(["run1", "run2"])
    assert started == ["train first"] and q.queue == ["run2"] and q.busy
    q.parallel = 2                                     # a second slot: the queued run starts
    assert started == ["train first", "train second"] and q.queue == []


def test_a_robot_comparisons_trained_models_are_listed_at_the_next_start(tmp_path):
    """A comparison writes its models under <lab folder>/robot_compare_<time>/runs/<model> (the engine's
    run folders); the next session's queue lists them by model and comparison, loads them, and a
    model removed from the table is not listed again."""
    from engine.paths import resources_dir
    from engine.training.compare import LogCompareConfig, compare_on_log

    lab = tmp_path / "models"
    folder = lab / "robot_compare_20260101_120000"
    logs = resources_dir() / "logs"
    rows = compare_on_log(logs / "cartpole.csv", logs / "cartpole.mapping.json", "mlp,node-rk4", epochs=1,
                          config=LogCompareConfig(hidden=8, horizon=10), runs_dir=folder / "runs")
    assert [r["model"] for r in rows] == ["mlp", "node-rk4"] and not any(r.get("error") for r in rows)
    q = RunQueue(lambda *a, **k: None, lab)                     # a new session: nothing in its table
    found = q.saved_models()
    assert found == [folder / "runs" / "mlp" / "model.json", folder / "runs" / "node-rk4" / "model.json"]
    assert [q.saved_name(p) for p in found] == ["mlp (robot_compare_20260101_120000)",
                                                "node-rk4 (robot_compare_20260101_120000)"]
    model, meta = lab_jobs.load_trained(found[1])
    assert model.name == "node-rk4" and meta["metrics"]["model"] == "node-rk4"
    # removed from the table: marked, not listed again; a run folder of the lab's own is still named as before
    run = Run(key="r", name="mlp", model_type="mlp", train_config=None, spec=None, run_dir=str(found[0].parent))
    q.forget(run)
    assert q.saved_models() == [found[1]]
    assert q.saved_name(lab / "20260101-120000-mlp" / "model.json") is None
