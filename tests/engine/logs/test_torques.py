"""The torque-unit warning and the sliding-sample RMSE (engine.logs.torques)."""

from __future__ import annotations

import numpy as np
import pytest

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
    # a light wrist joint (modelled torques a hundredth of the others') whose log holds the friction the
    # model lacks (8 times its modelled torque, as the Panda's joint 7 on the shipped log) is no unit error
    model4 = np.column_stack([model, rng.normal(size=500) * 0.05])
    logged4 = np.column_stack([model * 1.05, model4[:, 3] + 0.4 * np.sign(rng.normal(size=500))])
    assert torque_scale_warning(logged4, model4, names + ["wrist"]) is None
    # ... but the same joint logged in mN m is
    logged4[:, 3] *= 1000.0
    msg = torque_scale_warning(logged4, model4, names + ["wrist"])
    assert msg is not None and "wrist x" in msg and "j1" not in msg.split("per joint:")[1]


def test_sliding_rmse_counts_each_joint_where_it_slides():
    from engine.logs.torques import sliding_rmse

    qd = np.array([[0.0, 1.0], [0.5, -0.05], [-0.2, 0.3], [0.09, -2.0]])
    res = np.array([[9.0, 1.0], [3.0, 9.0], [4.0, 2.0], [9.0, 2.0]])
    total, per_joint = sliding_rmse(res, qd)
    # joint 0 slides in rows 1 and 2 (|qd| >= 0.1), joint 1 in rows 0, 2 and 3; the big residuals are at rest
    assert per_joint == pytest.approx([np.sqrt((9 + 16) / 2), np.sqrt((1 + 4 + 4) / 3)])
    assert total == pytest.approx(np.sqrt((9 + 16 + 1 + 4 + 4) / 5))
    _, never = sliding_rmse(res, np.zeros_like(qd))
    assert all(np.isnan(v) for v in never)
