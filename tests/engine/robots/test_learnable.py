"""Learnable link parameters: registration, physical constraints, fitting, copies, threads."""

from __future__ import annotations

import threading

import pytest
import torch
from robots_testdata import SMALL_TREE
from torch import nn

from engine.paths import urdf_dir
from engine.robots import RobotModel, URDFError


def _data(model, n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.rand(n, model.dof, generator=g, dtype=torch.float64) * 2 - 1
    qd = torch.randn(n, model.dof, generator=g, dtype=torch.float64)
    qdd = torch.randn(n, model.dof, generator=g, dtype=torch.float64)
    return q, qd, qdd


def test_make_learnable_registers_parameters_and_reads_back():
    model = RobotModel.from_string(SMALL_TREE)
    before = model.inverse_dynamics(*_data(model, 4))
    mods = {k: model.make_learnable("c", k) for k in ("mass", "com", "inertia", "damping")}
    ids = {id(p) for p in model.parameters()}
    assert all(id(p) in ids for m in mods.values() for p in m.parameters())
    assert len(list(model.parameters())) == 5            # raw mass, com, 2 Cholesky factors, raw damping
    # initialised at the URDF values: nothing changes until trained
    assert torch.allclose(model.inverse_dynamics(*_data(model, 4)), before, atol=1e-12)
    assert torch.allclose(model.link_mass("c"), torch.tensor(0.4, dtype=torch.float64))
    assert torch.allclose(model.link_com("c"), torch.tensor([0.03, 0.0, 0.05], dtype=torch.float64))
    with pytest.raises(ValueError, match="unknown parameter kind"):
        model.make_learnable("c", "colour")
    with pytest.raises(KeyError, match="no link named"):
        model.make_learnable("nope", "mass")
    with pytest.raises(ValueError, match="not the child of a movable joint"):
        model.make_learnable("base", "damping")
    with pytest.raises(ValueError, match="shape"):
        model.make_learnable("c", "com", parametrization=nn.Linear(1, 1))


def test_parameters_stay_physical_under_any_update():
    model = RobotModel.from_string(SMALL_TREE)
    model.make_learnable("b", "mass")
    model.make_learnable("b", "inertia")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 5 - 3)
    assert model.link_mass("b").item() > 0
    e = torch.linalg.eigvalsh(model.link_inertia("b").detach())
    assert float(e[0]) > 0 and float(e[0] + e[1]) >= float(e[2]) * (1 - 1e-12)
    M = model.mass_matrix(_data(model, 8)[0])
    assert torch.linalg.eigvalsh(M.detach()).min().item() > 0


def test_fit_recovers_masses_and_damping():
    """The paper's loop in miniature: wrong masses and damping, random states, torque MSE."""
    truth = RobotModel.from_string(SMALL_TREE)
    q, qd, qdd = _data(truth, 128)
    tau = truth.inverse_dynamics(q, qd, qdd, damping=True)
    wrong = truth.with_link_params(mass={"a": 1.0, "b": 1.0, "c": 0.6, "d": 0.3}, damping={"j2": 0.5})
    for link in ("a", "b", "c", "d"):
        wrong.make_learnable(link, "mass")
    wrong.make_learnable("b", "damping")
    opt = torch.optim.LBFGS(wrong.parameters(), lr=1.0, max_iter=200, tolerance_grad=1e-12,
                            tolerance_change=1e-14, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((wrong.inverse_dynamics(q, qd, qdd, damping=True) - tau) ** 2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    for link, m in {"a": 1.3, "b": 0.7, "c": 0.4, "d": 0.5}.items():
        assert abs(wrong.link_mass(link).item() - m) < 0.01 * m, link
    assert abs(wrong.joint_damping()[wrong.joint_names.index("j2")].item() - 1.5) < 0.015


def test_custom_module_in_place_of_a_parameter():
    model = RobotModel.from_string(SMALL_TREE)

    class MassNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 1, dtype=torch.float64)

        def forward(self):
            return nn.functional.softplus(self.lin(torch.ones(2, dtype=torch.float64)))[0]

    net = model.make_learnable("d", "mass", parametrization=MassNet())
    q, qd, qdd = _data(model, 4)
    model.inverse_dynamics(q, qd, qdd).sum().backward()
    assert net.lin.weight.grad is not None and float(net.lin.weight.grad.abs().sum()) > 0


def test_with_link_params_matches_an_edited_urdf():
    model = RobotModel.from_string(SMALL_TREE)
    inertia = torch.tensor([[0.01, 0.0, 0.001], [0.0, 0.012, 0.0], [0.001, 0.0, 0.009]], dtype=torch.float64)
    edited = model.with_link_params(mass={"b": 0.9}, com={"b": [0.01, 0.02, 0.03]}, inertia={"b": inertia},
                                    damping={"j1": 0.7})
    xml = SMALL_TREE.replace(
        '<origin xyz="0.0 0.05 0.1" rpy="0 0.4 0"/><mass value="0.7"/>\n'
        '    <inertia ixx="0.008" ixy="0" ixz="0.0005" iyy="0.006" iyz="0" izz="0.004"/>',
        '<origin xyz="0.01 0.02 0.03"/><mass value="0.9"/>\n'
        '    <inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.009"/>'
    ).replace('<dynamics damping="0.3"/>', '<dynamics damping="0.7"/>')
    assert xml != SMALL_TREE
    reference = RobotModel.from_string(xml)
    q, qd, qdd = _data(model, 16)
    assert torch.allclose(edited.inverse_dynamics(q, qd, qdd, damping=True),
                          reference.inverse_dynamics(q, qd, qdd, damping=True), atol=1e-12)
    # the original is untouched, and the edited model is not learnable
    assert model.link_mass("b").item() == 0.7
    assert list(edited.parameters()) == []
    with pytest.raises(URDFError, match="triangle inequality"):
        model.with_link_params(inertia={"b": torch.diag(torch.tensor([0.001, 0.001, 0.01]))})


def test_clone_and_current_description_carry_learned_values():
    model = RobotModel.from_string(SMALL_TREE)
    model.make_learnable("a", "mass")
    with torch.no_grad():
        next(model.parameters()).add_(0.5)
    learned = model.link_mass("a").item()
    assert learned != pytest.approx(1.3)
    twin = model.clone()
    with torch.no_grad():
        next(twin.parameters()).add_(1.0)
    assert model.link_mass("a").item() == pytest.approx(learned)
    baked = RobotModel.from_description(model.current_description())
    q, qd, qdd = _data(model, 8)
    assert torch.allclose(
        baked.inverse_dynamics(q, qd, qdd), model.inverse_dynamics(q, qd, qdd).detach(), atol=1e-12
    )


def test_dtype_and_shared_use_across_threads():
    model = RobotModel.from_urdf(urdf_dir() / "panda.urdf", dtype=torch.float32)
    assert model.forward_kinematics(torch.zeros(7)).dtype == torch.float32
    model64 = RobotModel.from_urdf(urdf_dir() / "panda.urdf")
    inputs = [_data(model64, 16, seed=s) for s in range(4)]
    expected = [model64.forward_dynamics(*x) for x in inputs]
    results = [None] * 4

    def work(i):
        for _ in range(5):
            results[i] = model64.forward_dynamics(*inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r, e in zip(results, expected):
        assert torch.equal(r, e)
