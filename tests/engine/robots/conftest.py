"""Fixtures of the robot tests."""

from __future__ import annotations

import pytest

from engine.robots import compiled_dynamics
from engine.robots.backends import torch_only


@pytest.fixture(params=["compiled", "torch"])
def dynamics_path(request):
    """Runs a test twice: through the compiled kernels (calls without derivatives take them by
    default) and through the torch algorithms (``torch_only``), so both meet the references."""
    if request.param == "compiled":
        assert compiled_dynamics.available(), "numba is a dependency: the compiled kernels must be available"
        yield "compiled"
    else:
        with torch_only():
            yield "torch"
