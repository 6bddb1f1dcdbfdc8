"""The Model lab's "Show on robot": the shell plays a log on the Robot workspace, choosing a shipped
robot named like the log when the one shown does not fit (a real window on Xvfb)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.logs.mapping import LogMapping
from engine.paths import resource


def _source(name: str) -> dict:
    path = resource("logs", f"{name}.csv")
    mapping = LogMapping.load(path.with_suffix(".mapping.json"))
    return {"kind": "log", "path": str(path), "mapping": mapping.to_dict()}


def test_a_panda_log_plays_on_the_panda(make_window, qtbot):
    window = make_window()
    window.show_log_on_robot(_source("panda_joints"))
    robot = window.pages["robot"]
    assert window.current_workspace() == "robot"
    qtbot.waitUntil(lambda: robot.replay.state.replay is not None, timeout=120_000)
    assert robot.robot.name.startswith("panda")
    replay = robot.replay.state.replay
    logged = pd.read_csv(_source("panda_joints")["path"], comment="#")
    assert replay.q.shape[1] == robot.robot.model.dof
    assert replay.q.shape[0] > 1 and np.isfinite(replay.q).all()
    assert replay.duration == pytest.approx(logged["t"].iloc[-1] - logged["t"].iloc[0], abs=1e-9)
    np.testing.assert_allclose(replay.q[0], logged[[f"q{i}" for i in range(1, 8)]].iloc[0], atol=1e-12)


def test_the_compare_view_button_asks_the_shell(make_window, qtbot):
    window = make_window()
    page = window.page("model_lab")
    button = page.compare_panel.robot_button
    assert not button.isEnabled()             # nothing loaded: no log to show
    seen = []
    page.show_on_robot_requested.connect(lambda source, model, name: seen.append((source, model, name)))
    page.compare_panel.request_show_on_robot()
    assert seen == []                         # only a log is shown on a robot
