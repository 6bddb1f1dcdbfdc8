"""Our robot model beside Pinocchio's for the same URDF: the joint index map and converters.

Pinocchio orders joints by its own depth-first walk, so vectors are matched by joint name;
continuous joints are (cos, sin) pairs in Pinocchio's configuration vector.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from engine.robots import RobotModel
from experiments.pinocchio_reference import LoadedPair  # noqa: F401  (the tests' import)


def close(ours, ref, tol):
    """Max error within ``tol`` relative to the reference's magnitude where it exceeds 1."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(ours - ref).max())
    assert err <= tol * scale, f"max error {err:.3e} (scale {scale:.3g})"


class PinocchioPair:
    """``model`` (ours), ``pm``/``pd`` (Pinocchio's model and data), ``perm`` (the velocity index
    of each of our joints in Pinocchio's vectors) and ``qslot`` (its configuration slot)."""

    def __init__(self, path, opts):
        self.model = RobotModel.from_urdf(path, **opts)
        self.pm = pin.buildModelFromUrdf(str(path))
        self.pd = self.pm.createData()
        names = [self.pm.names[i] for i in range(1, self.pm.njoints)]
        assert sorted(names) == sorted(self.model.joint_names)
        assert self.pm.nv == self.model.dof
        joints = [self.pm.joints[names.index(j) + 1] for j in self.model.joint_names]
        self.perm = np.array([jm.idx_v for jm in joints], dtype=int)
        self.qslot = [(jm.idx_q, jm.nq) for jm in joints]

    def random_states(self, batch, seed):
        """``q`` within the limits (clipped to +-pi), then two standard-normal arrays, (batch, dof) each."""
        rng = np.random.default_rng(seed)
        lim = self.model.joint_limits
        lo, hi = np.maximum(lim.lower.numpy(), -np.pi), np.minimum(lim.upper.numpy(), np.pi)
        n = self.model.dof
        return rng.uniform(lo, hi, size=(batch, n)), rng.normal(size=(batch, n)), rng.normal(size=(batch, n))

    def q_to_pin(self, q):
        out = np.zeros(self.pm.nq)
        for value, (i, nq) in zip(q, self.qslot):
            if nq == 2:
                out[i:i + 2] = np.cos(value), np.sin(value)
            else:
                out[i] = value
        return out

    def to_pin(self, x):
        out = np.zeros(self.model.dof)
        out[self.perm] = x
        return out

    def from_pin(self, x):
        return np.reshape(x, -1)[self.perm]


class FreeFlyerPair:
    """Our floating-base model beside Pinocchio's ``JointModelFreeFlyer`` model of the same URDF.

    Joints are matched by name (Pinocchio orders a link's children by joint name, we keep the
    file's order); continuous joints are (cos, sin) pairs in Pinocchio's configuration.
    ``mimic``: Pinocchio's model with coupled mimic joints (ours couples them by default).
    """

    def __init__(self, path, opts, mimic: bool = False):
        self.model = RobotModel.from_urdf(path, floating_base=True, **opts)
        self.pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=mimic)
        self.pd = self.pm.createData()
        assert (self.pm.nv, self.pm.joints[1].shortname()) == (self.model.nv, "JointModelFreeFlyer")
        joints = [self.pm.joints[self.pm.getJointId(j)] for j in self.model.joint_names]
        self.iv = np.r_[np.arange(6), [jm.idx_v for jm in joints]].astype(int)
        self.qslot = [(jm.idx_q, jm.nq) for jm in joints]

    def random_states(self, batch, seed):
        """Our ``q (batch, nq)``: the base within 2 m of the origin, a uniformly random
        orientation, the joints within their limits (clipped to +-pi); then three
        standard-normal ``(batch, nv)`` arrays."""
        rng = np.random.default_rng(seed)
        lim = self.model.joint_limits
        lo, hi = np.maximum(lim.lower.numpy(), -np.pi), np.minimum(lim.upper.numpy(), np.pi)
        quat = rng.normal(size=(batch, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        q = np.concatenate(
            [rng.uniform(-2, 2, (batch, 3)), quat, rng.uniform(lo, hi, (batch, self.model.dof))], 1
        )
        return (q,) + tuple(rng.normal(size=(batch, self.model.nv)) for _ in range(3))

    def q_to_pin(self, q):
        out = np.zeros(self.pm.nq)
        out[:7] = q[:7]
        for value, (i, nq) in zip(q[7:], self.qslot):
            out[i:i + nq] = (np.cos(value), np.sin(value)) if nq == 2 else value
        return out

    def to_pin(self, v):
        out = np.zeros(self.pm.nv)
        out[self.iv] = v
        return out

    def from_pin(self, v):
        return np.reshape(v, -1)[self.iv]

    def matrix_from_pin(self, M):
        M = np.reshape(M, (self.pm.nv, self.pm.nv))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.iv, self.iv)]
