"""Batch-last composite rigid bodies: the joint-space inertia matrix (CRBA, a floating base's
blocks included) and its tree-sparse ``L^T D L`` solve (see :mod:`engine.robots.dynamics_batch_last`).
"""

from __future__ import annotations

import torch

from engine.robots.dynamics_batch_last.planes import _doubled, _tree_up_cm

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
        idx = _lower_cache[key] = torch.tensor(
            [j * (j - 1) // 2 + k if k < j else z for j in range(n) for k in range(n)], device=device
        )
    return idx


# up to this many joints (and for trees at least as deep as half their joints), forward
# dynamics at large batches solves M qdd = tau - C qd - g (CRBA, RNEA, LTDL) instead of
