"""Both batch paths and both forward-dynamics methods against Pinocchio, float64, 1e-9.

The model runs small batches body-major (per-sample products) and large ones batch-last,
component-major (from ``engine.robots.model.BATCH_LAST_BATCH`` samples on); forward
dynamics runs either the articulated-body recursion or ``M qdd = tau - b`` (composite
rigid bodies, RNEA bias, a factorisation), chosen by ``dynamics_batch_last.auto_fd_method``. Every
combination is checked here on every reference robot (a chain, a tree, the shipped URDFs),
and gradients of the large-batch path against finite differences.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import PinocchioPair
from pinocchio_pair import close as _close
from robots_testdata import SMALL_TREE, robot_cases

from engine.robots import RobotModel
from engine.robots import dynamics_batch_last as dyn_bl
from engine.robots import model as model_module

TOL = 1e-9
SMALL = 7
LARGE = max(model_module.BATCH_LAST_BATCH, 128)


def close(ours, ref, tol=TOL):
    _close(ours, ref, tol)


class Case(PinocchioPair):
    def states(self, batch, seed):
        return self.random_states(batch, seed)


@pytest.fixture(scope="module", params=robot_cases())
def case(request):
    path, opts = request.param if isinstance(request.param, tuple) else (request.param, {})
    return Case(path, opts)


# samples checked against Pinocchio in each batch (every one for the small batch)
def _checked(batch):
    return range(0, batch, 1 if batch <= SMALL else 9)


@pytest.mark.parametrize("batch", [SMALL, LARGE])
def test_rnea_crba_gravity_bias(case, batch, dynamics_path):
    q, qd, qdd = case.states(batch, seed=batch)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)
    m = case.model
    tau = m.inverse_dynamics(t(q), t(qd), t(qdd)).numpy()
    M = m.mass_matrix(t(q)).numpy()
    g = m.gravity_torques(t(q)).numpy()
    b = m.bias_forces(t(q), t(qd)).numpy()
    n = m.dof
    for s in _checked(batch):
        qp, vp, ap = case.q_to_pin(q[s]), case.to_pin(qd[s]), case.to_pin(qdd[s])
        close(tau[s], np.reshape(pin.rnea(case.pm, case.pd, qp, vp, ap), -1)[case.perm])
        Mp = np.reshape(pin.crba(case.pm, case.pd, qp), (n, n))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        close(M[s], Mp[np.ix_(case.perm, case.perm)])
        close(g[s], np.reshape(pin.computeGeneralizedGravity(case.pm, case.pd, qp), -1)[case.perm])
        close(b[s], np.reshape(pin.nonLinearEffects(case.pm, case.pd, qp, vp), -1)[case.perm])


@pytest.mark.parametrize("batch", [SMALL, LARGE])
@pytest.mark.parametrize("method", ["articulated", "composite"])
def test_forward_dynamics_both_methods(case, batch, method, monkeypatch, dynamics_path):
    monkeypatch.setattr(dyn_bl, "auto_fd_method", lambda n, depth: method)
    q, qd, tau = case.states(batch, seed=batch + 1)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)
    qdd = case.model.forward_dynamics(t(q), t(qd), t(tau)).numpy()
    for s in _checked(batch):
        ref = pin.aba(case.pm, case.pd, case.q_to_pin(q[s]), case.to_pin(qd[s]), case.to_pin(tau[s]))
        close(qdd[s], np.reshape(ref, -1)[case.perm])


@pytest.mark.parametrize("batch", [SMALL, LARGE])
def test_kinematics(case, batch, dynamics_path):
    q, _, _ = case.states(batch, seed=batch + 2)
    m = case.model
    qt = torch.as_tensor(q, dtype=torch.float64)
    T = m.forward_kinematics(qt).numpy()
    end = m.link_names[-1]
    J = m.jacobian(qt, end).numpy()
    frames = [case.pm.getFrameId(name, pin.BODY) for name in m.link_names]
    fid = case.pm.getFrameId(end, pin.BODY)
    for s in _checked(batch):
        qp = case.q_to_pin(q[s])
        pin.computeJointJacobians(case.pm, case.pd, qp)
        pin.framesForwardKinematics(case.pm, case.pd, qp)
        close(T[s], np.stack([case.pd.oMf[f].homogeneous for f in frames]))
        ref = np.reshape(pin.getFrameJacobian(case.pm, case.pd, fid, pin.LOCAL_WORLD_ALIGNED), (6, -1))
        close(J[s], ref[:, case.perm])


@pytest.mark.parametrize("method", ["articulated", "composite"])
def test_large_batch_gradients_match_finite_differences(method, monkeypatch):
    """Directional derivatives of the large-batch path, inputs and a learnable mass and inertia."""
    monkeypatch.setattr(dyn_bl, "auto_fd_method", lambda n, depth: method)
    model = RobotModel.from_string(SMALL_TREE)
    link = model.link_names[2]
    model.make_learnable(link, "mass")
    model.make_learnable(link, "inertia")
    g = torch.Generator().manual_seed(3)
    n = model.dof
    x0 = [torch.rand(LARGE, n, generator=g, dtype=torch.float64) - 0.5 for _ in range(3)]
    params = list(model.parameters())
    w = torch.randn(LARGE, n, generator=g, dtype=torch.float64)
    wM = torch.randn(LARGE, n, n, generator=g, dtype=torch.float64)

    def loss(q, qd, x):
        return ((model.inverse_dynamics(q, qd, x) * w).sum() + (model.forward_dynamics(q, qd, x) * w).sum()
                + (model.mass_matrix(q) * wM).sum() + (model.jacobian(q, "tool")[..., :n] ** 2).sum())

    xs = [x.clone().requires_grad_(True) for x in x0]
    value = loss(*xs)
    grads = torch.autograd.grad(value, xs + params)
    dirs = [torch.randn(x.shape, generator=g, dtype=torch.float64) for x in xs + params]
    predicted = sum(float((gr * d).sum()) for gr, d in zip(grads, dirs))
    eps = 1e-6
    with torch.no_grad():
        def shifted(sign):
            for p, d in zip(params, dirs[3:]):
                p.add_(sign * eps * d)
            out = float(loss(*(x + sign * eps * d for x, d in zip(x0, dirs[:3]))))
            for p, d in zip(params, dirs[3:]):
                p.sub_(sign * eps * d)
            return out
        numeric = (shifted(1.0) - shifted(-1.0)) / (2 * eps)
    assert abs(numeric - predicted) <= 1e-6 * max(1.0, abs(numeric)), (numeric, predicted)
