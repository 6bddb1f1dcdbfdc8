"""``ModelSpec.potential_scale``: the Lagrangian models' potential is the network's output times the
scale (V, dV/dq and d2V/dq2 alike, in every path: the general terms, the one-degree-of-freedom
closed form and its training kernel), and the inertia is untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.models import ModelSpec, build_model
from engine.systems import get_system
from engine.training.compare import torque_scale

F64 = torch.float64
SCALE = 14.1


def _pair(name, system):
    spec = ModelSpec.for_system(get_system(system), 0.05, hidden=16, dissipation="joint")
    torch.manual_seed(0)
    plain = build_model(name, spec).double()
    scaled = build_model(name, ModelSpec.from_dict({**spec.to_dict(), "potential_scale": SCALE})).double()
    scaled.load_state_dict(plain.state_dict())
    return plain, scaled


@pytest.mark.parametrize("system", ["pendulum", "cartpole"])
def test_terms_scale_the_potential_and_leave_the_inertia(system):
    plain, scaled = _pair("symo", system)
    n = get_system(system).dof
    q = torch.randn(5, n, generator=torch.Generator().manual_seed(1), dtype=F64)
    a, b = plain.lagrangian.terms(q, order=2), scaled.lagrangian.terms(q, order=2)
    for key in ("V", "dV", "d2V"):
        torch.testing.assert_close(getattr(b, key), SCALE * getattr(a, key))
    for key in ("H", "dH", "d2H"):
        torch.testing.assert_close(getattr(b, key), getattr(a, key))


@pytest.mark.parametrize("system", ["pendulum", "cartpole"])
def test_lnode_acceleration_and_its_gradients_follow_the_scaled_potential(system):
    """``H qdd = B u + Q - C - potential_scale dV_net/dq``, checked against the general terms, with
    gradients (the pendulum's training kernel has a backward by hand)."""
    plain, scaled = _pair("lnode-rk4", system)
    n = get_system(system).dof
    g = torch.Generator().manual_seed(2)
    q, qd = (torch.randn(4, n, generator=g, dtype=F64) for _ in range(2))
    u = torch.randn(4, 1, generator=g, dtype=F64)
    t = scaled.lagrangian.terms(q, order=1)
    qdd = scaled.acceleration(q, qd, u)
    dHqd = (t.dH @ qd.unsqueeze(-2).unsqueeze(-1)).squeeze(-1)
    c = (dHqd.transpose(-1, -2) @ qd.unsqueeze(-1)).squeeze(-1) - 0.5 * (dHqd @ qd.unsqueeze(-1)).squeeze(-1)
    lhs = (t.H @ qdd.unsqueeze(-1)).squeeze(-1) + c + t.dV
    torch.testing.assert_close(lhs, scaled.generalized_force(qd, u))
    # the same gradients as the general terms' formula (the pendulum trains through a kernel with
    # a backward by hand, which must carry the scale too)
    ref = torch.linalg.solve(t.H, (scaled.generalized_force(qd, u) - c - t.dV).unsqueeze(-1)).squeeze(-1)
    params = list(scaled.lagrangian.parameters())
    got = torch.autograd.grad(qdd.pow(2).sum(), params)
    want = torch.autograd.grad(ref.pow(2).sum(), params)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert float(torch.cat([a.flatten() for a in got]).abs().max()) > 0


def test_a_robot_comparison_scales_the_potential_by_the_logs_torques():
    class Data:
        train_u = np.array([[[3.0, -4.0]], [[0.0, 0.0]]])   # RMS sqrt(25 / 4) = 2.5
    assert torque_scale(Data()) == 2.5
    Data.train_u = np.zeros((2, 3, 2))
    assert torque_scale(Data()) == 1.0
    with pytest.raises(Exception, match="potential_scale"):
        ModelSpec(potential_scale=0.0)
