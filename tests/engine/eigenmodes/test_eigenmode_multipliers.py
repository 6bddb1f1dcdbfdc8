"""Monodromy by autodiff vs analytic multipliers; the stabilising controller's power balance."""

import math

import numpy as np
import torch

from engine.eigenmodes.config import DesignConfig, StabiliseConfig
from engine.eigenmodes.multipliers import classify_multipliers, monodromy, monodromy_fd, return_time
from engine.eigenmodes.orbit import DesiredOrbit
from engine.eigenmodes.potential import PotentialMLP
from engine.eigenmodes.stabilise import StabilisingController
from engine.eigenmodes.train import simulate_mode
from engine.systems.double_pendulum import velocity


def test_linear_oscillator_monodromy_matches_analytic_multipliers():
    # two damped oscillators x'' + 2 z w x' + w^2 x = 0: multipliers exp(lambda T)
    params = [(2.0, 0.1), (3.5, 0.3)]
    A = torch.zeros(4, 4, dtype=torch.float64)
    expected = []
    for i, (w, z) in enumerate(params):
        A[2 * i, 2 * i + 1] = 1.0
        A[2 * i + 1, 2 * i] = -w * w
        A[2 * i + 1, 2 * i + 1] = -2 * z * w
        lam = complex(-z * w, w * math.sqrt(1 - z * z))
        expected += [lam, lam.conjugate()]
    T = 1.7
    f = lambda x: x @ A.T
    x0 = torch.tensor([0.3, -0.1, 0.2, 0.5], dtype=torch.float64)
    mat = monodromy(f, x0, T, 400)
    torch.testing.assert_close(mat, torch.linalg.matrix_exp(A * T), atol=1e-8, rtol=1e-8)
    torch.testing.assert_close(mat, monodromy_fd(f, x0, T, 400), atol=1e-7, rtol=1e-7)
    got = np.sort_complex(np.linalg.eigvals(mat.numpy()))
    want = np.sort_complex(np.exp(np.array(expected) * T))
    np.testing.assert_allclose(got, want, atol=1e-8)


def test_trivial_multiplier_of_a_limit_cycle_is_found():
    # Hopf normal form: unit-circle limit cycle, period 2 pi / w, multipliers {1, exp(-2 T)}
    w = 2.0

    def f(x):
        r2 = (x[..., :1] ** 2 + x[..., 1:] ** 2)
        rot = torch.cat([-w * x[..., 1:], w * x[..., :1]], -1)
        return x * (1 - r2) + rot

    T = 2 * math.pi / w
    x0 = torch.tensor([1.0, 0.0], dtype=torch.float64)
    t_ret = return_time(f, x0, T * 1.02, T / 400)
    assert abs(t_ret - T) < 1e-3
    mat = monodromy(f, x0, T, 800)
    out = classify_multipliers(mat.numpy(), f(x0).numpy())
    trivial = out["multipliers"][out["trivial_index"]]
    assert abs(trivial - 1.0) < 1e-6
    assert abs(out["nontrivial"][0] - math.exp(-2 * T)) < 1e-6


def _controller(k_energy=10.0, k_mode=1.0, damping=0.0):
    design = DesignConfig()
    design.potential.hidden = 16
    pot = PotentialMLP(design.potential, dtype=torch.float64, seed=3)
    traj = simulate_mode(pot, design, 2.0, steps=400)
    orbit = DesiredOrbit.fit(traj["t"], traj["q"], traj["p"], harmonics=12)
    cfg = StabiliseConfig(k_energy=k_energy, k_mode=k_mode, damping=damping)
    return StabilisingController(pot, design.plant, orbit, float(traj["energy"][0]), cfg)


def test_mode_controller_injects_no_power_and_energy_controller_has_the_right_sign():
    ctrl = _controller()
    torch.manual_seed(1)
    x = torch.randn(200, 4, dtype=torch.float64)
    x[:, :2] *= 0.8
    u_e, u_m, _ = ctrl.inputs(x)
    qd = velocity(x[:, :2], x[:, 2:], ctrl.plant)
    power_m = (qd * u_m).sum(-1)
    scale = qd.norm(dim=-1) * u_m.norm(dim=-1)
    assert float(u_m.norm(dim=-1).max()) > 0.1                     # the controller acts ...
    assert float((power_m.abs() / (scale + 1e-300)).max()) < 1e-12  # ... but never on the energy
    from engine.eigenmodes.dynamics import closed_loop_energy
    h = closed_loop_energy(x, ctrl.potential, ctrl.plant)
    power_e = (qd * u_e).sum(-1)
    assert bool(((h - ctrl.energy) * power_e <= 1e-12).all())      # energy driven towards H_d


def test_closed_loop_energy_rate_equals_energy_controller_power():
    # dH_cl/dt along the stabilised field = qd^T (u_E + u_M - D qd) = qd^T u_E - D |qd|^2
    ctrl = _controller(damping=0.3)
    torch.manual_seed(2)
    x = torch.randn(50, 4, dtype=torch.float64).requires_grad_(True)
    from engine.eigenmodes.dynamics import closed_loop_energy
    h = closed_loop_energy(x, ctrl.potential, ctrl.plant)
    (grad,) = torch.autograd.grad(h.sum(), x)
    with torch.no_grad():
        rate = (grad * ctrl.field(x)).sum(-1)
        u_e, _, _ = ctrl.inputs(x)
        qd = velocity(x[:, :2], x[:, 2:], ctrl.plant)
        expected = (qd * u_e).sum(-1) - 0.3 * (qd * qd).sum(-1)
    torch.testing.assert_close(rate, expected, atol=1e-9, rtol=1e-9)


def test_stabilised_flow_monodromy_matches_finite_differences():
    ctrl = _controller()
    x0 = ctrl.orbit.state_at(torch.tensor(0.5, dtype=torch.float64))
    a = monodromy(ctrl.field, x0, 0.5, 50)
    torch.testing.assert_close(a, monodromy_fd(ctrl.field, x0, 0.5, 50), atol=1e-5, rtol=1e-5)


def test_fused_stabilised_field_equals_composed_form():
    ctrl = _controller(damping=0.4)
    torch.manual_seed(5)
    x = torch.randn(30, 4, dtype=torch.float64)
    torch.testing.assert_close(ctrl.field(x), ctrl.field_composed(x), atol=1e-12, rtol=1e-12)
