"""Ball (spherical) joints: their configuration layout and their part of the algorithms.

A ball joint is three revolute sub-joints about the x, y and z axes of its child frame
(:mod:`engine.robots.topology`): three bodies, the first two massless. Its configuration is one
unit quaternion ``(x, y, z, w)`` (the free flyer's order, Pinocchio's): the rotation of the
child frame in the joint frame. The first sub-body's joint transform is that whole rotation, the
other two are the identity (their "angles" are zero), so the motion subspaces are the child's
axes and the velocity ``(wx, wy, wz)`` is the child's angular velocity in its own frame (rad/s),
the convention of Pinocchio's JointModelSpherical and MuJoCo's ball joint. Tangent-space
derivatives (``q exp(delta)``) are those of the three revolute sub-joints at the configuration.
The analytic derivative kernels treat the three sub-bodies as one joint of three columns
(:mod:`engine.robots.derivative_kernels`); the compiled backward of RNEA, ABA and CRBA runs the chain's
reverse pass plus the ball's two differences (:mod:`engine.robots.lane_ball_vjp`); the regressor's
kernels take :class:`BallMap`'s ``bias_src`` convention below (:mod:`engine.robots.regressor_kernels`).

One correction makes the chain exact: the velocity-product acceleration ``v x S qd`` of the
three sub-joints must use the *child's* velocity (the axes turn with the child), not each
sub-body's; :class:`BallMap` ``bias_src`` names, for every body, the body whose velocity enters
that product (itself for every other joint).

The quaternion is used as given (as the free flyer's): keep it unit (:meth:`integrate` does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.spatial import quaternion_multiply, quaternion_to_rotation, se3_exp, se3_log

__all__ = ["BallMap", "ball_arrays", "compiled_joints", "difference_balls", "integrate_balls", "neutral_balls"]


def ball_arrays(topo) -> dict[str, np.ndarray] | None:
    """The numpy arrays of a :class:`BallMap` from a topology with ball joints (None without):
    ``angle_cols (n,)``, ``angle_mask (n,)``, ``first (k,)``, ``quat_cols (k, 4)``, ``bias_src (n,)``
    (internal body order, 0-based; columns of the joint part of ``q``)."""
    if not topo.ball_dofs:
        return None
    n = topo.n_bodies
    cols = topo.q_columns()
    internal = topo.dof_body - 1                       # dof -> internal position
    mask = np.ones(n)
    src = np.arange(n)
    for k in topo.ball_dofs:
        for sub in range(3):
            mask[internal[k + sub]] = 0.0
            src[internal[k + sub]] = internal[k + 2]
    return {
        "angle_cols": cols[topo.body_dof],
        "angle_mask": mask,
        "first": np.array([internal[k] for k in topo.ball_dofs], dtype=np.int64),
        "quat_cols": np.array([[cols[k] + i for i in range(4)] for k in topo.ball_dofs], dtype=np.int64),
        "bias_src": src,
    }


def compiled_joints(topo) -> np.ndarray:
    """``(n, 2)`` int64, internal body order: each body's configuration column (joint part) and
    kind for the compiled kernels (:func:`engine.robots.compiled_kernels._joint_pose`): 0 a scalar
    joint, 1, 2, 3 a ball joint's first, second and third sub-body."""
    cols = topo.q_columns()
    kind = np.zeros(topo.n_bodies, dtype=np.int64)
    for k in topo.ball_dofs:
        kind[k:k + 3] = (1, 2, 3)
    return np.ascontiguousarray(np.stack([cols[topo.body_dof], kind[topo.body_dof]], axis=1).reshape(-1, 2))


@dataclass(frozen=True, eq=False)
class BallMap:
    """Where ball joints sit in a tree (tensors, internal body order; see :func:`ball_arrays`)."""

    angle_cols: torch.Tensor     # (n,) long: the joint-q column of each body's angle
    angle_mask: torch.Tensor     # (n, 1): 0 on the bodies of ball joints, else 1
    first: torch.Tensor          # (k,) long: each ball's first sub-body
    quat_cols: torch.Tensor      # (k, 4) long: each ball's quaternion columns
    bias_src: torch.Tensor       # (n,) long: the body whose velocity enters v x S qd

    def joint_config(self, qj: torch.Tensor):
        """Joint configurations ``(B, nq_joints)`` -> ``(angles (n, B) internal order, zero on ball
        sub-bodies; (first (k,), R (k, B, 3, 3)) the balls' rotations)``."""
        angles = qj.t().index_select(0, self.angle_cols) * self.angle_mask
        R = quaternion_to_rotation(qj[:, self.quat_cols]).transpose(0, 1)
        return angles, (self.first, R)


def rotate_first(local: torch.Tensor, ball) -> torch.Tensor:
    """Local joint transforms ``(n, B, 4, 4)`` with each ball's first sub-body's turned by its
    rotation: ``L_i <- L_i [R 0; 0 1]``. ball: ``(first (k,), R (k, B, 3, 3))`` or None."""
    if ball is None:
        return local
    first, R = ball
    L = local.index_select(0, first)
    turned = torch.cat([torch.matmul(L[..., :3], R), L[..., 3:]], dim=-1)
    return local.index_copy(0, first, turned)


def rotate_first_bl(local: torch.Tensor, ball) -> torch.Tensor:
    """As :func:`rotate_first` for batch-last top rows ``(n, 3, 4, B)``."""
    if ball is None:
        return local
    first, R = ball
    L = local.index_select(0, first)
    Rbl = R.permute(0, 2, 3, 1)                                           # (k, 3, 3, B)
    rot = (L[:, :, :3].unsqueeze(3) * Rbl.unsqueeze(1)).sum(2)            # (k, 3, 3, B)
    return local.index_copy(0, first, torch.cat([rot, L[:, :, 3:]], dim=2))


# ---------------------------------------------------------------- configuration space
def integrate_balls(qj: torch.Tensor, vj: torch.Tensor, q_starts, v_starts) -> torch.Tensor:
    """Joint configurations ``(B, nq_j)`` moved by joint velocities ``(B, nv_j)`` (times the step):
    every ball's quaternion by ``q exp(w)`` (normalised, as ``pinocchio.integrate``), every other
    coordinate by addition. q_starts / v_starts: each ball's first q / v column."""
    if not q_starts:
        return qj + vj
    parts, qc, vc = [], 0, 0
    for qs, vs in zip(q_starts, v_starts):
        parts.append(qj[:, qc:qs] + vj[:, vc:vs])
        dq, _ = se3_exp(torch.zeros_like(vj[:, vs:vs + 3]), vj[:, vs:vs + 3])
        out = quaternion_multiply(qj[:, qs:qs + 4], dq)
        parts.append(out / out.norm(dim=-1, keepdim=True))
        qc, vc = qs + 4, vs + 3
    parts.append(qj[:, qc:] + vj[:, vc:])
    return torch.cat(parts, dim=-1)


def difference_balls(q0: torch.Tensor, q1: torch.Tensor, q_starts, v_starts) -> torch.Tensor:
    """The joint velocity ``(B, nv_j)`` that takes ``q0`` to ``q1`` ``(B, nq_j)`` in unit time: for a
    ball ``log(q0^-1 q1)`` in the child frame (``pinocchio.difference``), else ``q1 - q0``."""
    if not q_starts:
        return q1 - q0
    parts, qc = [], 0
    for qs in q_starts:
        parts.append(q1[:, qc:qs] - q0[:, qc:qs])
        a, b = q0[:, qs:qs + 4], q1[:, qs:qs + 4]
        rel = quaternion_multiply(torch.cat([-a[:, :3], a[:, 3:]], dim=-1), b)
        parts.append(se3_log(rel, torch.zeros_like(rel[:, :3]))[1])
        qc = qs + 4
    parts.append(q1[:, qc:] - q0[:, qc:])
    return torch.cat(parts, dim=-1)


def neutral_balls(qj: torch.Tensor, q_starts) -> torch.Tensor:
    """Zero joint configurations ``(nq_j,)`` with every ball's quaternion set to the identity."""
    for qs in q_starts:
        qj[qs + 3] = 1.0
    return qj
