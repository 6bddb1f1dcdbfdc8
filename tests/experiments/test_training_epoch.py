"""experiments.training_epoch: the whole script, once, on the shipped Panda log (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.robots.backends import compiled_autograd
from experiments import training_epoch

ROOT = Path(__file__).resolve().parents[2]


def test_training_epoch_writes_every_setting(tmp_path):
    out = tmp_path / "epoch.json"
    before = compiled_autograd.ENABLED
    assert training_epoch.main(["--log", str(ROOT / "resources/logs/panda_friction.csv"), "--repeats", "1",
                                "--out", str(out)]) == 0
    assert compiled_autograd.ENABLED == before          # the switch is put back
    report = json.loads(out.read_text())
    assert report["dtype"] == "torch.float64" and report["steps_per_epoch"] >= 1
    rows = report["rows"]
    assert set(rows) == {"at the issue", "compiled backward", "now"}
    assert all(r["step_cpu_ms_best"] > 0 for r in rows.values())
    assert 0 < rows["now"]["rigid_body_share"] < 1
    # the code is put back after its rows
    from engine.models.robot import RobotDynamics
    from engine.robots.model import RobotModel

    assert RobotDynamics._acceleration.__module__ == "engine.models.robot"
    assert RobotModel.inertials_held.__module__ == "engine.robots.model"
