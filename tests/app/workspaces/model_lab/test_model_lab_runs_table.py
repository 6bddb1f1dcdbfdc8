"""The Models panel's runs table, Qt-free (runs_table.py): columns, sorting values, the filter,
the config diff, smoothed curves against epochs / steps / wall time; and Resume in a real panel."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.runs_table import (
    TABLE_COLUMNS,
    cell_text,
    curve_points,
    diff_text,
    format_eta,
    matches,
    parse_sizes,
    row_values,
    sort_key,
)
from engine.models import ModelSpec


@dataclass
class FakeRun:
    name: str
    model_type: str
    train_config: object
    spec: object = None
    state: str = "finished"
    message: str = ""
    fraction: float = 1.0
    eta: float | None = None
    loss: float | None = 0.5
    row: dict | None = None


def _run(name="a", **changes):
    tc = lab_jobs.with_changes(lab_jobs.default_train_config(), **changes)
    return FakeRun(name, "symo", tc, ModelSpec(), row={"train_mse": 1e-3, "test_mse": 2e-3,
                                                          "integration_mse": float("nan")})


def test_columns_hold_hyperparameters_and_final_metrics():
    values = row_values(_run(learning_rate=1e-3, seed=4))
    assert set(values) == set(TABLE_COLUMNS)
    assert values["learning_rate"] == 1e-3 and values["seed"] == 4 and values["test_mse"] == 2e-3
    assert cell_text("integration_mse", values["integration_mse"]) == "diverged"
    assert cell_text("hidden", None) == "—" and cell_text("progress", 100.0) == "100%"


def test_sort_keys_order_numbers_by_value_then_nan_then_empty():
    cells = [None, float("nan"), 10.0, 2, "b", 1e-3]
    ordered = sorted(cells, key=sort_key)
    assert ordered[:3] == [1e-3, 2, 10.0] and math.isnan(ordered[3]) and ordered[4:] == ["b", None]


def test_filter_terms():
    v = row_values(_run(learning_rate=1e-3, seed=1))
    assert matches(v, "") and matches(v, "symo") and matches(v, "seed=1 learning_rate<0.01")
    assert not matches(v, "seed=2") and not matches(v, "learning_rate>0.01") and not matches(v, "lnode")
    assert matches(v, "type=SYMO") and not matches(v, "nosuchcolumn=3")


def test_diff_of_two_runs_names_each_setting_that_differs():
    a, b = _run("a", seed=0, hidden=32), _run("b", seed=1, hidden=32)
    text = diff_text(a, b)
    assert "train.seed: 0  ->  1" in text and "hidden" not in text
    assert "same configuration" in diff_text(a, _run("c", seed=0, hidden=32))


def test_curves_against_epoch_step_or_wall_time_with_ema():
    history = [{"epoch": 1, "step": 4, "wall_time": 0.5, "loss": 4.0},
               {"epoch": 2, "step": 8, "wall_time": 1.5, "loss": 2.0},
               {"epoch": 3, "step": 12, "wall_time": 2.0, "loss": float("nan")},
               {"epoch": 4, "step": 16, "wall_time": 3.0, "loss": 1.0}]
    xs, ys = curve_points(history, "epoch", 0.0)
    assert xs == [1, 2, 4] and ys == [4.0, 2.0, 1.0]
    xs, _ = curve_points(history, "step")
    assert xs == [4, 8, 16]
    xs, _ = curve_points(history, "wall_time")
    assert xs == [0.5, 1.5, 3.0]
    _, smooth = curve_points(history, "epoch", 0.5)
    # debiased EMA: y1 = 4; y2 = (0.25*4 ... ) = (0.5*0.5*4 + 0.5*2) / (1 - 0.25)
    assert smooth[0] == pytest.approx(4.0) and smooth[1] == pytest.approx((0.5 * 0.5 * 4 + 0.5 * 2) / 0.75)
    with pytest.raises(ValueError, match="x axis"):
        curve_points(history, "minutes")


def test_sizes_and_eta_text():
    assert parse_sizes("8, 16;32") == [8, 16, 32]
    with pytest.raises(ValueError, match="whole number"):
        parse_sizes("8, x")
    assert format_eta(75) == "1m15s" and format_eta(None) == "—"


def test_resume_button_continues_a_cancelled_run_to_the_uninterrupted_loss(ctx, qtbot, tmp_path):
    from app.workspaces.model_lab.runs_panel import RunsPanel
    from engine.data import DatasetConfig, generate_dataset

    data = generate_dataset(DatasetConfig(train_trajectories=2, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=10, seed=3))
    panel = RunsPanel(ctx, model_folder=str(tmp_path / "models"))
    qtbot.addWidget(panel)
    panel.set_dataset(data, {"kind": "generated", "config": data.config.to_dict()})
    tc = lab_jobs.with_changes(
        lab_jobs.default_train_config(), trajectories=2, epochs=6, hidden=8, checkpoint_every=2
    )
    whole = panel.add_run("mlp", tc, name="whole")
    part = panel.add_run("mlp", lab_jobs.with_changes(tc, epochs=4), name="part")
    panel.parallel.setValue(1)
    panel.train([whole.key, part.key])
    qtbot.waitUntil(lambda: whole.state == "finished" and part.state == "finished", timeout=120000)
    assert not ctx.errors, ctx.errors
    assert part.model_path and part.model_path.endswith("model.json") and len(part.history) == 4
    panel.train_form.editor("epochs").setValue(6)
    panel.resume([part.key])
    qtbot.waitUntil(lambda: part.state == "finished", timeout=120000)
    assert not ctx.errors, ctx.errors
    assert part.losses == whole.losses and [r["epoch"] for r in part.history] == list(range(1, 7))
    assert part.row["test_mse"] == whole.row["test_mse"]
    # the table: sortable by a hyperparameter, filterable, and the diff of the two runs' settings
    assert "train.epochs" not in panel.diff(whole.key, part.key)
    panel.filter_edit.setText("name=whole")
    assert panel.visible_keys() == [whole.key]
    panel.x_axis.setCurrentIndex(2)   # wall time
    panel.smoothing.setValue(50)
    assert panel.loss_plot.points(part.key) == 6
