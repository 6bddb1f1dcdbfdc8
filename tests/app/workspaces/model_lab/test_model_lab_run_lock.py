"""A run folder another run is writing into (engine.runs.RunLock, ``.run.lock``): the Model lab
says so plainly, stays up, and loses nothing (issue 32). The other run is a lock held here, as a
second process or a command's run holds it (an OS file lock works between two holders of one
process too)."""

from __future__ import annotations

import pytest
import torch

from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.run_queue import Run, RunQueue
from engine.data import DatasetConfig, generate_dataset
from engine.runs import RunLock
from tests.app.state_runner import SyncRunner

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def data():
    return generate_dataset(DatasetConfig(train_trajectories=2, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=10, seed=3))


def _queue(data, tmp_path):
    q = RunQueue(SyncRunner().submit, tmp_path / "models", parallel=1)
    q.dataset, q.source = data, {"kind": "generated", "config": data.config.to_dict()}
    tc = lab_jobs.with_changes(lab_jobs.default_train_config(), trajectories=2, epochs=2, hidden=8)
    for i, name in enumerate(("first", "second")):
        q.add(Run(key=f"run{i + 1}", name=name, model_type="mlp", train_config=tc, spec=None, index=i))
    errors = []
    q.events.error.connect(lambda title, message: errors.append((title, message)))
    return q, errors


def test_resuming_into_a_busy_folder_keeps_the_run_and_says_why(data, tmp_path):
    q, errors = _queue(data, tmp_path)
    q.train(["run1"])
    run = q.runs["run1"]
    assert run.state == "finished" and run.model is not None and len(run.losses) == 2
    before = (run.model, list(run.losses), dict(run.row), run.model_path, run.train_config.epochs)
    assert lab_jobs.folder_in_use(run.run_dir) is None
    with RunLock(run.run_dir):                           # another run writes there now
        busy = lab_jobs.folder_in_use(run.run_dir)
        assert busy is not None and "another run is writing into this folder" in busy
        q.resume(["run1", "run2"], epochs=4)             # run2 has no run folder: refused as before
    assert run.state == "finished" and run.message == "was not started: its folder is in use by another run"
    assert (run.model, run.losses, run.row, run.model_path, run.train_config.epochs) == before
    assert [t for t, _ in errors] == ["Resume second", "Train first"]
    message = errors[1][1]
    assert str(run.run_dir) in message and "another run is writing into this folder" in message
    assert message.endswith("first was not started: its folder is in use by another run. "
                            "Its earlier results and model are kept.")
    assert not q.busy and q.queue == []
    q.resume(["run1"], epochs=4)                         # the folder is free again: it extends
    assert run.state == "finished" and run.message == "" and len(run.losses) == 4


def test_a_new_run_into_a_busy_folder_waits_the_next_one_trains(data, tmp_path):
    q, errors = _queue(data, tmp_path)
    first = q.runs["run1"]
    first.run_dir = str(tmp_path / "shared-folder")
    with RunLock(first.run_dir):
        q.train(["run1", "run2"])
    assert first.state == "ready" and first.model is None and first.losses == []
    assert first.message.startswith("was not started")
    assert [t for t, _ in errors] == ["Train first"] and "first was not started" in errors[0][1]
    assert "earlier results" not in errors[0][1]                       # it had none
    assert q.runs["run2"].state == "finished"                          # the queue went on


def test_the_model_lab_window_says_the_folder_is_busy_and_stays_up(ctx, qtbot):
    from PySide6.QtCore import Qt

    from app.workspaces.model_lab.page import ModelLabPage

    page = ModelLabPage(ctx)
    qtbot.addWidget(page)
    page.resize(1366, 768)
    page.show()
    qtbot.waitExposed(page)
    panel = page.data_panel
    for name, value in (("train_trajectories", 2), ("test_trajectories", 2), ("long_term_trajectories", 2),
                        ("long_term_steps", 10)):
        panel.dataset_form.editor(name).setValue(value)
    qtbot.mouseClick(panel.generate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.dataset is not None, timeout=30_000)
    runs = page.runs_panel
    runs.type_combo.setCurrentText("mlp")
    runs.train_form.editor("epochs").setValue(2)
    run = runs.add_run()
    runs.train([run.key])
    qtbot.waitUntil(lambda: run.state == "finished", timeout=60_000)
    assert not ctx.errors, ctx.errors
    rows = page.compare_panel.table.rowCount()
    runs.train_form.editor("epochs").setValue(4)
    runs.table.selectRow(0)
    with RunLock(run.run_dir):
        qtbot.mouseClick(runs.resume_button, Qt.MouseButton.LeftButton)
    title, message = ctx.errors[-1]
    assert title == f"Train {run.name}" and "another run is writing into this folder" in message
    assert "Its earlier results and model are kept." in message
    assert run.state == "finished" and run.model is not None and len(run.losses) == 2
    state_cell = runs.table.item(0, [runs.table.horizontalHeaderItem(c).text()
                                     for c in range(runs.table.columnCount())].index("state"))
    assert state_cell.text().startswith("finished: was not started")
    assert page.isVisible() and page.compare_panel.table.rowCount() == rows
    assert runs.resume_button.isEnabled() and runs.train_button.isEnabled()
    page.shutdown()
