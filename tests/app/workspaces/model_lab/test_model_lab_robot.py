"""The Model lab's Robot identification tab in a real window: identify the Panda from its example
joint log, check the tables and the plot against the log's known masses, save the result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.widgets.plots import curve_data

ROOT = Path(__file__).resolve().parents[4]
LOG = ROOT / "resources" / "logs" / "panda_joints.csv"
PARAMS = ROOT / "resources" / "logs" / "panda_joints.params.json"


@pytest.fixture
def page(ctx, qtbot):
    from app.workspaces.model_lab.page import ModelLabPage

    p = ModelLabPage(ctx)
    qtbot.addWidget(p)
    p.resize(1400, 900)
    p.show()
    yield p
    p.shutdown()


def test_identify_the_panda_from_its_log(page, ctx, qtbot, tmp_path):
    tabs = page.right_tabs
    titles = [tabs.tabText(i) for i in range(tabs.count())]
    assert "Robot identification" in titles and "Compare" in titles
    tabs.setCurrentIndex(titles.index("Robot identification"))
    panel = page.robot_panel
    panel.set_files(str(LOG))
    assert panel.mapping_edit.text().endswith("panda_joints.mapping.json")  # found beside the log
    panel.robot.setCurrentText("panda")
    panel.blackbox_steps.setValue(100)
    with qtbot.waitSignal(panel.finished, timeout=180_000) as blocker:
        panel.run()
    assert not ctx.errors
    result = blocker.args[0]
    params = json.loads(PARAMS.read_text())
    true = dict(zip(params["links"], params["mass"]))
    table = panel.param_table
    rows = {table.item(r, 0).text(): r for r in range(table.rowCount())}
    assert set(rows) == set(params["links"])
    for link in params["links"][1:]:
        shown = float(table.item(rows[link], 3).text())
        assert shown == pytest.approx(true[link], rel=0.10)
        assert table.item(rows[link], 4).text() == "yes"
    assert table.item(rows["panda_link1"], 4).text().startswith("no")
    rm = {panel.rmse_table.item(r, 0).text(): float(panel.rmse_table.item(r, 1).text())
          for r in range(panel.rmse_table.rowCount())}
    sigma_rms = float(np.sqrt(np.mean(np.square(params["torque_noise"]))))
    assert rm["learned (identified)"] <= 1.1 * sigma_rms < rm["nominal URDF"] / 5
    assert np.isfinite(rm["black-box MLP"])
    # the plot shows the measured joint torque and the three predictions on the validation part
    panel.joint.setCurrentIndex(1)
    x, y = curve_data(panel.curves["measured"])
    np.testing.assert_allclose(y, result.validation["tau"][:, 1])
    for key in ("learned", "nominal", "blackbox"):
        cx, cy = curve_data(panel.curves[key])
        assert len(cx) == len(x) and np.all(np.isfinite(cy))
    out = panel.save_result(tmp_path / "ident.json")
    saved = json.loads(out.read_text())
    assert saved["torque_rmse_validation"]["learned"] == pytest.approx(rm["learned (identified)"], rel=1e-3)


def test_missing_mapping_is_reported_without_a_job(page, ctx):
    panel = page.robot_panel
    panel.log_edit.setText(str(LOG))
    panel.mapping_edit.setText("")
    panel.run()
    assert ctx.errors and "mapping" in ctx.errors[-1][1]
    assert not panel.is_busy


def test_a_bad_mapping_file_fails_cleanly(page, ctx, qtbot, tmp_path):
    bad = tmp_path / "bad.mapping.json"
    bad.write_text("{not json")
    panel = page.robot_panel
    panel.set_files(str(LOG), str(bad))
    panel.run()
    qtbot.waitUntil(lambda: not panel.is_busy, timeout=30_000)
    assert ctx.errors and "bad.mapping.json" in ctx.errors[-1][1]
    assert panel.progress.format() == "failed" and panel.result is None
