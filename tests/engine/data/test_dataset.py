"""The SyMo data protocol: ranges, constant controls, seeds, windows, .npz round trip and bad files."""

import numpy as np
import pytest
import torch

from engine.data import (
    PROTOCOLS,
    DatasetConfig,
    DatasetError,
    generate_dataset,
    load_dataset,
    make_windows,
    save_dataset,
)
from engine.data.dataset import gym_random_state, paper_initial_states
from engine.io import read_json, write_json

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU


@pytest.fixture(scope="module")
def small():
    return generate_dataset(DatasetConfig(system="pendulum", train_trajectories=6, test_trajectories=4,
                                          long_term_trajectories=3, long_term_steps=40, seed=5))


def test_protocol_shapes_ranges_and_controls(small):
    ds = small
    assert ds.config.sampler == "paper"
    assert ds.train_x.shape == (6, 34, 2) and ds.test_x.shape == (4, 34, 2) and ds.long_x.shape == (3, 42, 2)
    P = PROTOCOLS["pendulum"]
    # the paper's trajectories start one step after the drawn state
    x0 = paper_initial_states("pendulum", 5, 10)
    assert np.all(x0 >= P.state_low) and np.all(x0 <= P.state_high)
    first = ds.system.simulate(x0, np.concatenate([ds.train_u[:, 0], ds.test_u[:, 0]]), ds.h, 1)[:, 1]
    np.testing.assert_allclose(first, np.concatenate([ds.train_x[:, 0], ds.test_x[:, 0]]), atol=1e-9)
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


# -- the paper repository's draws (ssantos97/SyMo, Experiments_*/data.py, Code/myenv/*.py) ---------

def test_gym_seeding_matches_gym_021():
    """gym <= 0.21 ``seeding.np_random(seed)``: RandomState seeded with the 32-bit words of
    sha512(str(seed))[:8] (gym pads the 8 bytes to 12, which only adds a zero word)."""
    import hashlib
    import struct
    for seed in (0, 1, 230):
        b = hashlib.sha512(str(seed).encode("utf8")).digest()[:8] + b"\0" * 4
        words = list(struct.unpack("3I", b))
        big = words[0] + (words[1] << 32)
        ints = []
        while big > 0:
            big, w = divmod(big, 2 ** 32)
            ints.append(w)
        ref = np.random.RandomState()
        ref.seed(ints)
        np.testing.assert_array_equal(gym_random_state(seed).random_sample(5), ref.random_sample(5))
    with pytest.raises(ValueError):
        gym_random_state(-1)


def test_paper_cartpole_reset_order_and_ranges():
    # gym CartPole reset draws x, x_dot, theta, theta_dot, then stores (x, theta, x_dot, theta_dot) as float32
    x0 = paper_initial_states("cartpole", 1, 16)
    rs = gym_random_state(1)
    ref = []
    for _ in range(16):
        x = rs.uniform(low=-0.5, high=0.5)
        xd = rs.uniform(low=-0.05, high=0.05)
        th = rs.uniform(low=-3.14, high=3.14)
        thd = rs.uniform(low=-3, high=3)
        ref.append(np.array([x, th, xd, thd], dtype=np.float32))
    np.testing.assert_array_equal(x0, np.array(ref, dtype=np.float64))
    P = PROTOCOLS["cartpole"]
    assert np.all(x0 >= np.float32(P.state_low)) and np.all(x0 <= np.float32(P.state_high))
    # pinned: the paper's first long-term state (seed 1), from an independent re-run of its sample_gym
    np.testing.assert_allclose(x0[0], [0.30700, -1.94000, 0.00100, -1.87900], atol=6e-4)


def test_paper_controls_and_one_stream_for_train_and_test():
    a = generate_dataset(DatasetConfig(system="cartpole", train_trajectories=3, test_trajectories=3,
                                       long_term_trajectories=2, long_term_steps=5, steps=4))
    b = generate_dataset(DatasetConfig(system="cartpole", train_trajectories=2, test_trajectories=4,
                                       long_term_trajectories=2, long_term_steps=5, steps=4))
    np.testing.assert_array_equal(
        np.concatenate([a.train_x, a.test_x]), np.concatenate([b.train_x, b.test_x])
    )
    # get_dataset: np.random.seed(seed); u = uniform(-2, 2, (train + test, 1)), constant along each trajectory
    np.random.seed(0)
    u = np.random.uniform(-2, 2, (6, 1))
    np.testing.assert_array_equal(np.concatenate([a.train_u, a.test_u])[:, :, 0], np.repeat(u, 6, axis=1))
    assert np.all(a.long_u == 0.0) and a.long_x.shape == (2, 7, 4)
    np.testing.assert_allclose(a.long_x[:, 0], a.system.simulate(paper_initial_states("cartpole", 1, 2),
                                                                 np.zeros((2, 1)), 0.05, 1)[:, 1], atol=1e-9)


def test_numpy_sampler_and_legacy_files(small, tmp_path):
    ds = generate_dataset(DatasetConfig(system="pendulum", train_trajectories=3, test_trajectories=2,
                                        long_term_trajectories=2, long_term_steps=5, sampler="numpy"))
    P = PROTOCOLS["pendulum"]
    x0 = np.concatenate([ds.train_x[:, 0], ds.test_x[:, 0]])   # numpy sampler: the drawn state comes first
    assert np.all(x0 >= P.state_low) and np.all(x0 <= P.state_high)
    with pytest.raises(ValueError, match="sampler"):
        DatasetConfig(sampler="gym")
    # a file saved before ``sampler`` existed was numpy-sampled, and loads as such
    path = save_dataset(ds, tmp_path / "old.npz")
    meta = read_json(path.with_suffix(".json"))
    del meta["config"]["sampler"]
    write_json(path.with_suffix(".json"), meta)
    assert load_dataset(path).config.sampler == "numpy"
