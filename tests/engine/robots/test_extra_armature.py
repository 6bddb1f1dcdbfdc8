"""Forward dynamics with a rotor inertia beyond the robot file's (``RobotModel.forward_dynamics(...,
armature=)``, what the learnable robot model's armature takes): ``(M + diag Ia) qdd = tau - h``.

The compiled ABA takes it on a fixed base (values, and its backward with the armature's gradient
``-lambda qdd``); other robots (floating, ball, coupled joints) solve with CRBA. The reference:
the same equation solved densely from the torch algorithms' M and h, and its autograd gradients."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.robots import RobotModel
from engine.robots.backends import torch_only
from engine.robots.library import load_robot

MJCF = Path(__file__).parent / "mjcf"


def _reference(model, q, qd, tau, arm):
    with torch_only():
        M = model.mass_matrix(q) + torch.diag(arm)
        return torch.linalg.solve(M, (tau - model.bias_forces(q, qd)).unsqueeze(-1)).squeeze(-1)


def _state(model, batch, seed):
    """``q`` (B, nq) on the configuration manifold (a random step from the neutral pose), ``qd``,
    ``tau`` (B, nv) and an armature (nv,)."""
    rng = np.random.default_rng(seed)
    q = model.integrate(model.neutral().expand(batch, -1), torch.as_tensor(rng.uniform(-0.8, 0.8, (batch, model.nv))))
    qd, tau = (torch.as_tensor(rng.uniform(-1, 1, (batch, model.nv))) for _ in range(2))
    arm = torch.as_tensor(rng.uniform(0.01, 0.3, model.nv))
    return q, qd, tau, arm


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_fixed_base_compiled_aba_takes_the_armature_and_its_gradient(name):
    model = load_robot(name)
    q, qd, tau, arm = _state(model, 16, 1)
    with torch.no_grad():                                    # the value kernel
        np.testing.assert_allclose(model.forward_dynamics(q, qd, tau, armature=arm),
                                   _reference(model, q, qd, tau, arm), rtol=1e-10, atol=1e-10)
    # the compiled backward: every input and the armature, against autograd through the dense solve
    ins = [x.clone().requires_grad_() for x in (q, qd, tau, arm)]
    w = torch.as_tensor(np.random.default_rng(2).normal(size=(16, model.nv)))
    (model.forward_dynamics(*ins[:3], armature=ins[3]) * w).sum().backward()
    ref = [x.clone().requires_grad_() for x in (q, qd, tau, arm)]
    (_reference(model, *ref) * w).sum().backward()
    for a, b in zip(ins, ref):
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-8, atol=1e-9)
    # central differences on the armature of joint 2
    e = torch.zeros_like(arm)
    e[1] = 1e-6
    with torch.no_grad():
        up, down = (model.forward_dynamics(q, qd, tau, armature=arm + s * e) for s in (1, -1))
        fd = ((up - down) * w).sum() / 2e-6
    assert float(ins[3].grad[1]) == pytest.approx(float(fd), rel=1e-6)


@pytest.mark.parametrize("path", ["solo12", "ball_chain.xml", "ball_coupled.xml"])
def test_robots_the_kernels_cannot_take_solve_with_crba(path):
    model = RobotModel.from_file(MJCF / path) if path.endswith(".xml") else load_robot(path)
    assert model.floating or model.ball_joint_names
    q, qd, tau, arm = _state(model, 8, 3)
    with torch.no_grad():
        np.testing.assert_allclose(model.forward_dynamics(q, qd, tau, armature=arm),
                                   _reference(model, q, qd, tau, arm), rtol=1e-9, atol=1e-9)
