"""The floating base on batch-last tensors (samples innermost), for large batches.

:mod:`engine.robots.floating` on the component-major planes of
:mod:`engine.robots.dynamics_batch_last`: the base rotation ``R (3, 3, B)`` (``R[i, j]`` a
plane over the samples), its position ``p (3, B)``, spatial vectors ``(6, ..., B)``
``[angular; linear]`` about the world origin. The base motion subspace
``S0 = [[0, R], [R, p^ R]]`` (base velocity ``[v; w]`` in the base frame -> world spatial
velocity) is never formed: ``S0 x``, ``S0^T f`` and their inverses are each two rotations and
a cross product with ``p``, a few large elementwise operations instead of per-sample 6x6
products (which cost more than the whole rigid-body recursion at batches in the thousands).
"""

from __future__ import annotations

import torch

__all__ = [
    "base_force_to_world",
    "base_frame_bl",
    "base_inertia_bl",
    "base_motion_to_world",
    "rotate",
    "rotate_t",
    "world_force_to_base",
    "world_motion_to_base",
]


def base_frame_bl(qb: torch.Tensor):
    """``q_b (B, 7)`` ``[p, quaternion x y z w]`` -> ``(R (3, 3, B), p (3, B), top (3, 4, B))``:
    the base's rotation, position and the top rows of its world pose (Eigen's formula, as
    :func:`engine.spatial.quaternion_to_rotation`)."""
    qt = qb.t().contiguous()                                         # (7, B): one plane per coordinate
    p, quat = qt[:3], qt[3:7]
    t = 2.0 * quat[:3]                                               # (3, B): 2x, 2y, 2z
    tw = t * quat[3]                                                 # 2xw, 2yw, 2zw
    tx = t * quat[0]                                                 # 2xx, 2yx, 2zx
    ty, tz = t[1:] * quat[1], t[2] * quat[2]                         # 2yy, 2zy; 2zz
    txx, txy, txz = tx.unbind(0)
    tyy, tyz = ty.unbind(0)
    twx, twy, twz = tw.unbind(0)
    one = torch.ones_like(tz)
    R = torch.stack([one - (tyy + tz), txy - twz, txz + twy,
                     txy + twz, one - (txx + tz), tyz - twx,
                     txz - twy, tyz + twx, one - (txx + tyy)]).view(3, 3, -1)
    return R, p, torch.cat([R, p.unsqueeze(1)], dim=1)


def _planes(R: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """R ``(3, 3, B)`` viewed to broadcast against the middle dimensions of ``x (3, *mid, B)``."""
    return R.view((3, 3) + (1,) * (x.dim() - 2) + R.shape[-1:])


def rotate(R: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``R x`` for 3-vectors ``x (3, *mid, B)`` (component first, samples last)."""
    Rv = _planes(R, x)
    return (Rv[:, 0] * x[0]).addcmul_(Rv[:, 1], x[1]).addcmul_(Rv[:, 2], x[2])      # fresh: in place


def rotate_t(R: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``R^T x`` for 3-vectors ``x (3, *mid, B)``."""
    Rv = _planes(R, x)
    return (Rv[0] * x[0]).addcmul_(Rv[1], x[1]).addcmul_(Rv[2], x[2])


def _cross_p(p: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``p x x`` for the base position ``p (3, B)`` and 3-vectors ``x (3, *mid, B)``."""
    pv = p.view((3,) + (1,) * (x.dim() - 2) + p.shape[-1:])
    return torch.stack([(pv[1] * x[2]).addcmul_(pv[2], x[1], value=-1.0),
                        (pv[2] * x[0]).addcmul_(pv[0], x[2], value=-1.0),
                        (pv[0] * x[1]).addcmul_(pv[1], x[0], value=-1.0)])


def base_motion_to_world(R, p, xb):
    """``S0 x_b``: base-frame motion ``[linear; angular] (6, *mid, B)`` -> world spatial motion
    ``[w; v_O]`` about the world origin (``w = R x_ang``, ``v_O = R x_lin + p x w``)."""
    w = rotate(R, xb[3:])
    return torch.cat([w, rotate(R, xb[:3]).add_(_cross_p(p, w))])


def world_motion_to_base(R, p, a):
    """``S0^-1 a``: world spatial motion ``(6, *mid, B)`` -> base frame ``[linear; angular]``."""
    return torch.cat([rotate_t(R, a[3:] - _cross_p(p, a[:3])), rotate_t(R, a[:3])])


def world_force_to_base(R, p, f):
    """``S0^T f``: world spatial forces ``[n; f] (6, *mid, B)`` (moment about the world origin)
    -> the wrench on the base in its frame, ``[force; moment about the base origin]``."""
    return torch.cat([rotate_t(R, f[3:]), rotate_t(R, f[:3] - _cross_p(p, f[3:]))])


def base_force_to_world(R, p, fb):
    """``S0^-T f_b``: a base-frame wrench ``[force; moment] (6, *mid, B)`` -> world spatial force."""
    f = rotate(R, fb[:3])
    return torch.cat([rotate(R, fb[3:]).add_(_cross_p(p, f)), f])


# rows of the base block [[m 1, -m c^], [m c^, J_b]] in a table of sources: 0-8 J_b
# (row-major), 9-11 m c, 12-14 -m c, 15 m, 16 zero (c: the centre of mass in the base frame)
_BASE_SOURCES = (15, 16, 16, 16, 11, 13,
                 16, 15, 16, 14, 16, 9,
                 16, 16, 15, 10, 12, 16,
                 16, 14, 10, 0, 1, 2,
                 11, 16, 12, 3, 4, 5,
                 13, 9, 16, 6, 7, 8)
_base_index: dict = {}


def base_inertia_bl(R, p, total):
    """``S0^T I S0 (6, 6, B)``: the inertia of a whole rigid body seen by the base velocity
    ``[v; w]``, from its compact inertia ``total (13, B)`` (``[m, h = m c, J]`` about the world
    origin, world axes): ``[[m 1, -m c^], [m c^, J_b]]`` with ``c`` the centre of mass and
    ``J_b`` the rotational inertia about the base origin, both in the base frame."""
    m, h, J = total[0], total[1:4], total[4:].view(3, 3, -1)
    c = h / m
    # about the centre of mass: Jc = J - m (|c|^2 1 - c c^T) = J - (h . c) 1 + h c^T
    Jc = torch.addcmul(J, h.unsqueeze(1), c.unsqueeze(0))
    Jc.diagonal(0, 0, 1).sub_((h * c).sum(0).unsqueeze(-1))
    A = rotate_t(R, Jc)                                                 # R^T Jc (columns rotated)
    Jb = rotate_t(R, A.transpose(0, 1))                                 # (R^T (R^T Jc)^T) = R^T Jc R (Jc symmetric)
    Jb = 0.5 * (Jb + Jb.transpose(0, 1))
    cb = rotate_t(R, c - p)
    mc = cb * m
    Jb = torch.addcmul(Jb, mc.unsqueeze(1), cb.unsqueeze(0), value=-1.0)
    Jb.diagonal(0, 0, 1).add_((mc * cb).sum(0).unsqueeze(-1))         # + m (|c|^2 1 - c c^T)
    src = torch.cat([Jb.reshape(9, -1), mc, -mc, m.unsqueeze(0), torch.zeros_like(m).unsqueeze(0)])
    idx = _base_index.get(src.device)
    if idx is None:
        idx = _base_index[src.device] = torch.tensor(_BASE_SOURCES, device=src.device)
    return src.index_select(0, idx).view(6, 6, -1)
