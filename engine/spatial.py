"""Batched SE(3) and spatial-vector algebra (Featherstone, Rigid Body Dynamics Algorithms, 2008).

Conventions: a spatial motion vector is ``[angular; linear]`` (6,), a spatial force vector
``[moment; force]`` (6,), both expressed in one frame and taken about its origin. Every
function takes any leading batch shape ``...`` and broadcasts; all are differentiable.
Homogeneous transforms are ``(..., 4, 4)`` matrices.
"""

from __future__ import annotations

import torch

__all__ = [
    "cross_force",
    "cross_motion",
    "force_transform",
    "homogeneous",
    "invert_homogeneous",
    "motion_transform",
    "quaternion_multiply",
    "quaternion_to_rotation",
    "se3_exp",
    "se3_log",
    "rotation_about_axis",
    "rotation_error_vector",
    "rpy_to_rotation",
    "skew",
    "small_matmul",
    "spatial_inertia",
    "transform_inertia",
]


def small_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for small matrices in large batches, ``(..., i, k) @ (..., k, j)``, broadcast:
    a multiply-and-sum (CPU batched matmul loops over the samples for matrices this small)."""
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


def skew(v: torch.Tensor) -> torch.Tensor:
    """``(..., 3) -> (..., 3, 3)``: the matrix ``[v]x`` with ``[v]x w = v x w``."""
    x, y, z = v.unbind(-1)
    o = torch.zeros_like(x)
    return torch.stack([o, -z, y, z, o, -x, -y, x, o], dim=-1).reshape(v.shape[:-1] + (3, 3))


def cross_motion(v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Spatial motion cross product ``v x m`` (Featherstone's ``crm(v) m``), shapes ``(..., 6)``."""
    w, vo = v[..., :3], v[..., 3:]
    mw, mo = m[..., :3], m[..., 3:]
    return torch.cat(
        [torch.linalg.cross(w, mw), torch.linalg.cross(w, mo) + torch.linalg.cross(vo, mw)], dim=-1
    )


def cross_force(v: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """Spatial force cross product ``v x* f`` (Featherstone's ``crf(v) f``), shapes ``(..., 6)``."""
    w, vo = v[..., :3], v[..., 3:]
    n, fo = f[..., :3], f[..., 3:]
    return torch.cat(
        [torch.linalg.cross(w, n) + torch.linalg.cross(vo, fo), torch.linalg.cross(w, fo)], dim=-1
    )


def spatial_inertia(mass: torch.Tensor, com: torch.Tensor, inertia_com: torch.Tensor) -> torch.Tensor:
    """The 6x6 spatial inertia about a frame's origin.

    mass ``(...)`` kg, com ``(..., 3)`` m (in that frame), inertia_com ``(..., 3, 3)`` kg m^2
    (about the centre of mass, axes of that frame) -> ``(..., 6, 6)``.
    """
    m = mass[..., None, None]
    c = com
    cc = (c * c).sum(-1)[..., None, None] * torch.eye(3, dtype=c.dtype, device=c.device) - c[
        ..., :, None
    ] * c[..., None, :]
    rot = inertia_com + m * cc
    hx = m * skew(c)
    eye = torch.eye(3, dtype=c.dtype, device=c.device).expand(hx.shape)
    top = torch.cat([rot, hx], dim=-1)
    bottom = torch.cat([hx.transpose(-1, -2), m * eye], dim=-1)
    return torch.cat([top, bottom], dim=-2)


def motion_transform(T: torch.Tensor) -> torch.Tensor:
    """``(..., 4, 4)`` pose of frame B in frame A -> ``(..., 6, 6)`` map of motion vectors B -> A."""
    R, p = T[..., :3, :3], T[..., :3, 3]
    z = torch.zeros_like(R)
    return torch.cat([torch.cat([R, z], -1), torch.cat([skew(p) @ R, R], -1)], -2)


def force_transform(T: torch.Tensor) -> torch.Tensor:
    """``(..., 4, 4)`` pose of frame B in frame A -> ``(..., 6, 6)`` map of force vectors B -> A."""
    R, p = T[..., :3, :3], T[..., :3, 3]
    z = torch.zeros_like(R)
    return torch.cat([torch.cat([R, skew(p) @ R], -1), torch.cat([z, R], -1)], -2)


def transform_inertia(T: torch.Tensor, inertia: torch.Tensor) -> torch.Tensor:
    """A spatial inertia given in frame B, re-expressed in frame A (``T``: pose of B in A)."""
    X = force_transform(T)
    return X @ inertia @ X.transpose(-1, -2)


def homogeneous(R: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``(..., 3, 3)``, ``(..., 3)`` -> ``(..., 4, 4)``."""
    top = torch.cat([R, p[..., :, None]], dim=-1)
    bottom = torch.zeros(top.shape[:-2] + (1, 4), dtype=R.dtype, device=R.device)
    bottom[..., 0, 3] = 1.0
    return torch.cat([top, bottom], dim=-2)


def invert_homogeneous(T: torch.Tensor) -> torch.Tensor:
    R, p = T[..., :3, :3], T[..., :3, 3]
    Rt = R.transpose(-1, -2)
    return homogeneous(Rt, -(Rt @ p[..., None])[..., 0])


def rotation_about_axis(axis: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Rodrigues: unit ``axis (..., 3)``, ``angle (...)`` rad -> ``(..., 3, 3)``."""
    K = skew(axis)
    s, c = torch.sin(angle)[..., None, None], torch.cos(angle)[..., None, None]
    eye = torch.eye(3, dtype=axis.dtype, device=axis.device)
    return eye + s * K + (1 - c) * (K @ K)


def rpy_to_rotation(rpy: torch.Tensor) -> torch.Tensor:
    """URDF roll-pitch-yaw ``(..., 3)`` -> ``(..., 3, 3)`` = Rz(yaw) Ry(pitch) Rx(roll)."""
    ex = torch.tensor([1.0, 0.0, 0.0], dtype=rpy.dtype, device=rpy.device)
    ey = torch.tensor([0.0, 1.0, 0.0], dtype=rpy.dtype, device=rpy.device)
    ez = torch.tensor([0.0, 0.0, 1.0], dtype=rpy.dtype, device=rpy.device)
    r, p, y = rpy.unbind(-1)
    return rotation_about_axis(ez, y) @ rotation_about_axis(ey, p) @ rotation_about_axis(ex, r)


# ---------------------------------------------------------------- quaternions and the SE(3) maps
# Quaternions are ``(..., 4)`` as ``(x, y, z, w)`` (Pinocchio's and Eigen's storage order) and
# assumed unit: the formulas are Eigen's, so results agree with Pinocchio to rounding.
_SMALL_ANGLE = 1e-4     # below this angle (rad) the series expansions are used (error ~ angle^4)


def quaternion_to_rotation(quat: torch.Tensor) -> torch.Tensor:
    """Unit quaternion ``(..., 4)`` (x, y, z, w) -> rotation matrix ``(..., 3, 3)`` (Eigen's formula)."""
    x, y, z, w = quat.unbind(-1)
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    R = torch.stack([1.0 - (tyy + tzz), txy - twz, txz + twy,
                     txy + twz, 1.0 - (txx + tzz), tyz - twx,
                     txz - twy, tyz + twx, 1.0 - (txx + tyy)], dim=-1)
    return R.reshape(quat.shape[:-1] + (3, 3))


def quaternion_multiply(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product ``a b`` of quaternions ``(..., 4)`` (x, y, z, w): the rotation of b, then a."""
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    return torch.cat([aw * bv + bw * av + torch.linalg.cross(av, bv, dim=-1),
                      aw * bw - (av * bv).sum(-1, keepdim=True)], dim=-1)


def _angle_terms(sq: torch.Tensor):
    """For squared angles ``sq``: (theta, safe theta) with the small angles replaced by 1
    (keeps both branches of a ``torch.where`` finite, gradients included)."""
    small = sq < _SMALL_ANGLE ** 2
    safe = torch.sqrt(torch.where(small, torch.ones_like(sq), sq))
    return small, safe


def se3_exp(v: torch.Tensor, w: torch.Tensor):
    """The exponential of a twist given in the body frame: linear ``v (..., 3)``, angular ``w (..., 3)``.

    -> ``(quaternion (..., 4) (x, y, z, w), translation (..., 3))`` of ``exp([v, w])``:
    rotation ``exp(w^)``, translation ``V(w) v``, ``V = 1 + (1 - cos t)/t^2 w^ + (t - sin t)/t^3 w^2``.
    """
    sq = (w * w).sum(-1)
    small, t = _angle_terms(sq)
    half = 0.5 * t
    # the quaternion (sin(t/2)/t w, cos(t/2)); series: (1/2 - t^2/48) w, 1 - t^2/8
    s_over = torch.where(small, 0.5 - sq / 48.0, torch.sin(half) / t)
    c = torch.where(small, 1.0 - sq / 8.0 + sq * sq / 384.0, torch.cos(half))
    quat = torch.cat([w * s_over[..., None], c[..., None]], dim=-1)
    a = torch.where(small, 0.5 - sq / 24.0, (1.0 - torch.cos(t)) / (t * t))
    b = torch.where(small, 1.0 / 6.0 - sq / 120.0, (t - torch.sin(t)) / (t * t * t))
    wv = torch.linalg.cross(w, v, dim=-1)
    p = v + a[..., None] * wv + b[..., None] * torch.linalg.cross(w, wv, dim=-1)
    return quat, p


def se3_log(quat: torch.Tensor, p: torch.Tensor):
    """The logarithm of the rigid transform ``(quat (..., 4) (x, y, z, w), p (..., 3))``:
    -> ``(v (..., 3), w (..., 3))`` with ``exp([v, w])`` the transform (angle in [0, pi])."""
    quat = torch.where(quat[..., 3:] < 0, -quat, quat)
    xyz, qw = quat[..., :3], quat[..., 3]
    s2 = (xyz * xyz).sum(-1)
    small, s = _angle_terms(s2)
    t = 2.0 * torch.atan2(s, qw)
    # w = t / sin(t/2) * xyz; series near 0 (|quat| = 1): 2 / qw (1 - s^2 / (3 qw^2))
    k = torch.where(small, 2.0 / qw * (1.0 - s2 / (3.0 * qw * qw)), t / s)
    w = k[..., None] * xyz
    sq = (w * w).sum(-1)
    small_t, th = _angle_terms(sq)
    # V^-1 = 1 - w^/2 + (1/t^2 - (1 + cos t) / (2 t sin t)) w^2
    c = torch.where(small_t, 1.0 / 12.0 + sq / 720.0,
                    1.0 / (th * th) - (1.0 + torch.cos(th)) / (2.0 * th * torch.sin(th)))
    wp = torch.linalg.cross(w, p, dim=-1)
    v = p - 0.5 * wp + c[..., None] * torch.linalg.cross(w, wp, dim=-1)
    return v, w


def rotation_error_vector(R: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotation vector ``log(R)`` (..., 3) and angle (...,) of rotation matrices (..., 3, 3).

    Stable at 0 and at pi (there the axis comes from the largest column of ``R + I``).
    """
    w = 0.5 * torch.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                           R[..., 1, 0] - R[..., 0, 1]], dim=-1)          # sin(theta) axis
    cos = 0.5 * (R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2] - 1.0)
    sin = torch.linalg.vector_norm(w, dim=-1)
    theta = torch.atan2(sin, cos)
    small = sin < 1e-7
    scale = torch.where(small, torch.ones_like(sin), theta / torch.where(small, torch.ones_like(sin), sin))
    vec = w * scale[..., None]
    near_pi = small & (cos < 0)
    if bool(near_pi.any()):
        B = R + torch.eye(3, dtype=R.dtype, device=R.device)
        col_norm = torch.linalg.vector_norm(B, dim=-2)                       # (..., 3)
        k = col_norm.argmax(dim=-1)
        col = torch.gather(B, -1, k[..., None, None].expand(*k.shape, 3, 1)).squeeze(-1)
        axis = col / torch.linalg.vector_norm(col, dim=-1, keepdim=True).clamp_min(1e-300)
        vec = torch.where(near_pi[..., None], axis * theta[..., None], vec)
    return vec, theta
