"""Fixtures of the robot tests."""

from __future__ import annotations

from pathlib import Path

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


@pytest.fixture(scope="module", params=["chain", "floating", "tree"])
def ball_pair(request):
    """Our model and Pinocchio's (model, data) of one MJCF file with ball joints
    (tests/engine/robots/mjcf/ball_*.xml; ``<joint type="ball">`` is Pinocchio's JointModelSpherical)."""
    import numpy as np
    import pinocchio as pin

    from engine.robots import RobotModel

    path = Path(__file__).parent / "mjcf" / f"ball_{request.param}.xml"
    model = RobotModel.from_file(path)
    pm = pin.buildModelFromMJCF(str(path))
    if request.param == "tree":
        pm.gravity.linear = np.array([0.3, -0.2, -9.81])     # Pinocchio's MJCF reader keeps its own
    assert (pm.nq, pm.nv) == (model.nq, model.nv)
    assert sum(pm.joints[i].shortname() == "JointModelSpherical" for i in range(pm.njoints)) \
        == len(model.ball_joint_names) >= 2
    return model, pm, pm.createData()
