"""Rigid-body dynamics after Featherstone (2008) in world-frame spatial vectors, batched.

All spatial quantities are expressed in the world frame about the world origin
(``[angular; linear]``), which turns the tree recursions of RNEA and CRBA into products
with the constant ancestor matrix ``A`` (``A[i, j] = 1`` when body ``j`` is body ``i`` or
one of its ancestors): velocities ``v = A (S qd)``, accelerations ``a = A (S qdd + v x S qd)
+ a0``, subtree sums ``F = A^T f``. ABA needs one vectorised step per tree depth.

Shapes are body-major: ``n`` movable bodies (= dof, internal breadth-first order) first,
then ``B`` samples: ``S (n, B, 6)`` the joint motion subspaces, ``I (n, B, 6, 6)`` the world
spatial inertias, joint vectors ``(n, B)``,
``a0 (6,)`` the base acceleration (``[0; -gravity]``). Units: SI (N m, N, rad, m, kg).
The ``*_bl`` functions at the end are the batch-last variants (``(n, k, B)``) used for
large batches.
"""

from __future__ import annotations

import torch

from engine.robots.kinematics import apply_to_bodies
from engine.spatial import cross_force, cross_motion

__all__ = [
    "aba",
    "body_constants",
    "crba",
    "inertia_times",
    "kinetic_energy",
    "link_inertia_to_bodies",
    "motion_subspaces",
    "potential_energy",
    "rnea",
    "spatial_inertia_world",
    "tree_down",
    "tree_up",
    "world_inertia_terms",
]


def link_inertia_to_bodies(mass, com, inertia, link_body, link_offset, n_bodies: int):
    """Merge link inertials into their bodies.

    mass ``(L,)`` kg, com ``(L, 3)`` m and inertia ``(L, 3, 3)`` kg m^2 (about the CoM) in
    each link's frame; link_body ``(L,)``; link_offset ``(L, 4, 4)`` link pose in its body.
    -> ``(m (n+1,), c (n+1, 3), Ic (n+1, 3, 3))``: each body's mass, centre of mass and
    rotational inertia about it, in the body frame (a massless body has c = 0, Ic = 0).
    """
    R, p = link_offset[:, :3, :3], link_offset[:, :3, 3]
    c = (R @ com.unsqueeze(-1)).squeeze(-1) + p
    Ic = R @ inertia @ R.transpose(-1, -2)
    m = mass
    eye = torch.eye(3, dtype=com.dtype, device=com.device)

    def steiner(mass_, c_):
        return mass_[:, None, None] * ((c_ * c_).sum(-1)[:, None, None] * eye - c_.unsqueeze(-1) * c_.unsqueeze(-2))

    J_origin = Ic + steiner(m, c)                                 # about the body origin
    zeros = com.new_zeros
    mb = zeros(n_bodies + 1).index_add(0, link_body, m)
    hb = zeros(n_bodies + 1, 3).index_add(0, link_body, m[:, None] * c)
    Jb = zeros(n_bodies + 1, 3, 3).index_add(0, link_body, J_origin)
    safe = torch.where(mb > 0, mb, torch.ones_like(mb))
    cb = torch.where((mb > 0)[:, None], hb / safe[:, None], torch.zeros_like(hb))
    return mb, cb, Jb - steiner(mb, cb)


def body_constants(m, c, Ic):
    """Per-body constants for :func:`world_inertia_terms`: ``(m (n,), [c; 1] (n, 4, 1), Ic padded (n, 4, 4))``."""
    c1 = torch.cat([c[1:], torch.ones_like(c[1:, :1])], dim=-1).unsqueeze(-1)
    Ic4 = torch.nn.functional.pad(Ic[1:], (0, 1, 0, 1))
    return m[1:], c1, Ic4


def world_inertia_terms(T_bodies, m, c1, Ic4):
    """Body inertials in the world: ``(m (n,), c_w (n, B, 3), Ic_w (n, B, 3, 3))`` of the movable bodies."""
    T = T_bodies[1:]
    c_w = apply_to_bodies(T, c1)[..., :3, 0]
    RIc = apply_to_bodies(T, Ic4)[..., :3, :3]
    Ic_w = torch.matmul(RIc, T[..., :3, :3].transpose(-1, -2))
    return m, c_w, Ic_w


def inertia_times(m, c_w, Ic_w, x):
    """Spatial inertia (world, about the origin) times motion vectors ``x (n, B, k, 6)`` -> forces.

    With ``y = x_lin + x_ang x c`` (the motion of the CoM): ``[Ic x_ang + c x m y; m y]``.
    """
    xa, xl = x[..., :3], x[..., 3:]
    cc = c_w.unsqueeze(-2)
    lin = m[:, None, None, None] * (xl + torch.linalg.cross(xa, cc))
    ang = torch.matmul(xa, Ic_w.transpose(-1, -2)) + torch.linalg.cross(cc, lin)
    return torch.cat([ang, lin], dim=-1)


def spatial_inertia_world(m, c_w, Ic_w):
    """The 6x6 world spatial inertias ``(n, B, 6, 6)`` of the movable bodies."""
    mm = m[:, None, None, None]
    eye = torch.eye(3, dtype=c_w.dtype, device=c_w.device)
    J = Ic_w + mm * ((c_w * c_w).sum(-1)[..., None, None] * eye - c_w.unsqueeze(-1) * c_w.unsqueeze(-2))
    x, y, z = (m[:, None, None] * c_w).unbind(-1)
    o = torch.zeros_like(x)
    hx = torch.stack([o, -z, y, z, o, -x, -y, x, o], dim=-1).view(J.shape)
    return torch.cat([torch.cat([J, hx], -1), torch.cat([hx.transpose(-1, -2), mm * eye.expand_as(J)], -1)], -2)


def tree_down(anc, x, chain: bool):
    """``A x``: sums over each body's ancestors (and itself); x ``(n, B, ...)``."""
    if chain:
        return x.cumsum(0)
    n = x.shape[0]
    return torch.matmul(anc, x.reshape(n, -1)).view(x.shape)


def tree_up(anc, x, chain: bool):
    """``A^T x``: sums over each body's subtree; x ``(n, B, ...)``."""
    if chain:
        return x.flip(0).cumsum(0).flip(0)
    n = x.shape[0]
    return torch.matmul(anc.transpose(0, 1), x.reshape(n, -1)).view(x.shape)


def motion_subspaces(T_bodies, axis4, rev, pri):
    """World-frame joint motion subspaces ``(n, B, 6)``: ``[z; p x z]`` revolute, ``[0; z]`` prismatic.

    axis4 ``(n, 4, 1)``: the joint axes padded with a 0. Also returns the axes ``z`` and the
    joint origins ``p``, ``(n, B, 3)`` each.
    """
    T = T_bodies[1:]
    z = apply_to_bodies(T, axis4)[..., :3, 0]
    p = T[..., :3, 3]
    r, s = rev[:, None, None], pri[:, None, None]
    return torch.cat([z * r, torch.linalg.cross(p, z) * r + z * s], dim=-1), z, p


def rnea(S, inertials, qd, qdd, a0, anc, chain: bool = False):
    """Inverse dynamics ``tau (n, B)`` for ``qd, qdd (n, B)`` (None = zero); ``a0 (6,)`` or None.

    inertials: ``(m (n,), c_w (n, B, 3), Ic_w (n, B, 3, 3))`` from :func:`world_inertia_terms`.
    """
    m, c_w, Ic_w = inertials
    if qd is None:
        v = None
        acc = S * qdd.unsqueeze(-1) if qdd is not None else None
    else:
        sqd = S * qd.unsqueeze(-1)
        v = tree_down(anc, sqd, chain)
        acc = cross_motion(v, sqd)
        if qdd is not None:
            acc = acc + S * qdd.unsqueeze(-1)
    a = tree_down(anc, acc, chain) if acc is not None else None
    if a0 is not None:
        a = a0.expand(S.shape) if a is None else a + a0
    if a is None:
        return torch.zeros(S.shape[:-1], dtype=S.dtype, device=S.device)
    if v is None:
        f = inertia_times(m, c_w, Ic_w, a.unsqueeze(-2)).squeeze(-2)
    else:
        h = inertia_times(m, c_w, Ic_w, torch.stack([a, v], dim=-2))
        f = h[..., 0, :] + cross_force(v, h[..., 1, :])
    F = tree_up(anc, f, chain)
    return (S * F).sum(-1)


def crba(S, inertials, anc, anc_strict, chain: bool = False):
    """Joint-space inertia matrix ``(B, n, n)`` (internal order), symmetric positive definite.

    Composite rigid bodies in the compact form (mass, first moment ``h``, rotational
    inertia ``J`` about the world origin): 13 numbers per body instead of a 6x6 matrix.
    """
    m, c_w, Ic_w = inertials
    n, B = c_w.shape[:2]
    mm = m[:, None, None]
    h = mm * c_w
    eye = torch.eye(3, dtype=c_w.dtype, device=c_w.device)
    J = Ic_w + mm[..., None] * ((c_w * c_w).sum(-1)[..., None, None] * eye - c_w.unsqueeze(-1) * c_w.unsqueeze(-2))
    packed = torch.cat([mm.expand(n, B, 1), h, J.reshape(n, B, 9)], dim=-1)
    comp = tree_up(anc, packed, chain)
    mc, hc, Jc = comp[..., :1], comp[..., 1:4], comp[..., 4:].reshape(n, B, 3, 3)
    sw, so = S[..., :3], S[..., 3:]
    F = torch.cat([torch.matmul(Jc, sw.unsqueeze(-1)).squeeze(-1) + torch.linalg.cross(hc, so),
                   mc * so - torch.linalg.cross(hc, sw)], dim=-1)                # (n, B, 6) = Ic_i S_i
    P = torch.matmul(F.transpose(0, 1), S.permute(1, 2, 0))                    # (B, n, n): S_j . Ic_i S_i
    return P * anc + (P * anc_strict).transpose(-1, -2)


def aba(S, I, qd, tau, a0, anc, levels, level_parents, chain: bool = False):
    """Forward dynamics ``qdd (n, B)`` by the articulated-body algorithm, one step per depth.

    levels: ``[(start, stop), ...]`` per depth of the bodies (0-based slices of the n
    movable bodies); level_parents: per depth, None when each body's parent is the body at
    the same position of the previous depth (chains), else the parent's position there.
    """
    sqd = S * qd.unsqueeze(-1)
    v = tree_down(anc, sqd, chain)
    c = cross_motion(v, sqd)
    pA = cross_force(v, (I * v.unsqueeze(-2)).sum(-1))
    depth = len(levels)
    sizes = [e - s for s, e in levels]
    S_l, S_row, I_l, p_l = S.split(sizes), S.unsqueeze(-2).split(sizes), I.split(sizes), pA.split(sizes)
    c_l, c_row, tau_l = c.split(sizes), c.unsqueeze(-2).split(sizes), tau.split(sizes)
    acc_I = [None] * depth
    acc_p = [None] * depth
    Uos, qfree = [None] * depth, [None] * depth
    # small matrix-vector products as broadcast multiply-and-sum: fewer dispatches than
    # batched matmul at small batches, and no slower at large ones
    for d in range(depth - 1, -1, -1):
        IA, pa, Sd = I_l[d], p_l[d], S_l[d]
        if acc_I[d] is not None:
            IA = IA + acc_I[d]
            pa = pa + acc_p[d]
        U = (IA * S_row[d]).sum(-1)
        Dinv = 1.0 / (Sd * U).sum(-1)
        qf = (tau_l[d] - (Sd * pa).sum(-1)) * Dinv
        Uo = U * Dinv.unsqueeze(-1)
        Uos[d], qfree[d] = Uo, qf
        if d == 0:
            break
        Ia = IA - Uo.unsqueeze(-1) * U.unsqueeze(-2)
        pa_out = pa + (Ia * c_row[d]).sum(-1) + U * qf.unsqueeze(-1)
        lp = level_parents[d]
        if lp is not None:
            Ia = Ia.new_zeros((sizes[d - 1],) + Ia.shape[1:]).index_add(0, lp, Ia)
            pa_out = pa_out.new_zeros((sizes[d - 1],) + pa_out.shape[1:]).index_add(0, lp, pa_out)
        acc_I[d - 1] = Ia
        acc_p[d - 1] = pa_out
    parts = []
    a_prev = None
    for d in range(depth):
        if d == 0:
            ap = c_l[0] if a0 is None else c_l[0] + a0
        else:
            lp = level_parents[d]
            ap = (a_prev if lp is None else a_prev.index_select(0, lp)) + c_l[d]
        qdd_d = qfree[d] - (Uos[d] * ap).sum(-1)
        a_prev = ap + S_l[d] * qdd_d.unsqueeze(-1)
        parts.append(qdd_d)
    return torch.cat(parts, dim=0) if len(parts) > 1 else parts[0]


def kinetic_energy(S, inertials, qd, anc, chain: bool = False):
    """``0.5 sum_i v_i . I_i v_i`` (J), ``(B,)``."""
    m, c_w, Ic_w = inertials
    v = tree_down(anc, S * qd.unsqueeze(-1), chain)
    return 0.5 * (v * inertia_times(m, c_w, Ic_w, v.unsqueeze(-2)).squeeze(-2)).sum(-1).sum(0)


def potential_energy(m, c_w, gravity):
    """``-sum_i m_i g . c_i`` over the movable bodies (J), ``(B,)``; gravity ``(3,)`` m/s^2."""
    return -((m[:, None, None] * c_w) * gravity).sum(-1).sum(0)


# ---------------------------------------------------------------- batch-last (large batches)
# The same algorithms on batch-last tensors (see engine.robots.kinematics): spatial vectors
# ``(n, 6, B)``, 3-vectors ``(n, 3, B)``, 3x3 matrices ``(n, 3, 3, B)``, joint vectors
# ``(n, B)``; leading dimensions before ``n`` broadcast.

def world_inertials_bl(W, m, c1, Ic4):
    """World inertials of the movable bodies from poses ``W (n, 3, 4, B)`` and the
    :func:`body_constants` -> ``(m (n,), c_w (n, 3, B), Ic_w (n, 3, 3, B))``."""
    R, p = W[:, :, :3], W[:, :, 3]
    c = c1[:, None, :3, 0, None]                                         # (n, 1, 3, 1)
    c_w = torch.addcmul(torch.addcmul(torch.addcmul(p, R[:, :, 0], c[:, :, 0]), R[:, :, 1], c[:, :, 1]),
                        R[:, :, 2], c[:, :, 2])
    M = torch.matmul(Ic4[:, None, :3, :3].transpose(-1, -2), R)           # R Ic (n, 3, 3, B)
    Ic_w = M[:, :, None, 0] * R[:, None, :, 0]                           # R Ic R^T
    Ic_w = torch.addcmul(Ic_w, M[:, :, None, 1], R[:, None, :, 1])
    Ic_w = torch.addcmul(Ic_w, M[:, :, None, 2], R[:, None, :, 2])
    return m, c_w, Ic_w


def _mv(M, x):
    """``M x`` for 3x3 matrices ``(..., 3, 3, B)`` and vectors ``(..., 3, B)``."""
    cols, xs = M.unbind(-2), x.unsqueeze(-2).unbind(-3)
    out = cols[0] * xs[0]
    out = torch.addcmul(out, cols[1], xs[1])
    return torch.addcmul(out, cols[2], xs[2])


def motion_subspaces_bl(z, p, rev, pri):
    """``(n, 6, B)`` joint motion subspaces from world axes ``z`` and origins ``p`` ``(n, 3, B)``;
    rev / pri ``(n,)`` masks, or None for an all-revolute tree."""
    pz = _xd(_d3(p), _d3(z))
    if rev is None:
        return torch.cat([z, pz], dim=1)
    r, s = rev[:, None, None], pri[:, None, None]
    return torch.cat([z * r, pz * r + z * s], dim=1)


def _cross(a, b):
    """``a x b`` for 3-vectors along dim -2, ``(..., 3, B)``."""
    return _xd(_d3(a), _d3(b))


# Cross products from "doubled" vectors [x, y, z, x, y] (dim -2): the cyclic shifts
# (y, z, x) and (z, x, y) are then views, and a x b takes two ops instead of ten.
_DOUBLING = {3: (0, 1, 2, 0, 1), 6: (0, 1, 2, 0, 1, 3, 4, 5, 3, 4)}
_doubling_index: dict = {}      # (size, device) -> index tensor (constants, built once)


def _double(a, size: int):
    key = (size, a.device)
    idx = _doubling_index.get(key)
    if idx is None:
        idx = _doubling_index[key] = torch.tensor(_DOUBLING[size], device=a.device)
    return a.index_select(-2, idx)      # one gather: faster than concatenating slices


def _d3(a):
    return _double(a, 3)


def _d6(v):
    """Spatial ``(..., 6, B)`` -> ``(..., 10, B)``: both halves doubled ([0:5] and [5:10])."""
    return _double(v, 6)


def _xd(aa, bb):
    """a x b from doubled ``aa, bb (..., 5, B)``."""
    return torch.addcmul(aa[..., 1:4, :] * bb[..., 2:5, :], aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)


def _xd2(aa, bb, cc, dd):
    """a x b + c x d from doubled vectors."""
    out = torch.addcmul(aa[..., 1:4, :] * bb[..., 2:5, :], aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)
    out = torch.addcmul(out, cc[..., 1:4, :], dd[..., 2:5, :])
    return torch.addcmul(out, cc[..., 2:5, :], dd[..., 1:4, :], value=-1.0)


def _cross_motion_bl(v, m, vv=None):
    """``v x m`` (spatial motion), ``(..., 6, B)``; vv: ``_d6(v)`` when already at hand."""
    vv = _d6(v) if vv is None else vv
    mm = _d6(m)
    w, vo, mw, mo = vv[..., :5, :], vv[..., 5:, :], mm[..., :5, :], mm[..., 5:, :]
    return torch.cat([_xd(w, mw), _xd2(w, mo, vo, mw)], dim=-2)


def _cross_force_bl(v, f, vv=None):
    """``v x* f`` (spatial force), ``(..., 6, B)``."""
    vv = _d6(v) if vv is None else vv
    ff = _d6(f)
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


def _tree_up_bl(anc, x, chain):
    if chain:       # subtree sums of a chain: running sums from the tip
        xs = x.unbind(-3)
        acc = [xs[-1]]
        for xi in xs[-2::-1]:
            acc.append(acc[-1] + xi)
        return torch.stack(acc[::-1], dim=-3)
    return torch.matmul(anc.transpose(0, 1), x.reshape(x.shape[:-3] + (x.shape[-3], -1))).view(x.shape)


def inertia_times_bl(m, c_w, Ic_w, x):
    """World spatial inertias times motion vectors ``x (..., n, 6, B)`` -> forces, same shape."""
    xa, xl = x[..., :3, :], x[..., 3:, :]
    cc = _d3(c_w)
    lin = m[:, None, None] * (xl + _xd(_d3(xa), cc))
    ang = _mv(Ic_w, xa) + _xd(cc, _d3(lin))
    return torch.cat([ang, lin], dim=-2)


def rnea_bl(S, inertials, qd, qdd, a0, anc, chain: bool = False):
    """As :func:`rnea`, batch-last: ``S (n, 6, B)``, ``qd, qdd (n, B)`` (None = zero) -> ``tau (n, B)``."""
    m, c_w, Ic_w = inertials
    if qd is None:
        v = None
        acc = S * qdd.unsqueeze(1) if qdd is not None else None
    else:
        sqd = S * qd.unsqueeze(1)
        v = _tree_down_bl(anc, sqd, chain)
        vv = _d6(v)
        acc = _cross_motion_bl(v, sqd, vv)
        if qdd is not None:
            acc = torch.addcmul(acc, S, qdd.unsqueeze(1))
    a = _tree_down_bl(anc, acc, chain) if acc is not None else None
    if a0 is not None:
        a = a0[:, None].expand(S.shape) if a is None else a + a0[:, None]
    if a is None:
        return S.new_zeros((S.shape[0], S.shape[2]))
    if v is None:
        f = inertia_times_bl(m, c_w, Ic_w, a)
    else:
        h = inertia_times_bl(m, c_w, Ic_w, torch.stack([a, v]))
        f = h[0] + _cross_force_bl(v, h[1], vv)
    F = _tree_up_bl(anc, f, chain)
    return (S * F).sum(1)


def crba_bl(S, inertials, anc, anc_strict, chain: bool = False):
    """As :func:`crba`, batch-last: ``S (n, 6, B)`` -> ``M (B, n, n)`` (internal order)."""
    m, c_w, Ic_w = inertials
    n, _, B = c_w.shape
    mm = m[:, None, None]
    h = mm * c_w
    eye = torch.eye(3, dtype=c_w.dtype, device=c_w.device)[:, :, None]
    J = Ic_w + (h * c_w).sum(1)[:, None, None] * eye - h.unsqueeze(2) * c_w.unsqueeze(1)
    packed = torch.cat([mm.expand(n, 1, B), h, J.reshape(n, 9, B)], dim=1)
    comp = _tree_up_bl(anc, packed, chain)
    mc, hc, Jc = comp[:, :1], comp[:, 1:4], comp[:, 4:].reshape(n, 3, 3, B)
    sw, so = S[:, :3], S[:, 3:]
    hh = _d3(hc)
    F = torch.cat([_mv(Jc, sw) + _xd(hh, _d3(so)), mc * so - _xd(hh, _d3(sw))], dim=1)
    P = F[:, None, 0] * S[None, :, 0]                                         # (n, n, B): S_j . F_i
    for k in range(1, 6):
        P = torch.addcmul(P, F[:, None, k], S[None, :, k])
    M = torch.where(anc[:, :, None] > 0, P, P.transpose(0, 1))              # lower: S_j . F_i, mirrored
    if not chain:   # zero where neither body is an ancestor of the other
        M = M * (anc + anc_strict.transpose(0, 1))[:, :, None]
    return M.permute(2, 0, 1)


# rows of the 6x6 spatial inertia [[J, h x], [(h x)^T, m 1]] in a table of sources:
# 0-8 J (row-major), 9-11 h, 12-14 -h, 15 m, 16 zero
_I6_SOURCES = (0, 1, 2, 16, 14, 10, 3, 4, 5, 11, 16, 12, 6, 7, 8, 13, 9, 16,
               16, 11, 13, 15, 16, 16, 14, 16, 9, 16, 15, 16, 10, 12, 16, 16, 16, 15)


def spatial_inertia_world_bl(m, c_w, Ic_w):
    """The 6x6 world spatial inertias ``(n, 6, 6, B)`` of the movable bodies (batch-last)."""
    n, _, B = c_w.shape
    mm = m[:, None, None]
    h = mm * c_w
    eye = torch.eye(3, dtype=c_w.dtype, device=c_w.device)[:, :, None]
    J = torch.addcmul(Ic_w + (h * c_w).sum(1)[:, None, None] * eye, h.unsqueeze(2), c_w.unsqueeze(1), value=-1.0)
    src = torch.cat([J.reshape(n, 9, B), h, -h, mm.expand(n, 1, B), c_w.new_zeros(1, 1, 1).expand(n, 1, B)], dim=1)
    idx = torch.tensor(_I6_SOURCES, device=c_w.device)
    return src.index_select(1, idx).view(n, 6, 6, B)


def _mv6(M, x):
    """``M x`` for symmetric 6x6 matrices ``(k, 6, 6, B)`` and vectors ``(k, 6, B)`` (rows of M as columns)."""
    rows, xs = M.unbind(-3), x.unsqueeze(-2).unbind(-3)
    out = rows[0] * xs[0]
    for j in range(1, 6):
        out = torch.addcmul(out, rows[j], xs[j])
    return out


def aba_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False):
    """As :func:`aba`, batch-last: ``S (n, 6, B)``, ``qd, tau (n, B)`` -> ``qdd (n, B)``.

    The articulated inertias are symmetric, so ``I x`` sums the rows of ``I`` (contiguous
    slices) weighted by the components of ``x``.
    """
    m, c_w, Ic_w = inertials
    I = spatial_inertia_world_bl(m, c_w, Ic_w)
    sqd = S * qd.unsqueeze(1)
    v = _tree_down_bl(anc, sqd, chain)
    vv = _d6(v)
    c = _cross_motion_bl(v, sqd, vv)
    pA = _cross_force_bl(v, inertia_times_bl(m, c_w, Ic_w, v), vv)
    depth = len(levels)
    sizes = [e - s for s, e in levels]
    S_l, I_l, p_l, c_l, tau_l = S.split(sizes), I.split(sizes), pA.split(sizes), c.split(sizes), tau.split(sizes)
    Sc_l = torch.stack([S, c], dim=1).split(sizes)                         # (k, 2, 6, B) per depth
    acc_I = [None] * depth
    acc_p = [None] * depth
    Uos, qfree = [None] * depth, [None] * depth
    for d in range(depth - 1, -1, -1):
        IA, pa, Sd = I_l[d], p_l[d], S_l[d]
        if acc_I[d] is not None:
            IA = IA + acc_I[d]
            pa = pa + acc_p[d]
        if d == 0:
            U = _mv6(IA, Sd)
        else:       # IA S and IA c in one pass
            UC = _mv6(IA.unsqueeze(1), Sc_l[d])
            U, IAc = UC[:, 0], UC[:, 1]
        Dinv = 1.0 / (Sd * U).sum(1)
        qf = (tau_l[d] - (Sd * pa).sum(1)) * Dinv
        Uo = U * Dinv.unsqueeze(1)
        Uos[d], qfree[d] = Uo, qf
        if d == 0:
            break
        Ia = torch.addcmul(IA, Uo.unsqueeze(2), U.unsqueeze(1), value=-1.0)
        # Ia c = IA c - Uo (U . c)
        pa_out = torch.addcmul(torch.addcmul(pa + IAc, Uo, (U * c_l[d]).sum(1, keepdim=True), value=-1.0),
                               U, qf.unsqueeze(1))
        lp = level_parents[d]
        if lp is not None:
            Ia = Ia.new_zeros((sizes[d - 1],) + Ia.shape[1:]).index_add(0, lp, Ia)
            pa_out = pa_out.new_zeros((sizes[d - 1],) + pa_out.shape[1:]).index_add(0, lp, pa_out)
        acc_I[d - 1] = Ia
        acc_p[d - 1] = pa_out
    parts = []
    a_prev = None
    for d in range(depth):
        if d == 0:
            ap = c_l[0] if a0 is None else c_l[0] + a0[:, None]
        else:
            lp = level_parents[d]
            ap = (a_prev if lp is None else a_prev.index_select(0, lp)) + c_l[d]
        qdd_d = qfree[d] - (Uos[d] * ap).sum(1)
        a_prev = torch.addcmul(ap, S_l[d], qdd_d.unsqueeze(1))
        parts.append(qdd_d)
    return torch.cat(parts, dim=0) if len(parts) > 1 else parts[0]
