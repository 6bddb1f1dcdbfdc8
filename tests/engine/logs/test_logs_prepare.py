"""Preparation against analytic signals: resampling, smoothing, finite differences, splits, units."""

from __future__ import annotations

import numpy as np
import pytest

from engine.logs import (
    LogError,
    LogMapping,
    LogTable,
    PrepareConfig,
    load_prepared,
    prepare_log,
    smoothing_preview,
)
from engine.logs.prepare import differentiate, resample, split_masks

W = 2.0  # rad/s


def _sine_table(n=2001, duration=10.0, noise=0.0, seed=0, jitter=0.0, t_unit=1.0, q_unit=1.0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, duration, n)
    t[1:-1] += rng.uniform(-jitter, jitter, n - 2)
    q = np.sin(W * t) + rng.normal(0, noise, n)
    u = np.cos(0.5 * t)
    return LogTable(["time", "q", "u"], {"time": t / t_unit, "q": q / q_unit, "u": u}, source="sine.csv")


def test_resample_is_exact_for_linear_signals_and_close_for_sines():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 5, 300))
    grid = np.linspace(t[0], t[-1], 101)
    np.testing.assert_allclose(resample(t, 3 * t - 1, grid), 3 * grid - 1, atol=1e-12)
    cubic = resample(t, np.sin(t), grid, "cubic")
    linear = resample(t, np.sin(t), grid, "linear")
    assert np.abs(cubic - np.sin(grid)).max() < 1e-5 < np.abs(linear - np.sin(grid)).max()


def _rms(e):
    return float(np.sqrt(np.mean(e ** 2)))


def test_smoothing_and_differences_recover_cosine_from_noisy_sine():
    table = _sine_table(noise=0.002, jitter=0.001)
    mapping = LogMapping(time="time", q=["q"], u=["u"])
    p = prepare_log(table, mapping, PrepareConfig(dt=0.005, window=81, polyorder=3, derivative="savgol"))
    assert p.dt == 0.005 and p.t[0] == 0.0 and p.n_samples == 2001
    inner = slice(40, -40)
    t = p.t[inner]
    assert _rms(p.q[inner, 0] - np.sin(W * t)) < 1e-3          # below the noise (2e-3)
    assert _rms(p.qd[inner, 0] - W * np.cos(W * t)) < 0.01      # amplitude 2
    assert _rms(p.qdd[inner, 0] + W**2 * np.sin(W * t)) < 0.1  # amplitude 4
    np.testing.assert_allclose(p.u[:, 0], np.cos(0.5 * p.t), atol=1e-5)
    # smoothing is what makes this work: raw finite differences of the noisy signal are far off
    raw = prepare_log(table, mapping, PrepareConfig(dt=0.005, smooth=False))
    assert _rms(raw.qd[inner, 0] - W * np.cos(W * t)) > 0.1
    # the finite-difference path on the smoothed signal agrees with the Savitzky-Golay derivative
    fd = prepare_log(table, mapping, PrepareConfig(dt=0.005, window=81, polyorder=3))
    assert _rms(fd.qd[inner, 0] - W * np.cos(W * t)) < 0.01


def test_finite_differences_are_second_order():
    errors = []
    for dt in (0.02, 0.01):
        t = np.arange(0, 3, dt)
        qd = differentiate(np.sin(W * t)[:, None], dt)[:, 0]
        errors.append(np.abs(qd - W * np.cos(W * t)).max())
    assert 3.5 < errors[0] / errors[1] < 4.5  # halving dt quarters the error


def test_finite_difference_path_on_clean_signal():
    p = prepare_log(_sine_table(), LogMapping(time="time", q=["q"]),
                    PrepareConfig(dt=0.005, smooth=False, derivative="finite_difference"))
    np.testing.assert_allclose(p.qd[:, 0], W * np.cos(W * p.t), atol=2e-4)
    np.testing.assert_allclose(p.qdd[2:-2, 0], -W**2 * np.sin(W * p.t[2:-2]), atol=5e-3)


def test_units_are_converted_before_preparation():
    # time in ms, angle in degrees: prepared signals are in s and rad
    table = _sine_table(t_unit=1e-3, q_unit=np.pi / 180)
    mapping = LogMapping(time="time", q=["q"], units={"time": "ms", "q": "deg"})
    p = prepare_log(table, mapping, PrepareConfig(dt=0.01, smooth=False))
    np.testing.assert_allclose(p.q[:, 0], np.sin(W * p.t), atol=1e-4)
    assert p.t[-1] == pytest.approx(10.0)


def test_smoothing_preview_reduces_noise():
    table = _sine_table(noise=0.05, seed=3)
    prev = smoothing_preview(table, LogMapping(time="time", q=["q"]), PrepareConfig(dt=0.005, window=51))
    truth = np.sin(W * prev["t"])
    raw_err = np.sqrt(np.mean((prev["raw"] - truth) ** 2))
    smooth_err = np.sqrt(np.mean((prev["smoothed"] - truth) ** 2))
    assert raw_err == pytest.approx(0.05, rel=0.15)
    assert smooth_err < raw_err / 3


def test_logged_velocities_are_used_when_mapped():
    t = np.linspace(0, 5, 501)
    table = LogTable(["t", "q", "v"], {"t": t, "q": np.sin(t), "v": np.full_like(t, 7.0)})
    p = prepare_log(table, LogMapping(time="t", q=["q"], qd=["v"]), PrepareConfig(smooth=False))
    np.testing.assert_allclose(p.qd, 7.0)
    assert p.description["qd_source"] == "logged"
    np.testing.assert_allclose(p.qdd, 0.0, atol=1e-9)


def test_unwrap_angles():
    t = np.linspace(0, 4, 401)
    angle = 3.0 * t  # spins: wrapped into [-pi, pi)
    wrapped = (angle + np.pi) % (2 * np.pi) - np.pi
    table = LogTable(["t", "yaw"], {"t": t, "yaw": wrapped})
    mapping = LogMapping(time="t", q=["yaw"], units={"yaw": "rad"})
    p = prepare_log(table, mapping, PrepareConfig(unwrap_angles=True, smooth=False))
    np.testing.assert_allclose(p.qd[:, 0], 3.0, atol=1e-9)
    p = prepare_log(table, mapping, PrepareConfig(unwrap_angles=False, smooth=False))
    assert np.abs(p.qd[:, 0]).max() > 100  # the wraps show up as huge velocities


def test_split_by_time_ranges():
    t = np.arange(0, 10.001, 0.5)
    train, val = split_masks(t, PrepareConfig(train_ranges=[[0, 4], [6, 10]], val_ranges=[[4.5, 5.5]]))
    assert t[val].tolist() == [4.5, 5.0, 5.5] and not (train & val).any() and train.sum() == 18
    train, val = split_masks(t, PrepareConfig(val_ranges=[[8, 10]]))
    assert (train == ~val).all() and t[val].min() == 8
    train, val = split_masks(t, PrepareConfig(val_fraction=0.25))
    assert t[val].min() == 7.5 and (train == ~val).all()
    with pytest.raises(LogError, match="overlap"):
        split_masks(t, PrepareConfig(train_ranges=[[0, 6]], val_ranges=[[5, 7]]))
    with pytest.raises(LogError) as info:
        split_masks(t, PrepareConfig(train_ranges=[[20, 30]]))
    assert info.value.column == "train_ranges"


def test_config_errors_name_the_field():
    table = _sine_table(n=50)
    mapping = LogMapping(time="time", q=["q"])
    for kwargs, field in [({"window": 4}, "window"), ({"polyorder": 11}, "polyorder"), ({"dt": -1.0}, "dt"),
                          ({"interpolation": "spline9"}, "interpolation"), ({"window": 101}, "window")]:
        with pytest.raises(LogError) as info:
            prepare_log(table, mapping, PrepareConfig(**kwargs))
        assert info.value.column == field


def test_prepared_log_saves_and_loads_with_hash(tmp_path):
    table = _sine_table(noise=0.01)
    mapping = LogMapping(time="time", q=["q"], u=["u"])
    p = prepare_log(table, mapping, PrepareConfig(dt=0.01, val_ranges=[[8, 10]]))
    again = prepare_log(table, mapping, PrepareConfig(dt=0.01, val_ranges=[[8, 10]]))
    assert p.data_hash == again.data_hash
    other = prepare_log(table, mapping, PrepareConfig(dt=0.01, val_ranges=[[7, 10]]))
    assert other.data_hash != p.data_hash
    loaded = load_prepared(p.save(tmp_path / "p.npz"))
    for key, value in p.arrays().items():
        np.testing.assert_array_equal(getattr(loaded, key), value)
    assert loaded.data_hash == p.data_hash and loaded.description["mapping"] == mapping.to_dict()
    assert [(s.start, s.stop) for s in p.segments(p.val_mask)] == [(800, 1001)]


def test_sparse_multi_rate_table_is_interpolated_per_column():
    # two topics at 100 Hz and 30 Hz, as a bag reader returns them
    t1 = np.arange(0, 2, 0.01)
    t2 = np.arange(0.005, 2, 1 / 30)
    t = np.concatenate([t1, t2])
    order = np.argsort(t, kind="stable")
    q = np.concatenate([np.sin(t1), np.full(len(t2), np.nan)])[order]
    u = np.concatenate([np.full(len(t1), np.nan), 2 * t2])[order]
    table = LogTable(["t", "q", "u"], {"t": t[order], "q": q, "u": u}, sparse=True)
    p = prepare_log(table, LogMapping(time="t", q=["q"], u=["u"]), PrepareConfig(dt=0.01, smooth=False))
    # the grid covers only the time both signals span: nothing is extrapolated
    assert p.t[0] == pytest.approx(0.005) and p.t[-1] <= t2[-1]
    np.testing.assert_allclose(p.u[:, 0], 2 * p.t, atol=1e-9)
    np.testing.assert_allclose(p.q[:, 0], np.sin(p.t), atol=2e-5)
