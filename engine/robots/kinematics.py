"""Forward kinematics and geometric Jacobians, batched, vectorised across the tree.

Pure functions of tensors (no model state). Internally tensors are *body-major*:
``(n, B, ...)`` for ``n`` movable bodies (internal breadth-first order, see
:mod:`engine.robots.topology`) and ``B`` samples, so that products with per-body constants
(joint axes, link offsets, inertias) are single matrix products over ``B`` rows.

Forward kinematics composes the local joint transforms either by pointer jumping (after
step ``k`` each body's pose is relative to its ``2^k``-th ancestor: ``ceil(log2 D)`` calls
for a tree of depth ``D``, best for small batches) or one depth at a time (fewer flops,
best for large batches).
"""

from __future__ import annotations

import torch

# from this batch size on, products with per-body constants are one BLAS matrix product per
# body; below it, small per-sample products (cheaper to dispatch, never threaded)
_GEMM_BATCH = 256

__all__ = [
    "apply_to_bodies",
    "body_poses",
    "body_poses_by_level",
    "joint_transform_basis",
    "link_poses",
    "local_transforms",
    "point_jacobian",
]


def joint_transform_basis(tree: torch.Tensor, axis: torch.Tensor, revolute: torch.Tensor):
    """Constant factors of the local joint transforms, ``T_i(q) = C0_i + [sin q, 1 - cos q, q] . C_i``.

    tree ``(n, 4, 4)`` (parent body -> joint frame), axis ``(n, 3)``, revolute ``(n,)`` bool
    -> ``C0 (n, 1, 16)``, ``C (n, 3, 16)``. Rodrigues: ``R(q) = 1 + sin q K + (1 - cos q) K^2``.
    """
    n = tree.shape[0]
    dtype, device = tree.dtype, tree.device
    K = torch.zeros(n, 4, 4, dtype=dtype, device=device)
    x, y, z = axis.unbind(-1)
    rev = revolute.to(dtype)
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 0] = -z * rev, y * rev, z * rev
    K[:, 1, 2], K[:, 2, 0], K[:, 2, 1] = -x * rev, -y * rev, x * rev
    P = torch.zeros(n, 4, 4, dtype=dtype, device=device)
    P[:, :3, 3] = axis * (1.0 - rev)[:, None]
    C = torch.stack([tree @ K, tree @ K @ K, tree @ P], dim=1).reshape(n, 3, 16)
    return tree.reshape(n, 1, 16).clone(), C


def local_transforms(q: torch.Tensor, C0: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """q ``(n, B)`` -> local joint transforms ``(n, B, 4, 4)`` (parent body -> body)."""
    n, B = q.shape
    coef = torch.stack([torch.sin(q), 1.0 - torch.cos(q), q], dim=-1)           # (n, B, 3)
    if B < _GEMM_BATCH:      # small: per-sample products (no BLAS threading for tiny work)
        return (torch.matmul(coef.unsqueeze(-2), C.unsqueeze(1)).squeeze(-2) + C0).view(n, B, 4, 4)
    return torch.baddbmm(C0, coef, C).view(n, B, 4, 4)


def body_poses(q: torch.Tensor, C0: torch.Tensor, C: torch.Tensor, jumps: list) -> torch.Tensor:
    """World poses of all bodies by pointer jumping. q ``(n, B)`` -> ``(n + 1, B, 4, 4)``, root first."""
    B = q.shape[1]
    local = local_transforms(q, C0, C)
    eye = torch.eye(4, dtype=q.dtype, device=q.device).expand(1, B, 4, 4)
    T = torch.cat([eye, local], dim=0)
    for anc in jumps:
        T = torch.matmul(T.index_select(0, anc), T)
    return T


def body_poses_by_level(q: torch.Tensor, C0: torch.Tensor, C: torch.Tensor, levels, level_parents) -> torch.Tensor:
    """As :func:`body_poses`, one depth at a time (``n`` products instead of ``n log D``)."""
    B = q.shape[1]
    local = local_transforms(q, C0, C)
    parts = [torch.eye(4, dtype=q.dtype, device=q.device).expand(1, B, 4, 4)]
    prev = None
    for (s, e), lp in zip(levels, level_parents):
        prev = local[s:e] if prev is None else torch.matmul(prev if lp is None else prev.index_select(0, lp), local[s:e])
        parts.append(prev)
    return torch.cat(parts, dim=0)


def apply_to_bodies(T: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``T_i @ M_i`` for poses ``T (k, B, 4, 4)`` and per-body constants ``M (k, 4, m)`` -> ``(k, B, 4, m)``.

    One matrix product per body over all samples (``(B*4, 4) @ (4, m)``).
    """
    k, B = T.shape[:2]
    if B < _GEMM_BATCH:
        return torch.matmul(T, M.unsqueeze(1))
    return torch.matmul(T.reshape(k, B * 4, 4), M).view(k, B, 4, M.shape[-1])


def link_poses(T_bodies: torch.Tensor, link_body: torch.Tensor, offset_links: torch.Tensor,
               offset_bodies: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """``(n + 1, B, 4, 4)`` body poses -> ``(L, B, 4, 4)`` link poses.

    Links at their body's frame are copies; the ``offset_links`` (welded by fixed joints at
    ``offsets (k, 4, 4)`` from ``offset_bodies``) take one product each.
    """
    out = T_bodies.index_select(0, link_body)
    if offset_links.numel() == 0:
        return out
    return out.index_copy(0, offset_links, apply_to_bodies(T_bodies.index_select(0, offset_bodies), offsets))


def point_jacobian(z: torch.Tensor, o: torch.Tensor, rev_mask: torch.Tensor, pri_mask: torch.Tensor,
                   point: torch.Tensor) -> torch.Tensor:
    """Geometric Jacobian of a point fixed to one body, world frame.

    z ``(n, B, 3)`` joint axes and o ``(n, B, 3)`` joint origins in the world; rev_mask /
    pri_mask ``(n,)``: 1 for the revolute / prismatic joints that move the body (its
    ancestors and itself), else 0; point ``(B, 3)`` world. -> ``(n, B, 6)``: linear velocity
    (m/s per unit qd) then angular velocity (rad/s), internal joint order.
    """
    r = rev_mask[:, None, None]
    lin = torch.linalg.cross(z, point - o) * r + z * pri_mask[:, None, None]
    return torch.cat([lin, z * r], dim=-1)
