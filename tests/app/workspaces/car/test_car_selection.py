"""Car planner, Model tab: the paper's model selection (activations × losses × seeds, ranked by
TVE on 40 validation trajectories) run from the window: settings, Run / Cancel, the table
(best row bold), the native box plots, and Save selection… (selection.json + selection.png)."""

import json
import math
import os

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton, QTableWidget

from app.workspaces.car.model_panel import format_tve
from engine.car.training import SelectionConfig

TINY = SelectionConfig(activations=("gelu", "relu"), losses=("relative",), seeds=2, epochs=2, minutes=0.5,
                       hidden=16, layers=2)


@pytest.fixture
def page(car_page):
    return car_page


def _type(qtbot, widget, text):
    """Select a spin box's text, type ``text`` and press Enter."""
    edit = widget.lineEdit()
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def _set_selection(qtbot, group, config: SelectionConfig):
    for name in ("seeds", "epochs", "minutes", "hidden", "layers"):
        _type(qtbot, group.form.editor(name), f"{getattr(config, name):g}")
    for names, checks in ((config.activations, group.activation_checks), (config.losses, group.loss_checks)):
        for name, check in checks.items():
            if check.isChecked() != (name in names):
                check.click()


def _run(qtbot, panel, group):
    """Click "Run model selection"; returns (the job's results list, the status texts seen)."""
    qtbot.mouseClick(panel.findChild(QPushButton, "carSelectRun"), Qt.MouseButton.LeftButton)
    handle = group._job
    assert handle is not None
    results, texts = [], []
    handle.finished.connect(results.append)
    handle.progress.connect(lambda update: texts.append(group.status.text()))   # after the panel's slot
    return results, texts


def test_model_selection_runs_from_the_model_tab(page, qtbot, ctx, tmp_path):
    panel = page.model_panel
    page.tabs.setCurrentWidget(panel)
    group = panel.selection
    run = panel.findChild(QPushButton, "carSelectRun")
    cancel = panel.findChild(QPushButton, "carSelectCancel")
    table = panel.findChild(QTableWidget, "carSelectTable")
    plot = panel.findChild(pg.PlotWidget, "carSelectPlot")
    assert group.selection_config() == SelectionConfig()          # the engine's defaults
    _set_selection(qtbot, group, TINY)
    assert group.selection_config() == TINY

    results, texts = _run(qtbot, panel, group)
    assert not run.isEnabled() and cancel.isEnabled() and group.progress.isVisible()
    qtbot.waitUntil(lambda: not group.busy, timeout=120000)
    assert ctx.errors == []
    assert run.isEnabled() and not cancel.isEnabled() and not group.progress.isVisible()
    assert len(results) == 1 and group.result is results[0]
    res = results[0]
    assert any(t.startswith("Run 4/4: relu / relative, seed 1: TVE") for t in texts)
    assert group.status.text().startswith(f"Best: {res['best']['activation']} / relative")

    # the table: one row per (activation, loss), the job's numbers, the best (lowest mean) in bold
    assert table.isVisible() and table.rowCount() == 2
    runs = {
        (a, "relative"): [r["tve"] for r in res["runs"] if r["activation"] == a] for a in ("gelu", "relu")
    }
    best_mean = min(np.mean(v) for v in runs.values())
    for i, row in enumerate(res["table"]):
        tves = runs[(row["activation"], row["loss"])]
        assert [table.item(i, 0).text(), table.item(i, 1).text()] == [row["activation"], row["loss"]]
        assert (row["tve_mean"], row["tve_min"], row["tve_max"]) == pytest.approx(
            (np.mean(tves), np.min(tves), np.max(tves)))
        for j, key in enumerate(("tve_mean", "tve_min", "tve_max"), start=2):
            value = row[key]
            assert math.isfinite(value) and value > 0
            assert table.item(i, j).text() == format_tve(value)
            assert float(table.item(i, j).text()) == pytest.approx(value, rel=5e-3)
            assert table.item(i, j).data(Qt.ItemDataRole.UserRole) == value
        assert table.item(i, 5).text() == "2"
        is_best = row["tve_mean"] == best_mean
        assert all(table.item(i, j).font().bold() == is_best for j in range(table.columnCount()))
    assert sum(table.item(i, 0).font().bold() for i in range(2)) == 1

    # the box plots: boxes Q1..Q3, medians, whiskers to min / max, one dot per run
    assert plot.isVisible()
    items = plot.getPlotItem().items
    assert all(it in items for it in (group.boxes, group.medians, group.whiskers, group.points))
    q1, med, q3 = np.array([np.percentile(runs[(r["activation"], r["loss"])], [25, 50, 75])
                            for r in res["table"]]).T
    assert np.allclose(group.boxes.opts["y0"], q1)
    assert np.allclose(np.asarray(group.boxes.opts["y0"]) + np.asarray(group.boxes.opts["height"]), q3)
    assert np.allclose(group.medians.getData()[1][::2], med)
    _, wy = group.whiskers.getData()
    assert wy.min() == pytest.approx(min(r["tve"] for r in res["runs"]))
    assert wy.max() == pytest.approx(max(r["tve"] for r in res["runs"]))
    px, py = group.points.getData()
    assert len(px) == 4 and sorted(py) == pytest.approx(sorted(r["tve"] for r in res["runs"]))
    assert group.tick_labels == ["gelu / relative", "relu / relative"]
    ticks = plot.getAxis("bottom")._tickLevels[0]  # drawn on two lines: "gelu /", "relative"
    assert [(x, label.replace("\n", " ")) for x, label in ticks] == [
        (0, "gelu / relative"),
        (1, "relu / relative"),
    ]
    assert plot.getAxis("left").labelText == "TVE (L1 end-pose error, m + rad)"
    qtbot.wait(100)                                                 # let the page lay the results out
    image = panel.grab()
    assert not image.isNull()
    if os.environ.get("CAR_SELECTION_SCREENSHOT"):
        image.save(os.environ["CAR_SELECTION_SCREENSHOT"])

    # Save selection…: selection.json (the job's result) and the PNG, nothing else left behind
    out = tmp_path / "selection"
    assert group.save(str(out)) is not None
    assert not group.save_button.isEnabled()
    qtbot.waitUntil(lambda: group._save_job is None, timeout=60000)
    assert ctx.errors == []
    saved = json.loads((out / "selection.json").read_text())
    assert saved["table"] == res["table"] and saved["best"] == res["best"]
    assert [r["tve"] for r in saved["runs"]] == [r["tve"] for r in res["runs"]]
    assert saved["validation_trajectories"] == 40
    assert (out / "selection.png").read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in out.iterdir()) == ["selection.json", "selection.png"]
    assert group.save_button.isEnabled() and "selection.json" in group.status.text()

    # a folder that cannot be made: a clear error, the result stays
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    group.save(str(blocker / "inside"))
    qtbot.waitUntil(lambda: group._save_job is None, timeout=60000)
    assert ctx.errors and ctx.errors[-1][0] == "Save model selection" and "a_file" in ctx.errors[-1][1]
    assert "Could not save" in group.status.text() and group.result is res

    # a longer run, cancelled: the last result, table and plot stay
    _type(qtbot, group.form.editor("epochs"), "400")
    _run(qtbot, panel, group)
    qtbot.waitUntil(lambda: group.status.text().startswith("Run 1/4"), timeout=60000)
    qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not group.busy, timeout=60000)
    assert group.status.text() == "Model selection cancelled."
    assert run.isEnabled() and group.result is res and table.rowCount() == 2
    assert table.item(0, 2).text() == format_tve(res["table"][0]["tve_mean"])
    assert len(ctx.errors) == 1 and page.isVisible()


def test_tve_has_three_significant_digits():
    assert [format_tve(v) for v in (4.8008, 4.81234, 0.031249, 12.04, 0.5)] == [
        "4.80",
        "4.81",
        "0.0312",
        "12.0",
        "0.500",
    ]


def test_model_selection_needs_an_activation_and_a_loss(page, qtbot, ctx):
    group = page.model_panel.selection
    for check in group.loss_checks.values():
        if check.isChecked():
            check.click()
    assert not group.run()
    assert not group.busy and group.run_button.isEnabled()
    assert ctx.errors == [("Model selection", "Model selection: tick at least one loss.")]
    assert group.status.text() == "Model selection: tick at least one loss."
    assert group.save("/nowhere") is None and not group.save_button.isEnabled()    # nothing to save yet
