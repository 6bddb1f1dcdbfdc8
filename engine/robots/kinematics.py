"""Forward kinematics and geometric Jacobians, batched, vectorised across the tree.

Pure functions of tensors (no model state). Internally tensors are *body-major*:
``(n, B, ...)`` for ``n`` movable bodies (internal breadth-first order, see
:mod:`engine.robots.topology`) and ``B`` samples, so that products with per-body constants
(joint axes, link offsets, inertias) are single matrix products over ``B`` rows.

Forward kinematics composes the local joint transforms either by pointer jumping (after
step ``k`` each body's pose is relative to its ``2^k``-th ancestor: ``ceil(log2 D)`` calls
for a tree of depth ``D``, best for small batches) or one depth at a time (fewer flops,
best for large batches). The ``*_bl`` functions are the batch-last variants used at large
batches (see the section below).
"""

from __future__ import annotations

import torch

from engine.robots.ball import rotate_first, rotate_first_bl

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


def local_transforms(q: torch.Tensor, C0: torch.Tensor, C: torch.Tensor, ball=None) -> torch.Tensor:
    """q ``(n, B)`` -> local joint transforms ``(n, B, 4, 4)`` (parent body -> body); ball: the ball
    joints' rotations ``(first (k,), R (k, B, 3, 3))`` (:mod:`engine.robots.ball`) or None."""
    n, B = q.shape
    coef = torch.stack([torch.sin(q), 1.0 - torch.cos(q), q], dim=-1)           # (n, B, 3)
    if B < _GEMM_BATCH:      # small: per-sample products (no BLAS threading for tiny work)
        local = (torch.matmul(coef.unsqueeze(-2), C.unsqueeze(1)).squeeze(-2) + C0).view(n, B, 4, 4)
    else:
        local = torch.baddbmm(C0, coef, C).view(n, B, 4, 4)
    return rotate_first(local, ball)


def body_poses(q: torch.Tensor, C0: torch.Tensor, C: torch.Tensor, jumps: list, ball=None) -> torch.Tensor:
    """World poses of all bodies by pointer jumping. q ``(n, B)`` -> ``(n + 1, B, 4, 4)``, root first
    (ball: see :func:`local_transforms`)."""
    B = q.shape[1]
    local = local_transforms(q, C0, C, ball)
    eye = torch.eye(4, dtype=q.dtype, device=q.device).expand(1, B, 4, 4)
    T = torch.cat([eye, local], dim=0)
    for anc in jumps:
        T = torch.matmul(T.index_select(0, anc), T)
    return T


def body_poses_by_level(
    q: torch.Tensor, C0: torch.Tensor, C: torch.Tensor, levels, level_parents, ball=None
) -> torch.Tensor:
    """As :func:`body_poses`, one depth at a time (``n`` products instead of ``n log D``)."""
    B = q.shape[1]
    local = local_transforms(q, C0, C, ball)
    parts = [torch.eye(4, dtype=q.dtype, device=q.device).expand(1, B, 4, 4)]
    prev = None
    for (s, e), lp in zip(levels, level_parents):
        prev = (
            local[s:e]
            if prev is None
            else torch.matmul(prev if lp is None else prev.index_select(0, lp), local[s:e])
        )
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


# ---------------------------------------------------------------- batch-last (large batches)
# For large batches the same algorithms run on *batch-last* tensors, ``(n, k, B)``: the
# samples are the innermost, contiguous dimension, so every step over a body's components
# is one vectorised elementwise op over all samples (tiny per-sample matrix products and
# strided component access are what cost most at batch sizes in the thousands).

def local_transforms_bl(q: torch.Tensor, Ct4: torch.Tensor) -> torch.Tensor:
    """q ``(n, B)`` -> top three rows of the local joint transforms ``(n, 3, 4, B)``.

    Ct4 ``(n, 12, 4)``: :func:`joint_transform_basis` ``[C; C0]``, rows 0-2, transposed, so
    that one product with ``[sin q, 1 - cos q, q, 1]`` gives the transforms.
    """
    n, B = q.shape
    coef = torch.stack([torch.sin(q), 1.0 - torch.cos(q), q], dim=1)                    # (n, 3, B)
    return torch.baddbmm(Ct4[:, :, 3:], Ct4[:, :, :3], coef).view(n, 3, 4, B)         # + the constant column


def compose_bl(A: torch.Tensor, L: torch.Tensor, e4: torch.Tensor) -> torch.Tensor:
    """``A @ L`` for rigid transforms stored as their top rows, ``(k, 3, 4, B)`` each;
    e4 = (0, 0, 0, 1) ``(1, 1, 4, 1)``."""
    a, l = A.unsqueeze(3).unbind(2), L.unsqueeze(1).unbind(2)        # (k, 3, 1, B) columns, (k, 1, 4, B) rows
    return (a[3] * e4).addcmul_(a[0], l[0]).addcmul_(a[1], l[1]).addcmul_(a[2], l[2])     # in place: fresh


_e4_cache: dict = {}


def _e4(dtype, device) -> torch.Tensor:
    """The constant (0, 0, 0, 1) as ``(1, 1, 4, 1)`` (built once per dtype and device)."""
    key = (dtype, device)
    e4 = _e4_cache.get(key)
    if e4 is None:
        with torch.inference_mode(
            False
        ):  # cached constants are normal tensors (see engine.robots.call_policy)
            e4 = _e4_cache[key] = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=dtype, device=device).view(
                1, 1, 4, 1
            )
    return e4


def body_poses_bl(q: torch.Tensor, Ct4: torch.Tensor, levels, level_parents, root_top=None,
                  ball=None) -> torch.Tensor:
    """World poses of the movable bodies, top rows ``(n, 3, 4, B)``, one depth at a time;
    root_top: the top rows of the root's pose, batch-last ``(3, 4, B)`` (a floating base; None:
    the identity), composed with the first depth only; ball: see :func:`local_transforms`."""
    local = rotate_first_bl(local_transforms_bl(q, Ct4), ball)
    e4 = _e4(q.dtype, q.device)
    chunks = list(local.split([e - s for s, e in levels])) if len(levels) > 1 else [local]
    if root_top is not None:    # the first depth hangs from the root (no copy of the rest)
        k = levels[0][1] - levels[0][0]
        chunks[0] = compose_bl(root_top.unsqueeze(0).expand(k, 3, 4, q.shape[1]), chunks[0], e4)
    if len(chunks) == 1:
        return chunks[0]
    parts, prev = [], None
    for loc, lp in zip(chunks, level_parents):
        prev = loc if prev is None else compose_bl(prev if lp is None else prev.index_select(0, lp), loc, e4)
        parts.append(prev)
    return torch.cat(parts, dim=0)


def link_poses_bl(W: torch.Tensor, link_src: torch.Tensor | None, offset_bodies: torch.Tensor,
                  offsets: torch.Tensor, root: torch.Tensor | None = None) -> torch.Tensor:
    """Body poses ``(n, 3, 4, B)`` -> link poses ``(B, L, 4, 4)``.

    Sources: index 0 the root, ``1..n`` the bodies, ``n + 1 + j`` the ``j``-th link welded at
    ``offsets[j]`` (``(k, 4, 4)``) to body ``offset_bodies[j]`` (0 = root); link_src ``(L,)``
    picks each link's source (None: the sources are already in link order); root ``(B, 4, 4)``
    the root's pose (None: the identity). Few large
    temporaries: at large batches fresh memory (page faults) costs as much as the arithmetic.
    """
    n, _, _, B = W.shape
    bottom = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=W.dtype, device=W.device)[None, None, :, None]
    W4 = torch.cat([W, bottom.expand(n, 1, 4, B)], dim=1)                    # (n, 4, 4, B)
    if root is None:
        root = torch.eye(4, dtype=W.dtype, device=W.device)[None, :, :, None].expand(1, 4, 4, B)
    else:
        root = root.permute(1, 2, 0).unsqueeze(0).contiguous()
    parts = [root, W4]
    if offsets.shape[0]:
        # bodies of the welded links (0 = the root, the identity), then one product each
        if bool((offset_bodies > 0).all()):
            src = W4.index_select(0, offset_bodies - 1)
        else:
            src = torch.cat(parts, dim=0).index_select(0, offset_bodies)
        parts.append(torch.matmul(offsets.transpose(-1, -2).unsqueeze(1), src))
    full = torch.cat(parts, dim=0)
    if link_src is not None:
        full = full.index_select(0, link_src)
    L = full.shape[0]
    return full.view(L * 16, B).t().contiguous().view(B, L, 4, 4)            # one blocked 2-D transpose


def cross_bl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cross product of 3-vectors stored along dim -2: ``(..., 3, B)`` -> ``(..., 3, B)``."""
    a0, a1, a2 = a.unbind(-2)
    b0, b1, b2 = b.unbind(-2)
    return torch.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim=-2)


_unit_axis_cache: dict = {}


def _common_unit_axis(axis: torch.Tensor) -> int | None:
    """k when every joint axis ``(n, 3)`` is the unit vector e_k (URDFs often turn every joint
    about its local z), else None; computed once per set of axes."""
    key = (
        axis.device,
        axis.dtype,
        tuple(axis.shape),
        axis.detach().to("cpu", torch.float64).numpy().tobytes(),
    )
    if key not in _unit_axis_cache:
        found = None
        for k in range(3):
            e = torch.zeros(3, dtype=axis.dtype, device=axis.device)
            e[k] = 1.0
            if axis.shape[0] and bool((axis == e).all()):
                found = k
        _unit_axis_cache[key] = found
    return _unit_axis_cache[key]


def axes_bl(W: torch.Tensor, axis: torch.Tensor) -> torch.Tensor:
    """World joint axes ``(n, 3, B)`` = ``R_i axis_i``; axis ``(n, 3)`` in the body frame.

    When every axis is the same unit vector e_k this is column k of the rotations (a view).
    """
    if not axis.requires_grad:
        k = _common_unit_axis(axis)
        if k is not None:
            return W[:, :, k]
    a = axis[:, None, :, None]
    out = W[:, :, 0] * a[:, :, 0]
    out = torch.addcmul(out, W[:, :, 1], a[:, :, 1])
    return torch.addcmul(out, W[:, :, 2], a[:, :, 2])
