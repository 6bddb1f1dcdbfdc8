"""Work is not lost without asking (issue 32, item 3).

The Model lab keeps its runs in the user's data folder ($LAGRANGE_RUNS_DIR here, a fresh folder per
test) and lists them again in a new page with their loss curves (read back from metrics.csv) and
their models; a quit that would lose results asks Save / Discard / Cancel, listing them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.widgets.plots import curve_data
from engine.runs import read_metrics


def _page(ctx, qtbot):
    from app.workspaces.model_lab.page import ModelLabPage

    page = ModelLabPage(ctx)
    qtbot.addWidget(page)
    return page


def _train_one(page, qtbot):
    """Generate a small pendulum data set and train one model for two epochs; returns the run."""
    form = page.data_panel.dataset_form
    form.editor("train_trajectories").setValue(4)
    form.editor("test_trajectories").setValue(2)
    form.editor("long_term_trajectories").setValue(1)
    form.editor("long_term_steps").setValue(20)
    qtbot.mouseClick(page.data_panel.generate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.data_panel.dataset is not None, timeout=30000)
    runs = page.runs_panel
    runs.train_form.editor("epochs").setValue(2)
    runs.train_form.editor("hidden").auto.setChecked(False)
    runs.train_form.editor("hidden").spin.setValue(8)
    run = runs.add_run("node-rk4")
    runs.train([run.key])
    qtbot.waitUntil(lambda: run.state == "finished", timeout=60000)
    return run


def test_runs_are_kept_in_the_user_data_folder_and_listed_again(ctx, qtbot, tmp_path, monkeypatch):
    start = tmp_path / "started-here"
    start.mkdir()
    monkeypatch.chdir(start)                          # no run may land in the folder the app started from
    page = _page(ctx, qtbot)
    assert not page.runs_panel.runs                   # a fresh data folder: nothing listed
    run = _train_one(page, qtbot)
    from app.workspaces.model_lab import page as lab_page

    assert Path(run.run_dir).parent == lab_page.lab_folder()
    assert Path(run.model_path) == Path(run.run_dir) / "model.json"
    assert list(start.iterdir()) == []
    assert page.unsaved_work() == []                  # its model is on disk: a quit loses nothing
    losses = [r["loss"] for r in read_metrics(run.run_dir)]
    assert len(losses) == 2 and all(np.isfinite(losses))

    again = _page(ctx, qtbot)                         # "after a restart"
    listed = list(again.runs_panel.runs.values())
    assert [r.run_dir for r in listed] == [run.run_dir]
    back = listed[0]
    assert back.model is not None and back.model.name == "node-rk4"
    _, ys = curve_data(again.runs_panel.loss_plot.curves[back.key])
    assert np.allclose(ys, losses)                    # its curve, read back from metrics.csv
    assert not again.state.is_empty                   # listed runs count as something to compare

    again.runs_panel.remove([back.key])               # the Remove button: not listed at the next start
    assert Path(run.run_dir, "model.json").is_file()  # nothing deleted
    assert not _page(ctx, qtbot).runs_panel.runs


def test_the_lab_folder_is_in_the_user_data_folder(monkeypatch, tmp_path):
    from app.workspaces.model_lab import page as lab_page

    monkeypatch.undo()                                # the conftest's per-test folder off
    monkeypatch.setenv("LAGRANGE_RUNS_DIR", str(tmp_path))
    assert lab_page.lab_folder() == tmp_path / "model_lab"
    monkeypatch.delenv("LAGRANGE_RUNS_DIR")
    import platformdirs

    assert lab_page.lab_folder().is_relative_to(
        platformdirs.user_data_dir("lagrange-studio", "Lagrange Studio")
    )


def test_models_on_no_disk_are_unsaved_and_save_keeps_them(ctx, qtbot):
    page = _page(ctx, qtbot)
    trained = _train_one(page, qtbot)
    runs = page.runs_panel
    copy = runs.add_run("node-rk4", trained.train_config, name="node example")   # as the example adds them
    copy.model, copy.state, copy.losses, copy.row = trained.model, "finished", [0.5, 0.25], dict(trained.row)
    assert page.unsaved_work() == ["Model lab: the trained model node example is not saved"]
    assert page.save_unsaved_work()
    assert page.unsaved_work() == []
    assert Path(copy.model_path).is_file()
    names = sorted(r.name for r in _page(ctx, qtbot).runs_panel.runs.values())
    assert names == sorted([trained.name, "node example"])


def test_eigenmode_state_reports_an_unsaved_mode(tmp_path):
    from app.workspaces.eigenmode.state import EigenmodeState

    state = EigenmodeState()
    assert state.unsaved_work() == []
    state.mode = object()                              # a learned mode (not saved by the user)
    assert state.unsaved_work() == ["Eigenmode: the designed mode is not saved"]
    state.mode_saved_to = tmp_path
    assert state.unsaved_work() == []


@pytest.mark.parametrize("answer", ["cancel", "discard", "save"])
def test_quit_asks_before_losing_trained_models(make_window, qtbot, monkeypatch, answer):
    import app.main_window

    window = make_window({"workspace": "model_lab"})
    page = window.show_workspace("model_lab")
    trained = _train_one(page, qtbot)
    asked = []
    monkeypatch.setattr(app.main_window, "ask_unsaved", lambda parent, lines: asked.append(lines) or answer)
    assert window.close()                              # on disk: no question
    assert asked == []

    window = make_window({"workspace": "model_lab"})
    page = window.show_workspace("model_lab")
    [listed] = page.runs_panel.runs.values()
    extra = page.runs_panel.add_run("node-rk4", listed.train_config, name="node kept in memory")
    extra.model, extra.state, extra.row = listed.model, "finished", dict(trained.row)
    closed = window.close()
    assert asked == [["Model lab: the trained model node kept in memory is not saved"]]
    assert closed == (answer != "cancel")
    assert window.isVisible() == (answer == "cancel")
    assert (extra.model_path is not None) == (answer == "save")
    if answer == "cancel":
        assert "Quit cancelled" in window.statusBar().currentMessage()
        window.ask_before_quit = False


def test_a_project_folder_for_runs_is_remembered_and_listed(ctx, qtbot, tmp_path):
    from app.workspaces.model_lab.page import RUNS_FOLDER_KEY

    page = _page(ctx, qtbot)
    trained = _train_one(page, qtbot)                 # in the default folder
    project = tmp_path / "project" / "runs"
    assert page.set_runs_folder(project) == []
    assert not page.runs_panel.runs                   # the project folder is empty
    assert ctx.settings.value(RUNS_FOLDER_KEY) == str(project)
    second = page.runs_panel.add_run("node-rk4", trained.train_config, name="in the project")
    page.runs_panel.train([second.key])
    qtbot.waitUntil(lambda: second.state == "finished", timeout=60000)
    assert Path(second.run_dir).parent == project
    again = _page(ctx, qtbot)                         # the next start: the chosen folder, its run
    assert [r.run_dir for r in again.runs_panel.runs.values()] == [second.run_dir]
    assert again.runs_panel.model_folder == project
