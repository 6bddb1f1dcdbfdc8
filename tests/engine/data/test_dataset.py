"""The SyMo data protocol: ranges, constant controls, seeds, windows, .npz round trip and bad files."""

import numpy as np
import torch
import pytest

from engine.data import DatasetConfig, DatasetError, PROTOCOLS, generate_dataset, load_dataset, make_windows, save_dataset

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU


@pytest.fixture(scope="module")
def small():
    return generate_dataset(DatasetConfig(system="pendulum", train_trajectories=6, test_trajectories=4,
                                          long_term_trajectories=3, long_term_steps=40, seed=5))


def test_protocol_shapes_ranges_and_controls(small):
    ds = small
    assert ds.train_x.shape == (6, 34, 2) and ds.test_x.shape == (4, 34, 2) and ds.long_x.shape == (3, 42, 2)
    P = PROTOCOLS["pendulum"]
    x0 = np.concatenate([ds.train_x[:, 0], ds.test_x[:, 0]])
    assert np.all(x0 >= P.state_low) and np.all(x0 <= P.state_high)
    assert np.all(ds.train_u == ds.train_u[:, :1]) and np.all(np.abs(ds.train_u) <= 2.0)
    assert np.all(ds.long_u == 0.0)
    assert ds.h == 0.1
    # the trajectories follow the system: one more point from the last state equals the next point
    sim = ds.system.simulate(ds.train_x[:, 10], ds.train_u[:, 10], ds.h, 1)[:, 1]
    np.testing.assert_allclose(sim, ds.train_x[:, 11], atol=1e-7)


def test_seeds_reproduce_and_differ(small):
    again = generate_dataset(small.config)
    np.testing.assert_array_equal(again.train_x, small.train_x)
    other = generate_dataset(DatasetConfig(**{**small.config.to_dict(), "seed": 6}))
    assert not np.allclose(other.train_x[:, 0], small.train_x[:, 0])


def test_windows_are_consecutive_points(small):
    w = make_windows(small.train_x, small.train_u, 1)
    assert len(w) == 6 * 32
    x = small.train_x
    np.testing.assert_allclose(w.q_prev.numpy()[:32, 0], x[0, :32, 0], rtol=1e-6)
    np.testing.assert_allclose(w.q.numpy()[:32, 0], x[0, 1:33, 0], rtol=1e-6)
    np.testing.assert_allclose(w.q_next.numpy()[32:64, 0], x[1, 2:34, 0], rtol=1e-6)
    np.testing.assert_allclose(w.qd_next.numpy()[:32, 0], x[0, 2:34, 1], rtol=1e-6)


def test_save_load_round_trip_and_errors(small, tmp_path):
    path = save_dataset(small, tmp_path / "d.npz")
    assert (tmp_path / "d.json").exists()
    back = load_dataset(path)
    for k in ("train_x", "train_u", "test_x", "test_u", "long_x", "long_u"):
        np.testing.assert_array_equal(getattr(back, k), getattr(small, k))
    assert back.config == small.config
    arrays = dict(np.load(path))
    arrays["test_u"] = arrays["test_u"][:, :3]
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(DatasetError, match="test_u"):
        load_dataset(path)
    del arrays["long_x"]
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(DatasetError, match="long_x"):
        load_dataset(path)
    with pytest.raises(DatasetError, match="not found"):
        load_dataset(tmp_path / "missing.npz")
