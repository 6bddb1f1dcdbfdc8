"""The engine against Pinocchio (an independent C++ implementation), float64, 100 random states.

Robots: the Panda, UR5 and Allegro hand (a tree) of example-robot-data and every URDF in
urdf/. Pinocchio orders joints by its own depth-first walk, so vectors are matched by joint
name. Tolerance 1e-9, relative to the reference's magnitude where it exceeds 1 (the
Allegro's light fingers reach joint accelerations of 1e4 rad/s^2).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import PinocchioPair
from pinocchio_pair import close as _close
from robots_testdata import robot_cases

N = 100
TOL = 1e-9


def close(ours, ref, tol=TOL):
    _close(ours, ref, tol)


class Case(PinocchioPair):
    """Our model, Pinocchio's, ``N`` random states in our joint order and the index map."""

    def __init__(self, path, opts, seed=0):
        super().__init__(path, opts)
        self.q, self.qd, self.qdd = self.random_states(N, seed)
        self.tau = np.random.default_rng(seed + 1).normal(size=(N, self.model.dof))

    def t(self, x):
        return torch.as_tensor(x, dtype=torch.float64)


@pytest.fixture(scope="module", params=robot_cases())
def case(request):
    path, opts = request.param if isinstance(request.param, tuple) else (request.param, {})
    return Case(path, opts)


def test_forward_kinematics_every_link(case, dynamics_path):
    ours = case.model.forward_kinematics(case.t(case.q)).numpy()
    assert ours.shape == (N, len(case.model.link_names), 4, 4)
    frame_ids = [case.pm.getFrameId(name, pin.BODY) for name in case.model.link_names]
    assert all(f < case.pm.nframes for f in frame_ids)
    for s in range(N):
        pin.framesForwardKinematics(case.pm, case.pd, case.q_to_pin(case.q[s]))
        ref = np.stack([case.pd.oMf[f].homogeneous for f in frame_ids])
        close(ours[s], ref)
    # link_pose agrees with forward_kinematics
    last = case.model.link_names[-1]
    close(case.model.link_pose(case.t(case.q), last).numpy(), ours[:, -1])


def test_jacobian_every_link_origin_and_point(case, dynamics_path):
    rng = np.random.default_rng(1)
    q = case.t(case.q)
    for link in case.model.link_names:
        point = rng.normal(scale=0.1, size=3)
        J = case.model.jacobian(q, link).numpy()
        Jp = case.model.jacobian(q, link, point=case.t(point)).numpy()
        assert J.shape == (N, 6, case.model.dof)
        fid = case.pm.getFrameId(link, pin.BODY)
        frame = case.pm.frames[fid]
        placement = frame.placement * pin.SE3(np.eye(3), point)
        pid = case.pm.addFrame(
            pin.Frame(f"{link}_point", frame.parentJoint, fid, placement, pin.FrameType.OP_FRAME)
        )
        pd = case.pm.createData()
        for s in range(0, N, 10):
            qp = case.q_to_pin(case.q[s])
            pin.computeJointJacobians(case.pm, pd, qp)
            pin.updateFramePlacements(case.pm, pd)
            ref = np.reshape(pin.getFrameJacobian(case.pm, pd, fid, pin.LOCAL_WORLD_ALIGNED), (6, -1))[
                :, case.perm
            ]
            ref_p = np.reshape(pin.getFrameJacobian(case.pm, pd, pid, pin.LOCAL_WORLD_ALIGNED), (6, -1))[
                :, case.perm
            ]
            close(J[s], ref)
            close(Jp[s], ref_p)
    case.pd = case.pm.createData()


def test_rnea(case, dynamics_path):
    ours = case.model.inverse_dynamics(case.t(case.q), case.t(case.qd), case.t(case.qdd)).numpy()
    for s in range(N):
        ref = pin.rnea(
            case.pm, case.pd, case.q_to_pin(case.q[s]), case.to_pin(case.qd[s]), case.to_pin(case.qdd[s])
        )
        close(ours[s], case.from_pin(ref))


def test_crba(case, dynamics_path):
    ours = case.model.mass_matrix(case.t(case.q)).numpy()
    for s in range(N):
        M = pin.crba(case.pm, case.pd, case.q_to_pin(case.q[s]))
        M = np.reshape(M, (case.model.dof, case.model.dof))
        M = np.triu(M) + np.triu(M, 1).T
        close(ours[s], M[np.ix_(case.perm, case.perm)])


def test_aba(case, dynamics_path):
    ours = case.model.forward_dynamics(case.t(case.q), case.t(case.qd), case.t(case.tau)).numpy()
    for s in range(N):
        ref = pin.aba(
            case.pm, case.pd, case.q_to_pin(case.q[s]), case.to_pin(case.qd[s]), case.to_pin(case.tau[s])
        )
        close(ours[s], case.from_pin(ref))


def test_gravity_and_bias(case, dynamics_path):
    g = case.model.gravity_torques(case.t(case.q)).numpy()
    b = case.model.bias_forces(case.t(case.q), case.t(case.qd)).numpy()
    for s in range(N):
        qp = case.q_to_pin(case.q[s])
        close(g[s], case.from_pin(pin.computeGeneralizedGravity(case.pm, case.pd, qp)))
        close(b[s], case.from_pin(pin.nonLinearEffects(case.pm, case.pd, qp, case.to_pin(case.qd[s]))))


def test_center_of_mass(case):
    com = case.model.center_of_mass(case.t(case.q)).numpy()
    for s in range(N):
        close(com[s], pin.centerOfMass(case.pm, case.pd, case.q_to_pin(case.q[s])))


def test_energies(case):
    ke = case.model.kinetic_energy(case.t(case.q), case.t(case.qd)).numpy()
    pe = case.model.potential_energy(case.t(case.q)).numpy()
    for s in range(N):
        qp = case.q_to_pin(case.q[s])
        close(ke[s], pin.computeKineticEnergy(case.pm, case.pd, qp, case.to_pin(case.qd[s])))
        close(pe[s], pin.computePotentialEnergy(case.pm, case.pd, qp))
