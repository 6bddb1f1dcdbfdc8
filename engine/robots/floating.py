"""The floating base: Pinocchio's free-flyer joint (``JointModelFreeFlyer``), batched.

Configuration ``q_b = [p (3), quaternion x y z w (4)]``: the base frame's position and
orientation in the world. Velocity ``v_b = [v (3), w (3)]``: the linear velocity of the
base origin and the angular velocity, both in the base frame (so the world spatial velocity
of the base, ``[angular; linear]`` about the world origin, is ``S0 v_b`` with
``S0 = [[0, R], [R, p^ R]]``). The base's acceleration is ``S0 a_b`` (its velocity product
vanishes, ``v x v = 0``), and a world force ``f`` acts on ``v_b`` as ``S0^T f``: the wrench in
the base frame, ``[force; moment about the base origin]``.

Pure functions on body-major tensors (samples ``B`` first); the model
(:class:`engine.robots.model.RobotModel`) joins them to the fixed-base algorithms.
"""

from __future__ import annotations

import torch

from engine.spatial import (
    cross_force,
    quaternion_multiply,
    quaternion_to_rotation,
    se3_exp,
    se3_log,
    skew,
    small_matmul,
)

__all__ = [
    "base_blocks",
    "base_motion_subspace",
    "base_pose",
    "difference",
    "integrate",
    "root_force",
    "root_inertial_world",
]


def base_pose(qb: torch.Tensor) -> torch.Tensor:
    """``(B, 7)`` -> the base's world pose ``(B, 4, 4)``."""
    R = quaternion_to_rotation(qb[:, 3:7])
    top = torch.cat([R, qb[:, :3, None]], dim=-1)
    bottom = qb.new_tensor([0.0, 0.0, 0.0, 1.0]).expand(qb.shape[0], 1, 4)
    return torch.cat([top, bottom], dim=-2)


def base_motion_subspace(T0: torch.Tensor) -> torch.Tensor:
    """``S0 (B, 6, 6)``: the world spatial velocity ``[angular; linear]`` (about the world origin)
    per unit base velocity ``[v; w]`` (base frame), from the base pose ``T0 (B, 4, 4)``."""
    R, p = T0[:, :3, :3], T0[:, :3, 3]
    return torch.cat(
        [torch.cat([torch.zeros_like(R), R], -1), torch.cat([R, small_matmul(skew(p), R)], -1)], -2
    )


def root_inertial_world(T0, m0, c0, Ic0):
    """The root body's inertial in the world: ``(m (1,), c (1, B, 3), Ic (1, B, 3, 3))``, the
    layout of :func:`engine.robots.dynamics_body_major.world_inertia_terms`."""
    R, p = T0[:, :3, :3], T0[:, :3, 3]
    c = (R @ c0.unsqueeze(-1)).squeeze(-1) + p
    Ic = small_matmul(R @ Ic0, R.transpose(-1, -2))
    return m0.reshape(1), c.unsqueeze(0), Ic.unsqueeze(0)


def _inertia_times(m, c, Ic, x):
    """A body's spatial inertia (world, about the origin; mass ``m`` (1,), CoM ``c (B, 3)``,
    ``Ic (B, 3, 3)``) times motion vectors ``x (B, k, 6)``: ``[Ic x_ang + c x m y; m y]``,
    ``y = x_lin + x_ang x c``."""
    xa, xl = x[..., :3], x[..., 3:]
    cc = c.unsqueeze(-2).expand_as(xa)
    lin = m * (xl + torch.linalg.cross(xa, cc, dim=-1))
    ang = (Ic.unsqueeze(-3) * xa.unsqueeze(-2)).sum(-1) + torch.linalg.cross(cc, lin, dim=-1)
    return torch.cat([ang, lin], dim=-1)


def root_force(root, a_r, v0):
    """``I0 a_r + v0 x* I0 v0`` ``(B, 6)`` for the root body (``v0`` None: at rest); root: the
    layout of :func:`root_inertial_world`."""
    m, c, Ic = root[0], root[1][0], root[2][0]
    if v0 is None:
        return _inertia_times(m, c, Ic, a_r.unsqueeze(-2))[:, 0]
    h = _inertia_times(m, c, Ic, torch.stack([a_r, v0], dim=-2))
    return h[:, 0] + cross_force(v0, h[:, 1])


def _compact_times(total, x):
    """The compact inertia ``total (B, 13)`` (``[m, h, J]`` about the world origin) times motion
    vectors ``x (B, k, 6)`` -> forces ``(B, k, 6)``: ``[J x_ang + h x x_lin; m x_lin - h x x_ang]``."""
    B = total.shape[0]
    m, h, J = total[:, None, :1], total[:, None, 1:4], total[:, 4:].reshape(B, 3, 3)
    xa, xl = x[..., :3], x[..., 3:]
    ang = (J.unsqueeze(-3) * xa.unsqueeze(-2)).sum(-1) + torch.linalg.cross(h.expand_as(xl), xl, dim=-1)
    lin = m * xl - torch.linalg.cross(h.expand_as(xa), xa, dim=-1)
    return torch.cat([ang, lin], dim=-1)


def base_blocks(S0, F, total):
    """The base rows of the joint-space inertia matrix.

    S0 ``(B, 6, 6)``; F ``(n, B, 6)``: each joint's composite inertia times its motion
    subspace (world); total ``(B, 13)``: the whole robot's compact inertia (root included).
    -> ``(M_bb (B, 6, 6), M_bj (B, 6, n))``.
    """
    Fb = _compact_times(total, S0.transpose(-1, -2))                      # (B, 6 columns, 6)
    M_bb = small_matmul(Fb, S0)
    M_bj = small_matmul(S0.transpose(-1, -2), F.permute(1, 2, 0))
    return 0.5 * (M_bb + M_bb.transpose(-1, -2)), M_bj


def compact_root(m0, c0, Ic0, T0):
    """The root body's compact inertia ``(B, 13)`` ``[m, h, J]`` about the world origin."""
    _, c, Ic = root_inertial_world(T0, m0, c0, Ic0)
    c, Ic = c[0], Ic[0]
    eye = torch.eye(3, dtype=c.dtype, device=c.device)
    J = Ic + m0 * ((c * c).sum(-1)[:, None, None] * eye - c.unsqueeze(-1) * c.unsqueeze(-2))
    return torch.cat([m0.reshape(1, 1).expand(c.shape[0], 1), m0 * c, J.reshape(-1, 9)], dim=-1)


def integrate(qb: torch.Tensor, vb: torch.Tensor) -> torch.Tensor:
    """``q_b (B, 7)`` moved by the base-frame twist ``v_b (B, 6)`` (times the step):
    ``M exp(v_b)``, as ``pinocchio.integrate`` (first-order normalised quaternion)."""
    dq, dp = se3_exp(vb[:, :3], vb[:, 3:])
    quat = qb[:, 3:7]
    R0 = quaternion_to_rotation(quat)
    p = qb[:, :3] + (R0 * dp.unsqueeze(-2)).sum(-1)
    out = quaternion_multiply(quat, dq)
    out = out * (1.5 - 0.5 * (out * out).sum(-1, keepdim=True))        # first-order normalisation
    return torch.cat([p, out], dim=-1)


def difference(qb0: torch.Tensor, qb1: torch.Tensor) -> torch.Tensor:
    """The base-frame twist ``(B, 6)`` that takes ``q_b0`` to ``q_b1``: ``log(M0^-1 M1)``."""
    q0 = qb0[:, 3:7]
    conj = torch.cat([-q0[:, :3], q0[:, 3:]], dim=-1)
    rel = quaternion_multiply(conj, qb1[:, 3:7])
    R0 = quaternion_to_rotation(q0)
    dp = (R0 * (qb1[:, :3] - qb0[:, :3]).unsqueeze(-1)).sum(-2)
    v, w = se3_log(rel, dp)
    return torch.cat([v, w], dim=-1)
