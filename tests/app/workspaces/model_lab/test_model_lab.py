"""The Model lab in a real window: open the pendulum log through the mapping dialog, train two
models, compare them, export the report; plus the shared form and plot widgets it is built from."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

ROOT = Path(__file__).resolve().parents[4]
EXAMPLE_LOG = ROOT / "resources" / "logs" / "pendulum_friction.csv"


@pytest.fixture
def pendulum_log_path(tmp_path) -> Path:
    """The shipped example log; made with the log engine's own generator if it is not there."""
    if EXAMPLE_LOG.exists():
        return EXAMPLE_LOG
    from engine.data.example_logs import pendulum_log, write_example

    write_example(pendulum_log(), tmp_path / "logs")
    return tmp_path / "logs" / "pendulum_friction.csv"


def _make_page(ctx, qtbot):
    from app.workspaces.model_lab.page import ModelLabPage

    page = ModelLabPage(ctx)
    qtbot.addWidget(page)
    page.resize(1500, 950)
    page.show()
    qtbot.waitExposed(page)
    return page


def test_open_log_train_two_models_compare_and_report(ctx, qtbot, tmp_path, pendulum_log_path):
    from app.widgets.plots import curve_data
    from app.workspaces.model_lab.mapping_dialog import LogMappingDialog

    page = _make_page(ctx, qtbot)
    filters = page.file_filters()
    assert any("*.csv" in f for f in filters) and any("*.parquet" in f for f in filters)
    assert any("*.json" in f for f in filters)
    assert page.open_file(str(tmp_path / "notes.xyz")) is False   # not ours: the window tries other pages

    assert page.open_file(str(pendulum_log_path)) is True
    qtbot.waitUntil(
        lambda: page.mapping_dialog is not None and page.mapping_dialog.isVisible(), timeout=20000
    )
    dlg = page.mapping_dialog
    assert isinstance(dlg, LogMappingDialog)
    cols = dlg.table.columns
    assert cols == ["t", "theta", "torque"]

    # drive the widgets: clear every role, then map t -> time [s], theta -> q [deg first, then rad], torque -> u
    for box in dlg._role_boxes:
        box.setCurrentText("—")
    dlg.refresh()
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and "configuration" in dlg.problem.text()
    dlg._role_boxes[0].setCurrentText("time")
    dlg._unit_boxes[0].setCurrentText("s")
    dlg._role_boxes[1].setCurrentText("q")
    dlg._unit_boxes[1].setCurrentText("deg")
    dlg._role_boxes[2].setCurrentText("u")
    dlg._unit_boxes[2].setCurrentText("N m")
    dlg.refresh()
    # the preview shows SI units: degrees were converted to radians
    first_theta = float(dlg.table.data["theta"][0])
    q_col = [dlg.preview.horizontalHeaderItem(j).text() for j in range(dlg.preview.columnCount())].index(
        "q[0] theta [rad]")
    assert float(dlg.preview.item(0, q_col).text()) == pytest.approx(math.radians(first_theta), rel=1e-5)
    dlg._unit_boxes[1].setCurrentText("rad")
    # resample to 50 ms (fewer samples: a quick test), smoothing window 7
    dt_editor = dlg.prepare_form.editor("dt")
    dt_editor.auto.setChecked(False)
    dt_editor.spin.setValue(0.05)
    dlg.prepare_form.editor("window").setValue(7)
    dlg.refresh()
    assert ok.isEnabled(), dlg.problem.text()
    # smoothing preview: raw against smoothed, same grid, smoothed close to raw but not identical
    t_raw, y_raw = curve_data(dlg.raw_curve)
    t_sm, y_sm = curve_data(dlg.smooth_curve)
    assert len(t_raw) == len(t_sm) > 1000 and np.allclose(t_raw, t_sm)
    assert 0 < np.max(np.abs(y_raw - y_sm)) < 0.1
    # validation range picked on the plot (the band stays inside the log: clamped to its last sample)
    dlg.set_validation_range(44.0, 70.0)
    assert dlg.prepare_config().val_ranges == [[pytest.approx(44.0), pytest.approx(t_raw[-1])]]
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.data_panel.dataset is not None, timeout=30000)
    data = page.data_panel.dataset
    prepared = page.data_panel.prepared
    assert prepared.dt == pytest.approx(0.05)
    assert prepared.val_mask[prepared.t >= 44.05].all() and not prepared.val_mask[prepared.t < 43.95].any()
    assert data.system.dof == 1 and data.system.angle_mask == (True,)
    # the remembered mapping comes back for a file with the same columns
    from app.workspaces.model_lab import lab_jobs
    again, origin = lab_jobs.initial_mapping(page.data_panel.table, page.data_panel.mapping_folder)
    assert origin.startswith("saved") and again.q == ["theta"] and again.u == ["torque"]

    # two models, a few epochs each, trained in parallel
    runs = page.runs_panel
    runs.train_form.editor("epochs").setValue(3)
    runs.train_form.editor("hidden").spin.setValue(32)
    runs.parallel.setValue(2)
    for kind in ("mlp", "node-midpoint"):
        runs.type_combo.setCurrentText(kind)
        qtbot.mouseClick(runs.add_button, Qt.MouseButton.LeftButton)
    assert len(runs.runs) == 2
    qtbot.mouseClick(runs.train_all_button, Qt.MouseButton.LeftButton)
    assert [r.state for r in runs.runs.values()] == ["running", "running"]   # two slots: both start
    qtbot.waitUntil(lambda: all(r.state == "finished" for r in runs.runs.values()), timeout=60000)
    assert not ctx.errors, ctx.errors
    for run in runs.runs.values():
        assert len(run.losses) == 3 and all(math.isfinite(v) for v in run.losses)
        assert runs.loss_plot.points(run.key) == 3

    # the compare table lists both with finite metrics
    table = page.compare_panel.table
    assert table.rowCount() == 2
    headers = [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())]
    names = {table.item(i, headers.index("model")).text() for i in range(2)}
    assert names == {r.name for r in runs.runs.values()}
    for header in ("train MSE", "test MSE", "integration MSE", "wall time [s]"):
        for i in range(2):
            value = float(table.item(i, headers.index(header)).text())
            assert math.isfinite(value) and value >= 0
    assert table.item(0, headers.index("energy MSE")).text() == "—"   # a log has no known energy
    # sorting by test MSE orders the rows by their numbers
    table.sortItems(headers.index("test MSE"))
    col = [float(table.item(i, headers.index("test MSE")).text()) for i in range(2)]
    assert col == sorted(col)

    # the rollout plot has the measured signal and each model's rollouts inside the validation range
    items = page.compare_panel.plots["rollout"].getPlotItem().listDataItems()
    by_name = {it.name(): it for it in items}
    assert "measured" in by_name and all(r.name in by_name for r in runs.runs.values())
    for run in runs.runs.values():
        x, y = curve_data(by_name[run.name])
        finite = np.isfinite(x) & np.isfinite(y)
        assert finite.sum() > 50
        assert x[finite].min() >= 44.0 - 1e-9 and x[finite].max() <= 60.0 + 1e-9
    horizon_items = page.compare_panel.plots["horizon"].getPlotItem().listDataItems()
    assert len(horizon_items) == 2 and all(len(curve_data(it)[0]) > 10 for it in horizon_items)
    # per-signal one-step and k-step errors
    st = page.compare_panel.signal_table
    sheaders = [st.horizontalHeaderItem(j).text() for j in range(st.columnCount())]
    assert "1-step theta" in sheaders and "50-step theta" in sheaders and st.rowCount() == 2

    # the report: PNG + SVG figures, CSV + JSON table
    shot = page.grab()
    assert shot.save(str(tmp_path / "modellab.png")) and shot.width() >= 1000
    out = tmp_path / "report"
    files = page.compare_panel.export_report(out)
    for key in ("rollout", "phase", "energy", "horizon", "inertia", "potential", "size"):
        png, svg = out / f"{key}.png", out / f"{key}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in svg.read_text()[:2000]
    with open(out / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["model"] for r in rows} == names
    assert all(math.isfinite(float(r["test_mse"])) for r in rows)
    report = json.loads((out / "compare.json").read_text())
    assert len(report["rows"]) == 2 and report["info"]["source"]["kind"] == "log"
    assert set(map(Path, files)) >= {out / "compare.csv", out / "compare.json", out / "rollout.png"}

    # save a model, then open it from the File menu path: it comes back and is evaluated again
    key = next(iter(runs.runs))
    saved = runs.save_run(key, tmp_path / "models" / "mlp.json")
    assert saved.exists() and saved.with_suffix(".safetensors").exists()
    meta = json.loads(saved.read_text())
    assert meta["type"] == "mlp" and meta["data_hash"] == prepared.data_hash
    assert meta["metrics"]["test_mse"] == pytest.approx(runs.runs[key].row["test_mse"])
    assert page.open_file(str(saved)) is True
    loaded = list(runs.runs.values())[-1]
    assert loaded.state == "loaded"
    qtbot.waitUntil(lambda: loaded.curves is not None, timeout=20000)
    original = runs.runs[key]
    assert loaded.row["test_mse"] == pytest.approx(original.row["test_mse"], rel=1e-6)

    # the session is JSON and reopens with the same models and results
    state = json.loads(json.dumps(page.session_state()))
    assert state["source"]["kind"] == "log" and len(state["runs"]) == 3
    page2 = _make_page(ctx, qtbot)
    page2.restore_session_state(state)
    qtbot.waitUntil(lambda: page2.data_panel.dataset is not None, timeout=30000)
    qtbot.waitUntil(lambda: page2.compare_panel.table.rowCount() == 3
                    and all(r.curves is not None for r in page2.runs_panel.runs.values()), timeout=30000)
    restored = {r.name: r.row["test_mse"] for r in page2.runs_panel.runs.values()}
    for run in runs.runs.values():
        assert restored[run.name] == pytest.approx(run.row["test_mse"], rel=1e-6)
    assert page2.mapping_dialog is None   # a session opens its log without the dialog


def test_generated_data_sweep_compare_energy_inertia_and_cancel(ctx, qtbot, tmp_path):
    page = _make_page(ctx, qtbot)
    panel = page.data_panel
    form = panel.dataset_form
    form.editor("train_trajectories").setValue(4)
    form.editor("test_trajectories").setValue(4)
    form.editor("long_term_trajectories").setValue(2)
    form.editor("long_term_steps").setValue(30)
    qtbot.mouseClick(panel.generate_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.dataset is not None, timeout=30000)
    assert panel.dataset.train_x.shape == (4, 34, 2)
    runs = page.runs_panel
    runs.train_form.editor("epochs").setValue(2)
    runs.train_form.editor("hidden").auto.setChecked(False)
    runs.train_form.editor("hidden").spin.setValue(16)
    runs.type_combo.setCurrentText("lnode-midpoint")
    runs.sweep_edit.setText("2, 4")
    qtbot.mouseClick(runs.sweep_button, Qt.MouseButton.LeftButton)
    assert [r.train_config.trajectories for r in runs.runs.values()] == [2, 4]
    runs.parallel.setValue(1)
    qtbot.mouseClick(runs.train_all_button, Qt.MouseButton.LeftButton)
    assert [r.state for r in runs.runs.values()] == ["running", "queued"]   # one slot: the second waits
    qtbot.waitUntil(lambda: all(r.state == "finished" for r in runs.runs.values()), timeout=60000)
    assert not ctx.errors, ctx.errors
    run = next(iter(runs.runs.values()))
    # independent check of the data's energy: the analytic pendulum, conserved without control
    c = run.curves
    th, thd = c["q_true"][:, 0], c["qd_true"][:, 0]
    energy = 0.5 * thd ** 2 / 3.0 + 0.5 * 9.81 * (1 + np.cos(th))
    assert np.allclose(c["energy_true"], energy, rtol=1e-9)
    assert np.ptp(energy) < 1e-6
    assert np.allclose(c["inertia_true"], 1.0 / 3.0)   # a uniform rod about its end, m = l = 1
    table = page.compare_panel.table
    headers = [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())]
    for header in ("energy MSE", "inertia MSE", "integration MSE"):
        assert math.isfinite(float(table.item(0, headers.index(header)).text()))
    # the learned inertia MSE in the table is the mean squared gap of the curves shown (one trajectory of two)
    names = {it.name() for it in page.compare_panel.plots["energy"].getPlotItem().listDataItems()}
    assert names == {"data"} | {r.name for r in runs.runs.values()}
    inertia_names = {it.name() for it in page.compare_panel.plots["inertia"].getPlotItem().listDataItems()}
    assert inertia_names == {"true"} | {r.name for r in runs.runs.values()}
    # the learned potential, against the analytic V = m g l / 2 (1 + cos th), shifted to its mean
    assert np.allclose(c["potential_true"], 0.5 * 9.81 * (1 + np.cos(th)), rtol=1e-9)
    assert c["potential_pred"].mean() == pytest.approx(c["potential_true"].mean())
    page.compare_panel.learned.setCurrentText("potential")
    learned_items = {
        it.name(): it for it in page.compare_panel.plots["inertia"].getPlotItem().listDataItems()
    }
    assert np.allclose(learned_items["true"].yData, c["potential_true"])
    assert np.allclose(learned_items[run.name].yData, c["potential_pred"])
    # error against N: one line for the type, one point per N
    size_items = page.compare_panel.plots["size"].getPlotItem().listDataItems()
    assert [it.name() for it in size_items] == ["lnode-midpoint"]
    from app.widgets.plots import curve_data
    x, y = curve_data(size_items[0])
    assert list(x) == [2, 4]
    assert list(y) == [r.row["integration_mse"] for r in runs.runs.values()]
    size_item = page.compare_panel.plots["size"].getPlotItem()
    major = size_item.getAxis("bottom")._tickLevels[0]      # labelled at the sizes trained
    assert [label for _, label in major] == ["2", "4"]
    assert [pos for pos, _ in major] == pytest.approx([math.log10(2), math.log10(4)])
    lo, hi = size_item.vb.viewRange()[0]                     # log10 units: a factor of 4 or more in view
    assert lo < math.log10(2) and hi > math.log10(4) and hi - lo >= math.log10(4) - 1e-9

    # cancel: a long run stops at its next check, keeps the panel usable
    runs.type_combo.setCurrentText("mlp")
    runs.train_form.editor("epochs").setValue(100000)
    long_run = runs.add_run()
    runs.train([long_run.key])
    qtbot.waitUntil(
        lambda: long_run.state == "running" and runs.loss_plot.points(long_run.key) >= 2, timeout=30000
    )
    assert long_run.eta is not None and long_run.eta > 0
    runs.cancel([long_run.key])
    qtbot.waitUntil(lambda: long_run.state == "cancelled", timeout=20000)
    assert long_run.row is None and page.compare_panel.table.rowCount() == 2

    # a session with generated data regenerates the same data set (seeded) and re-evaluates the models
    state = json.loads(json.dumps(page.session_state()))
    page2 = _make_page(ctx, qtbot)
    page2.restore_session_state(state)
    qtbot.waitUntil(lambda: page2.data_panel.dataset is not None, timeout=30000)
    assert np.array_equal(page2.data_panel.dataset.train_x, panel.dataset.train_x)
    qtbot.waitUntil(
        lambda: (
            page2.compare_panel.table.rowCount() == 2
            and all(r.curves is not None for r in page2.runs_panel.runs.values() if r.model)
        ),
        timeout=30000,
    )
    again = {r.name: r.row["integration_mse"] for r in page2.runs_panel.runs.values() if r.row}
    assert again == pytest.approx(
        {r.name: r.row["integration_mse"] for r in runs.runs.values() if r.row}, rel=1e-6
    )


def test_mapping_dialog_rejects_bad_mappings(ctx, qtbot, tmp_path):
    from app.workspaces.model_lab.mapping_dialog import LogMappingDialog
    from engine.logs import read_log

    path = tmp_path / "two.csv"
    path.write_text("time_ms,a,b\n" + "".join(f"{10 * i},{0.01 * i},{0.02 * i}\n" for i in range(200)))
    table = read_log(path)
    dlg = LogMappingDialog(table, None)
    qtbot.addWidget(dlg)
    dlg.open()
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    dlg.set_role("time_ms", "time", "ms")
    dlg.set_role("a", "q", "rad")
    dlg.set_role("b", "qd", "rad/s")
    dlg.refresh()
    assert ok.isEnabled(), dlg.problem.text()
    assert dlg.mapping().units["time_ms"] == "ms"
    # two q columns and one qd: mismatched lengths, named
    dlg.set_role("b", "q", "rad")
    dlg.set_role("time_ms", "qd", "rad/s")
    dlg.refresh()
    assert not ok.isEnabled() and "qd" in dlg.problem.text()
    # a smoothing window longer than the data
    dlg.set_role("time_ms", "time", "ms")
    dlg.prepare_form.editor("window").setValue(401)
    dlg.refresh()
    assert not ok.isEnabled() and "window" in dlg.problem.text()
    dlg.reject()


def test_dataclass_form_builds_editors_and_new_instances(qtbot):
    from dataclasses import dataclass, field

    from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox

    from app.widgets.forms import DataclassForm, FormError

    @dataclass
    class Config:
        steps: int = 5
        rate: float = 0.25
        flag: bool = True
        name: str = "x"
        mode: str = "a"
        limit: float | None = None
        ranges: list = field(default_factory=lambda: [[0.0, 1.0]])

        def __post_init__(self):
            if self.steps < 1:
                raise ValueError("Config.steps: must be >= 1")

    form = DataclassForm(Config, choices={"mode": ["a", "b"]})
    qtbot.addWidget(form)
    assert isinstance(form.editor("steps"), QSpinBox)
    assert isinstance(form.editor("rate"), QDoubleSpinBox)
    assert isinstance(form.editor("flag"), QCheckBox)
    assert isinstance(form.editor("name"), QLineEdit)
    assert isinstance(form.editor("mode"), QComboBox)
    assert form.value() == Config()
    form.editor("steps").setValue(9)
    form.editor("rate").setValue(1.5e-4)
    form.editor("flag").setChecked(False)
    form.editor("mode").setCurrentIndex(1)
    form.editor("limit").auto.setChecked(False)
    form.editor("limit").spin.setValue(2.5)
    form.editor("ranges").setText("[[1, 2], [3, 4]]")
    v = form.value()
    assert v == Config(
        steps=9, rate=1.5e-4, flag=False, name="x", mode="b", limit=2.5, ranges=[[1, 2], [3, 4]]
    )
    form.editor("steps").setValue(0)
    with pytest.raises(FormError) as err:
        form.value()
    assert err.value.field == "steps"
    form.editor("steps").setValue(1)
    form.editor("ranges").setText("[[1, 2")
    with pytest.raises(FormError):
        form.value()
    # bound to an engine dataclass: fields not shown keep the bound instance's values
    from engine.logs import PrepareConfig

    base = PrepareConfig(val_ranges=[[1.0, 2.0]], window=15)
    pf = DataclassForm(base, include=["window", "dt"])
    qtbot.addWidget(pf)
    pf.editor("window").setValue(21)
    out = pf.value()
    assert out.window == 21 and out.val_ranges == [[1.0, 2.0]] and out.dt is None and out is not base


def test_loss_plot_log_scale_and_export(qtbot, tmp_path):
    from app.widgets.plots import LossPlot, export_figure, export_png_svg

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(600, 400)
    plot.show()
    for epoch, loss in enumerate([1.0, 0.1, float("nan"), 0.0, 0.01], start=1):
        plot.append("a", epoch, loss)
    assert plot.points("a") == 3   # NaN and zero cannot show on a log scale
    assert plot.getPlotItem().ctrl.logYCheck.isChecked()
    png, svg = export_png_svg(plot, tmp_path / "loss")
    assert png.read_bytes()[:4] == b"\x89PNG" and "<svg" in svg.read_text()[:2000]
    from PySide6.QtGui import QImage

    assert QImage(str(png)).width() >= 800
    with pytest.raises(ValueError, match="png or .svg"):
        export_figure(plot, tmp_path / "loss.jpg")


def test_compare_plots_keep_a_flat_reference_and_near_models_in_view(qtbot):
    """A conserved energy is a flat line: the view must not zoom onto its zero span (where every
    model's curve crosses as a vertical line), and must still clip a diverging model."""
    import pyqtgraph as pg

    from app.workspaces.model_lab.compare_panel import _focus_on_reference

    t = np.linspace(0.0, 10.0, 101)

    def view_after(reference, model_curve):
        plot = pg.PlotWidget()
        qtbot.addWidget(plot)
        plot.resize(400, 300)
        plot.show()
        qtbot.waitExposed(plot)
        plot.plot(t, reference, name="data")
        plot.plot(t, model_curve, name="run 1")
        _focus_on_reference(plot)
        vb = plot.getPlotItem().vb
        vb.updateAutoRange()
        return vb.viewRange()

    flat = np.full_like(t, 9.73)
    (x0, x1), (y0, y1) = view_after(flat, 9.73 + 0.02 * t)           # drifts to 9.93: both shown
    assert x0 <= 0.0 and x1 >= 10.0
    assert y0 <= 9.73 and y1 >= 9.93 and y1 - y0 < 1.0
    _, (y0, y1) = view_after(flat, 9.73 * np.exp(t))                   # diverges: the data stay in view
    assert y0 < 9.73 < y1 and 0.5 < y1 - y0 < 3.0
    _, (y0, y1) = view_after(np.zeros_like(t), np.linspace(-1.0, 1.0, t.size))   # flat at zero: autoscale
    assert y0 <= -1.0 and y1 >= 1.0
