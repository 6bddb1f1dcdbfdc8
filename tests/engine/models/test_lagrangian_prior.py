"""L-NODE with the robot prior (``spec.lagrangian_prior = "robot"``): at the start it is the rigid
body of its robot file with the file's joint friction (the robot model, built from the same file,
is the reference), and training reaches its own Lagrangian terms."""

from __future__ import annotations

import pytest
import torch

from engine.models import ModelSpec, build_model

F64 = torch.float64


def _spec(**kw):
    n = 7
    eye = tuple(tuple(float(i == j) for j in range(n)) for i in range(n))
    base = dict(dof=n, angle_mask=(True,) * n, control_dim=n, input_matrix=eye, h=0.005, hidden=16, robot="panda",
                dissipation="joint", potential_scale=14.1, robot_learn=("mass",), robot_perturb=0.0)
    return ModelSpec(**{**base, **kw})


def test_lnode_with_the_prior_starts_as_its_rigid_body():
    torch.manual_seed(0)
    lnode = build_model("lnode-rk4", _spec(lagrangian_prior="robot")).double()
    robot = build_model("robot-rk4", _spec())
    g = torch.Generator().manual_seed(0)
    q = torch.rand(8, 7, generator=g, dtype=F64) - 0.5
    qd, qdd = (torch.randn(8, 7, generator=g, dtype=F64) for _ in range(2))
    tau = robot.inverse_dynamics(q, qd, qdd)
    assert float(tau.abs().max()) > 10     # gravity torques of tens of N m
    torch.testing.assert_close(lnode.inverse_dynamics(q, qd, qdd), tau, atol=1e-5, rtol=0)
    torch.testing.assert_close(lnode.mass_matrix(q), robot.mass_matrix(q), atol=1e-6, rtol=0)
    x, u = torch.cat([q, qd], -1), 5 * torch.randn(8, 7, generator=g, dtype=F64)
    step = robot.step(x, u)
    assert float((lnode.step(x, u) - step).abs().max()) < 1e-3 * float((step - x).abs().max())
    # the friction starts at the robot file's (the Panda URDF's damping 0.003 N m s/rad)
    assert lnode.dissipation.values()["damping"] == pytest.approx([0.003] * 7, rel=1e-6)
    # and its own terms learn: a loss reaches both networks' last layers and the friction
    loss = ((lnode.step(x, u) - step - 0.01) ** 2).sum()
    loss.backward()
    heads = lnode.lagrangian.nets.heads
    assert float(heads[0].weight.grad.abs().max()) > 0 and float(heads[1].weight.grad.abs().max()) > 0
    assert float(lnode.dissipation.log_damping.grad.abs().max()) > 0
    assert all(p.grad is None for p in lnode.prior.parameters())      # the prior is frozen


def test_without_the_prior_lnode_is_the_papers_model_and_the_prior_needs_a_robot():
    torch.manual_seed(0)
    plain = build_model("lnode-rk4", _spec())
    assert plain.prior is None
    with pytest.raises(ValueError, match="robot"):
        build_model("lnode-rk4", _spec(robot=None, lagrangian_prior="robot"))
    with pytest.raises(Exception, match="lagrangian_prior"):
        _spec(lagrangian_prior="urdf")


@pytest.mark.parametrize("name", ["symo", "e2e-symo"])
def test_symo_with_the_prior_starts_with_the_rigid_bodys_discrete_euler_lagrange_equations(name):
    """The residual against autograd of the robot's own midpoint discrete Lagrangian (robot model:
    CRBA with armature, its potential), and Newton's root (whose Jacobian takes only the prior's
    -M/h) is a root of that exact residual."""
    torch.manual_seed(0)
    h = 0.005
    model = build_model(name, _spec(lagrangian_prior="robot")).double()
    robot = build_model("robot-rk4", _spec())
    g = torch.Generator().manual_seed(1)
    q_prev = torch.rand(6, 7, generator=g, dtype=F64) - 0.5
    q = q_prev + h * torch.randn(6, 7, generator=g, dtype=F64)
    q_next = 2 * q - q_prev + 1e-4 * torch.randn(6, 7, generator=g, dtype=F64)
    up, u, un = (5 * torch.randn(6, 7, generator=g, dtype=F64) for _ in range(3))

    def Ld(qa, qb):
        m, v = 0.5 * (qa + qb), (qb - qa) / h
        T = 0.5 * (v * (robot.mass_matrix(m) @ v.unsqueeze(-1)).squeeze(-1)).sum(-1)
        return h * (T - robot.potential_energy(m))

    qk = q.clone().requires_grad_(True)
    (dL,) = torch.autograd.grad((Ld(q_prev, qk) + Ld(qk, q_next)).sum(), qk)
    want = dL + model.forces(up, u, un) + model.dissipative_force(q_prev, q) + model.dissipative_force(q, q_next)
    got = model.residual(q_prev, q, q_next, up, u, un)
    assert float(want.abs().max()) > 1e-2
    torch.testing.assert_close(got.detach(), want, atol=1e-7, rtol=1e-6)
    z = model.solve_next(q_prev, q, up, u, un, tol=1e-10, max_iter=60)
    assert float(model.residual(q_prev, q, z, up, u, un).abs().max()) < 1e-9
    loss = model.loss(type("W", (), dict(q_prev=q_prev, q=q, q_next=q_next, u_prev=up, u=u, u_next=un))())
    loss.backward()
    assert all(float(hd.weight.grad.abs().max()) > 0 for hd in model.lagrangian.nets.heads)
