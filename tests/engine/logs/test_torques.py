"""The torque-unit warning (engine.logs.torques.torque_scale_warning)."""

from __future__ import annotations

import numpy as np

from engine.logs.torques import torque_scale_warning


def test_torques_far_from_the_models_scale_are_named():
    rng = np.random.default_rng(0)
    model = rng.normal(size=(500, 3)) * np.array([5.0, 10.0, 1.0])
    names = ["j1", "j2", "j3"]
    assert torque_scale_warning(model * 1.1 + rng.normal(size=model.shape) * 0.05, model, names) is None
    msg = torque_scale_warning(model * 1000.0, model, names)      # mN m logged as N m
    assert msg is not None and "1e+03 times" in msg and "j1 x1e+03" in msg and "N m, not mN m" in msg
    # one joint off by its gear ratio
    wrong = model.copy()
    wrong[:, 2] /= 50.0
    msg = torque_scale_warning(wrong, model, names)
    assert msg is not None and "j3 x0.02" in msg and "j1" not in msg.split("per joint:")[1]
