"""The hybrid model (engine.models.hybrid): frozen robot plus a residual force network."""

from __future__ import annotations

import torch

from engine.models import ModelSpec, build_model
from engine.paths import urdf_dir

F64 = torch.float64


def _spec(**kw):
    eye = tuple(tuple(float(i == j) for j in range(3)) for i in range(3))
    return ModelSpec(dof=3, angle_mask=(True,) * 3, control_dim=3, input_matrix=eye, h=0.005, hidden=16,
                     robot=str(urdf_dir() / "arm3.urdf"), robot_learn=("mass", "damping"), robot_perturb=0.0, **kw)


def test_hybrid_starts_as_its_robot_and_learns_only_the_residual():
    torch.manual_seed(0)
    hybrid, robot = build_model("hybrid-rk4", _spec()), build_model("robot-rk4", _spec())
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 6, generator=g, dtype=F64)
    u = torch.randn(6, 3, generator=g, dtype=F64)
    torch.testing.assert_close(hybrid.step(x, u), robot.step(x, u), rtol=0, atol=0)
    trainable = {n for n, p in hybrid.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("residual.") for n in trainable)
    ((hybrid.step(x, u) - x) ** 2).mean().backward()
    # at the start only the zeroed last layer moves (the hidden layers' gradients pass through it)
    last = hybrid.residual.linears[-1]
    assert float(last.weight.grad.abs().sum()) > 0 and float(last.bias.grad.abs().sum()) > 0
    assert all(p.grad is None for n, p in hybrid.named_parameters() if n not in trainable)
    # with a non-zero residual, inverse dynamics inverts the model's own forward dynamics
    with torch.no_grad():
        for p in hybrid.residual.parameters():
            p.add_(0.1 * torch.randn_like(p))
    q, qd = x[:, :3], x[:, 3:]
    qdd = hybrid.vector_field(x, u)[:, 3:]
    torch.testing.assert_close(hybrid.inverse_dynamics(q, qd, qdd), u)
    assert float((hybrid.residual_force(q, qd)).abs().max()) > 1e-3
