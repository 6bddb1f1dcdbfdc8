"""The O(n) vector-Jacobian kernel (:mod:`engine.robots.vjp_kernels`, called through
:mod:`engine.robots.compiled_vjp`): the backward of inverse_dynamics and forward_dynamics.

Against ``g^T`` times the full derivative matrices of :mod:`engine.robots.derivative_kernels`
(small tree with armature, fixed and floating), against Pinocchio's ``computeRNEADerivatives`` /
``computeABADerivatives`` through the model's autograd (an arm, a free-flyer quadruped with
tangent-space rows, a gripper with coupled mimic joints: ``P^T (.) P``), against central
differences of ``g . tau`` and the regressor's products; torch.autograd.gradcheck of the
coupled gripper's inverse and forward dynamics through the compiled backward.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import torch
from robots_testdata import example_robot_data
from test_derivatives import TOL, Pair, _state, _sym, _t, _with_armature, close
from test_mimic import GRIPPER

from engine.robots import RobotModel
from engine.robots import compiled_vjp as cv
from engine.robots.backends import torch_only


def _kernel_args(m, q, v):
    cb = m._compiled()
    consts = cb._constants(m._inertials())
    return cb, consts, (m._all_q(q).numpy(), m._all_v(v).numpy())


@pytest.mark.parametrize("floating", [False, True])
def test_products_equal_the_full_derivatives_contracted(floating):
    """RNEA (with and without armature) and ABA (``M`` computed in the kernel, or the factors
    of aba_forward reused): ``g^T`` times the full matrices, the regressor's ``g^T Y``, and
    aba_forward's accelerations equal the ABA kernel's."""
    m = _with_armature(floating)
    cb, consts, (qn, vn) = _kernel_args(m, *_state(m, 5, seed=21)[:2])
    rng = np.random.default_rng(0)
    an, tau, g = (rng.normal(size=(5, vn.shape[1])) for _ in range(3))
    a0, inert, fl = cb._gravity(m._a0), m._inertials(), m.floating
    T = (torch.from_numpy(x) for x in (qn, vn, an))
    qt, vt, at = T
    for arm in (cb._no_armature, cb._armature):
        full = cb.derivatives(qt, vt, at, m._a0, inert, "rnea", armature=arm is cb._armature)
        out = cv.rnea_vjp(consts, qn, vn, an, a0, arm, fl, g, want_pi=True)
        for X, p in zip(full, out[:3]):
            close(p, np.einsum("bi,bij->bj", g, X), 1e-12)
        close(out[3], cb.regressor_vjp(qt, vt, at, m._a0, torch.from_numpy(g)).sum(0), 1e-12)
    qdd, H = cv.aba_forward(consts, qn, vn, tau, a0, cb._armature, fl)
    close(qdd, cb.aba(qt, vt, torch.from_numpy(tau), m._a0, inert).numpy(), 1e-12)
    full = cb.derivatives(qt, vt, torch.from_numpy(tau), m._a0, inert, "aba")
    for factors in (None, H):
        out = cv.aba_vjp(consts, qn, vn, qdd, a0, cb._armature, fl, g, True, factors)
        for X, p in zip(full, out[:3]):
            close(p, np.einsum("bi,bij->bj", g, X), 1e-11)
        close(out[3], -cb.regressor_vjp(qt, vt, torch.from_numpy(qdd), m._a0, torch.from_numpy(out[2])).sum(0),
              1e-11)


@pytest.fixture(scope="module", params=["arm", "quadruped", "mimic"])
def pair(request, tmp_path_factory):
    if request.param == "arm":
        return Pair(example_robot_data("panda_description/urdf/panda.urdf"), False, mimic="independent")
    if request.param == "quadruped":
        return Pair(example_robot_data("solo_description/robots/solo12.urdf"), True)
    path = tmp_path_factory.mktemp("vjp") / "gripper.urdf"
    path.write_text(GRIPPER)
    return Pair(path, False)


def _tangent_rows(m, q, gq):
    """The configuration gradient ``(B, nq)`` as tangent rows ``(B, nv)`` (a free-flyer base's
    quaternion gradient mapped by ``d quat / d omega = 1/2 quat (x) [omega; 0]``; position rows
    are zero on both sides)."""
    if not m.floating:
        return gq
    x, y, z, w = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    # d quat / d omega (body frame), columns omega_x, omega_y, omega_z; rows x, y, z, w
    J = 0.5 * torch.stack([torch.stack([w, -z, y], -1), torch.stack([z, w, -x], -1),
                           torch.stack([-y, x, w], -1), torch.stack([-x, -y, -z], -1)], 1)
    rot = torch.einsum("bi,bij->bj", gq[:, 3:7], J)
    return torch.cat([torch.zeros_like(gq[:, :3]), rot, gq[:, 7:]], -1)


def test_backward_against_pinocchio(pair):
    """The gradients of ``w . inverse_dynamics`` and ``w . forward_dynamics`` through the compiled
    backward equal ``w^T`` times Pinocchio's derivatives (coupled joints: ``P^T (.) P``)."""
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, v, a, tau = pair.states(seed=11)
    w = np.random.default_rng(1).normal(size=v.shape)
    leaves = [_t(x).requires_grad_(True) for x in (q, v, a)]
    assert m._backend_for(*leaves).name == "compiled-autograd"
    for fn in ("inverse_dynamics", "forward_dynamics"):
        x3 = leaves if fn == "inverse_dynamics" else [leaves[0], leaves[1], _t(tau).requires_grad_(True)]
        out = getattr(m, fn)(*x3)
        gq, gv, ga = torch.autograd.grad((out * _t(w)).sum(), x3)
        gq = _tangent_rows(m, x3[0].detach(), gq).numpy()
        qdd = out.detach().numpy()
        for s in range(len(q)):
            qp, vp = pair.pin_q(q[s]), pair.P @ v[s]
            if fn == "inverse_dynamics":
                ref = pin.computeRNEADerivatives(pm, pd, qp, vp, pair.P @ a[s])
                refs = [pair.project(ref[0]), pair.project(ref[1]), pair.project(_sym(ref[2]))]
            else:   # -M^-1 times the projected RNEA derivatives at the solution, M^-1
                Mu = pair.project(_sym(pin.crba(pm, pd, qp)))
                ref = pin.computeRNEADerivatives(pm, pd, qp, vp, pair.P @ qdd[s])
                refs = [-np.linalg.solve(Mu, pair.project(ref[0])), -np.linalg.solve(Mu, pair.project(ref[1])),
                        np.linalg.inv(Mu)]
            for ours, X in zip((gq[s], gv[s].numpy(), ga[s].numpy()), refs):
                close(ours, w[s] @ X, TOL)


@pytest.mark.parametrize("floating", [False, True])
def test_products_against_finite_differences(floating):
    """``g^T dtau/d(q, v, a)`` and ``g^T dqdd/d(q, v, tau)`` against central differences of
    ``g . tau`` (q moved along the tangent space by ``model.integrate``), armature and damping on."""
    m = _with_armature(floating)
    q, v, a = _state(m, 2, seed=22)
    g = torch.randn(2, m.nv, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    eps = 1e-6
    eye = torch.eye(m.nv, dtype=torch.float64)
    for fn in (m.inverse_dynamics, m.forward_dynamics):
        leaves = [x.clone().requires_grad_(True) for x in (q, v, a)]
        gq, gv, ga = torch.autograd.grad((fn(*leaves, damping=True) * g).sum(), leaves)
        gq = _tangent_rows(m, q, gq)
        for k, ours in enumerate((gq, gv, ga)):
            cols = []
            for i in range(m.nv):
                step = eps * eye[i].expand(2, m.nv)
                plus, minus = ([m.integrate(q, s), v, a] if k == 0 else [q, v + s, a] if k == 1 else [q, v, a + s]
                               for s in (step, -step))
                cols.append(((fn(*plus, damping=True) - fn(*minus, damping=True)) * g).sum(-1) / (2 * eps))
            fd = torch.stack(cols, -1)
            assert float((fd - ours).abs().max()) <= 1e-6 * max(1.0, float(fd.abs().max())), (fn.__name__, k)


def test_gradcheck_with_coupled_joints(tmp_path):
    """The gripper's coupled mimic joints: gradcheck of inverse and forward dynamics (damping on)
    through the compiled backward, and the same gradients as the torch path."""
    path = tmp_path / "gripper.urdf"
    path.write_text(GRIPPER)
    m = RobotModel.from_urdf(path)
    q, v, a = (x.requires_grad_(True) for x in _state(m, 2, seed=23))
    assert m._backend_for(q, v, a).name == "compiled-autograd"
    for fn in (m.inverse_dynamics, m.forward_dynamics):
        assert torch.autograd.gradcheck(lambda x, y, z, fn=fn: fn(x, y, z, damping=True), (q, v, a))
        w = torch.randn(2, m.nv, dtype=torch.float64)
        ours = torch.autograd.grad((fn(q, v, a, damping=True) * w).sum(), (q, v, a))
        with torch_only():
            ref = torch.autograd.grad((fn(q, v, a, damping=True) * w).sum(), (q, v, a))
        for x, y in zip(ours, ref):
            close(x.numpy(), y.numpy())


@pytest.mark.parametrize("name", ["fixed", "floating", "mimic"])
def test_mass_matrix_backward(name, tmp_path):
    """mass_matrix on inputs or learnable inertials that need a gradient: the compiled CRBA with
    RNEA's products as its backward; gradcheck in q, and the gradients of the torch path for q
    and the learnable mass, centre of mass and inertia."""
    if name == "mimic":
        path = tmp_path / "gripper.urdf"
        path.write_text(GRIPPER)
        m = RobotModel.from_urdf(path)
    else:
        m = _with_armature(name == "floating")
        m.make_learnable("c", "mass")
        m.make_learnable("b", "com")
        m.make_learnable("d", "inertia")
    q = _state(m, 3, seed=24)[0].requires_grad_(True)
    assert m._backend_for(q).name == "compiled-autograd"
    assert torch.autograd.gradcheck(m.mass_matrix, (q,))
    G = torch.randn(3, m.nv, m.nv, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    leaves = [q, *m.parameters()]
    ours = torch.autograd.grad((m.mass_matrix(q) * G).sum(), leaves)
    with torch_only():
        ref = torch.autograd.grad((m.mass_matrix(q) * G).sum(), leaves)
    if m.floating:      # the quaternion's gradient is zero on both sides' unit sphere
        ours, ref = ((torch.cat([g[0][:, :3], g[0][:, 7:]], -1), *g[1:]) for g in (ours, ref))
    for x, y in zip(ours, ref):
        close(x.numpy(), y.numpy())


@pytest.mark.parametrize("floating", [False, True])
def test_backward_reads_what_the_forward_kept(floating, monkeypatch):
    """A differentiable call runs the forward kernel once and its backward the reverse pass alone
    (no RNEA kernel); what ABA's forward keeps is RNEA's forward at ABA's result (the accelerations
    and forces of its second turn); a graph kept for a second backward gives the same gradients
    (the kept arrays are read, not changed); learnable inertials included, against Pinocchio's
    derivatives contracted with the cotangent where they reach it (test_backward_against_pinocchio)
    and against the torch path here."""
    from engine.robots import compiled_dynamics, compiled_kernels, vjp_kernels

    assert compiled_dynamics.available()        # built (its own test calls made) before the spies
    m = _with_armature(floating)
    m.make_learnable("c", "mass")
    m.make_learnable("b", "inertia")
    q, v, a = (x.requires_grad_(True) for x in _state(m, 4, seed=31))
    calls = {"forward_kernel": 0, "adjoint_kernel": 0, "rnea_kernel": 0}
    for module, name in ((vjp_kernels, "forward_kernel"), (vjp_kernels, "adjoint_kernel"),
                         (compiled_kernels, "rnea_kernel")):
        inner = getattr(module, name)

        def spy(*args, _inner=inner, _name=name):
            calls[_name] += 1
            return _inner(*args)
        monkeypatch.setattr(module, name, spy)
    w = torch.randn(4, m.nv, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    params = list(m.parameters())
    for fn in (m.inverse_dynamics, m.forward_dynamics):
        before = dict(calls)
        loss = (fn(q, v, a) * w).sum()
        assert calls["forward_kernel"] == before["forward_kernel"] + 1
        first = torch.autograd.grad(loss, [q, v, a] + params, retain_graph=True)
        again = torch.autograd.grad(loss, [q, v, a] + params)
        assert calls["adjoint_kernel"] == before["adjoint_kernel"] + 2 and calls["rnea_kernel"] == 0
        with torch_only():
            ref = torch.autograd.grad((fn(q, v, a) * w).sum(), [q, v, a] + params)
        for k, (x, y, z) in enumerate(zip(first, again, ref)):
            assert torch.equal(x, y)
            if k == 0:      # a quaternion's gradient: along the unit sphere (see test_backward_against_pinocchio)
                x, z = _tangent_rows(m, q.detach(), x), _tangent_rows(m, q.detach(), z)
            close(x.numpy(), z.numpy(), TOL)
    cb, consts, (qn, vn) = _kernel_args(m, q.detach(), v.detach())
    a0, tau = cb._gravity(m._a0), a.detach().numpy()
    qdd, kept = cv.forward(consts, qn, vn, tau, a0, cb._armature, m.floating, True)
    tau_again, at_qdd = cv.forward(consts, qn, vn, qdd, a0, cb._armature, m.floating, False)
    close(tau_again, tau, 1e-12)
    for field in ("R", "p", "v", "Xa", "F", "Iv", "gb"):
        close(getattr(kept, field), getattr(at_qdd, field), 1e-12)


@pytest.mark.parametrize("floating", [False, True])
def test_batches_in_blocks_of_lanes(floating):
    """The kernels take the samples in blocks of ``cv.LANES`` SIMD lanes, the last block the
    remainder, or below ``cv.SMALL_BATCH`` one sample a block: batches of 1, 5, one block of 9, a
    block and three, and 37 give the torch path's gradients (the configuration's along the sphere;
    learnable inertials, whose products are summed over the blocks, and armature included), for
    inverse and forward dynamics; each sample's gradient is the one it gets alone."""
    m = _with_armature(floating)
    m.make_learnable("c", "mass")
    params = list(m.parameters())
    for batch in (1, 5, 9, cv.LANES + 3, 37):
        q, v, a = (x.requires_grad_(True) for x in _state(m, batch, seed=batch))
        w = torch.randn(batch, m.nv, dtype=torch.float64, generator=torch.Generator().manual_seed(batch))
        for fn in (m.inverse_dynamics, m.forward_dynamics):
            ours = torch.autograd.grad((fn(q, v, a) * w).sum(), [q, v, a] + params)
            with torch_only():
                ref = torch.autograd.grad((fn(q, v, a) * w).sum(), [q, v, a] + params)
            for k, (x, z) in enumerate(zip(ours, ref)):
                if k == 0:
                    x, z = _tangent_rows(m, q.detach(), x), _tangent_rows(m, q.detach(), z)
                close(x.numpy(), z.numpy(), TOL)
            last = torch.autograd.grad((fn(q[-1:], v[-1:], a[-1:]) * w[-1:]).sum(), [q, v, a])
            for x, y in zip(ours[:3], last):
                close(x[-1].numpy(), y[-1].numpy(), 1e-12)


def test_lane_sine_and_cosine_against_libm():
    """The vectorised sine and ``1 - cos`` of the lane kernels (Cephes' formulas) against libm's
    (``math``): within 2 units in the last place of ``sin`` (near its zeros ``k pi``, where the
    reduction's error shows, ``1e-30 |x|``) and of ``cos`` (hence ``1 - cos`` within 2 ulp of 1),
    exact at 0, libm's own beyond ``2^30``, inf and nan."""
    from numba import njit

    from engine.robots.lane_spatial import _sin_1mcos_l

    @njit
    def lanes(x, s, c1):
        _sin_1mcos_l(x, s, c1, x.shape[0])

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-4, 4, 20000), rng.uniform(-1e-6, 1e-6, 1000), rng.uniform(-1e9, 1e9, 2000),
                        np.arange(-16, 17) * np.pi / 4, [0.0, -0.0, 2e9, -3e15, np.inf, -np.inf, np.nan]])
    s, c1 = np.empty_like(x), np.empty_like(x)
    lanes(x, s, c1)
    sin, cos = (np.array([f(t) if math.isfinite(t) else math.nan for t in x]) for f in (math.sin, math.cos))
    ok = np.isfinite(x)
    assert np.all(np.abs(s - sin)[ok] <= 2 * np.spacing(np.abs(sin[ok])) + 1e-30 * np.abs(x[ok]))
    assert np.all(np.abs((1.0 - c1) - cos)[ok] <= 2 * np.spacing(np.maximum(np.abs(cos[ok]), 0.5)))
    assert s[-7] == 0.0 and c1[-7] == 0.0
    big = ~(np.abs(x) <= 2.0**30)
    np.testing.assert_array_equal(s[big], sin[big])     # nan where libm gives nan (inf, nan)
    np.testing.assert_array_equal(c1[big], 1.0 - cos[big])
