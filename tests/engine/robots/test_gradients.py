"""Gradients agree with finite differences (torch.autograd.gradcheck, float64).

Inputs of every algorithm, and learnable parameters through the default physical
parametrisations and through an arbitrary module, on a small tree with revolute,
prismatic, continuous and fixed joints.
"""

from __future__ import annotations

import torch
from robots_testdata import SMALL_TREE
from torch import nn
from torch.autograd import gradcheck

from engine.robots import RobotModel
from engine.robots.parametrizations import CholeskyInertia, PositiveScalar

torch.manual_seed(0)


def _inputs(model, batch=2):
    g = torch.Generator().manual_seed(1)
    return [(torch.rand(batch, model.dof, generator=g, dtype=torch.float64) - 0.5).requires_grad_(True)
            for _ in range(3)]


def test_gradcheck_kinematics_inputs():
    model = RobotModel.from_string(SMALL_TREE)
    q, _, _ = _inputs(model)
    point = torch.tensor([0.1, -0.2, 0.05], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x: model.forward_kinematics(x), (q,))
    assert gradcheck(lambda x, p: model.jacobian(x, "tool", point=p), (q, point))


def test_gradcheck_dynamics_inputs():
    model = RobotModel.from_string(SMALL_TREE)
    q, qd, qdd = _inputs(model)
    assert gradcheck(lambda a, b, c: model.inverse_dynamics(a, b, c, damping=True), (q, qd, qdd))
    assert gradcheck(lambda a, b, c: model.forward_dynamics(a, b, c, damping=True), (q, qd, qdd))
    assert gradcheck(lambda a: model.mass_matrix(a), (q,))
    assert gradcheck(lambda a, b: model.kinetic_energy(a, b) + model.potential_energy(a), (q, qd))
    g = torch.tensor([0.3, -0.1, -9.0], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, gv: model.gravity_torques(a, gravity=gv), (q, g))


class _Given(nn.Module):
    """A parametrisation whose value the test sets: gradcheck differentiates through it."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self):
        return self.value


def test_gradcheck_learnable_parameters_any_module():
    model = RobotModel.from_string(SMALL_TREE)
    q, qd, qdd = (x.detach() for x in _inputs(model))
    slots = {kind: _Given(None) for kind in ("mass", "com", "inertia", "damping")}
    slots["mass"].value = model.link_mass("c").clone()
    slots["com"].value = model.link_com("c").clone()
    slots["inertia"].value = model.link_inertia("c").clone()
    slots["damping"].value = model.joint_damping()[model.joint_names.index("j3")].clone()
    for kind, module in slots.items():
        model.make_learnable("c", kind, parametrization=module)

    def run(m, c, inertia, d, fn):
        slots["mass"].value, slots["com"].value, slots["damping"].value = m, c, d
        slots["inertia"].value = 0.5 * (inertia + inertia.T)
        return fn()

    m = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    c = torch.tensor([0.03, 0.0, 0.05], dtype=torch.float64, requires_grad=True)
    inertia = torch.tensor([[2e-3, 1e-4, 0], [1e-4, 2.5e-3, 0], [0, 0, 1.5e-3]], dtype=torch.float64,
                           requires_grad=True)
    d = torch.tensor(0.05, dtype=torch.float64, requires_grad=True)
    args = (m, c, inertia, d)
    assert gradcheck(lambda *a: run(*a, lambda: model.inverse_dynamics(q, qd, qdd, damping=True)), args)
    assert gradcheck(lambda *a: run(*a, lambda: model.forward_dynamics(q, qd, qdd, damping=True)), args)
    assert gradcheck(lambda *a: run(*a, lambda: model.mass_matrix(q)), args)


def test_gradcheck_default_parametrizations_end_to_end():
    model = RobotModel.from_string(SMALL_TREE)
    q, qd, qdd = (x.detach() for x in _inputs(model))
    modules = {kind: model.make_learnable("b", kind) for kind in ("mass", "com", "inertia", "damping")}
    params = [p for m in modules.values() for p in m.parameters()]
    names = [(m, n) for m in modules.values() for n, _ in m.named_parameters()]
    assert {id(p) for p in params} <= {id(p) for p in model.parameters()}

    def run(*values):
        for (module, name), value in zip(names, values):
            setattr(module, name, value)           # plain tensors replace the Parameters here
        return model.forward_dynamics(q, qd, qdd, damping=True)

    originals = [p.detach().clone().requires_grad_(True) for p in params]
    for module, name in names:
        delattr(module, name)
    assert gradcheck(run, tuple(originals))


def test_parametrizations_gradcheck_and_physics():
    raw = torch.randn(3, dtype=torch.float64, requires_grad=True)
    off = torch.randn(3, dtype=torch.float64, requires_grad=True)
    chol = CholeskyInertia(torch.diag(torch.tensor([0.02, 0.03, 0.04], dtype=torch.float64)))

    def inertia(log_diag, off_diag):
        del chol.log_diag, chol.off_diag
        chol.log_diag, chol.off_diag = log_diag, off_diag
        return chol()

    assert gradcheck(inertia, (raw, off))
    for _ in range(50):
        I = inertia(torch.randn(3, dtype=torch.float64) * 2, torch.randn(3, dtype=torch.float64) * 2).detach()
        e = torch.linalg.eigvalsh(I)
        assert float(e[0]) > 0 and float(e[0] + e[1] - e[2]) >= -1e-12 * float(e.sum())
        assert torch.allclose(I, I.T)
    pos = PositiveScalar(0.5)
    assert abs(float(pos().detach()) - 0.5) < 1e-12
    with torch.no_grad():
        pos.raw.fill_(-50.0)
    assert float(pos().detach()) > 0
