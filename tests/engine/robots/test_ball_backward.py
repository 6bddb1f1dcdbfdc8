"""The compiled backward on models with ball joints (:mod:`engine.robots.vjp_kernels`,
:mod:`engine.robots.lane_ball_vjp`): gradients of ``w . inverse_dynamics`` and ``w .
forward_dynamics`` through ``loss.backward()``.

- against ``w^T`` times Pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives`` on the
  same MJCF (JointModelSpherical; the configuration gradient mapped to tangent rows), batches of
  one sample, a few, and 37 (a block of 32 lanes and a partial one);
- against the torch algorithms differentiated by autograd (``torch_only``, the route these models
  took before), the learnable link inertials' gradients included, and a model with coupled joints;
- off the unit sphere, the gradient with respect to every number of the configuration (balls'
  and free flyer's quaternions) against central differences of the compiled values;
- ``mass_matrix``'s backward (the compiled CRBA's) against the torch route's.

Models: tests/engine/robots/mjcf/ball_*.xml (see test_ball_derivatives.py).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import torch
from test_ball_derivatives import HERE, _states, _sym, close, t

from engine.robots import RobotModel
from engine.robots.backends import torch_only


def _quaternion_rows(quat, g4):
    """A quaternion's gradient ``(B, 4)`` as the tangent rows ``(B, 3)`` of ``quat exp(omega)``:
    ``d quat / d omega = 1/2 quat (x) [omega; 0]``."""
    x, y, z, w = quat.unbind(-1)
    J = 0.5 * torch.stack([torch.stack([w, -z, y], -1), torch.stack([z, w, -x], -1),
                           torch.stack([-y, x, w], -1), torch.stack([-x, -y, -z], -1)], 1)
    return torch.einsum("bi,bij->bj", g4, J)


def _tangent_rows(model, q, gq):
    """The configuration gradient ``(B, nq)`` as tangent rows ``(B, nv)``: a ball's and the free
    flyer's quaternion by :func:`_quaternion_rows`, the base position's rows zero on both sides."""
    out = torch.zeros(q.shape[0], model.nv, dtype=gq.dtype)
    if model.floating:
        out[:, 3:6] = _quaternion_rows(q[:, 3:7], gq[:, 3:7])
    for name in model.joint_names:
        qs, vs = model.joint_coordinates(name)
        out[:, vs] = _quaternion_rows(q[:, qs], gq[:, qs]) if qs.stop - qs.start == 4 else gq[:, qs]
    return out


def _gradients(model, fn, q, v, x, w, torch_route=False):
    """``(value, (dq, dv, dx))`` of ``w . fn(q, v, x)`` through backward (the compiled backward, or
    the torch algorithms)."""
    xs = [t(y).requires_grad_(True) for y in (q, v, x)]
    if torch_route:
        with torch_only():
            out = getattr(model, fn)(*xs)
    else:
        assert model._backend_for(*xs).name == "compiled-autograd"
        out = getattr(model, fn)(*xs)
    (out * t(w)).sum().backward()
    return out.detach(), tuple(y.grad for y in xs)


@pytest.mark.parametrize("batch", [1, 5, 37])
def test_backward_against_pinocchio_and_the_torch_route(ball_pair, batch):
    """RNEA's and ABA's backward: ``w^T`` times Pinocchio's derivatives (the tangent rows of the
    configuration gradient), and the torch route's gradients (the configuration's as tangent rows:
    the two routes compute the quaternion's rotation differently, so they agree along the sphere)."""
    model, pm, pd = ball_pair
    rng = np.random.default_rng(batch)
    q, v, a = _states(model, rng, batch)
    w = rng.normal(size=v.shape)
    for fn in ("inverse_dynamics", "forward_dynamics"):
        out, (gq, gv, ga) = _gradients(model, fn, q, v, a, w)
        ref_out, (rq, rv, ra) = _gradients(model, fn, q, v, a, w, torch_route=True)
        close(out, ref_out)
        rows = _tangent_rows(model, t(q), gq).numpy()
        close(rows, _tangent_rows(model, t(q), rq).numpy())
        close(gv, rv)
        close(ga, ra)
        for s in range(batch):
            if fn == "inverse_dynamics":
                ref = pin.computeRNEADerivatives(pm, pd, q[s], v[s], a[s])
                refs = (ref[0], ref[1], _sym(ref[2]))
            else:
                refs = pin.computeABADerivatives(pm, pd, q[s], v[s], a[s])
                refs = (refs[0], refs[1], _sym(refs[2]))
            for ours, X in zip((rows[s], gv[s].numpy(), ga[s].numpy()), refs):
                close(ours, w[s] @ X)


@pytest.mark.parametrize("batch", [2, 33])
def test_every_configuration_number_off_the_sphere_against_finite_differences(batch):
    """Quaternions of norm 1.2 (the free flyer's and two balls'): RNEA's gradient with respect to
    each of the configuration's numbers against central differences of the compiled values, which
    use the quaternion as given (one-sample blocks and lanes). (ABA's is exact along the sphere,
    above: off it the rotations are not orthogonal and the composite ``M`` of ``M^-1 (tau - h)`` is
    no longer RNEA's derivative with respect to the accelerations, which the backward uses.)"""
    model = RobotModel.from_file(HERE / "ball_floating.xml")
    rng = np.random.default_rng(40 + batch)
    q, v, a = _states(model, rng, batch, radius=1.2)
    w = rng.normal(size=v.shape)
    eps = 1e-6
    _, (gq, _, _) = _gradients(model, "inverse_dynamics", q, v, a, w)
    fd = np.empty_like(q)
    for i in range(model.nq):
        dq = np.zeros_like(q)
        dq[:, i] = eps
        plus, minus = (model.inverse_dynamics(t(q + sign * dq), t(v), t(a)).numpy() for sign in (1, -1))
        fd[:, i] = ((plus - minus) * w).sum(-1) / (2 * eps)
    assert np.abs(gq[:, 7:11].numpy()).max() > 1.0       # the balls' quaternions do act
    close(gq.numpy(), fd, 1e-6)


def test_learnable_inertials_against_the_torch_route():
    """A ball model with a learnable mass, centre of mass and inertia (the child of a ball, and
    a link below a hinge): the parameters' gradients through the compiled backward (the kernels'
    regressor products) equal the torch route's, for inverse and forward dynamics."""
    model = RobotModel.from_file(HERE / "ball_chain.xml")
    model.make_learnable("upper", "mass")
    model.make_learnable("upper", "com")
    model.make_learnable("fore", "inertia")
    rng = np.random.default_rng(3)
    q, v, a = _states(model, rng, 37)
    w = rng.normal(size=v.shape)
    params = [p for p in model.parameters() if p.requires_grad]
    assert params
    for fn in ("inverse_dynamics", "forward_dynamics"):
        grads = []
        for torch_route in (False, True):
            model.zero_grad()
            _gradients(model, fn, q, v, a, w, torch_route)
            grads.append([p.grad.clone() for p in params])
        for x, y in zip(*grads):
            close(x.numpy(), y.numpy())


def test_a_ball_model_with_coupled_joints_against_the_torch_route():
    """Two balls and three coupled joints (mjcf/ball_coupled.xml): the compiled backward's
    gradients (projected by the coupling) equal the torch route's, damping included."""
    model = RobotModel.from_file(HERE / "ball_coupled.xml")
    assert model._G is not None
    rng = np.random.default_rng(9)
    q, v, a = _states(model, rng, 6)
    w = rng.normal(size=v.shape)
    for fn in ("inverse_dynamics", "forward_dynamics"):
        out, (gq, gv, ga) = _gradients(model, fn, q, v, a, w)
        ref_out, (rq, rv, ra) = _gradients(model, fn, q, v, a, w, torch_route=True)
        close(out, ref_out)
        close(_tangent_rows(model, t(q), gq), _tangent_rows(model, t(q), rq))
        close(gv, rv)
        close(ga, ra)


@pytest.mark.parametrize("batch", [1, 6])
@pytest.mark.parametrize("name, link", [("tree", "upper"), ("floating", "thigh")])
def test_mass_matrix_backward_against_the_torch_route(name, link, batch):
    """``sum_ij G_ij dM_ij`` through the compiled CRBA's backward (RNEA's products at the unit
    accelerations): the configuration's gradient as tangent rows, and the learnable inertia and
    centre of mass of a ball's child link, equal the torch route's."""
    model = RobotModel.from_file(HERE / f"ball_{name}.xml")
    model.make_learnable(link, "inertia")
    model.make_learnable(link, "com")
    rng = np.random.default_rng(60 + batch)
    q = _states(model, rng, batch)[0]
    G = t(rng.normal(size=(batch, model.nv, model.nv)))
    params = [p for p in model.parameters() if p.requires_grad]
    grads = []
    for torch_route in (False, True):
        x = t(q).requires_grad_(True)
        if torch_route:
            with torch_only():
                M = model.mass_matrix(x)
        else:
            assert model._backend_for(x).name == "compiled-autograd"
            M = model.mass_matrix(x)
        gq, *gp = torch.autograd.grad((M * G).sum(), [x, *params])
        grads.append([_tangent_rows(model, t(q), gq), *gp])
    assert float(grads[1][0].abs().max()) > 1e-3
    for x, y in zip(*grads):
        close(x.numpy(), y.numpy())
