"""Rigid-body dynamics on batch-last tensors, for large batches (samples innermost).

The algorithms of :mod:`engine.robots.dynamics_body_major` (world-frame spatial vectors,
tree recursions as products with the ancestor matrix) on batch-last tensors, which are
about twice as fast at batches in the thousands.

The same algorithms on batch-last, *component-major* tensors: the samples are the
innermost dimension and each component of a quantity is one contiguous ``(n, B)`` plane
over all bodies and samples: spatial vectors ``(6, n, B)``, 3-vectors ``(3, n, B)``,
3x3 matrices ``(3, 3, n, B)``, joint vectors ``(n, B)``. Cross products and 3x3 products
are written out as multiply-adds of whole components (cross products from "doubled"
vectors ``[x, y, z, x, y]``, whose cyclic shifts are contiguous slices): the samples are
many and the bodies few, so a few large elementwise ops per component beat any
per-sample product, and each op runs over contiguous memory (slices inside a body-major
``(n, 6, B)`` tensor are strided and cost about twice as much). Only the poses ``W (n, 3, 4, B)`` (top
rows of the world transforms, shared with kinematics) and the joint axes keep the
body-major order. The articulated-body recursion (``_aba_recursion_bl``) still works on
body-major tensors ``(n, 6, B)``, ``(n, 3, 3, B)``.
"""

from __future__ import annotations

from typing import cast

import torch

from engine.robots import floating_batch_last as fbl
from engine.spatial import small_matmul

__all__ = [
    "aba_bl",
    "auto_fd_method",
    "body_forces_bl",
    "crba_bl",
    "rnea_bl",
    "solve_mass_matrix_bl",
    "spatial_inertia_world_bl",
    "world_inertials_bl",
    "motion_subspaces_bl",
]


_CYCLIC = ((0, 1, 2), (1, 2, 0), (2, 0, 1))  # (i, j, k): (a x b)_i = a_j b_k - a_k b_j


def world_inertials_bl(W, m, c1, Ic4):
    """World inertials of the movable bodies from poses ``W (n, 3, 4, B)`` and the
    :func:`body_constants` -> ``(m (n,), c_w (3, n, B), Ic_w (3, 3, n, B))`` (component-major;
    Ic_w: the rotational inertia about the CoM, world axes)."""
    # one batched product gives R Ic (columns 0-2) and R c + p (column 3)
    G = torch.cat([Ic4[:, :, :3], c1], dim=2)                           # (n, 4, 4): [Ic 0; 0] | [c; 1]
    P = torch.matmul(G.transpose(1, 2).unsqueeze(1), W)                  # (n, 3, 4, B)
    c_w = P[:, :, 3].transpose(0, 1)
    # (R Ic R^T)_rs = sum_k (R Ic)_rk R_sk: three products over all (r, s)
    Ic_w = P[:, :, None, 0].permute(1, 2, 0, 3) * W[:, None, :, 0].permute(1, 2, 0, 3)
    for k in (1, 2):        # in place: Ic_w is fresh
        Ic_w.addcmul_(P[:, :, None, k].permute(1, 2, 0, 3), W[:, None, :, k].permute(1, 2, 0, 3))
    return m, c_w, Ic_w


def motion_subspaces_bl(z, p, rev, pri):
    """Joint motion subspaces ``S (6, n, B)`` (component-major) from world axes ``z`` and
    origins ``p`` ``(n, 3, B)``: ``[z; p x z]`` revolute, ``[0; z]`` prismatic; rev / pri
    ``(n,)`` masks, or None for an all-revolute tree."""
    zs, ps = z.unbind(1), p.unbind(1)
    pz = [(ps[j] * zs[k]).addcmul_(ps[k], zs[j], value=-1.0) for _, j, k in _CYCLIC]
    if rev is None:
        return torch.stack(list(zs) + pz)
    r, s_ = rev[:, None], pri[:, None]
    return torch.stack([zi * r for zi in zs] + [torch.addcmul(pzi * r, zi, s_) for pzi, zi in zip(pz, zs)])


# Cross products from "doubled" vectors ``[x, y, z, x, y]``: the cyclic shifts (y, z, x)
# and (z, x, y) are then slices ([1:4] and [2:5]), and a x b takes two ops instead of ten.
# Spatial vectors double both halves: ``[wx, wy, wz, wx, wy, vx, vy, vz, vx, vy]``.
_DOUBLING = {3: (0, 1, 2, 0, 1), 6: (0, 1, 2, 0, 1, 3, 4, 5, 3, 4)}
_doubling_index: dict = {}      # (size, device) -> index tensor (constants, built once)


def _doubled(x, dim: int, size: int = 3):
    """x with its 3-vector (size 3) or spatial-vector (size 6) components along ``dim`` doubled
    (one gather: faster than concatenating slices)."""
    key = (size, x.device)
    idx = _doubling_index.get(key)
    if idx is None:
        with torch.inference_mode(False):       # cached constants are normal tensors (see engine.robots.call_policy)
            idx = _doubling_index[key] = torch.tensor(_DOUBLING[size], device=x.device)
    return x.index_select(dim, idx)


def _doubled6(v):
    """Spatial ``(..., 6, B)`` -> ``(..., 10, B)``: both halves doubled ([0:5] and [5:10])."""
    return _doubled(v, -2, 6)


def _tree_down_cm(anc, x, chain: bool, levels=None):
    """``A x`` over the bodies (dim 1) of a component-major ``x (k, n, B)``: the sum over each
    body's ancestors and itself. levels: ``(levels, level_parents)`` (see
    :func:`_tree_down_levels`), for wide trees."""
    if chain:
        return x.cumsum(1)
    return torch.matmul(anc, x) if levels is None else _tree_down_levels(x, *levels)


def _tree_down_levels(x, levels, level_parents):
    """``A x`` one depth at a time: bodies numbered by depth, ``levels`` the ``(start, stop)`` of
    each depth, ``level_parents[d]`` each body's parent among depth ``d - 1`` (None: the
    same position). O(n) work in ``depth`` steps, where the product with the ancestor matrix
    is O(n^2) (a humanoid's 32 bodies: 4x fewer operations)."""
    parts, prev = [], None
    for (s, e), lp in zip(levels, level_parents):
        xd = x[:, s:e]
        prev = xd if prev is None else xd + (prev if lp is None else prev.index_select(1, lp))
        parts.append(prev)
    return torch.cat(parts, 1) if len(parts) > 1 else parts[0]


def _tree_up_levels(x, levels, level_parents):
    """``A^T x`` (subtree sums) one depth at a time, from the deepest (see :func:`_tree_down_levels`)."""
    out, acc = [None] * len(levels), None
    for d in range(len(levels) - 1, -1, -1):
        s, e = levels[d]
        cur = x[:, s:e] if acc is None else x[:, s:e] + acc
        out[d] = cur
        if d > 0:
            lp = level_parents[d]
            if lp is None:
                acc = cur
            else:
                ps, pe = levels[d - 1]
                acc = cur.new_zeros(x.shape[0], pe - ps, x.shape[2]).index_add_(1, lp, cur)
    return torch.cat(out, 1) if len(out) > 1 else out[0]


def _tree_up_cm(anc, x, chain: bool, levels=None):
    """``A^T x``: subtree sums over the bodies (dim 1) of ``x (k, n, B)``."""
    if levels is not None and not chain:
        return _tree_up_levels(x, *levels)
    if chain:       # running sums from the tip (cheaper than a reversed cumsum or a product)
        xs = x.unbind(1)
        acc = [xs[-1]]
        for xi in xs[-2::-1]:
            acc.append(acc[-1] + xi)
        return torch.stack(acc[::-1], dim=1)
    return torch.matmul(anc.transpose(0, 1), x)


def _velocity_product_cm(v, s, acc=None):
    """``v x s`` (spatial motion cross product) of ``(6, n, B)`` vectors, plus acc if given."""
    ww = _doubled(v[:3], 0)                                                   # (5, n, B)
    ss = _doubled(s.view(2, 3, *s.shape[1:]), 1)                              # [s_ang; s_lin] doubled, (2, 5, n, B)
    # w x s_ang and w x s_lin at once, (2, 3, n, B)
    X = ww[1:4] * ss[:, 2:5] if acc is None else torch.addcmul(acc.view(2, 3, *acc.shape[1:]), ww[1:4], ss[:, 2:5])
    X.addcmul_(ww[2:5], ss[:, 1:4], value=-1.0)                               # X is fresh: in place
    vv = _doubled(v[3:], 0)
    lin = X[1].addcmul_(vv[1:4], ss[0, 2:5]).addcmul_(vv[2:5], ss[0, 1:4], value=-1.0)
    return torch.cat([X[0], lin])


def body_forces_bl(m, c, Ic, a, v):
    """``f = I a + v x* I v`` (v None: ``I a``) ``(6, n, B)`` for the bodies' world spatial
    inertias (component-major, as :func:`world_inertials_bl`; accelerations and velocities
    ``(6, n, B)``), about the CoM: with ``y = x_lin + x_ang x c`` (the CoM's velocity or acceleration) and
    ``g = y_a + w x y_v``, ``f = [Ic alpha + w x Ic w + m c x g; m g]``. m ``(n, 1)``."""
    cc = _doubled(c, 0)                                                       # (5, n, B)
    if v is None:
        T, L = a[:3], a[3:]
        TT = _doubled(T, 0)
        Y = torch.addcmul(L, TT[1:4], cc[2:5]).addcmul_(TT[2:5], cc[1:4], value=-1.0)
        g, n_ = Y, (Ic[:, 0] * T[0]).addcmul_(Ic[:, 1], T[1]).addcmul_(Ic[:, 2], T[2])
    else:
        av = torch.stack([a, v])                                          # (2, 6, n, B)
        T, L = av[:, :3], av[:, 3:]                                       # [alpha; w], [a_lin; v_lin]
        TT = _doubled(T, 1)                                                   # (2, 5, n, B); TT[1] = w doubled
        Y = torch.addcmul(L, TT[:, 1:4], cc[2:5]).addcmul_(TT[:, 2:5], cc[1:4], value=-1.0)
        IT = (Ic[:, 0] * T[:, 0:1]).addcmul_(Ic[:, 1], T[:, 1:2]).addcmul_(Ic[:, 2], T[:, 2:3])   # Ic [alpha; w]
        ww = TT[1]
        yy, ii = _doubled(Y[1], 0), _doubled(IT[1], 0)
        g = torch.addcmul(torch.addcmul(Y[0], ww[1:4], yy[2:5]), ww[2:5], yy[1:4], value=-1.0)
        n_ = torch.addcmul(torch.addcmul(IT[0], ww[1:4], ii[2:5]), ww[2:5], ii[1:4], value=-1.0)
    gg = _doubled(g, 0)
    cg = (cc[1:4] * gg[2:5]).addcmul_(cc[2:5], gg[1:4], value=-1.0)
    return torch.cat([torch.addcmul(n_, cg, m), g * m])


def _xd(aa, bb):
    """a x b from doubled ``aa, bb (..., 5, B)``."""
    return (aa[..., 1:4, :] * bb[..., 2:5, :]).addcmul_(aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)


def _xd2(aa, bb, cc, dd):
    """a x b + c x d from doubled vectors (accumulated in place in a fresh tensor)."""
    out = (aa[..., 1:4, :] * bb[..., 2:5, :]).addcmul_(aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)
    return out.addcmul_(cc[..., 1:4, :], dd[..., 2:5, :]).addcmul_(cc[..., 2:5, :], dd[..., 1:4, :], value=-1.0)


def _cross_motion_bl(v, m, vv=None):
    """``v x m`` (spatial motion), ``(..., 6, B)``; vv: ``_doubled6(v)`` when already at hand."""
    vv = _doubled6(v) if vv is None else vv
    mm = _doubled6(m)
    w, vo, mw, mo = vv[..., :5, :], vv[..., 5:, :], mm[..., :5, :], mm[..., 5:, :]
    return torch.cat([_xd(w, mw), _xd2(w, mo, vo, mw)], dim=-2)


def _cross_force_bl(v, f, vv=None):
    """``v x* f`` (spatial force), ``(..., 6, B)``."""
    vv = _doubled6(v) if vv is None else vv
    ff = _doubled6(f)
    w, vo, n, fo = vv[..., :5, :], vv[..., 5:, :], ff[..., :5, :], ff[..., 5:, :]
    return torch.cat([_xd2(w, n, vo, fo), _xd(w, fo)], dim=-2)


def _tree_down_bl(anc, x, chain):
    if chain:       # a short chain: running sums (cheaper than cumsum over a middle dimension)
        xs = x.unbind(-3)
        acc = [xs[0]]
        for xi in xs[1:]:
            acc.append(acc[-1] + xi)
        return torch.stack(acc, dim=-3)
    return torch.matmul(anc, x.reshape(x.shape[:-3] + (x.shape[-3], -1))).view(x.shape)


def rnea_bl(S, inertials, qd, qdd, a0, anc, chain: bool = False, v0=None, total: bool = False, levels=None):
    """As :func:`engine.robots.dynamics_body_major.rnea`, batch-last: ``S (6, n, B)``, ``qd, qdd
    (n, B)`` (None = zero), ``a0 (6,)`` or ``(6, B)`` -> ``tau (n, B)``; inertials from
    :func:`world_inertials_bl`. A moving root: ``v0 (6, B)``; ``total``: also the sum of the
    body forces ``(6, B)``. levels: ``(levels, level_parents)``: tree sums one depth at a time
    (wide trees; see :func:`_tree_down_levels`)."""
    m, c, Ic = inertials
    acc = None if qdd is None else S * qdd
    v = None
    if qd is not None:
        sqd = S * qd
        v = _tree_down_cm(anc, sqd, chain, levels)
        if v0 is not None:
            v = v + v0[:, None]
        acc = _velocity_product_cm(v, sqd, acc)
    elif v0 is not None:
        v = v0[:, None].expand(S.shape)
    a = None if acc is None else _tree_down_cm(anc, acc, chain, levels)
    if a0 is not None:
        a0 = a0[:, None, None] if a0.dim() == 1 else a0[:, None]
        a = a0.expand(S.shape) if a is None else a + a0
    if a is None:
        tau = S.new_zeros(S.shape[1:])
        return (tau, S.new_zeros(6, S.shape[2])) if total else tau
    f = body_forces_bl(m[:, None], c, Ic, a, v)
    tau = (S * _tree_up_cm(anc, f, chain, levels)).sum(0)
    return (tau, f.sum(1)) if total else tau


_pairs_cache: dict = {}
# largest (n, n, B) all-pairs product of a chain's mass matrix (about 3 MB in float64;
# above it the per-body rows, which touch less memory, are faster)
_FULL_PRODUCT_ELEMENTS = 400_000


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _ancestor_pairs(anc):
    """Row structure of the ancestor matrix ``anc (n, n)``, computed once per tree.

    -> ``(groups, gather)``: the bodies grouped by depth (their number of ancestors), each
    group ``(bodies, ancestors, k, w)``: its k bodies (a slice ``(start, stop)`` or an index
    tensor) and their w ancestors each, themselves included (an index tensor ``(k * w,)``,
    row by row), so that one product per depth forms every pair of the group; gather
    ``(n * n,)`` maps each entry ``(i, j)`` of the joint-space matrix to its position in the
    concatenated products (the pair (i, j) or (j, i) that holds the ancestor), or to one past
    the end (zero).
    """
    a = anc.detach().to("cpu", torch.float64).numpy() > 0
    key = (anc.device, a.shape, a.tobytes())
    hit = _pairs_cache.get(key)
    if hit is not None:
        return hit
    n = a.shape[0]
    ancestors = [[j for j in range(n) if a[i, j]] for i in range(n)]
    depth = [len(js) for js in ancestors]
    groups, pos, k = [], {}, 0
    for w in sorted(set(depth)):
        bodies = [i for i in range(n) if depth[i] == w]
        # each body's ancestors from the root down (an ancestor has fewer ancestors of its own)
        rows = [sorted(ancestors[i], key=lambda j: depth[j]) for i in bodies]
        sel = (bodies[0], bodies[-1] + 1) if bodies == list(range(bodies[0], bodies[-1] + 1)) else \
            torch.tensor(bodies, device=anc.device)
        groups.append((sel, torch.tensor([j for r in rows for j in r], device=anc.device), len(bodies), w))
        for i, r in zip(bodies, rows):
            for j in r:
                pos[(i, j)] = k
                k += 1
    gather = [pos.get((i, j), pos.get((j, i), k)) for i in range(n) for j in range(n)]
    hit = _pairs_cache[key] = (groups, torch.tensor(gather, device=anc.device))
    return hit


def crba_bl(S, inertials, anc, anc_strict, chain: bool = False, order=None, levels=None, base=None):
    """As :func:`engine.robots.dynamics_body_major.crba`, batch-last: ``S (6, n, B)`` -> ``M (B, n,
    n)`` (a view; internal order, or rows and columns ``order (n,)`` of it, folded into the final
    gather).

    base: a floating base, ``base(F, total) -> (M_bb (6, 6, B), M_bj (6, n, B))`` (its block and
    its rows against the joints, internal order) from each joint's composite inertia times its
    motion subspace ``F (6, n, B)`` and the whole tree's compact inertia ``total (13, B)``:
    ``M`` is then the whole ``(B, 6 + n, 6 + n)`` matrix, assembled by the same single gather.
    """
    if base is not None:
        F, total = composite_forces_bl(S, inertials, anc, chain, levels)
        return _mass_matrix_pairs(S, F, anc, order, base=base(F, total)).permute(2, 0, 1)
    return _mass_matrix_bl(S, inertials, anc, chain, order=order, levels=levels).permute(2, 0, 1)


def _mass_matrix_bl(S, inertials, anc, chain: bool, order=None, levels=None):
    """The joint-space inertia matrix batch-last, ``(n, n, B)`` (internal order).

    Composite rigid bodies in the compact form (mass, first moment ``h``, rotational
    inertia ``J`` about the world origin): 10 planes per body. ``M_ij = S_j . (Ic_i S_i)``
    is formed only for the pairs where body j is body i or one of its ancestors (one
    product per depth), then mirrored by one gather.
    """
    _, n, B = S.shape
    F, _ = composite_forces_bl(S, inertials, anc, chain, levels, total=False)
    if chain and order is None and n * n * B <= _FULL_PRODUCT_ELEMENTS:
        # a chain relates every pair: all products at once (few large ops), then mirror
        # F_i . S_j as six in-place multiply-adds of (n, n, B) planes (no (6, n, n, B) temporary)
        P = F[0].unsqueeze(1) * S[0].unsqueeze(0)                                    # (n, n, B)
        for k in range(1, 6):
            P.addcmul_(F[k].unsqueeze(1), S[k].unsqueeze(0))
        return P.view(n * n, B).index_select(0, _chain_mirror(n, S.device)).view(n, n, B)
    return _mass_matrix_pairs(S, F, anc, order)


def compact_inertias_bl(m, c, Ic):
    """Compact inertias ``[m, h = m c, J] (13, n, B)`` about the world origin from the world
    inertials of :func:`world_inertials_bl` (``m (n,)``)."""
    n, B = c.shape[1:]
    h = c * m[:, None]
    J = torch.addcmul(Ic, h.unsqueeze(1), c.unsqueeze(0), value=-1.0)                # Ic - m c c^T
    J.diagonal(0, 0, 1).add_((h * c).sum(0).unsqueeze(-1))                          # + m |c|^2 1 (fresh tensor)
    return torch.cat([m[None, :, None].expand(1, n, B), h, J.reshape(9, n, B)])


def composite_forces_bl(S, inertials, anc, chain: bool, levels=None, total: bool = True):
    """``(F (6, n, B), total (13, B) or None)``: each joint's composite (subtree) inertia times its
    motion subspace, and the whole tree's compact inertia ``[m, h, J]`` about the world origin."""
    _, n, B = S.shape
    comp = compact_inertias_bl(*inertials)
    total_inertia = comp.sum(1) if total else None
    if chain:       # subtree sums in place (comp is fresh): no list of partial sums to stack
        for i in range(n - 2, -1, -1):
            comp[:, i].add_(comp[:, i + 1])
    else:
        comp = _tree_up_cm(anc, comp, chain, levels)
    mc, hc_, Jc = comp[0], comp[1:4], comp[4:].view(3, 3, n, B)
    sw, so = S[:3], S[3:]
    # Ic S = [Jc sw + hc x so; mc so + sw x hc] = [Jc sw - so x hc; mc so + sw x hc]: both
    # crosses with hc at once from doubled vectors (S doubled by one gather: [sw; so], 5 each)
    hh = _doubled(hc_, 0)                                   # (5, n, B)
    ss = _doubled(S, 0, 6).view(2, 5, n, B)                  # [sw; so] doubled
    X = (ss[:, 1:4] * hh[2:5]).addcmul_(ss[:, 2:5], hh[1:4], value=-1.0)            # [sw x hc, so x hc]
    ang = (Jc[:, 0] * sw[0]).sub_(X[1]).addcmul_(Jc[:, 1], sw[1]).addcmul_(Jc[:, 2], sw[2])   # fresh: in place
    lin = X[0].addcmul_(mc, so)
    return torch.cat([ang, lin]), total_inertia


def _mass_matrix_pairs(S, F, anc, order=None, base=None):
    """``M_ij = S_j . F_i`` for the pairs (i, ancestor j), mirrored: ``(n, n, B)`` (rows and
    columns ``order`` of it when given); base ``(M_bb (6, 6, B), M_bj (6, n, B))``: a floating
    base's blocks, first in rows and columns: ``(6 + n, 6 + n, B)``."""
    B = S.shape[2]
    groups, gather = _ancestor_pairs(anc)
    if order is not None:
        gather = _ordered_gather(gather, order)
    prods = []
    for sel, ancestors, k, w in groups:        # one product per depth: (6, k, 1, B) . (6, k, w, B)
        Fg = F[:, sel[0]:sel[1]] if isinstance(sel, tuple) else F.index_select(1, sel)
        Sa = S.index_select(1, ancestors).view(6, k, w, B)
        prods.append((Fg.unsqueeze(2) * Sa).sum(0).view(k * w, B))
    n = S.shape[1]
    if base is not None:
        P = sum(p.shape[0] for p in prods)
        prods += [base[0].reshape(36, B), base[1].reshape(6 * n, B)]
        gather, n = _floating_gather(gather, order, P, n), n + 6
    prods.append(S.new_zeros(1, 1).expand(1, B))
    return torch.cat(prods, dim=0).index_select(0, gather).view(n, n, B)


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _floating_gather(gather, order, P: int, n: int):
    """The gather of :func:`_mass_matrix_pairs` with a floating base's blocks: sources
    ``[P products, M_bb (36), M_bj (6 n, internal columns), zero]`` -> ``((6 + n)^2,)`` (cached)."""
    key = ("floating", gather.data_ptr(), gather.device, P, None if order is None else tuple(order.tolist()))
    idx = _sym_cache.get(key)
    if idx is None:
        g = gather.view(n, n).tolist()
        ob = list(range(n)) if order is None else order.tolist()
        zero = P + 36 + 6 * n
        full = []
        for I in range(n + 6):
            for J in range(n + 6):
                if I < 6 and J < 6:
                    full.append(P + 6 * I + J)
                elif I < 6:
                    full.append(P + 36 + I * n + ob[J - 6])
                elif J < 6:
                    full.append(P + 36 + J * n + ob[I - 6])
                else:
                    k = g[I - 6][J - 6]
                    full.append(zero if k >= P else k)
        idx = _sym_cache[key] = torch.tensor(full, device=gather.device)
    return idx


_sym_cache: dict = {}


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _ordered_gather(gather, order):
    """The gather of :func:`_ancestor_pairs` for rows and columns ``order (n,)`` (cached)."""
    key = ("ordered", gather.data_ptr(), gather.device, tuple(order.tolist()))
    idx = _sym_cache.get(key)
    if idx is None:
        n = order.numel()
        idx = _sym_cache[key] = gather.view(n, n).index_select(0, order).index_select(1, order).reshape(-1)
    return idx


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _chain_mirror(n: int, device):
    """``(n * n,)``: entry (i, j) of a chain's joint-space matrix -> (max(i, j), min(i, j))."""
    key = ("mirror", n, device)
    idx = _sym_cache.get(key)
    if idx is None:
        idx = _sym_cache[key] = torch.tensor([max(i, j) * n + min(i, j) for i in range(n) for j in range(n)],
                                             device=device)
    return idx


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


def solve_mass_matrix_bl(M, r):
    """``M^-1 r`` for symmetric positive definite ``M (n, n, B)`` and ``r (n, B)``, batch-last.

    ``M = U D U^T`` with U unit upper triangular, eliminating the last body first: with the
    bodies numbered by depth (every ancestor before its descendants) the factors keep the
    sparsity of the tree (``U[j, k] != 0`` only where j is an ancestor of k; RBDA 6.5, the
    LTDL factorisation), and the first solve runs inside the elimination.
    """
    n, _, B = M.shape
    H, rr = M, r
    ls, ys, ds = [], [None] * n, [None] * n
    for k in range(n - 1, -1, -1):
        ds[k], ys[k] = H[k, k], rr[k]
        if k == 0:
            break
        h = H[k, :k]                                             # (k, B)
        l = h / H[k, k]
        ls.append(l)
        H = torch.addcmul(H[:k, :k], l.unsqueeze(1), h.unsqueeze(0), value=-1.0)   # - h h^T / d
        rr = torch.addcmul(rr[:k], l, ys[k], value=-1.0)
    z = torch.stack(ys) / torch.stack(ds)
    if n == 1:
        return z
    # U^T x = z, one column of U^T at a time: U^T[j, k] = l_j[k] for k < j
    ls = ls[::-1] + [M.new_zeros(1, 1).expand(1, B)]               # l_1, l_2, ..., 0
    Lt = torch.cat(ls, dim=0).index_select(0, _strict_lower_gather(n, M.device)).view(n, n, B)
    xs = []
    for k in range(n):
        xs.append(z[0])
        if k < n - 1:
            z = torch.addcmul(z[1:], Lt[k + 1:, k], z[0], value=-1.0)
    return torch.stack(xs)


_lower_cache: dict = {}


@torch.inference_mode(False)    # cached constants are normal tensors (see engine.robots.call_policy)
def _strict_lower_gather(n: int, device):
    """Index map ``(n * n,)``: entry ``(j, k)``, k < j, -> ``j (j - 1) / 2 + k`` (rows l_1, l_2, ...
    concatenated), else the zero at the end."""
    key = (n, device)
    idx = _lower_cache.get(key)
    if idx is None:
        z = n * (n - 1) // 2
        idx = _lower_cache[key] = torch.tensor([j * (j - 1) // 2 + k if k < j else z for j in range(n) for k in range(n)],
                                               device=device)
    return idx


# up to this many joints (and for trees at least as deep as half their joints), forward
# dynamics at large batches solves M qdd = tau - C qd - g (CRBA, RNEA, LTDL) instead of
# the articulated-body recursion: its depth-sequential steps are few small tensor ops
# each, where the recursion needs about twenty per depth (measured on the Panda: 1.5x)
_COMPOSITE_FD_MAX_DOF = 12


def auto_fd_method(n: int, depth: int) -> str:
    """The forward dynamics method for a tree of n joints and the given depth (see above)."""
    return "composite" if n <= _COMPOSITE_FD_MAX_DOF and 2 * depth >= n else "articulated"


def aba_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False, method: str = "auto",
           armature=None, root=None):
    """Forward dynamics batch-last: ``S (6, n, B)``, ``qd, tau (n, B)`` -> ``qdd (n, B)``.

    method: "articulated" (the articulated-body algorithm, as :func:`aba`), "composite"
    (``M qdd = tau - b`` with :func:`crba_bl`'s M, the RNEA bias b and
    :func:`solve_mass_matrix_bl`) or "auto" (composite for small, deep trees). root: a floating
    base (articulated only), ``(I0 (6, 6, 1 or B), v0 (6, B), tau0 (6, B))``, all in the base
    frame (see :func:`root_acceleration_bl`) -> ``(qdd, qdd_base (6, B))``.
    """
    if method == "auto":
        method = auto_fd_method(S.shape[1], len(levels))
    if method == "composite":
        bias = rnea_bl(S, inertials, qd, None, a0, anc, chain)
        M = _mass_matrix_bl(S, inertials, anc, chain)
        if armature is not None:
            M = M + torch.diag(armature)[..., None]
        return solve_mass_matrix_bl(M, tau - bias)
    if method != "articulated":
        raise ValueError(f"unknown forward dynamics method {method!r}")
    m, c, Ic = inertials
    body_major = (m, c.transpose(0, 1).contiguous(), Ic.permute(2, 0, 1, 3).contiguous())
    return _aba_recursion_bl(S.transpose(0, 1).contiguous(), body_major, qd, tau, a0, anc, levels, level_parents,
                             chain, armature, root)


def _aba_recursion_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False, armature=None,
                      root=None):
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
    c = _cross_motion_bl(v, sqd, vv)
    pA = _cross_force_bl(v, _mv6(I, v), vv)
    depth = len(levels)
    sizes = [e - s for s, e in levels]
    S_l, I_l, p_l, c_l, tau_l = S.split(sizes), I.split(sizes), pA.split(sizes), c.split(sizes), tau.split(sizes)
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
