"""Coupled mimic joints against Pinocchio 4's ``mimic=True`` models, float64, 1e-9.

``q_mimic = multiplier * q_master + offset``; a mimic joint has no degree of freedom, so
``tau = G^T tau_all`` and ``M = G^T M_all G``. Robots: example-robot-data's Panda (its second
finger mimics the first) and a small gripper with a scaled, offset, revolute and prismatic
mimic (fixed and floating base). Forward dynamics against ``M^-1 (tau - h)`` of Pinocchio's
M and h.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import close as _close
from robots_testdata import example_robot_data

from engine.robots import RobotModel

TOL = 1e-9

GRIPPER = """<?xml version="1.0"?>
<robot name="gripper">
  <link name="palm"><inertial><mass value="1.2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.008"/></inertial></link>
  <link name="wrist"><inertial><origin xyz="0 0.01 0.05"/><mass value="0.6"/>
    <inertia ixx="0.003" ixy="0.0001" ixz="0" iyy="0.002" iyz="0" izz="0.0025"/></inertial></link>
  <link name="left"><inertial><origin xyz="0.01 0 0.03" rpy="0.2 0 0"/><mass value="0.15"/>
    <inertia ixx="0.0004" ixy="0" ixz="0.00002" iyy="0.0005" iyz="0" izz="0.0002"/></inertial></link>
  <link name="right"><inertial><origin xyz="-0.01 0 0.03"/><mass value="0.12"/>
    <inertia ixx="0.0003" ixy="0" ixz="0" iyy="0.0004" iyz="0.00001" izz="0.0002"/></inertial></link>
  <link name="tip"><inertial><origin xyz="0 0 0.02"/><mass value="0.05"/>
    <inertia ixx="0.00005" ixy="0" ixz="0" iyy="0.00005" iyz="0" izz="0.00003"/></inertial></link>
  <joint name="wrist_joint" type="revolute"><parent link="palm"/><child link="wrist"/>
    <origin xyz="0 0 0.1" rpy="0 0.1 0"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="10" velocity="3"/></joint>
  <joint name="left_joint" type="prismatic"><parent link="wrist"/><child link="left"/><origin xyz="0.02 0 0.08"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="right_joint" type="prismatic"><parent link="wrist"/><child link="right"/>
    <origin xyz="-0.02 0 0.08" rpy="0 0 0.3"/><axis xyz="-1 0 0"/>
    <limit lower="-0.02" upper="0.06" effort="20" velocity="0.2"/>
    <mimic joint="left_joint" multiplier="1.5" offset="-0.01"/></joint>
  <joint name="tip_joint" type="revolute"><parent link="right"/><child link="tip"/>
    <origin xyz="0 0 0.05" rpy="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="5" velocity="3"/>
    <mimic joint="wrist_joint" multiplier="-0.5" offset="0.2"/></joint>
</robot>
"""


def close(ours, ref, tol=TOL):
    _close(ours, ref, tol)


def _cases(tmp_path_factory):
    path = tmp_path_factory.mktemp("mimic") / "gripper.urdf"
    path.write_text(GRIPPER)
    return {"panda": example_robot_data("panda_description/urdf/panda.urdf"), "gripper": path}


@pytest.fixture(scope="module", params=[("panda", False), ("gripper", False), ("gripper", True)],
                ids=["panda", "gripper", "gripper-floating"])
def pair(request, tmp_path_factory):
    name, floating = request.param
    path = _cases(tmp_path_factory)[name]
    model = RobotModel.from_urdf(path, floating_base=floating)
    pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=True) if floating
          else pin.buildModelFromUrdf(str(path), mimic=True))
    assert (pm.nq, pm.nv) == (model.nq, model.nv)
    f = 6 if floating else 0
    joints = [pm.joints[pm.getJointId(j)] for j in model.joint_names]
    iv = np.r_[np.arange(f), [jm.idx_v for jm in joints]].astype(int)
    iq = np.r_[np.arange(f + bool(floating)), [jm.idx_q for jm in joints]].astype(int)
    assert all(jm.nq == 1 for jm in joints)
    return model, pm, iq, iv


def _states(model, batch, seed):
    rng = np.random.default_rng(seed)
    lim = model.joint_limits
    joints = rng.uniform(
        np.maximum(lim.lower.numpy(), -3), np.minimum(lim.upper.numpy(), 3), (batch, model.dof)
    )
    if model.floating:
        quat = rng.normal(size=(batch, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        joints = np.concatenate([rng.normal(size=(batch, 3)), quat, joints], 1)
    return (joints,) + tuple(rng.normal(size=(batch, model.nv)) for _ in range(3))


@pytest.mark.parametrize("batch", [5, 128])
def test_coupled_mimic_against_pinocchio(pair, batch, dynamics_path):
    model, pm, iq, iv = pair
    pd = pm.createData()
    assert model.mimic_joint_names and not set(model.mimic_joint_names) & set(model.joint_names)
    q, v, a, tau = _states(model, batch, seed=batch)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)
    T = model.forward_kinematics(t(q)).numpy()
    J = model.jacobian(t(q), model.link_names[-1]).numpy()
    rnea = model.inverse_dynamics(t(q), t(v), t(a)).numpy()
    M = model.mass_matrix(t(q)).numpy()
    qdd = model.forward_dynamics(t(q), t(v), t(tau)).numpy()
    frames = [pm.getFrameId(name, pin.BODY) for name in model.link_names]
    for s in range(0, batch, 1 if batch < 10 else 31):
        qp, vp, ap, tp = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv), np.zeros(pm.nv)
        qp[iq], vp[iv], ap[iv], tp[iv] = q[s], v[s], a[s], tau[s]
        pin.framesForwardKinematics(pm, pd, qp)
        close(T[s], np.stack([pd.oMf[f].homogeneous for f in frames]))
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        close(J[s], pin.getFrameJacobian(pm, pd, frames[-1], pin.LOCAL_WORLD_ALIGNED)[:, iv])
        close(rnea[s], pin.rnea(pm, pd, qp, vp, ap)[iv])
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        close(M[s], Mp[np.ix_(iv, iv)])
        h = pin.nonLinearEffects(pm, pd, qp, vp)
        close(qdd[s], np.linalg.solve(Mp, tp - h)[iv])


def test_mimic_fingers_move_together_and_independent_option():
    path = example_robot_data("panda_description/urdf/panda.urdf")
    coupled = RobotModel.from_urdf(path)
    independent = RobotModel.from_urdf(path, mimic="independent")
    assert (coupled.dof, independent.dof) == (8, 9)
    assert coupled.joint_names == independent.joint_names[:8]
    q = torch.zeros(8, dtype=torch.float64)
    q[7] = 0.03
    full = torch.cat([q, q[7:]])                  # the second finger at the first's opening
    close(coupled.forward_kinematics(q).numpy(), independent.forward_kinematics(full).numpy(), 1e-15)
    G = torch.zeros(9, 8, dtype=torch.float64)
    G[:8, :8] = torch.eye(8, dtype=torch.float64)
    G[8, 7] = 1.0
    close(coupled.mass_matrix(q).numpy(), (G.T @ independent.mass_matrix(full) @ G).numpy(), 1e-12)
