"""Fuzz tests run with a small memory budget, so an estimate refuses before anything big is made."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _small_memory_budget(monkeypatch):
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "256M")
