"""The Eigenmode designer's Qt-free state, driven directly (no window): placing the start and the
target, learning, the animation clock, stabilising, files and sessions."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from app.workspaces.eigenmode.state import EigenmodeState, fk
from engine.eigenmodes.config import DesignConfig, TrainConfig
from engine.paths import user_runs_dir
from engine.systems.double_pendulum import DoublePendulumParams
from tests.app.state_runner import SyncRunner

torch.set_num_threads(1)


def test_the_state_module_imports_no_qt():
    code = ("import sys, app.workspaces.eigenmode.state as s; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_forward_kinematics_matches_the_planar_chain():
    P = DoublePendulumParams(l1=0.7, l2=1.3)
    elbow, tip = fk((math.pi / 2, 0.0), P)                       # both links horizontal, to +x
    np.testing.assert_allclose(elbow, [0.7, 0.0], atol=1e-12)
    np.testing.assert_allclose(tip, [2.0, 0.0], atol=1e-12)
    elbow, tip = fk((0.0, math.pi / 2), P)                       # link 1 hangs, link 2 points to +x
    np.testing.assert_allclose(elbow, [0.0, -0.7], atol=1e-12)
    np.testing.assert_allclose(tip, [1.3, -0.7], atol=1e-12)


def test_placing_the_start_the_target_and_the_perturbed_start():
    state = EigenmodeState(SyncRunner())
    seen = []
    state.events.design.connect(seen.append)
    ghosts = []
    state.events.ghost.connect(ghosts.append)
    state.drag_to((-0.3, 0.5))
    assert state.design.task.q0 == (-0.3, 0.5) and seen[-1] is state.design
    state.set_target((1.1, -1.4))
    assert state.design.task.target == (1.1, -1.4)
    assert state.ghost() is None and ghosts[-1] is None
    state.set_drag_perturbed(True)
    state.drag_to((-0.1, 0.2))                  # now a drag sets the offset, not the start
    assert state.design.task.q0 == (-0.3, 0.5)
    np.testing.assert_allclose(state.stabilise_config.perturb_q, (0.2, -0.3))
    np.testing.assert_allclose(ghosts[-1], (-0.1, 0.2))


def test_an_invalid_design_is_refused_with_the_reason():
    runner = SyncRunner()
    state = EigenmodeState(runner)
    errors = []
    state.events.error.connect(lambda title, msg: errors.append(msg))
    state.set_target((5.0, 0.0))                # outside the reachable annulus
    assert state.learn() is False
    assert runner.names == [] and "annulus" in errors[-1] and "annulus" in state.message


@pytest.fixture(scope="module")
def learned():
    state = EigenmodeState(SyncRunner())
    design = dataclasses.replace(DesignConfig(), train=TrainConfig(epochs=3, dt=0.1))
    state.set_design(design)
    progress = []
    state.events.progress.connect(progress.append)
    busy = []
    state.events.busy.connect(lambda: busy.append((state.learning, state.stabilising)))
    assert state.learn() is True
    return state, progress, busy


def test_learning_fills_the_history_and_sets_the_mode(learned):
    state, progress, busy = learned
    assert not state.learning and busy[-1] == (False, False)
    mode = state.mode
    assert mode is not None and mode.design.task == state.design.task
    assert [p.epoch for p in progress] == [1, 2, 3]
    assert len(state.history["total"]) == 3
    np.testing.assert_allclose(state.history["total"], mode.history["total"])
    assert state.message.startswith("<b>Mode</b>")
    # the learning is a run folder the CLI can resume (eigenmode learn --resume RUN_DIR)
    assert mode.run_dir is not None and Path(mode.run_dir).parent == user_runs_dir("eigenmode")
    assert json.loads((Path(mode.run_dir) / "run.json").read_text())["status"] == "done"
    # the mode's tip path is the forward kinematics of its configurations
    tr = mode.trajectory
    i = len(tr["t"]) // 3
    np.testing.assert_allclose(fk(tr["q"][i], state.plant)[1], tr["tip"][i], atol=1e-6)


def test_the_animation_clock_loops_the_mode_and_seeks(learned):
    state, _, _ = learned
    frames = []
    state.events.frame.connect(lambda t, q: frames.append((t, q)))
    state.set_source("mode")
    period = float(state.mode.trajectory["t"][-1])
    state.seek(0.5)
    t, q = state.frame()
    assert abs(t - period / 2) < 0.06
    i = int(np.searchsorted(state.mode.trajectory["t"], state.t))
    np.testing.assert_allclose(q, state.mode.trajectory["q"][i])
    state.seek(0.0)
    state.advance(period + 0.2)                 # loops
    assert abs(state.t - 0.2) < 1e-9
    assert frames and frames[-1][0] == state.frame()[0]


def test_stabilise_files_and_sessions(learned, tmp_path):
    state, _, _ = learned
    state.set_stabilise_config(dataclasses.replace(state.stabilise_config, periods=1.0, dt=0.02,
                                                   multiplier_steps=60, settle_periods=0.0))
    results = []
    state.events.stabilised.connect(results.append)
    assert state.stabilise() is True
    result = state.stab_result
    assert result is not None and results[-1] is result and state.source == "stabilised run"
    assert len(result.cycle["nontrivial"]) == 3
    assert "<b>Stabilised</b>" in state.message
    # the stabilised run's animation restarts instead of looping
    state.seek(1.0)
    state.advance(0.5)
    assert state.t == 0.0
    files = state.export_csv_to(str(tmp_path / "traj.csv"))
    assert len(files) == 2 and (tmp_path / "traj_stabilised.csv").exists()
    state.save_mode_to(str(tmp_path / "mode"))
    other = EigenmodeState(SyncRunner())
    other.load_mode_from(str(tmp_path / "mode"))
    assert other.mode.design.task == state.design.task and other.stab_result is None
    session = state.session_state()
    fresh = EigenmodeState(SyncRunner())
    fresh.restore_session_state(session)
    assert fresh.design.task == state.design.task and fresh.stabilise_config == state.stabilise_config
    with pytest.raises(ValueError, match="stabilise"):
        fresh.restore_session_state({"stabilise": {"no_such_field": 1}})


def test_cancel_ends_learning_without_a_mode():
    state = EigenmodeState(SyncRunner(cancel_after_progress=1))
    state.set_design(dataclasses.replace(DesignConfig(), train=TrainConfig(epochs=50, dt=0.1)))
    state.learn()
    assert state.mode is None and not state.learning and state.message == "Learning cancelled."
