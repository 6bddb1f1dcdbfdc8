"""The legged robots and humanoids of the library: each loads with a floating base and matches
Pinocchio's free-flyer model of the same file (sizes, total mass, the joint-space inertia at a
configuration, projected onto the coupled mimic joints where the file has them), with a
symmetric positive-definite joint-space inertia."""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest
import torch

from engine.robots.library import _ERD_LEGGED, list_robots, load_robot

NAMES = [entry[0] for entry in _ERD_LEGGED]


def test_every_legged_entry_is_listed():
    listed = {e.name: e for e in list_robots()}
    for name in NAMES:
        assert name in listed and listed[name].options["floating_base"] is True


@pytest.mark.parametrize("name", NAMES)
def test_legged_robot_loads_with_a_floating_base(name):
    logging.disable(logging.WARNING)
    try:
        model = load_robot(name)
    finally:
        logging.disable(logging.NOTSET)
    entry = next(e for e in list_robots() if e.name == name)
    # Pinocchio's model with independent mimic joints (Pinocchio 4.1 refuses TALOS's coupled
    # gripper), projected onto ours: M = G^T M_all G, with q_mimic = multiplier q_master + offset
    pm = pin.buildModelFromUrdf(str(entry.path), pin.JointModelFreeFlyer())
    pd = pm.createData()
    assert model.floating and model.nq == model.dof + 7 and model.nv == model.dof + 6
    assert pm.nv == model.nv + len(model.mimic_joint_names)
    assert abs(model.total_mass - sum(i.mass for i in pm.inertias)) < 1e-9
    q = model.neutral()
    q[7:] = torch.linspace(-0.3, 0.3, model.dof, dtype=torch.float64)
    M = model.mass_matrix(q)
    assert torch.allclose(M, M.T) and float(torch.linalg.eigvalsh(M).min()) > 0
    G = np.zeros((pm.nv, model.nv))
    G[:6, :6] = np.eye(6)
    qp = pin.neutral(pm)
    qp[:7] = q[:7].numpy()
    for k, joint in enumerate(model.joint_names):
        jm = pm.joints[pm.getJointId(joint)]
        G[jm.idx_v, 6 + k] = 1.0
        qp[jm.idx_q] = float(q[7 + k])
    for joint in model.mimic_joint_names:
        mimic = model.description.joint(joint).mimic
        jm, master = pm.joints[pm.getJointId(joint)], pm.joints[pm.getJointId(mimic.joint)]
        G[jm.idx_v, 6 + model.joint_names.index(mimic.joint)] = mimic.multiplier
        qp[jm.idx_q] = mimic.multiplier * qp[master.idx_q] + mimic.offset
    Mp = pin.crba(pm, pd, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    assert np.abs(M.numpy() - (G.T @ Mp @ G)).max() <= 1e-9 * max(1.0, np.abs(Mp).max())
