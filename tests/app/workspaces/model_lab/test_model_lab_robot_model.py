"""The Model lab and the learnable robot model (robot-rk4 / robot-midpoint): listed, its spec fields
editable in the Models form, trained and evaluated through the workspace's engine bridge."""

from __future__ import annotations

import math

import pytest
import torch

torch.set_num_threads(1)


def test_robot_model_is_listed_and_its_spec_fields_are_editable(qtbot):
    from app.widgets.forms import DataclassForm, FormError
    from app.workspaces.model_lab import lab_jobs
    from engine.models import ModelSpec

    assert {"robot-rk4", "robot-midpoint"} <= set(lab_jobs.MODEL_TYPES())
    form = DataclassForm(
        ModelSpec(),
        include=lab_jobs.SPEC_FIELDS,
        labels=lab_jobs.SPEC_LABELS,
        tooltips=lab_jobs.SPEC_TOOLTIPS,
    )
    qtbot.addWidget(form)
    form.editor("robot_learn").setText('["mass", "damping"]')
    form.editor("robot_perturb").setValue(0.2)
    spec = form.value()
    assert spec.robot_learn == ("mass", "damping") and spec.robot_perturb == 0.2
    form.editor("robot_learn").setText('["mass", "volume"]')
    with pytest.raises(FormError) as err:
        form.value()
    assert err.value.field == "robot_learn"


def test_bridge_trains_and_evaluates_the_robot_model_on_generated_data():
    from app.workspaces.model_lab import lab_jobs
    from engine.data import DatasetConfig, generate_dataset
    from engine.jobs import NullJobContext
    from engine.models import ModelSpec

    ds = generate_dataset(DatasetConfig(system="cartpole", train_trajectories=2, test_trajectories=2,
                                              long_term_trajectories=2, long_term_steps=10))
    cfg = lab_jobs.with_changes(lab_jobs.default_train_config(ds, "robot-midpoint"), trajectories=2, epochs=2)
    spec = ModelSpec(robot_perturb=0.0)
    out = lab_jobs.train_job("robot-midpoint", ds, cfg, spec)(NullJobContext())
    assert out["model"].spec.system == "cartpole"
    assert out["row"]["inertia_mse"] < 1e-3   # started at the URDF values (a 0.5 perturbation: ~5e-2)
    assert all(math.isfinite(out["row"][k]) for k in ("test_mse", "integration_mse", "energy_mse"))
    assert out["curves"]["inertia_pred"].shape == out["curves"]["inertia_true"].shape
    # the learned potential of the robot model (its own V, no Lagrangian networks) is plotted too:
    # started at the URDF values and trained 2 epochs, it is the analytic one to within the
    # pole's small drift (the plot shifts it to the true one's mean; V spans about +-0.5 J)
    assert out["curves"]["potential_pred"] == pytest.approx(out["curves"]["potential_true"], abs=0.01)


def test_acrobot_data_robot_and_symo_runs_trained_and_compared_in_the_window(ctx, qtbot, tmp_path):
    """Clicks in a real window: generate acrobot data, train a robot-rk4 and a SyMo run, compare."""
    from PySide6.QtCore import Qt

    from app.workspaces.model_lab.page import ModelLabPage

    page = ModelLabPage(ctx)
    qtbot.addWidget(page)
    page.resize(1500, 950)
    page.show()
    qtbot.waitExposed(page)
    form = page.data_panel.dataset_form
    form.editor("system").setCurrentText("acrobot")
    for name, value in (("train_trajectories", 2), ("test_trajectories", 2), ("long_term_trajectories", 2),
                        ("long_term_steps", 20)):
        form.editor(name).setValue(value)
    qtbot.mouseClick(page.data_panel.generate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.data_panel.dataset is not None, timeout=30000)
    ds = page.data_panel.dataset
    assert ds.system.name == "acrobot" and ds.train_x.shape == (2, 34, 4) and ds.h == pytest.approx(0.05)
    runs = page.runs_panel
    runs.train_form.editor("epochs").setValue(3)
    runs.train_form.editor("hidden").auto.setChecked(False)
    runs.train_form.editor("hidden").spin.setValue(16)
    for model_type in ("robot-rk4", "symo"):
        runs.type_combo.setCurrentText(model_type)
        runs.add_run()
    qtbot.mouseClick(runs.train_all_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: all(r.state == "finished" for r in runs.runs.values()), timeout=90000)
    assert not ctx.errors, ctx.errors
    robot = next(r for r in runs.runs.values() if r.model_type == "robot-rk4")
    assert robot.model.spec.system == "acrobot" and robot.model.spec.robot_perturb == 0.5
    # the run learned the URDF's links from a perturbed start: a finite inertia error, not zero
    assert 0 < robot.row["inertia_mse"] < 10
    table = page.compare_panel.table
    assert table.rowCount() == 2
    headers = [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())]
    for row in range(2):
        for header in ("integration MSE", "energy MSE", "inertia MSE"):
            assert math.isfinite(float(table.item(row, headers.index(header)).text()))
    page.grab().save(str(tmp_path / "model_lab_acrobot.png"))
