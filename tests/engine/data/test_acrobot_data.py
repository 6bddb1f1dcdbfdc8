"""The acrobot's paper data (ssantos97/SyMo, Experiments_acrobot/data.py): gym's reset draws, the
speed rejection of ``sample_gym`` and its RNG stream; and the pendulum/cart-pole data unchanged."""

import dataclasses

import numpy as np
import pytest
import torch

import engine.data.dataset as dataset_module
from engine.data import PROTOCOLS, DatasetConfig, SystemProtocol, generate_dataset
from engine.data.dataset import gym_random_state, paper_initial_states
from engine.systems import get_system

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU


def _small(system, **kw):
    return DatasetConfig(**{"system": system, "train_trajectories": 3, "test_trajectories": 2, "steps": 4,
                            "long_term_trajectories": 2, "long_term_steps": 6, **kw})


def _sample_gym_reference(seed, u, steps, limits, h=0.05):
    """Experiments_acrobot/data.py ``sample_gym``, one trial at a time: reset (a new state from the
    env stream) until every recorded speed is strictly inside (-MAX + 0.001, MAX - 0.001)."""
    system = get_system("acrobot")
    env = gym_random_state(seed)
    trajs, x0s, draws = [], [], []
    for trial in range(len(u)):
        n = 0
        while True:
            x0 = env.uniform(low=-3.14, high=3.14, size=(4,))
            n += 1
            traj = system.simulate(x0[None], u[trial][None], h, steps)[0, 1:]   # observations after each step
            if (np.amax(traj[:, 2]) < limits[0] - 0.001 and np.amin(traj[:, 2]) > -limits[0] + 0.001
                    and np.amax(traj[:, 3]) < limits[1] - 0.001 and np.amin(traj[:, 3]) > -limits[1] + 0.001):
                break
        trajs.append(traj)
        x0s.append(x0)
        draws.append(n)
    return np.stack(trajs), np.stack(x0s), draws


def test_acrobot_protocol_and_gym_reset_draws():
    P = PROTOCOLS["acrobot"]
    assert P.h == 0.05 and P.hidden == 256 and P.learning_rate == 1e-3
    assert P.state_low == (-3.14,) * 4 and P.state_high == (3.14,) * 4
    np.testing.assert_allclose(P.reject_speed, (4 * np.pi, 9 * np.pi), rtol=1e-15)
    assert PROTOCOLS["pendulum"].reject_speed is None and PROTOCOLS["cartpole"].reject_speed is None
    # gym Acrobot reset: self.np_random.uniform(low=-3.14, high=3.14, size=(4,)), state (th1, th2, thd1, thd2)
    for seed in (0, 1):
        x0 = paper_initial_states("acrobot", seed, 3)
        np.testing.assert_array_equal(x0[0], gym_random_state(seed).uniform(-3.14, 3.14, size=4))
        rs = gym_random_state(seed)
        np.testing.assert_array_equal(
            x0, np.stack([rs.uniform(low=-3.14, high=3.14, size=(4,)) for _ in range(3)])
        )
    with pytest.raises(ValueError, match="reject_speed"):
        SystemProtocol(h=0.1, state_low=(0.0, 0.0), state_high=(1.0, 1.0), hidden=8, learning_rate=1e-3,
                       reject_speed=(1.0, 2.0))


def test_acrobot_dataset_shapes_controls_and_first_points():
    ds = generate_dataset(_small("acrobot", steps=32))   # the paper's 32 steps (+2)
    assert ds.h == 0.05
    assert ds.train_x.shape == (3, 34, 4) and ds.test_x.shape == (2, 34, 4) and ds.long_x.shape == (2, 8, 4)
    assert ds.train_u.shape == (3, 34, 1) and ds.long_u.shape == (2, 8, 1)
    # get_dataset: np.random.seed(seed); u_factor = uniform(-2, 2, (samples, 1)), constant per trajectory
    u = np.random.RandomState(0).uniform(-2, 2, (5, 1))
    np.testing.assert_array_equal(np.concatenate([ds.train_u, ds.test_u])[:, :, 0], np.repeat(u, 34, axis=1))
    assert np.all(ds.long_u == 0.0)
    # no speed comes near gym's limits here: the kept states are the first draws, recorded one step after
    x0 = paper_initial_states("acrobot", 0, 5)
    first = ds.system.simulate(x0, u, 0.05, 1)[:, 1]
    np.testing.assert_allclose(np.concatenate([ds.train_x[:, 0], ds.test_x[:, 0]]), first, atol=1e-9)
    long0 = ds.system.simulate(paper_initial_states("acrobot", 1, 2), np.zeros((2, 1)), 0.05, 1)[:, 1]
    np.testing.assert_allclose(ds.long_x[:, 0], long0, atol=1e-9)
    # the trajectories follow the acrobot
    sim = ds.system.simulate(ds.train_x[:, 20], ds.train_u[:, 20], 0.05, 1)[:, 1]
    np.testing.assert_allclose(sim, ds.train_x[:, 21], atol=1e-7)


def test_rejected_trials_are_redrawn_from_the_env_stream(monkeypatch):
    """With small speed limits, some trials are rejected: each takes the stream's next draw(s)
    before the next trial draws, and keeps its control; the result is sample_gym's, trial by trial."""
    limits = (3.0, 5.0)
    monkeypatch.setitem(PROTOCOLS, "acrobot", dataclasses.replace(PROTOCOLS["acrobot"], reject_speed=limits))
    cfg = _small("acrobot", train_trajectories=4, test_trajectories=4, long_term_trajectories=1)
    ds = generate_dataset(cfg)
    x = np.concatenate([ds.train_x, ds.test_x])
    u = np.random.RandomState(0).uniform(-2, 2, (8, 1))
    np.testing.assert_array_equal(np.concatenate([ds.train_u, ds.test_u])[:, 0], u)   # the controls stay
    ref, ref_x0, draws = _sample_gym_reference(0, u, cfg.steps + 2, limits)
    assert sum(draws) > len(draws) and draws.count(1) >= 2           # some trials redrawn, some not
    np.testing.assert_allclose(x, ref, atol=1e-6)
    assert np.all(np.abs(x[..., 2]) < limits[0] - 0.001) and np.all(np.abs(x[..., 3]) < limits[1] - 0.001)
    # the engine's own report of the loop: the kept states and the number of redraws
    P = PROTOCOLS["acrobot"]
    x0, traj, redraws = dataset_module.paper_states_with_rejection(ds.system, P, 0, u, 0.05, cfg.steps + 2)
    np.testing.assert_array_equal(x0, ref_x0)
    assert redraws == sum(draws) - len(draws)
    np.testing.assert_allclose(traj[:, 1:], ref, atol=1e-6)
    # without the rejection, the rejected trials would have kept their first draws
    first = paper_initial_states("acrobot", 0, 8)
    assert not np.array_equal(x0, first)
    # limits no trajectory can keep: a clear error, not an endless loop
    tiny = dataclasses.replace(P, reject_speed=(1e-3, 1e-3))
    with pytest.raises(ValueError, match="reject_speed"):
        dataset_module.paper_states_with_rejection(ds.system, tiny, 0, u[:1], 0.05, 2, max_redraws=20)


@pytest.mark.parametrize("system", ["pendulum", "cartpole"])
def test_pendulum_and_cartpole_paper_data_unchanged(system, monkeypatch):
    """No rejection rule: one batch from the first draws, as before the acrobot existed (the committed
    reproductions depend on it); the rejection loop is never entered."""
    def boom(*a, **k):
        raise AssertionError("the rejection loop ran for a system without reject_speed")
    monkeypatch.setattr(dataset_module, "paper_states_with_rejection", boom)
    ds = generate_dataset(_small(system))
    s = get_system(system)
    u = np.random.RandomState(0).uniform(-2, 2, (5, 1))
    x = s.simulate(paper_initial_states(system, 0, 5), u, ds.h, 6)[:, 1:]
    np.testing.assert_array_equal(np.concatenate([ds.train_x, ds.test_x]), x)
    # pinned: values of the data generated before the rejection rule was added
    pinned = {
        "pendulum": ([-1.3946784113829283, -1.7211493047845006], [-4.847747062659259, 0.9328412009938761]),
        "cartpole": ([-0.4380592431676323, 0.9308115157056139, 0.00827685774296131, 1.952653513056487],
                     [0.23500165569564294, -3.1153331327294675, -0.1270267335168845, -1.726757549367853]),
    }[system]
    np.testing.assert_allclose(ds.train_x[0, -1], pinned[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ds.long_x[1, -1], pinned[1], rtol=1e-12, atol=1e-12)
