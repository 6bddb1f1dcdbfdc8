"""A robot model as the engine loaded it beside Pinocchio's model of the same URDF (every joint
independent), for the experiments and tests that compare them: ``LoadedPair``."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from engine.robots import RobotModel

__all__ = ["LoadedPair"]


class LoadedPair:
    """A model as the engine loaded it (fixed or floating base, coupled mimic joints or none, continuous
    joints) beside Pinocchio's model of the same URDF with every joint independent (free-flyer where
    ours floats). A coupled mimic joint follows the URDF's definition, ``q = multiplier * q_master +
    offset`` (chains resolved), so with ``G`` (Pinocchio's nv, our nv) mapping our velocities to
    Pinocchio's, our ``tau = G^T tau_pin`` and ``M = G^T M_pin G`` (Pinocchio's own ``mimic=True``
    refuses some published files whose mimic joints hang below other mimic joints)."""

    def __init__(self, model: RobotModel, path):
        self.model = model
        self.pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if model.floating
                   else pin.buildModelFromUrdf(str(path)))
        self.pd = self.pm.createData()
        desc, ours = model.description, {name: i for i, name in enumerate(model.joint_names)}

        def resolve(name):            # -> (our index, multiplier, offset)
            mimic = desc.joint(name).mimic
            if mimic is None:
                return ours[name], 1.0, 0.0
            k, m, o = resolve(mimic.joint)
            return k, mimic.multiplier * m, mimic.multiplier * o + mimic.offset

        f = 6 if model.floating else 0
        self.G = np.zeros((self.pm.nv, model.nv))
        self.G[:f, :f] = np.eye(f)
        self.slots = []               # (Pinocchio's idx_q, nq, our q column, multiplier, offset)
        names = [self.pm.names[i] for i in range(1 + bool(f), self.pm.njoints)]
        assert sorted(names) == sorted(model.joint_names + model.mimic_joint_names)
        for name in names:
            jm = self.pm.joints[self.pm.getJointId(name)]
            k, m, o = resolve(name)
            self.G[jm.idx_v, f + k] = m
            self.slots.append((jm.idx_q, jm.nq, (7 if f else 0) + k, m, o))

    def random_states(self, batch, seed):
        """Our ``q (batch, nq)`` (the base within 1 m, a random orientation; the joints within their
        limits, clipped to +-pi) and two standard-normal ``(batch, nv)`` arrays."""
        rng = np.random.default_rng(seed)
        lim = self.model.joint_limits
        lo, hi = np.maximum(lim.lower.numpy(), -np.pi), np.minimum(lim.upper.numpy(), np.pi)
        q = rng.uniform(lo, hi, (batch, self.model.dof))
        if self.model.floating:
            quat = rng.normal(size=(batch, 4))
            quat /= np.linalg.norm(quat, axis=1, keepdims=True)
            q = np.concatenate([rng.uniform(-1, 1, (batch, 3)), quat, q], 1)
        return (q,) + tuple(rng.normal(size=(batch, self.model.nv)) for _ in range(2))

    def q_to_pin(self, q):
        out = np.zeros(self.pm.nq)
        if self.model.floating:
            out[:7] = q[:7]
        for i, nq, col, m, o in self.slots:
            value = m * q[col] + o
            out[i:i + nq] = (np.cos(value), np.sin(value)) if nq == 2 else value
        return out

    def rnea(self, q, v, a):
        """Pinocchio's joint forces, in our coordinates."""
        return self.G.T @ pin.rnea(self.pm, self.pd, self.q_to_pin(q), self.G @ v, self.G @ a)

    def crba(self, q):
        """Pinocchio's mass matrix (symmetrised), in our coordinates."""
        M = pin.crba(self.pm, self.pd, self.q_to_pin(q))
        return self.G.T @ (np.triu(M) + np.triu(M, 1).T) @ self.G

    def link_poses(self, q, links):
        """Pinocchio's world poses ``(len(links), 4, 4)`` of the links' (BODY) frames."""
        pin.framesForwardKinematics(self.pm, self.pd, self.q_to_pin(q))
        return np.stack([self.pd.oMf[self.pm.getFrameId(name, pin.BODY)].homogeneous for name in links])
