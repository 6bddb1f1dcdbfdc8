"""Car planner: train a model from the Model tab (settings, live loss), save / load models,
load a real driving log through the model lab's loader, and compare ReLU with GELU plans."""

import gc
import json
import math
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt

from app.workspaces.car.page import CarPlannerPage
from engine.systems.rc_car import CarParams

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE_LOG = ROOT / "resources" / "logs" / "rc_car_mocap.csv"


@pytest.fixture
def page(car_page):
    return car_page

def _type(qtbot, widget, text):
    """Select a spin box's (or line edit's) text, type ``text`` and press Enter."""
    edit = widget.lineEdit() if hasattr(widget, "lineEdit") else widget
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def _choose(combo, data):
    idx = combo.findData(data)
    assert idx >= 0, data
    combo.setCurrentIndex(idx)


def _set_tiny_network(qtbot, panel, activation="relu", epochs=3):
    form = panel.net_form
    _choose(form.editor("activation"), activation)
    _type(qtbot, form.editor("hidden"), "8")
    _type(qtbot, form.editor("layers"), "2")
    _choose(form.editor("loss"), "l1")
    _type(qtbot, form.editor("epochs"), str(epochs))
    _type(qtbot, form.editor("seed"), "3")
    _type(qtbot, panel.driving_form.editor("minutes"), "0.2")


def _wait_trained(qtbot, panel, timeout=120000):
    qtbot.waitUntil(lambda: not panel.busy and panel.last_training is not None, timeout=timeout)


def test_train_with_settings_live_loss_and_the_model_appears(page, qtbot, ctx, tmp_path):
    qtbot.mouseClick(
        page.plan_panel.train_button, Qt.MouseButton.LeftButton
    )  # "Train model…" opens the Model tab
    panel = page.model_panel
    assert page.tabs.currentWidget() is panel
    _set_tiny_network(qtbot, panel)
    _type(qtbot, panel.name_edit, "tiny relu")
    cfg = panel.train_config()
    assert (cfg.model.activation, cfg.model.hidden, cfg.model.layers, cfg.model.loss, cfg.model.epochs,
            cfg.model.seed, cfg.driving.minutes) == ("relu", 8, 2, "l1", 3, 3, 0.2)
    qtbot.mouseClick(panel.train_button, Qt.MouseButton.LeftButton)
    assert not panel.train_button.isEnabled() and panel.cancel_button.isEnabled()
    _wait_trained(qtbot, panel)
    assert ctx.errors == []
    assert panel.loss_plot.points("train") == 3 and panel.loss_plot.points("val") == 3
    assert "Trained tiny_relu" in panel.train_label.text()
    folder = tmp_path / "models" / "tiny_relu"
    assert (folder / "car_model.safetensors").exists()
    meta = json.loads((folder / "car_model.json").read_text())
    assert meta["config"]["activation"] == "relu" and meta["config"]["hidden"] == 8
    # a run folder, as `car train` writes: resumable, with its metrics over time
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "done" and (folder / "metrics.csv").read_text().count("\n") == 1 + 3
    # the trained model is offered and chosen under "Plan on"
    assert page.plan_panel.model_combo.currentData() == str(folder)
    assert "ReLU 2×8" in page.plan_panel.model_combo.currentText()
    assert page.plan_panel.compare_combo.findData(str(folder)) >= 0

    # save it elsewhere, then load that copy back (safetensors + JSON)
    copy = tmp_path / "exported" / "my_model"
    assert panel.save_model(page.current_model_folder(), str(copy))
    assert (copy / "car_model.safetensors").exists() and (copy / "car_model.json").exists()
    assert page.plan_panel.model_combo.currentData() == str(copy)
    # a broken folder gives an error naming it and changes nothing
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "car_model.json").write_text("{not json")
    count = page.plan_panel.model_combo.count()
    assert not panel.load_model(str(broken))
    assert ctx.errors and str(broken) in ctx.errors[-1][1]
    assert page.plan_panel.model_combo.count() == count and page.plan_panel.model_combo.currentData() == str(
        copy
    )
    assert page.isVisible()


def test_load_a_driving_log_then_train_on_it(page, qtbot, ctx, tmp_path):
    panel = page.model_panel
    page.tabs.setCurrentWidget(panel)
    handle = panel.load_log(str(EXAMPLE_LOG))
    assert handle is not None
    qtbot.waitUntil(lambda: panel.log is not None and panel._log_job is None, timeout=60000)
    assert ctx.errors == []
    assert "rc_car_mocap.csv: 7201 rows, 60.0 s" in panel.log_label.text()
    assert panel.source_combo.currentText() == "Log: rc_car_mocap.csv"
    assert panel.log["inputs"].shape == (1198, 5)
    assert len(page.canvas.log_path.xData) == len(panel.log["pose"])

    # a bad file: a clear error naming the file; the loaded log and the app stay
    bad = tmp_path / "bad_log.csv"
    bad.write_text("t,x,y\n0,0,0\n0.1,0,0\n")
    panel.load_log(str(bad))
    qtbot.waitUntil(lambda: panel._log_job is None, timeout=30000)
    assert ctx.errors and str(bad) in ctx.errors[-1][1] and "yaw" in ctx.errors[-1][1]
    assert "Could not load" in panel.log_label.text()
    assert panel.log["path"] == str(EXAMPLE_LOG)
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(bytes(range(256)) * 4)
    panel.load_log(str(garbage))
    qtbot.waitUntil(lambda: panel._log_job is None, timeout=30000)
    assert str(garbage) in ctx.errors[-1][1]

    _set_tiny_network(qtbot, panel, "gelu", epochs=2)
    qtbot.mouseClick(panel.train_button, Qt.MouseButton.LeftButton)
    _wait_trained(qtbot, panel)
    assert len(ctx.errors) == 2
    assert panel.last_training["samples"] == 1198          # trained on the log's pairs
    assert "GELU" in page.plan_panel.model_combo.currentText()


def _make_model(folder, activation):
    from engine.car.data import DrivingConfig, make_dataset
    from engine.car.model import CarMLPConfig, save_car_model
    from engine.car.training import fit_car_model

    data = make_dataset(CarParams(), DrivingConfig(minutes=0.3, segments=6))
    model, _ = fit_car_model(data["inputs"], data["targets"],
                             CarMLPConfig(hidden=16, layers=2, activation=activation, epochs=4))
    save_car_model(folder, model, {"h": CarParams().dt})


def test_compare_relu_and_gelu_plans(qtbot, ctx, tmp_path):
    models = tmp_path / "models"
    _make_model(models / "g", "gelu")
    _make_model(models / "r", "relu")
    ctx.settings.setValue("car/models_dir", str(models))
    gc.collect()
    page = CarPlannerPage(ctx)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    with qtbot.waitExposed(page):
        page.show()
    try:
        assert page.plan_panel.compare_models.isEnabled() and page.plan_panel.compare_models.isChecked()
        page.plan_panel.horizon_spin.setValue(16)
        page.plan_panel.start_speed.setValue(1.0)
        page.plan_panel.opt_form.editor("candidates").setValue(32)
        page.plan_panel.opt_form.editor("max_iterations").setValue(15)
        canvas = page.canvas
        vp = canvas.viewport()
        a, b = canvas.to_pixels(1.2, 0.3), canvas.to_pixels(1.8, 0.5)
        qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=a)
        qtbot.mouseMove(vp, pos=QPoint((a.x() + b.x()) // 2, (a.y() + b.y()) // 2))
        qtbot.mouseMove(vp, pos=b)
        qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=b)
        assert len(page.state.targets) == 1
        qtbot.mouseClick(page.plan_panel.optimise_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: page.state.plan is not None, timeout=240000)
        assert ctx.errors == []
        assert [v.label for v in page.state.plan.variants] == ["GELU", "ReLU"]
        assert len(canvas.nominal.xData) == 17 and len(canvas.compare.xData) == 17
        assert len(canvas.executed.xData) == 17 and len(canvas.compare_executed.xData) == 17
        assert canvas.legend_names() == ["targets", "GELU plan", "GELU executed", "ReLU plan", "ReLU executed",
                                         "car"]
        table = page.plan_panel.compare_table
        assert table.isVisible() and table.rowCount() == 2
        assert [table.item(i, 1).text() for i in range(2)] == ["GELU", "ReLU"]
        for i, v in enumerate(page.state.plan.variants):
            assert float(table.item(i, 4).text()) == pytest.approx(v.executed_position_error, abs=0.006)
            assert math.isfinite(float(table.item(i, 5).text()))
        assert len(page.steer_curves["other model"].xData) == 16
        steer_legend = page.steer_plot.getPlotItem().legend
        assert [label.text for _, label in steer_legend.items] == ["GELU plan", "ReLU plan"]
        # unticked: a single plan on the chosen model, the table goes away
        page.plan_panel.compare_models.setChecked(False)
        qtbot.mouseClick(page.plan_panel.optimise_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: page.state.plan is not None and not page.state.plan.compared, timeout=240000)
        assert not table.isVisible()
        assert page.canvas.legend_names() == ["targets", "plan", "executed on simulator", "car"]
        # the control plots list only the curve drawn: no "other model" without one
        assert [label.text for _, label in steer_legend.items] == ["plan"]
    finally:
        page.shutdown()
