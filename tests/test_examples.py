"""Every script in examples/ runs to the end (each checks its own result and exits non-zero
when it is wrong)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))
EXPECTED = {
    "robot_kinematics_dynamics.py": "IK converged",
    "learn_pendulum_model.py": "test_mse",
    "car_plan.py": "executed on the simulator",
    "eigenmode_design.py": "tip_error",
}


def test_the_examples_are_the_documented_ones():
    assert {p.name for p in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, subprocess_env, repo_root):
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=subprocess_env,
                         cwd=repo_root, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert EXPECTED[script.name] in out.stdout
    assert "Traceback" not in out.stderr
