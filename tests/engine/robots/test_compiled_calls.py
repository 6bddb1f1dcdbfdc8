"""The thin numpy entry (:class:`engine.robots.compiled_calls.CompiledCalls`), float64.

Against Pinocchio (1e-9 relative to each quantity's magnitude): forward kinematics, frame
Jacobians (at a point too), RNEA, gravity, CRBA, ABA and the RNEA/ABA derivatives, one sample
at a time (1-D arrays) and as a batch, on a fixed arm (Panda, fingers independent), a floating
quadruped (Solo-12) and a gripper with coupled mimic joints (Pinocchio's ``mimic=True`` model;
its derivatives against central differences of its values). Against
the model's methods at random states to 1e-12, with armature, damping and other gravities;
then ``out=``, bad inputs, where it does not apply, and its snapshot of learnable values.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import close as _close
from robots_testdata import SMALL_TREE, example_robot_data
from test_backends import BATCH, Pair
from test_mimic import GRIPPER

from engine.robots import RobotModel
from engine.robots.compiled_calls import CompiledCalls, unavailable_reason
from engine.robots.urdf import parse_urdf_string

TOL = 1e-9


def close(ours, ref, tol=TOL):
    _close(ours, ref, tol)


@pytest.fixture(scope="module", params=["arm", "quadruped", "gripper"])
def pair(request, tmp_path_factory):
    """Test_backends' robots beside Pinocchio's (the gripper: Pinocchio's coupled mimic joints)."""
    if request.param == "arm":
        return Pair(example_robot_data("panda_description/urdf/panda.urdf"), False, False, mimic="independent")
    if request.param == "quadruped":
        return Pair(example_robot_data("solo_description/robots/solo12.urdf"), True, False)
    path = tmp_path_factory.mktemp("compiled_calls_pin") / "gripper.urdf"
    path.write_text(GRIPPER)
    return Pair(path, False, True)


def _t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def _sym(M):
    return np.triu(M) + np.triu(M, 1).T


def test_kinematics_against_pinocchio(pair):
    m, pm, pd = pair.model, pair.pm, pair.pd
    calls = CompiledCalls(m)
    q, _, _, _ = pair.states(seed=1)
    link = m.link_names[-1]
    frame = pair.frames[m.link_names.index(link)]
    point = np.array([0.05, -0.02, 0.1])
    T_batch, J_batch = calls.fk(q), calls.jacobian(q, link)
    assert T_batch.shape == (BATCH, len(m.link_names), 4, 4) and J_batch.shape == (BATCH, 6, m.nv)
    for s in range(BATCH):
        (qp,) = pair.pin_vectors(q[s])
        pin.framesForwardKinematics(pm, pd, qp)
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        T = calls.fk(q[s])
        assert T.shape == (len(m.link_names), 4, 4)
        close(T, np.stack([pd.oMf[f].homogeneous for f in pair.frames]))
        close(T_batch[s], T)
        close(calls.link_pose(q[s], link), pd.oMf[frame].homogeneous)
        Jo = pin.getFrameJacobian(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED)[:, pair.iv]
        close(calls.jacobian(q[s], link), Jo)
        close(J_batch[s], Jo)
        r = pd.oMf[frame].rotation @ point
        close(calls.jacobian(q[s], link, point=point), np.vstack([Jo[:3] - np.cross(r, Jo[3:].T).T, Jo[3:]]))


def test_dynamics_against_pinocchio(pair):
    m, pm, pd = pair.model, pair.pm, pair.pd
    calls = CompiledCalls(m)
    q, v, a, tau = pair.states(seed=2)
    batch = calls.rnea(q, v, a), calls.crba(q), calls.aba(q, v, tau)
    for s in range(BATCH):
        qp, vp, ap, taup = pair.pin_vectors(q[s], v[s], a[s], tau[s])
        ref_tau = pin.rnea(pm, pd, qp, vp, ap)[pair.iv]
        ref_M = _sym(pin.crba(pm, pd, qp))[np.ix_(pair.iv, pair.iv)]
        ref_qdd = pin.aba(pm, pd, qp, vp, taup)[pair.iv] if m._G is None else np.linalg.solve(
            ref_M, tau[s] - pin.nonLinearEffects(pm, pd, qp, vp)[pair.iv])
        for ours, ref in zip((calls.rnea(q[s], v[s], a[s]), calls.crba(q[s]), calls.aba(q[s], v[s], tau[s])),
                             (ref_tau, ref_M, ref_qdd)):
            close(ours, ref)
        for ours, ref in zip(batch, (ref_tau, ref_M, ref_qdd)):
            close(ours[s], ref)
        close(calls.rnea(q[s], None, None), pin.computeGeneralizedGravity(pm, pd, qp)[pair.iv])


def test_derivatives_against_pinocchio(pair):
    m, pm, pd = pair.model, pair.pm, pair.pd
    calls = CompiledCalls(m)
    q, v, a, tau = pair.states(seed=3)
    if m._G is not None:       # coupled joints (fixed base): central differences of the values instead
        _derivatives_against_finite_differences(calls, q, v, a, tau)
        return
    for s in range(BATCH):
        qp, vp, ap, taup = pair.pin_vectors(q[s], v[s], a[s], tau[s])
        ref = pin.computeRNEADerivatives(pm, pd, qp, vp, ap)
        for ours, r in zip(calls.rnea_derivatives(q[s], v[s], a[s]), (ref[0], ref[1], _sym(ref[2]))):
            close(ours, r[np.ix_(pair.iv, pair.iv)])
        ref = pin.computeABADerivatives(pm, pd, qp, vp, taup)
        for ours, r in zip(calls.aba_derivatives(q[s], v[s], tau[s]), (ref[0], ref[1], _sym(ref[2]))):
            close(ours, r[np.ix_(pair.iv, pair.iv)], 1e-8)


def _derivatives_against_finite_differences(calls, q, v, a, tau):
    """RNEA and ABA derivatives of a fixed-base model against central differences of its values."""
    for s in range(BATCH):
        _one_sample_against_finite_differences(calls, q[s], v[s], a[s], tau[s])


def _one_sample_against_finite_differences(calls, q, v, a, tau, h=1e-6):
    def jac(f, x):
        cols = []
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = h
            cols.append((f(x + e) - f(x - e)) / (2 * h))
        return np.stack(cols, axis=-1)

    fd_rnea = (jac(lambda x: calls.rnea(x, v, a), q), jac(lambda x: calls.rnea(q, x, a), v),
               jac(lambda x: calls.rnea(q, v, x), a))
    for ours, ref in zip(calls.rnea_derivatives(q, v, a), fd_rnea):
        close(ours, ref, 1e-6)
    fd_aba = (jac(lambda x: calls.aba(x, v, tau), q), jac(lambda x: calls.aba(q, x, tau), v),
              jac(lambda x: calls.aba(q, v, x), tau))
    for ours, ref in zip(calls.aba_derivatives(q, v, tau), fd_aba):
        close(ours, ref, 1e-6)


def _small_tree(floating: bool) -> RobotModel:
    """The small tree (revolute, prismatic, continuous, fixed joints; damping) with armature."""
    desc = replace(parse_urdf_string(SMALL_TREE), floating_base=floating)
    desc = replace(desc, joints=tuple(replace(j, armature=0.05 * (k + 1)) for k, j in enumerate(desc.joints)))
    return RobotModel.from_description(desc)


@pytest.fixture(scope="module", params=["armature", "armature-floating", "mimic", "mimic-floating"])
def model(request, tmp_path_factory):
    if request.param.startswith("armature"):
        return _small_tree(request.param.endswith("floating"))
    path = tmp_path_factory.mktemp("compiled_calls") / "gripper.urdf"
    path.write_text(GRIPPER)
    return RobotModel.from_urdf(path, floating_base=request.param.endswith("floating"))


def _states(m, batch, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, (batch, m.nq))
    if m.floating:
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    return (q,) + tuple(rng.normal(size=(batch, m.nv)) for _ in range(3))


@pytest.mark.parametrize("options", [{}, {"damping": True}, {"gravity": False}, {"gravity": (1.0, -2.0, -5.0)}])
def test_same_numbers_as_the_model(model, options):
    m = model
    calls = CompiledCalls(m)
    q, v, a, tau = _states(m, 3, seed=4)
    g = options.get("gravity", True)
    pairs = [(calls.rnea(q, v, a, **options), m.inverse_dynamics(_t(q), _t(v), _t(a), **options)),
             (calls.aba(q, v, tau, **options), m.forward_dynamics(_t(q), _t(v), _t(tau), **options)),
             (calls.rnea(q, v, None, gravity=g), m.bias_forces(_t(q), _t(v), gravity=g)),
             (calls.crba(q), m.mass_matrix(_t(q))), (calls.fk(q), m.forward_kinematics(_t(q))),
             (calls.link_pose(q, 2), m.link_pose(_t(q), m.link_names[2])),
             (calls.jacobian(q, m.link_names[-1], point=(0.1, 0.2, 0.3)),
              m.jacobian(_t(q), m.link_names[-1], point=_t([0.1, 0.2, 0.3]))),
             (calls.regressor(q, v, a, gravity=g), m.regressor(_t(q), _t(v), _t(a), gravity=g))]
    pairs += list(zip(calls.rnea_derivatives(q, v, a, **options), m.rnea_derivatives(_t(q), _t(v), _t(a), **options)))
    pairs += list(zip(calls.aba_derivatives(q, v, tau, **options),
                      m.aba_derivatives(_t(q), _t(v), _t(tau), **options)))
    for k, (ours, ref) in enumerate(pairs):
        assert ours.shape == tuple(ref.shape), k
        close(ours, ref.numpy(), 1e-12)
    single = calls.aba(q[1], v[1], tau[1], **options)
    assert single.shape == (m.nv,)
    close(single, pairs[1][0][1], 1e-12)


def test_out_arrays(model):
    m = model
    calls = CompiledCalls(m)
    q, v, a, _ = _states(m, 2, seed=5)
    out = np.full(m.nv, np.nan)
    assert calls.rnea(q[0], v[0], a[0], out=out) is out
    close(out, calls.rnea(q, v, a)[0], 1e-14)
    outs = tuple(np.empty((2, m.nv, m.nv)) for _ in range(3))
    assert all(r is o for r, o in zip(calls.rnea_derivatives(q, v, a, out=outs), outs, strict=True))
    close(outs[2], calls.crba(q), 1e-12)
    for bad in (np.empty(m.nv + 1), np.empty(m.nv, dtype=np.float32), np.empty((2, m.nv))[:, ::2]):
        with pytest.raises(ValueError, match="out must be"):
            calls.rnea(q[0], v[0], a[0], out=bad)


def test_bad_inputs_are_refused(model):
    m = model
    calls = CompiledCalls(m)
    q, v, a, _ = _states(m, 2, seed=6)
    with pytest.raises(ValueError, match=f"shape \\({m.nq},\\)"):
        calls.crba(q[:, :-1])
    with pytest.raises(ValueError, match="2 samples"):
        calls.rnea(q, v[:1], a)
    with pytest.raises(ValueError, match="shape"):
        calls.fk(q[None])
    with pytest.raises(KeyError, match="no link"):
        calls.jacobian(q, "nowhere")
    # a non-contiguous input is copied, not misread
    close(calls.fk(np.asfortranarray(q)), calls.fk(q), 1e-14)


def test_where_it_does_not_apply(monkeypatch):
    m = _small_tree(False)
    assert unavailable_reason(m) is None
    with pytest.raises(RuntimeError, match="float64 on the CPU"):
        CompiledCalls(_small_tree(False).to(torch.float32))
    monkeypatch.setenv("LAGRANGE_NO_COMPILED", "1")
    with pytest.raises(RuntimeError, match="LAGRANGE_NO_COMPILED"):
        CompiledCalls(m)


def test_a_snapshot_of_learnable_values():
    m = _small_tree(False)
    link = m.link_names[2]
    module = m.make_learnable(link, "mass")
    q, v, a, _ = _states(m, 2, seed=7)
    before = CompiledCalls(m)
    close(before.rnea(q, v, a), m.inverse_dynamics(_t(q), _t(v), _t(a)).detach().numpy(), 1e-12)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.5)
    after = m.inverse_dynamics(_t(q), _t(v), _t(a)).detach().numpy()
    assert np.abs(before.rnea(q, v, a) - after).max() > 1e-6       # the values it was made with
    close(CompiledCalls(m).rnea(q, v, a), after, 1e-12)
