"""The stabilising controller on a natural eigenmode of the plant (V_theta = 0): energy and
distance to the orbit converge, the cycle multipliers lie inside the unit circle."""

import numpy as np
import torch

from engine.eigenmodes.config import DesignConfig, PotentialConfig, StabiliseConfig
from engine.eigenmodes.dynamics import closed_loop_field, rk4_trajectory
from engine.eigenmodes.multipliers import stabilised_cycle_multipliers
from engine.eigenmodes.potential import PotentialMLP
from engine.eigenmodes.stabilise import StabilisingController, simulate_stabilised
from engine.eigenmodes.train import DesignedMode, simulate_mode


def _half_period_momentum(pot, plant, q0, dt=4e-3, n=800):
    """Batched shooting: for starts ``q0 (B, 2)`` at rest, p at the first zero of p1 (interpolated)."""
    x0 = torch.cat([q0, torch.zeros_like(q0)], -1)
    xs = rk4_trajectory(closed_loop_field(pot, plant), x0, n * dt, n).numpy()
    out, times = [], []
    for b in range(q0.shape[0]):
        p1 = xs[:, b, 2]
        i = next(k for k in range(20, n) if p1[k] * p1[k + 1] <= 0 and p1[k] != 0)
        f = p1[i] / (p1[i] - p1[i + 1])
        out.append((1 - f) * xs[i, b, 3] + f * xs[i + 1, b, 3])
        times.append((i + f) * dt)
    return np.array(out), np.array(times)


def _natural_mode():
    """An exact (to ~1e-6) nonlinear normal mode of the plant, by shooting on q2(0) for fixed q1(0)."""
    design = DesignConfig()
    pot = PotentialMLP(PotentialConfig(hidden=8), seed=0)
    with torch.no_grad():
        pot.out.weight.zero_()                       # V_theta = 0: the plant's own dynamics
    pot.requires_grad_(False)
    q1 = 0.4
    lo, hi = 0.05, 0.3                               # the slow mode has q2/q1 ~ 0.37 near the origin
    for _ in range(3):                               # bracket refinement on a batch of candidates
        b = np.linspace(lo, hi, 17)
        q0 = torch.tensor(np.stack([np.full_like(b, q1), b], -1), dtype=torch.float64)
        p2, _ = _half_period_momentum(pot, design.plant, q0)
        k = int(np.nonzero(np.sign(p2[:-1]) != np.sign(p2[1:]))[0][0])
        lo, hi = b[k], b[k + 1]
    b = lo - p2[k] * (hi - lo) / (p2[k + 1] - p2[k])
    design.task.q0 = (q1, float(b))
    _, half = _half_period_momentum(
        pot, design.plant, torch.tensor([[q1, b]], dtype=torch.float64), dt=1e-3, n=2000
    )
    period = 2 * float(half[0])
    traj = simulate_mode(pot, design, period, steps=600)
    assert np.linalg.norm(traj["p"][300]) < 1e-4          # an eigenmode: at rest again at T/2
    return DesignedMode(design=design, potential=pot, period=period, trajectory=traj)


def test_stabilised_natural_mode_converges_with_multipliers_inside_the_unit_circle():
    mode = _natural_mode()
    cfg = StabiliseConfig(perturb_q=(0.08, -0.06), periods=8.0, dt=0.02, k_energy=10.0, k_mode=1.0)
    ctrl = StabilisingController.for_mode(mode, cfg)
    res = simulate_stabilised(ctrl)
    m = res.metrics
    assert m["energy_error_final"] < 1e-3 * m["energy_error_initial"]
    assert m["position_distance_final"] < 0.1 * m["position_distance_initial"]
    assert m["max_mode_power"] < 1e-10  # u_M never changes the energy
    cyc = stabilised_cycle_multipliers(
        ctrl, settle_periods=1.0, steps_per_period=120, check_fd=True, fd_eps=1e-6
    )
    assert abs(cyc["multipliers"][cyc["trivial_index"]] - 1.0) < 0.02
    assert cyc["max_nontrivial_modulus"] < 1.0
    assert cyc["fd_max_abs_error"] < 1e-4 * max(1.0, float(np.abs(cyc["monodromy"]).max()))
    assert abs(cyc["return_time"] - mode.period) < 0.02 * mode.period

    # with damping the energy settles below the mode's, close to the orbit
    damped = simulate_stabilised(StabilisingController.for_mode(mode, StabiliseConfig(
        perturb_q=(0.08, -0.06), periods=6.0, dt=0.02, damping=0.2)))
    assert damped.metrics["position_distance_final"] < 0.05
