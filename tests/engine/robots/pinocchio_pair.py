"""Our robot model beside Pinocchio's for the same URDF: the joint index map and converters.

Pinocchio orders joints by its own depth-first walk, so vectors are matched by joint name;
continuous joints are (cos, sin) pairs in Pinocchio's configuration vector.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from engine.robots import RobotModel


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
