"""The shipped example logs: present, small, documented, readable with their mappings, and physically right."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.data.example_logs import (
    EXAMPLES,
    CartPoleLogConfig,
    PendulumLogConfig,
    RCCarLogConfig,
    cartpole_log,
    pendulum_log,
    rc_car_log,
    write_example,
)
from engine.logs import LogMapping, PrepareConfig, find_problems, prepare_log, read_log
from engine.paths import resource


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_shipped_log_is_small_documented_and_clean(name):
    csv = resource("logs", f"{name}.csv")
    assert csv.stat().st_size < 1_000_000
    readme = resource("logs", f"{name}.README.md").read_text()
    assert "How it was made" in readme and "seed" in readme and "Noise" in readme
    table = read_log(csv)
    assert find_problems(table, LogMapping.load(resource("logs", f"{name}.mapping.json")).time) == []
    mapping = LogMapping.load(resource("logs", f"{name}.mapping.json"))
    prepared = prepare_log(table, mapping, PrepareConfig(window=15, unwrap_angles=True))
    assert np.isfinite(prepared.q).all() and np.isfinite(prepared.qd).all()
    assert prepared.q.shape[1] == len(mapping.q) and prepared.u.shape[1] == len(mapping.u)


def test_generators_are_deterministic_and_write_files(tmp_path):
    cfg = replace(PendulumLogConfig(), duration=2.0)
    a, b = pendulum_log(cfg), pendulum_log(cfg)
    for key in a.columns:
        np.testing.assert_array_equal(a.columns[key], b.columns[key])
    other = pendulum_log(replace(cfg, seed=5))
    assert not np.array_equal(other.columns["theta"], a.columns["theta"])
    paths = write_example(a, tmp_path)
    assert [p.name for p in paths] == ["pendulum_friction.csv", "pendulum_friction.mapping.json",
                                       "pendulum_friction.README.md"]
    table = read_log(paths[0])
    assert table.columns == ["t", "theta", "torque"] and table.n_rows == 201
    assert (paths[0].stat().st_mode & 0o444) == 0o444  # shipped files are readable by everyone


def test_pendulum_log_obeys_the_documented_equation_with_friction():
    """Independent check of the shipped data: I thdd = m g l/2 sin th + u - b thd - c tanh(thd/v)."""
    cfg = PendulumLogConfig()
    table = read_log(resource("logs", "pendulum_friction.csv"))
    mapping = LogMapping.load(resource("logs", "pendulum_friction.mapping.json"))
    p = prepare_log(table, mapping, PrepareConfig(dt=0.01, window=15, polyorder=3, derivative="savgol"))
    th, thd, thdd, u = p.q[50:-50, 0], p.qd[50:-50, 0], p.qdd[50:-50, 0], p.u[50:-50, 0]
    m = l = 1.0
    model = (
        m * 9.81 * l / 2 * np.sin(th)
        + u
        - cfg.viscous * thd
        - cfg.coulomb * np.tanh(thd / cfg.coulomb_velocity)
    )
    no_friction = m * 9.81 * l / 2 * np.sin(th) + u
    rms = lambda e: float(np.sqrt(np.mean(e ** 2)))
    inertia = m * l**2 / 3
    assert rms(inertia * thdd - model) < 0.05 * rms(model)
    assert rms(inertia * thdd - model) < 0.4 * rms(inertia * thdd - no_friction)  # friction is in the data


def test_pendulum_noise_matches_its_readme():
    cfg = replace(PendulumLogConfig(), duration=5.0, encoder_counts=10**9)
    log = pendulum_log(cfg)
    err = log.columns["theta"] - log.truth["theta"]
    assert np.std(err) == pytest.approx(cfg.angle_noise, rel=0.1)
    dt = np.diff(log.columns["t"])
    assert dt.min() > 0.01 - 2 * cfg.jitter - 1e-12 and dt.max() < 0.01 + 2 * cfg.jitter + 1e-12


def test_cartpole_log_units_and_dropped_samples():
    cfg = replace(CartPoleLogConfig(), duration=3.0, dropped_samples=3)
    log = cartpole_log(cfg)
    assert len(log.columns["time_ms"]) == 301 - 3
    np.testing.assert_allclose(np.radians(log.columns["pole_angle_deg"]), log.truth["theta"], atol=0.01)
    np.testing.assert_allclose(log.columns["cart_x_mm"] / 1e3, log.truth["x"], atol=2e-3)
    steps = np.diff(log.columns["time_ms"])
    assert set(np.unique(steps)) <= {10.0, 20.0} and (steps == 20.0).sum() == 3


def test_rc_car_log_follows_the_car_model():
    """The recorded poses satisfy the car model's own step: replaying the logged (clean) controls
    through engine.systems.rc_car.car_step reproduces the clean trajectory."""
    import torch

    from engine.systems.rc_car import CarParams, car_step

    cfg = replace(RCCarLogConfig(), duration=2.0)
    log = rc_car_log(cfg)
    params = CarParams()
    pose = torch.zeros(3, dtype=torch.float64)
    v = torch.zeros(3, dtype=torch.float64)
    controls = torch.as_tensor(log.truth["controls"][1::params.substeps])
    for u in controls:
        step = car_step(pose, v, u, params)
        pose, v = step.pose, step.v
    np.testing.assert_allclose(pose.numpy(), log.truth["pose"][-1], atol=1e-9)
    assert np.all(np.abs(log.columns["yaw"]) <= np.pi)


# -- Panda: checked with Pinocchio (an independent rigid-body library) --------------------------

def _panda_prepared_and_pinocchio_models():
    import json
    import re

    import pinocchio as pin

    table = read_log(resource("logs", "panda_joints.csv"))
    mapping = LogMapping.load(resource("logs", "panda_joints.mapping.json"))
    prepared = prepare_log(table, mapping, PrepareConfig(window=31, polyorder=5, derivative="savgol",
                                                         use_logged_velocities=False, val_fraction=0.3))
    params = json.loads(resource("logs", "panda_joints.params.json").read_text())
    from engine.paths import urdf_dir

    xml = (urdf_dir() / "panda.urdf").read_text()

    def rnea_with(masses: dict) -> np.ndarray:
        text = xml
        for link, m in masses.items():
            text = re.sub(
                rf'(<link name="{link}">.*?<mass value=")[^"]*(")',
                lambda mo, m=m: mo.group(1) + repr(float(m)) + mo.group(2),
                text,
                count=1,
                flags=re.DOTALL,
            )
        model = pin.buildModelFromXML(text)
        data = model.createData()
        return np.array([pin.rnea(model, data, q, qd, qdd)
                         for q, qd, qdd in zip(prepared.q, prepared.qd, prepared.qdd)])

    return prepared, params, rnea_with


def test_panda_log_matches_pinocchio_and_its_masses_are_identifiable():
    prepared, params, rnea_with = _panda_prepared_and_pinocchio_models()
    sigma = np.asarray(params["torque_noise"])
    inner = slice(20, -20)
    true_masses = dict(zip(params["links"], params["mass"]))
    residual = prepared.u - rnea_with(true_masses)
    rms = np.sqrt(np.mean(residual[inner] ** 2, axis=0))
    np.testing.assert_allclose(rms, sigma, rtol=0.1)  # the logged torques are the model's plus the noise
    nominal = dict(zip(params["links"], params["nominal_mass"]))
    base = rnea_with(nominal)
    nominal_rms = np.sqrt(np.mean((prepared.u - base)[inner] ** 2, axis=0))
    assert nominal_rms[1] > 5 * sigma[1] and nominal_rms[3] > 5 * sigma[3]  # the URDF's masses are off
    # least squares for the masses of links 2-7 on the training part (torques are affine in each mass)
    links = params["links"][1:]
    A = np.stack([rnea_with({**nominal, link: 2 * nominal[link]}) - base for link in links], axis=-1)
    train = prepared.train_mask.copy()
    train[:20] = False
    w = np.tile(1 / sigma, int(train.sum()))
    scale = np.linalg.lstsq(A[train].reshape(-1, len(links)) * w[:, None],
                            (prepared.u - base)[train].reshape(-1) * w, rcond=None)[0] + 1
    np.testing.assert_allclose(scale, params["scale"][1:], rtol=0.05)
    predicted = base + A @ (scale - 1)
    val_rms = np.sqrt(np.mean((prepared.u - predicted)[prepared.val_mask][:-20] ** 2, axis=0))
    np.testing.assert_allclose(val_rms, sigma, rtol=0.1)  # held-out error at the noise level


def test_panda_generator_stays_within_limits_and_is_consistent():
    from engine.data.example_logs import PandaLogConfig, panda_log
    from engine.robots import RobotModel

    cfg = replace(PandaLogConfig(), duration=6.0)
    log = panda_log(cfg)
    q, qd, qdd = log.truth["q"], log.truth["qd"], log.truth["qdd"]
    from engine.paths import urdf_dir

    limits = RobotModel.from_urdf(urdf_dir() / "panda.urdf").joint_limits
    assert np.all(q > limits.lower.numpy()) and np.all(q < limits.upper.numpy())
    assert np.all(np.abs(qd) < limits.velocity.numpy())
    np.testing.assert_allclose(qd[0], 0.0, atol=1e-12)  # starts at rest
    dt = 1 / cfg.rate
    np.testing.assert_allclose(np.gradient(q, dt, axis=0)[2:-2], qd[2:-2], atol=1e-3)
    np.testing.assert_allclose(np.gradient(qd, dt, axis=0)[2:-2], qdd[2:-2], atol=1e-3)
    assert log.columns["tau1"].shape == (601,) and len(log.columns) == 22
