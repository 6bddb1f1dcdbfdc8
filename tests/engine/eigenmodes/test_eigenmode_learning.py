"""Learning lowers the losses; the checks tell line-shaped modes from loops; modes round-trip to disk."""

import numpy as np
import pytest
import torch

from engine.eigenmodes.checks import is_line_shaped, path_self_intersects, retrace_error
from engine.eigenmodes.config import ConfigError, DesignConfig
from engine.eigenmodes.losses import effort_integral
from engine.eigenmodes.orbit import DesiredOrbit
from engine.eigenmodes.potential import PotentialMLP
from engine.eigenmodes.storage import load_mode, save_mode, trajectory_csv
from engine.eigenmodes.train import learn_mode
from engine.io import CheckpointError


def _small_design():
    d = DesignConfig()
    d.potential.hidden = 32
    d.task.target = (0.7, -1.6)       # off the natural swing, so the task loss starts high
    d.weights.task_weight = 10.0
    d.train.epochs = 30
    d.train.dt = 0.1
    d.train.lr = 1e-2
    return d


def test_short_learning_run_lowers_the_losses(tmp_path):
    d = _small_design()
    mode = learn_mode(d)
    h = mode.history
    for k in ("total", "task", "constraint"):
        assert h[k][-1] < 0.5 * h[k][0], k
    # the metabolic term alone: from a strong random potential, learning removes effort
    d.weights.task_weight = 0.0
    d.weights.constraint_weight = 0.0
    d.weights.effort_weight = 1.0
    d.potential.output_scale = 3.0
    h = learn_mode(d).history
    assert h["effort"][-1] < 0.2 * h["effort"][0]

    # save / load round trip: the same potential, the same trajectory
    save_mode(mode, tmp_path / "m")
    back = load_mode(tmp_path / "m")
    q = torch.randn(10, 2, dtype=torch.float64)
    torch.testing.assert_close(back.potential(q), mode.potential(q))
    np.testing.assert_allclose(back.trajectory["q"], mode.trajectory["q"], atol=1e-12)
    assert back.period == mode.period
    header = trajectory_csv(back).splitlines()[0]
    assert header.startswith("t,q1,q2,p1,p2,u1,u2,energy")


def test_learned_period_moves_and_fixed_period_does_not():
    d = _small_design()
    d.train.epochs = 5
    assert set(learn_mode(d).history["period"]) == {2.5}
    d.task.learn_period = True
    assert learn_mode(d).history["period"][-1] != 2.5


def test_potential_gradient_matches_autograd():
    pot = PotentialMLP(DesignConfig().potential.__class__(hidden=20, layers=2), seed=1)
    q = torch.randn(7, 2, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(pot(q).sum(), q)
    torch.testing.assert_close(pot.gradient(q), g)


def test_effort_integral_is_trapezoidal():
    t = torch.linspace(0, 2.0, 401, dtype=torch.float64)
    u = torch.stack([torch.sin(t), torch.cos(t)], -1)        # |u|^2 = 1
    assert abs(float(effort_integral(u, 2.0)) - 2.0) < 1e-12


def test_line_shape_test_separates_lines_from_loops():
    t = np.linspace(0, 2 * np.pi, 401)
    line_q = np.stack([0.6 * np.cos(t), 0.3 * np.cos(t) + 0.1 * np.cos(2 * t)], -1)
    line_p = np.stack([-np.sin(t), -0.5 * np.sin(t)], -1)
    loop_q = np.stack([0.6 * np.cos(t), 0.3 * np.sin(t)], -1)
    loop_p = np.stack([-np.sin(t), np.cos(t)], -1)
    assert is_line_shaped(np.concatenate([line_q, line_p], -1))
    assert retrace_error(line_q) < 1e-9
    assert not is_line_shaped(np.concatenate([loop_q, loop_p], -1))
    s = t + 0.013                     # no sample exactly on the crossing
    figure_eight = np.stack([np.sin(s), np.sin(2 * s)], -1)
    assert path_self_intersects(figure_eight)
    assert not path_self_intersects(line_q[:201])


def test_desired_orbit_fit_and_closest_phase():
    T = 2.0
    t = np.linspace(0, T, 201)
    w = 2 * np.pi / T
    q = np.stack([0.5 * np.cos(w * t), 0.2 * np.cos(w * t) ** 2], -1)
    p = np.stack([-np.sin(w * t), -0.4 * np.sin(w * t) * np.cos(w * t)], -1)
    orbit = DesiredOrbit.fit(t, q, p, harmonics=6)
    s = torch.tensor([0.3, 0.7], dtype=torch.float64)
    torch.testing.assert_close(orbit.q_at(s), torch.as_tensor(np.stack(
        [0.5 * np.cos(w * s.numpy()), 0.2 * np.cos(w * s.numpy()) ** 2], -1)), atol=1e-9, rtol=0)
    s_star = orbit.closest_phase(orbit.q_at(s) + 1e-4 * torch.tensor([0.0, 1.0], dtype=torch.float64))
    torch.testing.assert_close(s_star, s, atol=1e-3, rtol=0)
    # the momentum's sign follows the current momentum
    _, pd = orbit.desired(orbit.q_at(s), -orbit.p_at(s))
    torch.testing.assert_close(pd, -orbit.p_at(s))


def test_bad_inputs_name_the_field(tmp_path):
    d = DesignConfig()
    d.task.target = (5.0, 0.0)
    with pytest.raises(ConfigError, match="target"):
        d.validate()
    d = DesignConfig()
    d.train.dtype = "float16"
    with pytest.raises(ConfigError, match="dtype"):
        d.validate()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "mode.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="mode.json"):
        load_mode(tmp_path / "bad")
