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
    "rotation_about_axis",
    "rpy_to_rotation",
    "skew",
    "spatial_inertia",
    "transform_inertia",
]


def skew(v: torch.Tensor) -> torch.Tensor:
    """``(..., 3) -> (..., 3, 3)``: the matrix ``[v]x`` with ``[v]x w = v x w``."""
    x, y, z = v.unbind(-1)
    o = torch.zeros_like(x)
    return torch.stack([o, -z, y, z, o, -x, -y, x, o], dim=-1).reshape(v.shape[:-1] + (3, 3))


def cross_motion(v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Spatial motion cross product ``v x m`` (Featherstone's ``crm(v) m``), shapes ``(..., 6)``."""
    w, vo = v[..., :3], v[..., 3:]
    mw, mo = m[..., :3], m[..., 3:]
    return torch.cat([torch.linalg.cross(w, mw), torch.linalg.cross(w, mo) + torch.linalg.cross(vo, mw)], dim=-1)


def cross_force(v: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """Spatial force cross product ``v x* f`` (Featherstone's ``crf(v) f``), shapes ``(..., 6)``."""
    w, vo = v[..., :3], v[..., 3:]
    n, fo = f[..., :3], f[..., 3:]
    return torch.cat([torch.linalg.cross(w, n) + torch.linalg.cross(vo, fo), torch.linalg.cross(w, fo)], dim=-1)


def spatial_inertia(mass: torch.Tensor, com: torch.Tensor, inertia_com: torch.Tensor) -> torch.Tensor:
    """The 6x6 spatial inertia about a frame's origin.

    mass ``(...)`` kg, com ``(..., 3)`` m (in that frame), inertia_com ``(..., 3, 3)`` kg m^2
    (about the centre of mass, axes of that frame) -> ``(..., 6, 6)``.
    """
    m = mass[..., None, None]
    c = com
    cc = (c * c).sum(-1)[..., None, None] * torch.eye(3, dtype=c.dtype, device=c.device) - c[..., :, None] * c[..., None, :]
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
