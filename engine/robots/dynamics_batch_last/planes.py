"""Component-major arithmetic shared by the batch-last algorithms: doubled vectors, spatial
cross products and tree sums over the bodies (see :mod:`engine.robots.dynamics_batch_last`).

Shapes: spatial vectors ``(6, n, B)``, 3-vectors ``(3, n, B)`` (component-major), or body-major
``(..., 6, B)`` where noted; ``anc (n, n)`` the ancestor matrix (``A[i, j] = 1`` when body j is
body i or one of its ancestors).
"""

from __future__ import annotations

import torch

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
    X = (ww[1:4] * ss[:, 2:5] if acc is None
         else torch.addcmul(acc.view(2, 3, *acc.shape[1:]), ww[1:4], ss[:, 2:5]))
    X.addcmul_(ww[2:5], ss[:, 1:4], value=-1.0)                               # X is fresh: in place
    vv = _doubled(v[3:], 0)
    lin = X[1].addcmul_(vv[1:4], ss[0, 2:5]).addcmul_(vv[2:5], ss[0, 1:4], value=-1.0)
    return torch.cat([X[0], lin])


def _xd(aa, bb):
    """a x b from doubled ``aa, bb (..., 5, B)``."""
    return (aa[..., 1:4, :] * bb[..., 2:5, :]).addcmul_(aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)


def _xd2(aa, bb, cc, dd):
    """a x b + c x d from doubled vectors (accumulated in place in a fresh tensor)."""
    out = (aa[..., 1:4, :] * bb[..., 2:5, :]).addcmul_(aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)
    out.addcmul_(cc[..., 1:4, :], dd[..., 2:5, :])
    return out.addcmul_(cc[..., 2:5, :], dd[..., 1:4, :], value=-1.0)


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
