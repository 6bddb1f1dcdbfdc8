"""Analytic derivatives of RNEA and ABA, the joint-torque regressor and the compiled backward
(:mod:`engine.robots.derivatives`), float64.

Against Pinocchio's ``computeRNEADerivatives``, ``computeABADerivatives`` and
``computeJointTorqueRegressor`` on an arm (Panda, fingers independent), a quadruped and a
humanoid on a free flyer (Solo-12, TALOS; q-derivatives in the tangent space on both sides) and a
gripper with coupled
mimic joints (against Pinocchio's model with independent joints, projected by the coupling:
``P^T (.) P``), to 1e-9 relative to each matrix's magnitude; against central finite differences
with armature and damping, fixed and floating; the torch fallback against the kernels; and
torch.autograd.gradcheck of the compiled backward of inverse_dynamics and forward_dynamics.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import close as _close
from robots_testdata import SMALL_TREE, example_robot_data
from test_mimic import GRIPPER

from engine.robots import RobotModel
from engine.robots.backends import torch_only
from engine.robots.urdf import parse_urdf_string

TOL = 1e-9
BATCH = 4


def close(ours, ref, tol=TOL):
    _close(ours, ref, tol)


def _t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


class Pair:
    """Our model beside Pinocchio's of the same URDF (Pinocchio's joints independent: a mimic
    joint of ours is mapped by ``P``, the coupling of the velocities, ``(nv_pin, nv)``)."""

    def __init__(self, path, floating: bool, **opts):
        m = self.model = RobotModel.from_urdf(path, floating_base=floating, **opts)
        self.pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
                   else pin.buildModelFromUrdf(str(path)))
        self.pd = self.pm.createData()
        f = 6 if floating else 0
        names = m._full_joint_names
        joints = [self.pm.joints[self.pm.getJointId(j)] for j in names]
        assert all(jm.nq == 1 for jm in joints) and self.pm.nv == f + len(names)
        G = np.eye(len(names)) if m._G is None else m._G.numpy()
        off = np.zeros(len(names)) if m._G is None else m._mimic_offset.numpy()
        self.P = np.zeros((self.pm.nv, m.nv))
        self.P[:f, :f] = np.eye(f)
        self.iq = np.r_[np.arange(f + bool(floating)), [jm.idx_q for jm in joints]].astype(int)
        self.iv = np.r_[np.arange(f), [jm.idx_v for jm in joints]].astype(int)
        self.P[self.iv[f:], f:] = G
        self.G, self.off, self.f = G, off, f
        # our regressor's body blocks (base, then each full joint's body) -> Pinocchio's joint blocks
        jids = ([1] if floating else []) + [self.pm.getJointId(j) for j in names]
        self.blocks = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in jids])

    def states(self, seed, batch=BATCH):
        m = self.model
        rng = np.random.default_rng(seed)
        lim = m.joint_limits
        q = rng.uniform(np.maximum(lim.lower.numpy(), -3), np.minimum(lim.upper.numpy(), 3), (batch, m.dof))
        if m.floating:
            quat = rng.normal(size=(batch, 4))
            quat /= np.linalg.norm(quat, axis=1, keepdims=True)
            q = np.concatenate([rng.uniform(-2, 2, (batch, 3)), quat, q], 1)
        return (q,) + tuple(rng.normal(size=(batch, m.nv)) for _ in range(3))

    def pin_q(self, q):
        out = np.zeros(self.pm.nq)
        f = self.f
        out[self.iq[: f + bool(f)]] = q[: f + bool(f)]
        out[self.iq[f + bool(f):]] = self.G @ q[f + bool(f):] + self.off
        return out

    def project(self, X):
        """Pinocchio's ``(nv_pin, nv_pin)`` matrix in our coordinates: ``P^T X P``."""
        return self.P.T @ X @ self.P


@pytest.fixture(scope="module", params=["arm", "quadruped", "humanoid", "mimic"])
def pair(request, tmp_path_factory):
    if request.param == "arm":
        return Pair(example_robot_data("panda_description/urdf/panda.urdf"), False, mimic="independent")
    if request.param == "quadruped":
        return Pair(example_robot_data("solo_description/robots/solo12.urdf"), True)
    if request.param == "humanoid":     # deep chains, the internal order not the user's
        return Pair(example_robot_data("talos_data/robots/talos_reduced.urdf"), True)
    path = tmp_path_factory.mktemp("derivatives") / "gripper.urdf"
    path.write_text(GRIPPER)
    return Pair(path, False)


def _sym(M):
    return np.triu(M) + np.triu(M, 1).T


def test_rnea_derivatives_against_pinocchio(pair):
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, v, a, _ = pair.states(seed=1)
    dq, dv, da = (x.numpy() for x in m.rnea_derivatives(_t(q), _t(v), _t(a)))
    assert dq.shape == (BATCH, m.nv, m.nv)
    for s in range(BATCH):
        ref = pin.computeRNEADerivatives(pm, pd, pair.pin_q(q[s]), pair.P @ v[s], pair.P @ a[s])
        close(dq[s], pair.project(ref[0]))
        close(dv[s], pair.project(ref[1]))
        close(da[s], pair.project(_sym(ref[2])))


def test_aba_derivatives_against_pinocchio(pair):
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, v, _, tau = pair.states(seed=2)
    dq, dv, dtau = (x.numpy() for x in m.aba_derivatives(_t(q), _t(v), _t(tau)))
    for s in range(BATCH):
        qp, vp = pair.pin_q(q[s]), pair.P @ v[s]
        if m._G is None:       # Pinocchio's own ABA derivatives
            ref = pin.computeABADerivatives(pm, pd, qp, vp, pair.P @ tau[s])
            close(dq[s], pair.project(ref[0]), TOL)
            close(dv[s], pair.project(ref[1]), TOL)
            close(dtau[s], pair.project(_sym(ref[2])), TOL)
            continue
        # coupled joints: -M^-1 times Pinocchio's projected RNEA derivatives at the coupled solution
        Mu = pair.project(_sym(pin.crba(pm, pd, qp)))
        qdd = np.linalg.solve(Mu, tau[s] - pair.P.T @ pin.nonLinearEffects(pm, pd, qp, vp))
        ref = pin.computeRNEADerivatives(pm, pd, qp, vp, pair.P @ qdd)
        close(dtau[s], np.linalg.inv(Mu), TOL)
        close(dq[s], -np.linalg.solve(Mu, pair.project(ref[0])), TOL)
        close(dv[s], -np.linalg.solve(Mu, pair.project(ref[1])), TOL)


def test_regressor_against_pinocchio(pair):
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, v, a, _ = pair.states(seed=3)
    Y = m.regressor(_t(q), _t(v), _t(a)).numpy()
    pi = m.dynamic_parameters().detach().numpy()
    assert Y.shape == (BATCH, m.nv, pi.size) and pi.size == 10 * (len(m._full_joint_names) + m.floating)
    ref_pi = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    close(pi, ref_pi[pair.blocks])
    tau = m.inverse_dynamics(_t(q), _t(v), _t(a)).numpy()
    for s in range(BATCH):
        ref = pin.computeJointTorqueRegressor(pm, pd, pair.pin_q(q[s]), pair.P @ v[s], pair.P @ a[s])
        close(Y[s], pair.P.T @ ref[:, pair.blocks])
        close(Y[s] @ pi, tau[s])         # no armature on these robots


def _with_armature(floating: bool) -> RobotModel:
    """The small tree (revolute, prismatic, continuous, fixed joints; damping) with armature."""
    desc = replace(parse_urdf_string(SMALL_TREE), floating_base=floating)
    desc = replace(desc, joints=tuple(replace(j, armature=0.05 * (k + 1)) for k, j in enumerate(desc.joints)))
    return RobotModel.from_description(desc)


def _state(m, batch, seed):
    g = torch.Generator().manual_seed(seed)
    x = [torch.rand(batch, m.nq if k == 0 else m.nv, generator=g, dtype=torch.float64) - 0.5 for k in range(3)]
    if m.floating:
        quat = torch.randn(batch, 4, generator=g, dtype=torch.float64)
        x[0][:, 3:7] = quat / quat.norm(dim=-1, keepdim=True)
    return x


@pytest.mark.parametrize("floating", [False, True])
def test_derivatives_against_finite_differences(floating):
    """Central differences (q along the tangent space: ``model.integrate``), with armature and
    damping; ABA's ``dqdd/dtau`` is the inverse of RNEA's ``dtau/dqdd``."""
    m = _with_armature(floating)
    q, v, a = _state(m, 2, seed=5)
    eps = 1e-6
    eye = torch.eye(m.nv, dtype=torch.float64)
    for fn, deriv in ((m.inverse_dynamics, m.rnea_derivatives), (m.forward_dynamics, m.aba_derivatives)):
        analytic = deriv(q, v, a, damping=True)
        for k, ref in enumerate(analytic):
            cols = []
            for i in range(m.nv):
                step = eps * eye[i].expand(q.shape[0], m.nv)
                plus, minus = ([m.integrate(q, s), v, a] if k == 0 else [q, v + s, a] if k == 1 else [q, v, a + s]
                               for s in (step, -step))
                cols.append((fn(*plus, damping=True) - fn(*minus, damping=True)) / (2 * eps))
            fd = torch.stack(cols, dim=-1)
            assert float((fd - ref).abs().max()) <= 1e-6 * max(1.0, float(ref.abs().max())), (fn.__name__, k)
    rnea, aba = m.rnea_derivatives(q, v, a)[2], m.aba_derivatives(q, v, a)[2]
    torch.testing.assert_close(aba @ rnea, eye.expand_as(rnea), rtol=0, atol=1e-10)


@pytest.mark.parametrize("floating", [False, True])
def test_batches_in_lanes_match_one_sample_at_a_time(floating):
    """The full matrices run in blocks of LANES samples (:mod:`engine.robots.derivative_lane_kernels`):
    a batch of one, fewer samples than lanes, one full block, a partial last block and several
    blocks give each sample what it gets alone (a batch of one), with armature and damping; and
    the torch path's (autograd) at 37 samples."""
    from engine.robots.derivative_lane_kernels import LANES

    m = _with_armature(floating)
    q, v, a = _state(m, 37, seed=7)
    for deriv in (m.rnea_derivatives, m.aba_derivatives):
        alone = [deriv(q[i], v[i], a[i], damping=True) for i in range(37)]
        for B in (1, 5, LANES, LANES + 3, 37):
            batch = deriv(q[:B], v[:B], a[:B], damping=True)
            for k in range(3):
                close(batch[k].numpy(), torch.stack([x[k] for x in alone[:B]]).numpy(), 1e-12)
        with torch_only():
            fallback = deriv(q, v, a, damping=True)
        for x, y in zip(batch, fallback):
            close(x.numpy(), y.numpy())


@pytest.mark.parametrize("name", ["arm", "quadruped", "mimic"])
def test_torch_fallback_agrees_with_the_kernels(name, tmp_path):
    """The torch path (autograd through the torch algorithms; what other dtypes and devices get)."""
    if name == "mimic":
        path = tmp_path / "gripper.urdf"
        path.write_text(GRIPPER)
        m = RobotModel.from_urdf(path)
    else:
        m = RobotModel.from_urdf(example_robot_data("solo_description/robots/solo12.urdf"), floating_base=True) \
            if name == "quadruped" else _with_armature(False)
    q, v, a = _state(m, 3, seed=6)
    compiled = [*m.rnea_derivatives(q, v, a, damping=True), *m.aba_derivatives(q, v, a, damping=True),
                m.regressor(q, v, a)]
    with torch_only():
        fallback = [*m.rnea_derivatives(q, v, a, damping=True), *m.aba_derivatives(q, v, a, damping=True),
                    m.regressor(q, v, a)]
    for x, y in zip(compiled, fallback):
        close(x.numpy(), y.numpy())
    m32 = m.to(torch.float32)          # another dtype: the torch path, in that dtype
    d32 = m32.rnea_derivatives(q.float(), v.float(), a.float(), damping=True)
    assert d32[0].dtype == torch.float32
    close(d32[0].double().numpy(), compiled[0].numpy(), 1e-3)


@pytest.mark.parametrize("floating", [False, True])
def test_gradcheck_of_the_compiled_backward(floating):
    """inverse_dynamics and forward_dynamics on inputs that need a gradient take the kernels with
    analytic backwards (float64 CPU), and the gradients agree with finite differences of the values
    (every coordinate of q, the quaternion's off the unit sphere too) and with the torch path."""
    m = _with_armature(floating)
    q, v, a = (x.requires_grad_(True) for x in _state(m, 2, seed=7))
    assert m._backend_for(q, v, a).name == "compiled-autograd"
    id_fn = lambda x, y, z: m.inverse_dynamics(x, y, z, damping=True)
    fd_fn = lambda x, y, z: m.forward_dynamics(x, y, z, damping=True)
    assert torch.autograd.gradcheck(id_fn, (q, v, a))
    assert torch.autograd.gradcheck(fd_fn, (q, v, a))
    for fn in (id_fn, fd_fn):
        w = torch.randn(2, m.nv, dtype=torch.float64)
        ours = torch.autograd.grad((fn(q, v, a) * w).sum(), (q, v, a))
        assert ours[0].grad_fn is None
        with torch_only():
            ref = torch.autograd.grad((fn(q, v, a) * w).sum(), (q, v, a))
        if floating:     # compare the quaternion's gradient along the unit sphere only
            quat = q[:, 3:7].detach()
            go, gr = ours[0][:, 3:7], ref[0][:, 3:7]
            close((go - (go * quat).sum(-1, keepdim=True) * quat).numpy(),
                  (gr - (gr * quat).sum(-1, keepdim=True) * quat).numpy())
            ours, ref = ((torch.cat([g[0][:, :3], g[0][:, 7:]], -1), *g[1:]) for g in (ours, ref))
        for x, y in zip(ours, ref):
            close(x.numpy(), y.numpy())


def test_second_order_gradients_use_the_torch_path():
    """A backward that builds a graph (create_graph) differentiates the torch algorithms."""
    m = _with_armature(False)
    q, v, a = (x.requires_grad_(True) for x in _state(m, 2, seed=8))
    (gq,) = torch.autograd.grad(m.inverse_dynamics(q, v, a).pow(2).sum(), (q,), create_graph=True)
    (hq,) = torch.autograd.grad(gq.sum(), (v,))
    with torch_only():
        (gq_ref,) = torch.autograd.grad(m.inverse_dynamics(q, v, a).pow(2).sum(), (q,), create_graph=True)
        (hq_ref,) = torch.autograd.grad(gq_ref.sum(), (v,))
    close(hq.numpy(), hq_ref.numpy())


@pytest.mark.parametrize("floating", [False, True])
def test_vector_jacobian_products_of_the_kernels(floating):
    """The O(n) products ``g^T (.)`` the backward uses equal ``g^T`` times the full matrices (with
    armature, and damping in ABA's)."""
    m = _with_armature(floating)
    cb = m._compiled()
    q, v, a = _state(m, 3, seed=9)
    g = torch.randn(3, m.nv, dtype=torch.float64)
    d = torch.rand(m.nv, dtype=torch.float64)
    args = (q, v, a, m._a0, m._inertials())
    qdd = cb.aba(q, v, a, m._a0, m._inertials())       # "aba" takes tau (a), "aba_vjp" the result
    for mode, kw in (("rnea", {}), ("aba", {"damping": d})):
        full = cb.derivatives(*args, mode, **kw)
        at = (q, v, qdd, *args[3:]) if mode == "aba" else args
        products = cb.derivatives(*at, mode + "_vjp", g=g, **kw)
        for X, p in zip(full, products):
            close(p, np.einsum("bi,bij->bj", g.numpy(), X))


@pytest.mark.parametrize("floating", [False, True])
def test_gradients_reach_learnable_inertials_through_the_regressor(floating):
    """With learnable mass, centre of mass and inertia, inverse and forward dynamics still take
    the kernels; the parameters' gradients (``g^T Y``, ``-lambda^T Y``) equal the torch path's."""
    m = _with_armature(floating)
    m.make_learnable("c", "mass")
    m.make_learnable("b", "com")
    m.make_learnable("d", "inertia")
    m.make_learnable("a", "damping")
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05)
    q, v, a = (x.requires_grad_(True) for x in _state(m, 3, seed=10))
    assert m._backend_for(q, v, a).name == "compiled-autograd"
    params = list(m.parameters())
    w = torch.randn(3, m.nv, dtype=torch.float64)
    for fn in (m.inverse_dynamics, m.forward_dynamics):
        ours = torch.autograd.grad((fn(q, v, a, damping=True) * w).sum(), [v, a, *params])
        with torch_only():
            ref = torch.autograd.grad((fn(q, v, a, damping=True) * w).sum(), [v, a, *params])
        for x, y in zip(ours, ref):
            assert float(y.abs().max()) > 0
            close(x.numpy(), y.numpy())
    # the per-body products against the regressor itself
    cb = m._compiled()
    qa, va, aa = (x.detach() for x in (q, v, a))
    Y = m.regressor(qa, va, aa).numpy()
    per_body = cb.regressor_vjp(qa, va, aa, m._a0, w)          # internal order, root first
    order = np.r_[[0] if floating else [], m._dof_body.numpy() + 1].astype(int)
    close(per_body[:, order].reshape(3, -1), np.einsum("bi,bij->bj", w.numpy(), Y))
