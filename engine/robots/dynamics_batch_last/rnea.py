"""Batch-last kinematic terms and the recursive Newton-Euler algorithm: world inertials, motion
subspaces, body forces, RNEA (component-major tensors; see :mod:`engine.robots.dynamics_batch_last`).
"""

from __future__ import annotations

import torch

from engine.robots.dynamics_batch_last.planes import (
    _doubled,
    _tree_down_cm,
    _tree_up_cm,
    _velocity_product_cm,
)

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


def rnea_bl(S, inertials, qd, qdd, a0, anc, chain: bool = False, v0=None, total: bool = False, levels=None,
            bias_src=None):
    """As :func:`engine.robots.dynamics_body_major.rnea`, batch-last: ``S (6, n, B)``, ``qd, qdd
    (n, B)`` (None = zero), ``a0 (6,)`` or ``(6, B)`` -> ``tau (n, B)``; inertials from
    :func:`world_inertials_bl`. A moving root: ``v0 (6, B)``; ``total``: also the sum of the
    body forces ``(6, B)``. levels: ``(levels, level_parents)``: tree sums one depth at a time
    (wide trees; see :func:`_tree_down_levels`). bias_src ``(n,)``: the body whose velocity enters
    each body's ``v x S qd`` (ball joints, :mod:`engine.robots.ball`; None: its own)."""
    m, c, Ic = inertials
    acc = None if qdd is None else S * qdd
    v = None
    if qd is not None:
        sqd = S * qd
        v = _tree_down_cm(anc, sqd, chain, levels)
        if v0 is not None:
            v = v + v0[:, None]
        acc = _velocity_product_cm(v if bias_src is None else v.index_select(1, bias_src), sqd, acc)
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
