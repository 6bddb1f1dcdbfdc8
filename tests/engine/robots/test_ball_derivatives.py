"""Analytic derivatives of RNEA and ABA on models with ball joints (the compiled kernels,
:mod:`engine.robots.derivative_kernels`): against Pinocchio's ``computeRNEADerivatives`` and
``computeABADerivatives`` on the same MJCF (``<joint type="ball">`` is its JointModelSpherical, q a
quaternion (x, y, z, w) and the q-derivatives in the tangent space, ``q exp(dq)``, as our
``integrate``), to 1e-9 relative to each matrix's magnitude; against central finite differences
along ``integrate`` (armature, damping); against the torch algorithms differentiated by autograd
(``torch_only``, the route these models took before); the kernels' vector-Jacobian products
against the full matrices; a ball model with coupled joints against the torch route; the compiled
regressor against Pinocchio's ``computeJointTorqueRegressor`` and the torch route.

Models: mjcf/ball_chain.xml (a ball at the root, a hinge, a ball with armature, a slide; nv 8),
mjcf/ball_floating.xml (a free flyer, two balls and a hinge; nv 13), mjcf/ball_tree.xml (a hinge,
a ball, a ball right below it, a hinge and a slide below them, a ball and a hinge on a branch,
tilted gravity; nv 13, ABA's grouped tree solve) and mjcf/ball_coupled.xml (two balls and three coupled joints).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import torch

from engine.robots import RobotModel, compiled_shortcut
from engine.robots.backends import torch_only
from engine.robots.compiled_shortcut import model_calls
from engine.robots.derivatives import _compiled_ok

HERE = Path(__file__).parent / "mjcf"
TOL = 1e-9


def t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def _states(model, rng, batch, radius=1.0):
    """``q (batch, nq)`` with quaternions of norm ``radius`` (unit by default), ``v, a (batch, nv)``."""
    q = rng.normal(size=(batch, model.nq))
    cols = [slice(3, 7)] if model.floating else []
    cols += [model.joint_coordinates(name)[0] for name in model.ball_joint_names]
    for s in cols:
        q[:, s] *= radius / np.linalg.norm(q[:, s], axis=1, keepdims=True)
    return q, rng.normal(size=(batch, model.nv)), rng.normal(size=(batch, model.nv))


def close(ours, ref, tol=TOL):
    ours, ref = np.asarray(ours), np.asarray(ref)
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(ours - ref).max())
    assert err <= tol * scale, f"max error {err:.3e} (scale {scale:.3g})"


def _sym(M):
    return np.triu(M) + np.triu(M, 1).T


@pytest.fixture(params=["shortcut", "backend"])
def route(request, monkeypatch):
    """The model's plain call (the compiled shortcut) and, with the shortcut off, the compiled
    backend of :mod:`engine.robots.derivatives`."""
    if request.param == "backend":
        monkeypatch.setattr(compiled_shortcut, "ENABLED", False)
    return request.param


@pytest.mark.parametrize("batch", [1, 5])
def test_rnea_derivatives_against_pinocchio_and_autograd(ball_pair, route, batch):
    model, pm, pd = ball_pair
    q, v, a = _states(model, np.random.default_rng(batch), batch)
    assert _compiled_ok(model, t(q))
    ours = [x.numpy() for x in model.rnea_derivatives(t(q), t(v), t(a))]
    assert ours[0].shape == (batch, model.nv, model.nv)
    with torch_only():
        auto = [x.numpy() for x in model.rnea_derivatives(t(q), t(v), t(a))]
    for s in range(batch):
        ref = pin.computeRNEADerivatives(pm, pd, q[s], v[s], a[s])
        for X, R, A in zip(ours, (ref[0], ref[1], _sym(ref[2])), auto):
            close(X[s], R)
            close(X[s], A[s])


@pytest.mark.parametrize("batch", [1, 5])
def test_aba_derivatives_against_pinocchio_and_autograd(ball_pair, route, batch):
    model, pm, pd = ball_pair
    q, v, tau = _states(model, np.random.default_rng(10 + batch), batch)
    ours = [x.numpy() for x in model.aba_derivatives(t(q), t(v), t(tau))]
    with torch_only():
        auto = [x.numpy() for x in model.aba_derivatives(t(q), t(v), t(tau))]
    for s in range(batch):
        ref = pin.computeABADerivatives(pm, pd, q[s], v[s], tau[s])
        for X, R, A in zip(ours, (ref[0], ref[1], _sym(ref[2])), auto):
            close(X[s], R)
            close(X[s], A[s])


def test_a_batch_in_lanes_against_pinocchio(ball_pair):
    """A batch of 37 runs the lane kernels (a full block of LANES = 32 samples and a partial one
    of 5; batches 1 and 5 above run one sample at a time): RNEA's and ABA's derivatives per sample
    against Pinocchio."""
    model, pm, pd = ball_pair
    q, v, a = _states(model, np.random.default_rng(37), 37)
    rnea = [x.numpy() for x in model.rnea_derivatives(t(q), t(v), t(a))]
    aba = [x.numpy() for x in model.aba_derivatives(t(q), t(v), t(a))]
    for s in range(37):
        ref = pin.computeRNEADerivatives(pm, pd, q[s], v[s], a[s])
        for X, R in zip(rnea, (ref[0], ref[1], _sym(ref[2]))):
            close(X[s], R)
        ref = pin.computeABADerivatives(pm, pd, q[s], v[s], a[s])
        for X, R in zip(aba, (ref[0], ref[1], _sym(ref[2]))):
            close(X[s], R)


def test_one_sample_without_a_batch_dimension(ball_pair):
    model, pm, pd = ball_pair
    q, v, a = (x[0] for x in _states(model, np.random.default_rng(3), 1))
    dq, dv, da = (x.numpy() for x in model.rnea_derivatives(t(q), t(v), t(a), gravity=False))
    assert dq.shape == (model.nv, model.nv)
    saved = pm.gravity.linear.copy()
    pm.gravity.linear = np.zeros(3)
    try:
        ref = pin.computeRNEADerivatives(pm, pd, q, v, a)
    finally:
        pm.gravity.linear = saved
    close(dq, ref[0])
    close(dv, ref[1])


def _fd(fn, model, q, v, x, k, eps=1e-6):
    """Central differences of ``fn(q, v, x)`` along column ``k`` of the tangent space (k = 0,
    along ``integrate``), of v (1) or of x (2), every column stacked last."""
    eye = torch.eye(model.nv, dtype=torch.float64)
    cols = []
    for i in range(model.nv):
        step = eps * eye[i].expand(q.shape[0], model.nv)
        plus, minus = ([model.integrate(q, s), v, x] if k == 0 else [q, v + s, x] if k == 1 else [q, v, x + s]
                       for s in (step, -step))
        cols.append((fn(*plus) - fn(*minus)) / (2 * eps))
    return torch.stack(cols, dim=-1)


def test_derivatives_with_armature_and_damping_against_finite_differences(ball_pair):
    model, _, _ = ball_pair
    q, v, a = (t(x) for x in _states(model, np.random.default_rng(4), 2))
    for deriv, fn in ((model.rnea_derivatives, model.inverse_dynamics),
                      (model.aba_derivatives, model.forward_dynamics)):
        analytic = deriv(q, v, a, damping=True)
        for k in range(3):
            fd = _fd(partial(fn, damping=True), model, q, v, a, k)
            ref = analytic[k]
            assert float((fd - ref).abs().max()) <= 1e-6 * max(1.0, float(ref.abs().max())), (fn.__name__, k)
    close(model.aba_derivatives(q, v, a)[2].numpy() @ model.rnea_derivatives(q, v, a)[2].numpy(),
          np.broadcast_to(np.eye(model.nv), (2, model.nv, model.nv)), 1e-10)


def test_vector_jacobian_products_of_the_kernels(ball_pair):
    """The kernels' O(n) products ``g^T (.)`` (ball columns included) equal ``g^T`` times the full
    matrices, with armature and, in ABA's, damping."""
    model, _, _ = ball_pair
    cb = model._compiled()
    q, v, a = (t(x) for x in _states(model, np.random.default_rng(5), 3))
    g = torch.randn(3, model.nv, dtype=torch.float64)
    d = torch.rand(model.nv, dtype=torch.float64)
    args = (q, v, a, model._a0, model._inertials())
    qdd = cb.aba(q, v, a, model._a0, model._inertials())
    for mode, kw in (("rnea", {}), ("aba", {"damping": d})):
        full = cb.derivatives(*args, mode, **kw)
        at = (q, v, qdd, *args[3:]) if mode == "aba" else args
        products = cb.derivatives(*at, mode + "_vjp", g=g, **kw)
        for X, p in zip(full, products):
            close(p, np.einsum("bi,bij->bj", g.numpy(), X))


def test_the_shortcut_serves_ball_derivatives_and_the_regressor():
    model = RobotModel.from_file(HERE / "ball_chain.xml")
    q, v, a = _states(model, np.random.default_rng(6), 2)
    calls = model_calls(model)
    ours = calls.rnea_derivatives(q, v, a)
    for x, y in zip(ours, model.rnea_derivatives(t(q), t(v), t(a))):
        np.testing.assert_array_equal(x, y.numpy())
    np.testing.assert_array_equal(calls.regressor(q, v, a), model.regressor(t(q), t(v), t(a)).numpy())
    assert _compiled_ok(model, t(q))


def _regressor_block(model, joint: str) -> int:
    """The regressor's body block of a joint's child body (a ball's: its last sub-body)."""
    f = 6 if model.floating else 0
    return (1 if model.floating else 0) + model.joint_coordinates(joint)[1].stop - 1 - f


@pytest.mark.parametrize("batch", [1, 37])
def test_regressor_against_pinocchio_and_the_torch_route(ball_pair, batch):
    """The compiled regressor: each joint's child body's ten columns against Pinocchio's
    ``computeJointTorqueRegressor`` (its joint's block), every column (the balls' massless
    sub-bodies too) against the torch route's, ``Y pi`` against inverse dynamics less the armature's
    torques, and the kernels' ``w^T Y`` per body against ``w^T`` times ``Y``."""
    model, pm, pd = ball_pair
    q, v, a = _states(model, np.random.default_rng(20 + batch), batch)
    Y = model.regressor(t(q), t(v), t(a)).numpy()
    with torch_only():
        close(Y, model.regressor(t(q), t(v), t(a)).numpy())
    arm = model._compiled()._armature
    assert arm.any() or model.name.endswith("floating")
    tau = model.inverse_dynamics(t(q), t(v), t(a)).numpy()
    f = 6 if model.floating else 0
    tau[:, f:] -= a[:, f:] * arm[np.argsort(model._compiled()._chain[3])]
    close(Y @ model.dynamic_parameters().detach().numpy(), tau)
    blocks = [0] * model.floating + [_regressor_block(model, name) for name in model.joint_names]
    for s in range(batch):
        ref = pin.computeJointTorqueRegressor(pm, pd, q[s], v[s], a[s])
        assert ref.shape[1] == 10 * len(blocks)
        for i, b in enumerate(blocks):
            close(Y[s][:, 10 * b:10 * b + 10], ref[:, 10 * i:10 * i + 10])
    w = np.random.default_rng(2).normal(size=v.shape)
    per_body = model._compiled().regressor_vjp(t(q), t(v), t(a), model._a0, t(w))       # internal order
    order = ([0] if model.floating else []) + (model._dof_body + 1).tolist()
    wY = np.einsum("bi,bij->bj", w, Y).reshape(batch, -1, 10)
    close(per_body[:, order], wY)


@pytest.mark.parametrize("batch", [1, 4])
def test_a_ball_model_with_coupled_joints_against_autograd_and_finite_differences(route, batch):
    """Two balls and three coupled joints (mjcf/ball_coupled.xml): the kernels' derivatives
    projected by the coupling (ABA's by ``-M^-1`` from the projected RNEA ones) against the torch
    route, and ABA's against finite differences along ``integrate``."""
    model = RobotModel.from_file(HERE / "ball_coupled.xml")
    assert model._G is not None and model.ball_joint_names
    q, v, a = (t(x) for x in _states(model, np.random.default_rng(7 + batch), batch))
    for damping in (False, True):
        ours = [*model.rnea_derivatives(q, v, a, damping=damping), *model.aba_derivatives(q, v, a, damping=damping)]
        with torch_only():
            auto = [*model.rnea_derivatives(q, v, a, damping=damping),
                    *model.aba_derivatives(q, v, a, damping=damping)]
        for x, y in zip(ours, auto):
            close(x.numpy(), y.numpy())
    dq = model.aba_derivatives(q, v, a)[0]
    close(dq.numpy(), _fd(model.forward_dynamics, model, q, v, a, 0).numpy(), 1e-6)
