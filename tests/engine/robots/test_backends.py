"""Every backend of the robot model against Pinocchio, float64, 1e-9: forward kinematics,
frame Jacobians, RNEA, CRBA and ABA (both forward-dynamics methods).

Each backend (:mod:`engine.robots.backends`: the compiled kernels, body-major and batch-last
torch) is forced in turn, whatever the batch, on a fixed arm (example-robot-data's Panda,
its fingers independent), a floating quadruped (Solo-12) and a gripper with coupled mimic
joints (a scaled, offset prismatic one and a revolute one). A new algorithm gets its case
here, so it is checked on every backend.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import close as _close
from robots_testdata import example_robot_data
from test_mimic import GRIPPER

from engine.robots import RobotModel, compiled_shortcut
from engine.robots import dynamics_batch_last as dyn_bl

TOL = 1e-9
BATCH = 5
BACKENDS = ["compiled", "body-major", "batch-last"]


def close(ours, ref):
    _close(ours, ref, TOL)


class Pair:
    """Our model beside Pinocchio's of the same URDF; coordinates matched by joint name."""

    def __init__(self, path, floating: bool, pin_mimic: bool, **opts):
        self.model = RobotModel.from_urdf(path, floating_base=floating, **opts)
        self.pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=pin_mimic) if floating
                   else pin.buildModelFromUrdf(str(path), mimic=pin_mimic))
        self.pd = self.pm.createData()
        m = self.model
        assert (self.pm.nq, self.pm.nv) == (m.nq, m.nv)
        f = 6 if floating else 0
        joints = [self.pm.joints[self.pm.getJointId(j)] for j in m.joint_names]
        assert all(jm.nq == 1 for jm in joints)
        self.iv = np.r_[np.arange(f), [jm.idx_v for jm in joints]].astype(int)
        self.iq = np.r_[np.arange(f + bool(floating)), [jm.idx_q for jm in joints]].astype(int)
        self.frames = [self.pm.getFrameId(name, pin.BODY) for name in m.link_names]

    def states(self, seed):
        m = self.model
        rng = np.random.default_rng(seed)
        lim = m.joint_limits
        q = rng.uniform(np.maximum(lim.lower.numpy(), -3), np.minimum(lim.upper.numpy(), 3), (BATCH, m.dof))
        if m.floating:
            quat = rng.normal(size=(BATCH, 4))
            quat /= np.linalg.norm(quat, axis=1, keepdims=True)
            q = np.concatenate([rng.uniform(-2, 2, (BATCH, 3)), quat, q], 1)
        return (q,) + tuple(rng.normal(size=(BATCH, m.nv)) for _ in range(3))

    def pin_vectors(self, q, *vs):
        qp = np.zeros(self.pm.nq)
        qp[self.iq] = q
        out = [qp]
        for v in vs:
            vp = np.zeros(self.pm.nv)
            vp[self.iv] = v
            out.append(vp)
        return out


@pytest.fixture(scope="module", params=["arm", "quadruped", "gripper"])
def pair(request, tmp_path_factory):
    if request.param == "arm":
        return Pair(
            example_robot_data("panda_description/urdf/panda.urdf"), False, False, mimic="independent"
        )
    if request.param == "quadruped":
        return Pair(example_robot_data("solo_description/robots/solo12.urdf"), True, False)
    path = tmp_path_factory.mktemp("backends") / "gripper.urdf"
    path.write_text(GRIPPER)
    return Pair(path, False, True)


@pytest.fixture(params=BACKENDS)
def backend(request, pair, monkeypatch):
    """Every call of the pair's model runs this backend (not the model's CompiledCalls shortcut)."""
    m = pair.model
    monkeypatch.setattr(compiled_shortcut, "ENABLED", False)
    chosen = m._compiled() if request.param == "compiled" else m._backends()[request.param]
    assert chosen.name == request.param
    monkeypatch.setattr(m, "_backend_for", lambda *tensors: chosen)
    return request.param


def _t(x):
    return torch.as_tensor(x, dtype=torch.float64)


def test_kinematics(pair, backend):
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, _, _, _ = pair.states(seed=1)
    T = m.forward_kinematics(_t(q)).numpy()
    links = [m.link_names[-1], m.link_names[len(m.link_names) // 2]]
    poses, J = (x.numpy() for x in m.frame_jacobians(_t(q), links))
    point = np.array([0.05, -0.02, 0.1])
    Jp = m.jacobian(_t(q), links[0], point=_t(point)).numpy()
    for s in range(BATCH):
        (qp,) = pair.pin_vectors(q[s])
        pin.framesForwardKinematics(pm, pd, qp)
        close(T[s], np.stack([pd.oMf[f].homogeneous for f in pair.frames]))
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        for k, link in enumerate(links):
            frame = pair.frames[m.link_names.index(link)]
            close(poses[s, k], pd.oMf[frame].homogeneous)
            close(J[s, k], pin.getFrameJacobian(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED)[:, pair.iv])
        # a point of the link: its velocity is the origin's plus w x (R point)
        frame = pair.frames[m.link_names.index(links[0])]
        Jo = pin.getFrameJacobian(pm, pd, frame, pin.LOCAL_WORLD_ALIGNED)[:, pair.iv]
        r = pd.oMf[frame].rotation @ point
        close(Jp[s], np.vstack([Jo[:3] - np.cross(r, Jo[3:].T).T, Jo[3:]]))


def test_rnea_and_crba(pair, backend):
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, v, a, _ = pair.states(seed=2)
    tau = m.inverse_dynamics(_t(q), _t(v), _t(a)).numpy()
    g = m.gravity_torques(_t(q)).numpy()
    M = m.mass_matrix(_t(q)).numpy()
    for s in range(BATCH):
        qp, vp, ap = pair.pin_vectors(q[s], v[s], a[s])
        close(tau[s], pin.rnea(pm, pd, qp, vp, ap)[pair.iv])
        close(g[s], pin.computeGeneralizedGravity(pm, pd, qp)[pair.iv])
        Mp = pin.crba(pm, pd, qp)
        close(M[s], (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(pair.iv, pair.iv)])


@pytest.mark.parametrize("method", ["articulated", "composite"])
def test_aba(pair, backend, method, monkeypatch):
    monkeypatch.setattr(dyn_bl, "auto_fd_method", lambda n, depth: method)
    m, pm, pd = pair.model, pair.pm, pair.pd
    q, v, _, tau = pair.states(seed=3)
    qdd = m.forward_dynamics(_t(q), _t(v), _t(tau), method=method).numpy()
    for s in range(BATCH):
        qp, vp, tp = pair.pin_vectors(q[s], v[s], tau[s])
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        close(qdd[s], np.linalg.solve(Mp, tp - pin.nonLinearEffects(pm, pd, qp, vp))[pair.iv])


@pytest.mark.parametrize("torch_backend", ["body-major", "batch-last"])
def test_gradients_reach_learnable_inertials_on_the_torch_backends(torch_backend):
    """d tau / d mass of a learnable link equals the difference of two models' RNEA (RNEA is
    linear in the mass), on each torch backend."""
    path = example_robot_data("solo_description/robots/solo12.urdf")
    m = RobotModel.from_urdf(path, floating_base=True)
    link = m.link_names[5]
    m.make_learnable(link, "mass")
    chosen = m._backends()[torch_backend]
    m._backend_for = lambda *tensors: chosen
    q, v, a, _ = Pair.states(type("P", (), {"model": m})(), seed=4)
    tau = m.inverse_dynamics(_t(q), _t(v), _t(a))
    (grad,) = torch.autograd.grad(
        tau.sum(), [m.learnable_parameters()[(link, "mass")].parameters().__next__()]
    )
    mass = float(m.link_mass(link).detach())
    heavier = m.with_link_params(mass={link: mass + 1.0})
    dtau_dmass = float((heavier.inverse_dynamics(_t(q), _t(v), _t(a)) - tau.detach()).sum())
    dmass_dparam = torch.autograd.grad(m.link_mass(link), list(m.learnable.parameters()))[0]
    # tau sums forces of order 100 N: the difference of two models cancels to about 1e-12 of that
    assert abs(float(grad) - dtau_dmass * float(dmass_dparam)) <= 1e-7 * abs(float(grad)) and float(grad) != 0


def test_constants_are_built_once_shared_by_threads_and_rebuilt_after_a_move():
    """A model shared by threads (the GUI and a worker): the first calls, concurrent, build the
    tree's constants and agree; later calls reuse them; a move to float32 rebuilds them."""
    from concurrent.futures import ThreadPoolExecutor

    path = example_robot_data("solo_description/robots/solo12.urdf")
    m = RobotModel.from_urdf(path, floating_base=True)
    q, v, a, _ = Pair.states(type("P", (), {"model": m})(), seed=5)
    ref = RobotModel.from_urdf(path, floating_base=True).inverse_dynamics(_t(q), _t(v), _t(a))
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: m.inverse_dynamics(_t(q), _t(v), _t(a)), range(8)))
    for out in outs:
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    tree = m._backends()["tree"]
    m.mass_matrix(_t(q))
    assert m._backends()["tree"] is tree
    m32 = m.to(torch.float32)
    assert m32._backends()["tree"].C0.dtype == torch.float32
    tau32 = m32.inverse_dynamics(_t(q).float(), _t(v).float(), _t(a).float())
    torch.testing.assert_close(tau32.double(), ref, rtol=1e-4, atol=1e-3)
