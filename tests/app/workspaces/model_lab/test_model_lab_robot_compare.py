"""The Model lab's comparison on a robot's log (issue 30, item 6): the hardware-log tab names the robot,
lists the robot models with the learned ones, runs the engine's compare_on_log as a job, and shows
torque RMSE (N m, beside the noise level) and rollout RMSE in one table with per-joint torque bars;
Show on robot plays the robot models as the ghost; "Use identified robot" loads the identified URDF in
the Robot workspace.

The log: MuJoCo simulating a 3-joint arm with friction, armature and masses off
(tests/engine/identification/mujoco_arm.py), so the identified rigid body must beat the robot file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from app.workspaces.model_lab import lab_jobs  # noqa: E402
from app.workspaces.model_lab.state import ModelLabState  # noqa: E402
from engine.logs import LogMapping, PrepareConfig, read_log  # noqa: E402
from engine.training.compare import LogCompareConfig  # noqa: E402
from tests.app.state_runner import SyncRunner  # noqa: E402
from tests.engine.identification import mujoco_arm  # noqa: E402

MODELS = ["urdf", "rigid-body", "node-rk4"]


def _log_data(folder: Path):
    csv, mapping_path = mujoco_arm.write_log(folder, seconds=3.0)
    mapping = LogMapping.load(mapping_path)
    prepare, compare = PrepareConfig(), LogCompareConfig(steps=16, horizon=40, hidden=16)
    table = read_log(csv)
    from engine.jobs import NullJobContext

    prepared, dataset = lab_jobs.prepare_job(table, mapping, prepare, compare)(NullJobContext())
    source = {"kind": "log", "path": str(csv), "mapping": mapping.to_dict(), "prepare": prepare.to_dict(),
              "compare": compare.to_dict()}
    return dataset, source, prepared


@pytest.fixture(scope="module")
def log_data(tmp_path_factory):
    return _log_data(tmp_path_factory.mktemp("arm3"))


@pytest.fixture(scope="module")
def compared(log_data, tmp_path_factory):
    """A state that compared MODELS on the arm's log (one job, run synchronously)."""
    state = ModelLabState(SyncRunner())
    state.compare_folder = tmp_path_factory.mktemp("lab_runs")
    errors = []
    state.events.error.connect(lambda title, message: errors.append(message))
    state.set_data(*log_data)
    state.set_robot(str(mujoco_arm.URDF))
    assert state.compare_on_robot(MODELS, epochs=1)
    assert errors == []
    return state


def test_the_comparison_gives_both_metrics_and_the_identified_robot(compared):
    state = compared
    result = state.robot_comparison
    rows = {e.name: e.row for e in result.entries}
    assert list(rows) == MODELS and not state.comparing
    noise = rows["urdf"]["noise_level"]
    assert noise == pytest.approx(mujoco_arm.TAU_NOISE, rel=0.3)
    for name in ("urdf", "rigid-body"):      # the robot models give torques and rollouts
        assert len(rows[name]["torque_rmse_per_joint"]) == 3 and math.isfinite(rows[name]["torque_rmse"])
        assert math.isfinite(rows[name]["rollout_rmse_0.1"])
    # identified from the torques: near the noise, far better than the robot file as it is
    assert rows["rigid-body"]["torque_rmse"] < 3 * noise < rows["urdf"]["torque_rmse"]
    # a forward model has no torque: the table gives the reason, and its rollout error
    assert rows["node-rk4"]["torque_rmse"] is None and "forward model" in rows["node-rk4"]["note"]
    assert math.isfinite(rows["node-rk4"]["rollout_rmse_0.1"])
    # the entries join the compare view with their models; the torque plot applies
    assert [r.name for r in state.runs] == MODELS and all(r.model is not None for r in state.runs)
    assert state.applicable_plots()["torque"] is None
    assert state.joint_names() == ["joint1", "joint2", "joint3"]
    # the identified robot: a URDF with its actuation JSON (friction, armature, offsets) beside it
    path = Path(state.identified_robot())
    assert path.is_file() and path.suffix == ".urdf"
    actuation = json.loads(path.with_name("rigid_body.actuation.json").read_text())
    assert actuation["joints"]["joint2"]["coulomb"] > 0


def test_robot_is_refused_before_any_work_when_missing_or_mismatched(log_data, tmp_path):
    runner = SyncRunner()
    state = ModelLabState(runner)
    state.compare_folder = tmp_path
    errors = []
    state.events.error.connect(lambda title, message: errors.append(message))
    assert not state.compare_on_robot(MODELS)            # no log yet
    assert "open a hardware log" in errors[-1]
    state.set_data(*log_data)
    state.set_robot(None)
    assert not state.compare_on_robot(MODELS)
    assert errors[-1] == "choose the robot whose log this is" and runner.names == []
    state.set_robot("panda")                             # 7 joints; the log has 3 others
    assert state.compare_on_robot(MODELS, epochs=1)
    assert "joint" in errors[-1] and state.robot_comparison is None and not state.comparing


def test_cancel_leaves_no_comparison(log_data, tmp_path):
    state = ModelLabState(SyncRunner(cancel_after_progress=1))
    state.compare_folder = tmp_path
    messages, busy = [], []
    state.events.message.connect(messages.append)
    state.events.compare_busy.connect(busy.append)
    state.set_data(*log_data)
    state.set_robot(str(mujoco_arm.URDF))
    state.compare_on_robot(["node-rk4"], epochs=50)
    assert messages[-1] == "Comparison on the robot cancelled."
    assert busy == [True, False] and state.robot_comparison is None and not state.comparing


def test_the_robot_models_play_as_the_ghost(compared):
    """Show on robot's ghost with the comparison's models: the identified rigid body follows the log
    far better than the robot file as it is (both rolled out as robot models by the replay)."""
    from app.workspaces.robot.log_replay_state import LogReplayState
    from engine.robots.library import load_robot

    result = compared.robot_comparison
    entries = {e.name: e for e in result.entries}
    replay = LogReplayState()
    replay.set_robot(load_robot(str(mujoco_arm.URDF)))
    rms = {}
    for name in ("urdf", "rigid-body"):
        replay.show_log(compared.data.source["path"], LogMapping.from_dict(result.mapping),
                        model=entries[name].model, model_name=name)
        replay.set_horizon(0.5)
        replay.set_cursor(1.0)
        ghost = replay.compute_ghost()
        assert np.all(np.isfinite(ghost.q))
        rms[name] = float(np.max(ghost.rms))
    assert rms["rigid-body"] < 0.5 * rms["urdf"]


def test_the_tab_fits_1366_and_use_identified_robot_loads_it(make_window, qtbot, compared, log_data, tmp_path):
    from app.main import _make_application
    from tests.app.geometry import layout_problems, settle

    _make_application([])
    window = make_window()
    settle()
    page = window.show_workspace("model_lab")
    run_button = page.robot_compare.run_row.run_button
    assert not run_button.isEnabled() and run_button.toolTip() == "open a hardware log first"
    page.data_panel.set_dataset(*log_data)
    page.state.set_robot(str(mujoco_arm.URDF))
    assert run_button.isEnabled()
    page.data_panel.tabs.setCurrentIndex(1)
    panel = page.robot_compare
    assert panel.isVisible() and {"urdf", "rigid-body", "hybrid-rk4", "robot-rk4", "node-rk4"} <= {
        panel.models.item(i).text() for i in range(panel.models.count())}
    page.state._on_compared(compared.robot_comparison)      # the finished job's result, delivered
    assert layout_problems(window, 1366, 768, page=page) == []
    table = page.compare_panel.table
    headers = [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())
               if not table.isColumnHidden(j)]
    assert {"torque RMSE [N m]", "sliding [N m]", "noise [N m]", "rollout RMSE 0.1 s [rad]", "note"} <= set(headers)
    torque_plot = page.compare_panel.plots["torque"]
    assert torque_plot.isVisible()
    bars = [i for i in torque_plot.getPlotItem().items if type(i).__name__ == "BarGraphItem"]
    assert len(bars) == 3                  # urdf, rigid-body and the noise level; node-rk4 has none
    legend = torque_plot.getPlotItem().legend
    assert [label.text for _, label in legend.items] == ["urdf", "rigid-body", "noise level"]   # each once
    files = page.compare_panel.export_report(tmp_path / "report")    # both metrics reach the report
    csv = next(f for f in files if f.suffix == ".csv").read_text()
    assert "torque_rmse" in csv.splitlines()[0] and "rollout_rmse_0.1" in csv.splitlines()[0]
    # Show on robot with the identified rigid body selected: the log's robot loads, its model is the ghost
    rigid = next(e for e in compared.robot_comparison.entries if e.name == "rigid-body")
    table.selectRow(next(i for i in range(table.rowCount()) if table.item(i, 0).text() == "rigid-body"))
    qtbot.mouseClick(page.compare_panel.robot_button, qtbot_left())
    robot_page = window.page("robot")
    qtbot.waitUntil(lambda: robot_page.replay.state.ghost_model is rigid.model, timeout=60_000)
    assert robot_page.robot.source == str(mujoco_arm.URDF)
    assert robot_page.replay.state.replay is not None and robot_page.replay.state.ghost_name == "rigid-body"
    window.show_workspace("model_lab")
    assert panel.use_button.isEnabled()
    with qtbot.waitSignal(robot_page.robot_loaded, timeout=60_000):
        qtbot.mouseClick(panel.use_button, qtbot_left())
    loaded = robot_page.robot
    assert Path(loaded.path) == Path(compared.identified_robot())
    identified = compared.robot_comparison.rows[1]["identified"]["joints"]["joint2"]
    assert float(loaded.model.joint_damping()[1]) == pytest.approx(identified["damping"], rel=1e-6)


def qtbot_left():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_the_robot_picker_lists_the_library_and_opens_a_robot_file(qtbot, monkeypatch, log_data):
    from PySide6.QtWidgets import QFileDialog

    from app.workspaces.model_lab.robot_compare_panel import OPEN_ROBOT, RobotComparePanel

    state = ModelLabState(SyncRunner())
    panel = RobotComparePanel(state)
    qtbot.addWidget(panel)
    box = panel.robot
    assert box.findData("panda") > 0 and box.itemData(box.count() - 1) == OPEN_ROBOT
    box.setCurrentIndex(box.findData("panda"))
    box.activated.emit(box.findData("panda"))
    assert state.robot == "panda"
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(mujoco_arm.URDF), ""))
    box.activated.emit(box.count() - 1)
    assert state.robot == str(mujoco_arm.URDF)
    assert box.currentText() == "arm3.urdf" and box.toolTip() == str(mujoco_arm.URDF)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: ("", ""))
    box.activated.emit(box.count() - 1)                 # cancelled: the robot stays
    assert state.robot == str(mujoco_arm.URDF) and box.currentText() == "arm3.urdf"


def test_the_robot_shown_in_the_robot_workspace_is_the_default():
    state = ModelLabState(SyncRunner())
    seen = []
    state.events.robot.connect(seen.append)
    state.set_shown_robot("panda")              # the shell tells the lab what the Robot workspace shows
    assert state.robot == "panda" and seen == ["panda"]
    state.set_robot(str(mujoco_arm.URDF))      # the user's choice wins over a later shown robot
    state.set_shown_robot("iiwa")
    assert state.robot == str(mujoco_arm.URDF) and state.default_robot() == "iiwa"


def test_the_lagrangian_prior_switch_reaches_the_comparison(log_data, tmp_path, monkeypatch):
    """The panel's "Lagrangian models on the identified robot" box: unchecked, the comparison's
    config asks for the papers' models from scratch; by default the prior."""
    from app.workspaces.model_lab import robot_compare
    from engine.jobs import NullJobContext

    class Seen(Exception):
        pass

    def fake_compare(*args, config=None, **kwargs):
        raise Seen(config.lagrangian_prior)

    monkeypatch.setattr(robot_compare.lc, "compare_on_log", fake_compare)
    _, source, _ = log_data
    for prior, expected in ((None, "robot"), ("none", "none"), ("robot", "robot")):
        job = robot_compare.robot_compare_job(source, str(mujoco_arm.URDF), ["lnode-rk4"], tmp_path / str(prior), 1,
                                              lagrangian_prior=prior)
        with pytest.raises(Seen) as seen:
            job(NullJobContext())
        assert str(seen.value) == expected
