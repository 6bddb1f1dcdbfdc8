"""Batch-last forward dynamics: the articulated-body algorithm (a floating base as its root step)
or the composite solve, chosen by :func:`auto_fd_method` (see :mod:`engine.robots.dynamics_batch_last`).
"""

from __future__ import annotations

from typing import cast

import torch

from engine.robots import floating_batch_last as fbl
from engine.robots.dynamics_batch_last.crba import _mass_matrix_bl, solve_mass_matrix_bl
from engine.robots.dynamics_batch_last.planes import (
    _cross_force_bl,
    _cross_motion_bl,
    _doubled6,
    _tree_down_bl,
)
from engine.robots.dynamics_batch_last.rnea import rnea_bl
from engine.spatial import small_matmul


def _origin_inertia_bl(m, c_w, Ic_w):
    """``(h = m c (n, 3, B), J (n, 3, 3, B))``: first moment and rotational inertia about the world origin."""
    h = m[:, None, None] * c_w
    J = torch.addcmul(Ic_w, h.unsqueeze(2), c_w.unsqueeze(1), value=-1.0)        # Ic - m c c^T
    J.diagonal(0, 1, 2).add_((h * c_w).sum(1, keepdim=True).transpose(1, 2))    # + m |c|^2 1 (fresh tensor)
    return h, J


# rows of the 6x6 spatial inertia [[J, h x], [(h x)^T, m 1]] in a table of sources:
# 0-8 J (row-major), 9-11 h, 12-14 -h, 15 m, 16 zero
_I6_SOURCES = (0, 1, 2, 16, 14, 10, 3, 4, 5, 11, 16, 12, 6, 7, 8, 13, 9, 16,
               16, 11, 13, 15, 16, 16, 14, 16, 9, 16, 15, 16, 10, 12, 16, 16, 16, 15)


def spatial_inertia_world_bl(m, c_w, Ic_w):
    """The 6x6 world spatial inertias ``(n, 6, 6, B)`` of the movable bodies (batch-last)."""
    n, _, B = c_w.shape
    h, J = _origin_inertia_bl(m, c_w, Ic_w)
    src = torch.cat([J.reshape(n, 9, B), h, -h, m[:, None, None].expand(n, 1, B),
                     c_w.new_zeros(1, 1, 1).expand(n, 1, B)], dim=1)
    idx = _i6_index(c_w.device)
    return src.index_select(1, idx).view(n, 6, 6, B)


_i6_cache: dict = {}


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _i6_index(device):
    idx = _i6_cache.get(device)
    if idx is None:
        idx = _i6_cache[device] = torch.tensor(_I6_SOURCES, device=device)
    return idx


def _mv6(M, x):
    """``M x`` for symmetric 6x6 matrices ``(k, 6, 6, B)`` and vectors ``(k, 6, B)`` (rows of M as columns)."""
    rows, xs = M.unbind(-3), x.unsqueeze(-2).unbind(-3)
    out = rows[0] * xs[0]
    for j in range(1, 6):       # in place: out is fresh
        out.addcmul_(rows[j], xs[j])
    return out


# the articulated-body recursion: its depth-sequential steps are few small tensor ops
# each, where the recursion needs about twenty per depth (measured on the Panda: 1.5x)
_COMPOSITE_FD_MAX_DOF = 12


def auto_fd_method(n: int, depth: int) -> str:
    """The forward dynamics method for a tree of n joints and the given depth (see above)."""
    return "composite" if n <= _COMPOSITE_FD_MAX_DOF and 2 * depth >= n else "articulated"


def aba_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False, method: str = "auto",
           armature=None, root=None, bias_src=None):
    """Forward dynamics batch-last: ``S (6, n, B)``, ``qd, tau (n, B)`` -> ``qdd (n, B)``.

    method: "articulated" (the articulated-body algorithm, as :func:`aba`), "composite"
    (``M qdd = tau - b`` with :func:`crba_bl`'s M, the RNEA bias b and
    :func:`solve_mass_matrix_bl`) or "auto" (composite for small, deep trees). root: a floating
    base (articulated only), ``(I0 (6, 6, 1 or B), v0 (6, B), tau0 (6, B))``, all in the base
    frame (see :func:`root_acceleration_bl`) -> ``(qdd, qdd_base (6, B))``. bias_src: see
    :func:`rnea_bl`.
    """
    if method == "auto":
        method = auto_fd_method(S.shape[1], len(levels))
    if method == "composite":
        bias = rnea_bl(S, inertials, qd, None, a0, anc, chain, bias_src=bias_src)
        M = _mass_matrix_bl(S, inertials, anc, chain)
        if armature is not None:
            M = M + torch.diag(armature)[..., None]
        return solve_mass_matrix_bl(M, tau - bias)
    if method != "articulated":
        raise ValueError(f"unknown forward dynamics method {method!r}")
    m, c, Ic = inertials
    body_major = (m, c.transpose(0, 1).contiguous(), Ic.permute(2, 0, 1, 3).contiguous())
    return _aba_recursion_bl(S.transpose(0, 1).contiguous(), body_major, qd, tau, a0, anc, levels,
                             level_parents, chain, armature, root, bias_src)


def _aba_recursion_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False,
                      armature=None, root=None, bias_src=None):
    """The articulated-body algorithm on body-major tensors: ``S (n, 6, B)``, inertials
    ``(m (n,), c_w (n, 3, B), Ic_w (n, 3, 3, B))``; one vectorised step per depth.

    The articulated inertias are symmetric, so ``I x`` sums the rows of ``I`` (contiguous
    slices) weighted by the components of ``x``; ``S . (I c) = (I S) . c`` saves a product.
    """
    m, c_w, Ic_w = inertials
    I = spatial_inertia_world_bl(m, c_w, Ic_w)
    sqd = S * qd.unsqueeze(1)
    v = _tree_down_bl(anc, sqd, chain)
    if root is not None:
        v = v + root[1]
    vv = _doubled6(v)
    c = _cross_motion_bl(v, sqd, vv) if bias_src is None else _cross_motion_bl(v.index_select(0, bias_src), sqd)
    pA = _cross_force_bl(v, _mv6(I, v), vv)
    depth = len(levels)
    sizes = [e - s for s, e in levels]
    S_l, I_l, p_l = S.split(sizes), I.split(sizes), pA.split(sizes)
    c_l, tau_l = c.split(sizes), tau.split(sizes)
    Sc_l = torch.stack([S, c], dim=1).split(sizes)                         # (k, 2, 6, B) per depth
    arm_l = [None] * depth if armature is None else armature[:, None].split(sizes)
    no_grad = not (torch.is_grad_enabled() and (I.requires_grad or S.requires_grad))
    acc_I: list[torch.Tensor | None] = [None] * depth
    acc_p: list[torch.Tensor | None] = [None] * depth
    Uos, qfree = [None] * depth, [None] * depth
    for d in range(depth - 1, -1, -1):
        IA, pa, Sd = I_l[d], p_l[d], S_l[d]
        if acc_I[d] is not None:        # the accumulators are fresh: add in place
            IA = cast(torch.Tensor, acc_I[d]).add_(IA)
            pa = cast(torch.Tensor, acc_p[d]).add_(pa)
        if d == 0 and root is None:
            U = _mv6(IA, Sd)
            D = (Sd * U).sum(1)
        else:       # IA S and IA c in one pass; S . IA S and S . IA c (= U . c) in another
            UC = _mv6(IA.unsqueeze(1), Sc_l[d])
            U, IAc = UC[:, 0], UC[:, 1]
            DUc = (UC * Sd.unsqueeze(1)).sum(2)
            D, Uc = DUc[:, 0], DUc[:, 1]
        Dinv = 1.0 / (D if arm_l[d] is None else D + arm_l[d])
        qf = (tau_l[d] - (Sd * pa).sum(1)) * Dinv
        Uo = U * Dinv.unsqueeze(1)
        Uos[d], qfree[d] = Uo, qf
        if d == 0 and root is None:
            break
        if no_grad and acc_I[d] is not None:    # IA is a fresh accumulator; without autograd, update it in place
            Ia = IA.addcmul_(Uo.unsqueeze(2), U.unsqueeze(1), value=-1.0)
        else:
            Ia = torch.addcmul(IA, Uo.unsqueeze(2), U.unsqueeze(1), value=-1.0)
        # pa + Ia c + U qf = pa + IA c + U (qf - (U . c) / D)
        pa_out = (pa + IAc).addcmul_(U, torch.addcmul(qf, Uc, Dinv, value=-1.0).unsqueeze(1))
        if d == 0:          # the floating base
            a0, qdd_base = root_acceleration_bl(root, Ia.sum(0), pa_out.sum(0), a0)
            break
        lp = level_parents[d]
        if lp is not None:
            Ia = Ia.new_zeros((sizes[d - 1],) + Ia.shape[1:]).index_add(0, lp, Ia)
            pa_out = pa_out.new_zeros((sizes[d - 1],) + pa_out.shape[1:]).index_add(0, lp, pa_out)
        acc_I[d - 1] = Ia
        acc_p[d - 1] = pa_out
    parts = []
    a_prev: torch.Tensor | None = None
    for d in range(depth):
        if d == 0:
            ap = c_l[0] if a0 is None else c_l[0] + (a0[:, None] if a0.dim() == 1 else a0)
        else:
            lp = level_parents[d]
            ap = (a_prev if lp is None else cast(torch.Tensor, a_prev).index_select(0, lp)) + c_l[d]
        qdd_d = qfree[d] - (Uos[d] * ap).sum(1)
        a_prev = torch.addcmul(ap, S_l[d], qdd_d.unsqueeze(1))
        parts.append(qdd_d)
    qdd = torch.cat(parts, dim=0) if len(parts) > 1 else parts[0]
    return qdd if root is None else (qdd, qdd_base)


def root_acceleration_bl(root, I_children, p_children, a0):
    """The floating base's step of the articulated-body algorithm, batch-last, in the base
    frame (:mod:`engine.robots.floating_batch_last`): ``(a (6, B), qdd_base (6, B))``.

    root: ``(I0 (6, 6, 1 or B), v0 (6, B), tau0 (6, B))``: the base's spatial inertia, spatial
    velocity ``[w; v]`` and the wrench on it ``[force; moment]``. With ``IA = I0 + I_children``
    and ``pA = v0 x* I0 v0 + p_children``, the six-dof joint transmits all of ``IA a + pA``:
    ``a = IA^-1 (S0^-T tau0 - pA)`` (a0, gravity, cancels out of ``a``; it counts in
    ``qdd_base = S0^-1 (a - a0)``), with ``S0`` the swap of halves.
    """
    I0, v0, tau0 = root
    IA = I0 + I_children
    pA = _cross_force_bl(v0, _mv6(I0, v0)).add_(p_children)
    a = solve_mass_matrix_bl(IA, fbl.swap_halves(tau0).sub_(pA))
    rel = a if a0 is None else a - (a0[:, None] if a0.dim() == 1 else a0)
    return a, fbl.swap_halves(rel)


def root_acceleration(root, I_children, p_children, a0):
    """The floating base's step of the articulated-body algorithm (batch-first): ``(a (B, 6),
    qdd_base (B, 6))``.

    With ``IA = I0 + I_children``, ``pA = v0 x* I0 v0 + p_children`` and the base's acceleration
    ``a = a0 + S0 qdd_base`` (a0: gravity, ``(6,)`` or None), the six-dof joint transmits all of
    ``IA a + pA``: ``(S0^T IA S0) qdd_base = tau0 - S0^T (pA + IA a0)``.
    """
    I0, S0, v0, tau0 = root
    IA = I0 + I_children
    Iv = (I0 * v0.unsqueeze(-2)).sum(-1)
    w, vo, n, fo = v0[:, :3], v0[:, 3:], Iv[:, :3], Iv[:, 3:]
    pA = p_children + torch.cat([torch.linalg.cross(w, n, dim=-1) + torch.linalg.cross(vo, fo, dim=-1),
                                 torch.linalg.cross(w, fo, dim=-1)], dim=-1)
    if a0 is not None:
        pA = pA + (IA * a0.unsqueeze(-2)).sum(-1)
    St = S0.transpose(-1, -2)
    D = small_matmul(small_matmul(St, IA), S0)
    qdd_base = torch.linalg.solve(D, tau0 - (S0 * pA.unsqueeze(-1)).sum(-2))
    a = (S0 * qdd_base.unsqueeze(-2)).sum(-1)
    return (a if a0 is None else a + a0), qdd_base
