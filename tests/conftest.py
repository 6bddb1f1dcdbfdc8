"""Shared fixtures: every test gets its own settings file and log folder.

GUI tests run in real windows on the virtual screen that pytest-xvfb starts.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# run folders the app places itself (engine.paths.user_runs_dir) stay out of the user's data folder,
# module-scoped fixtures included
os.environ.setdefault("LAGRANGE_RUNS_DIR", tempfile.mkdtemp(prefix="lagrange-test-runs-"))


@pytest.fixture(autouse=True)
def _isolated_user_files(tmp_path_factory, monkeypatch):
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("LAGRANGE_SETTINGS_FILE", str(base / "settings.ini"))
    monkeypatch.setenv("LAGRANGE_LOG_DIR", str(base / "logs"))
    yield


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def python_exe() -> str:
    return sys.executable


@pytest.fixture
def subprocess_env():
    """Environment for child processes: the repo importable, the display inherited."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
