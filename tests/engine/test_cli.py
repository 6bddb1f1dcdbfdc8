"""`python -m engine`: the command groups and the self-test job."""

from __future__ import annotations

import json
import subprocess
import sys


def test_help_lists_the_command_groups(subprocess_env):
    out = subprocess.run([sys.executable, "-m", "engine", "--help"], capture_output=True, text=True,
                         env=subprocess_env, check=True).stdout
    for group in ("bench", "selftest"):
        assert group in out


def test_selftest_json(subprocess_env):
    out = subprocess.run([sys.executable, "-m", "engine", "selftest", "--json"], capture_output=True,
                         text=True, env=subprocess_env, check=True).stdout
    result = json.loads(out)
    assert result["ok"] is True and result["energy_drift"] < 1e-6
