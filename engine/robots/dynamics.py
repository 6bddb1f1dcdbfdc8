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


def aba(S, I, qd, tau, a0, anc, levels, level_parents, chain: bool = False, method: str = "auto"):
    """Forward dynamics ``qdd (n, B)``; I ``(n, B, 6, 6)`` the world spatial inertias.

    method: "articulated" (the articulated-body algorithm, one step per depth), "composite"
    (``M qdd = tau - b``: composite-rigid-body M, RNEA bias b, a Cholesky solve) or "auto"
    (composite for small, deep trees: a few batched products and one LAPACK solve instead
    of about twenty small ops per depth; see ``_COMPOSITE_FD_MAX_DOF``).
    levels: ``[(start, stop), ...]`` per depth of the bodies (0-based slices of the n
    movable bodies); level_parents: per depth, None when each body's parent is the body at
    the same position of the previous depth (chains), else the parent's position there.
    """
    if method == "auto":
        method = _auto_fd_method(S.shape[0], len(levels))
    if method == "composite":
        return _forward_dynamics_composite(S, I, qd, tau, a0, anc, chain)
    if method != "articulated":
        raise ValueError(f"unknown forward dynamics method {method!r}")
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


def _forward_dynamics_composite(S, I, qd, tau, a0, anc, chain: bool):
    """``M^-1 (tau - b)`` from 6x6 world inertias ``I (n, B, 6, 6)`` (small batches)."""
    n = S.shape[0]
    sqd = S * qd.unsqueeze(-1)
    v = tree_down(anc, sqd, chain)
    a = tree_down(anc, cross_motion(v, sqd), chain)
    if a0 is not None:
        a = a + a0
    # small products as broadcast multiply-and-sum, as in the recursion below (no BLAS calls,
    # which may start threads for tiny matrices)
    h = (I.unsqueeze(2) * torch.stack([a, v], dim=2).unsqueeze(-2)).sum(-1)                 # (n, B, 2, 6)
    f = h[..., 0, :] + cross_force(v, h[..., 1, :])
    bias = (S * tree_up(anc, f, chain)).sum(-1)                                              # (n, B)
    F = (tree_up(anc, I, chain) * S.unsqueeze(-2)).sum(-1)                                  # (n, B, 6) = Ic_i S_i
    P = (F.transpose(0, 1).unsqueeze(2) * S.transpose(0, 1).unsqueeze(1)).sum(-1)           # (B, n, n): S_j . Ic_i S_i
    M = P * anc + (P * (anc - torch.eye(n, dtype=anc.dtype, device=anc.device))).transpose(-1, -2)
    # the tree-sparse LTDL of solve_mass_matrix_bl, on a batch-last view: a few tiny ops, where
    # a LAPACK Cholesky may start its threads even for one 7x7 matrix (costly on a busy machine)
    return solve_mass_matrix_bl(M.permute(1, 2, 0), tau - bias)


def kinetic_energy(S, inertials, qd, anc, chain: bool = False):
    """``0.5 sum_i v_i . I_i v_i`` (J), ``(B,)``."""
    m, c_w, Ic_w = inertials
    v = tree_down(anc, S * qd.unsqueeze(-1), chain)
    return 0.5 * (v * inertia_times(m, c_w, Ic_w, v.unsqueeze(-2)).squeeze(-2)).sum(-1).sum(0)


def potential_energy(m, c_w, gravity):
    """``-sum_i m_i g . c_i`` over the movable bodies (J), ``(B,)``; gravity ``(3,)`` m/s^2."""
    return -((m[:, None, None] * c_w) * gravity).sum(-1).sum(0)


# ---------------------------------------------------------------- batch-last (large batches)
# The same algorithms on batch-last, *component-major* tensors: the samples are the
# innermost dimension and each component of a quantity is one contiguous ``(n, B)`` plane
# over all bodies and samples: spatial vectors ``(6, n, B)``, 3-vectors ``(3, n, B)``,
# 3x3 matrices ``(3, 3, n, B)``, joint vectors ``(n, B)``. Cross products and 3x3 products
# are written out as multiply-adds of whole components (cross products from "doubled"
# vectors ``[x, y, z, x, y]``, whose cyclic shifts are contiguous slices): the samples are
# many and the bodies few, so a few large elementwise ops per component beat any
# per-sample product, and each op runs over contiguous memory (slices inside a body-major
# ``(n, 6, B)`` tensor are strided and cost about twice as much). Only the poses ``W (n, 3, 4, B)`` (top
# rows of the world transforms, shared with kinematics) and the joint axes keep the
# body-major order. The articulated-body recursion (``_aba_recursion_bl``) still works on
# body-major tensors ``(n, 6, B)``, ``(n, 3, 3, B)``.

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


def _tree_down_cm(anc, x, chain: bool):
    """``A x`` over the bodies (dim 1) of a component-major ``x (k, n, B)``."""
    return x.cumsum(1) if chain else torch.matmul(anc, x)


def _tree_up_cm(anc, x, chain: bool):
    """``A^T x``: subtree sums over the bodies (dim 1) of ``x (k, n, B)``."""
    if chain:       # running sums from the tip (cheaper than a reversed cumsum or a product)
        xs = x.unbind(1)
        acc = [xs[-1]]
        for xi in xs[-2::-1]:
            acc.append(acc[-1] + xi)
        return torch.stack(acc[::-1], dim=1)
    return torch.matmul(anc.transpose(0, 1), x)


def _dbl(x, dim: int):
    """x doubled along its component dim: ``[x, y, z, x, y]``; cyclic shifts are then slices."""
    return x.index_select(dim, _d3_index(x.device))


def _velocity_product_cm(v, s, acc=None):
    """``v x s`` (spatial motion cross product) of ``(6, n, B)`` vectors, plus acc if given."""
    ww = _dbl(v[:3], 0)                                                   # (5, n, B)
    ss = _dbl(s.view(2, 3, *s.shape[1:]), 1)                              # [s_ang; s_lin] doubled, (2, 5, n, B)
    # w x s_ang and w x s_lin at once, (2, 3, n, B)
    X = ww[1:4] * ss[:, 2:5] if acc is None else torch.addcmul(acc.view(2, 3, *acc.shape[1:]), ww[1:4], ss[:, 2:5])
    X.addcmul_(ww[2:5], ss[:, 1:4], value=-1.0)                               # X is fresh: in place
    vv = _dbl(v[3:], 0)
    lin = X[1].addcmul_(vv[1:4], ss[0, 2:5]).addcmul_(vv[2:5], ss[0, 1:4], value=-1.0)
    return torch.cat([X[0], lin])


def _body_forces_cm(m, c, Ic, a, v):
    """``f = I a + v x* I v`` (v None: ``I a``) for the bodies' world spatial inertias, about
    the CoM: with ``y = x_lin + x_ang x c`` (the CoM's velocity or acceleration) and
    ``g = y_a + w x y_v``, ``f = [Ic alpha + w x Ic w + m c x g; m g]``. m ``(n, 1)``."""
    cc = _dbl(c, 0)                                                       # (5, n, B)
    if v is None:
        T, L = a[:3], a[3:]
        TT = _dbl(T, 0)
        Y = torch.addcmul(L, TT[1:4], cc[2:5]).addcmul_(TT[2:5], cc[1:4], value=-1.0)
        g, n_ = Y, (Ic[:, 0] * T[0]).addcmul_(Ic[:, 1], T[1]).addcmul_(Ic[:, 2], T[2])
    else:
        av = torch.stack([a, v])                                          # (2, 6, n, B)
        T, L = av[:, :3], av[:, 3:]                                       # [alpha; w], [a_lin; v_lin]
        TT = _dbl(T, 1)                                                   # (2, 5, n, B); TT[1] = w doubled
        Y = torch.addcmul(L, TT[:, 1:4], cc[2:5]).addcmul_(TT[:, 2:5], cc[1:4], value=-1.0)
        IT = (Ic[:, 0] * T[:, 0:1]).addcmul_(Ic[:, 1], T[:, 1:2]).addcmul_(Ic[:, 2], T[:, 2:3])   # Ic [alpha; w]
        ww = TT[1]
        yy, ii = _dbl(Y[1], 0), _dbl(IT[1], 0)
        g = torch.addcmul(torch.addcmul(Y[0], ww[1:4], yy[2:5]), ww[2:5], yy[1:4], value=-1.0)
        n_ = torch.addcmul(torch.addcmul(IT[0], ww[1:4], ii[2:5]), ww[2:5], ii[1:4], value=-1.0)
    gg = _dbl(g, 0)
    cg = (cc[1:4] * gg[2:5]).addcmul_(cc[2:5], gg[1:4], value=-1.0)
    return torch.cat([torch.addcmul(n_, cg, m), g * m])


# Cross products from "doubled" vectors [x, y, z, x, y] (dim -2): the cyclic shifts
# (y, z, x) and (z, x, y) are then views, and a x b takes two ops instead of ten
# (body-major, used by the articulated-body recursion).
_DOUBLING = {3: (0, 1, 2, 0, 1), 6: (0, 1, 2, 0, 1, 3, 4, 5, 3, 4)}
_doubling_index: dict = {}      # (size, device) -> index tensor (constants, built once)


def _double(a, size: int):
    key = (size, a.device)
    idx = _doubling_index.get(key)
    if idx is None:
        idx = _doubling_index[key] = torch.tensor(_DOUBLING[size], device=a.device)
    return a.index_select(-2, idx)      # one gather: faster than concatenating slices


def _d6_index(device):
    """``[0, 1, 2, 0, 1, 3, 4, 5, 3, 4]``: doubles both halves of a spatial vector (see :func:`_double`)."""
    key = (6, device)
    idx = _doubling_index.get(key)
    if idx is None:
        idx = _doubling_index[key] = torch.tensor(_DOUBLING[6], device=device)
    return idx


def _d3(a):
    return _double(a, 3)


def _d6(v):
    """Spatial ``(..., 6, B)`` -> ``(..., 10, B)``: both halves doubled ([0:5] and [5:10])."""
    return _double(v, 6)


def _xd(aa, bb):
    """a x b from doubled ``aa, bb (..., 5, B)``."""
    return (aa[..., 1:4, :] * bb[..., 2:5, :]).addcmul_(aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)


def _xd2(aa, bb, cc, dd):
    """a x b + c x d from doubled vectors (accumulated in place in a fresh tensor)."""
    out = (aa[..., 1:4, :] * bb[..., 2:5, :]).addcmul_(aa[..., 2:5, :], bb[..., 1:4, :], value=-1.0)
    return out.addcmul_(cc[..., 1:4, :], dd[..., 2:5, :]).addcmul_(cc[..., 2:5, :], dd[..., 1:4, :], value=-1.0)


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


def rnea_bl(S, inertials, qd, qdd, a0, anc, chain: bool = False):
    """As :func:`rnea`, batch-last: ``S (6, n, B)``, ``qd, qdd (n, B)`` (None = zero) -> ``tau (n, B)``;
    inertials from :func:`world_inertials_bl`."""
    m, c, Ic = inertials
    acc = None if qdd is None else S * qdd
    v = None
    if qd is not None:
        sqd = S * qd
        v = _tree_down_cm(anc, sqd, chain)
        acc = _velocity_product_cm(v, sqd, acc)
    a = None if acc is None else _tree_down_cm(anc, acc, chain)
    if a0 is not None:
        a0 = a0[:, None, None]
        a = a0.expand(S.shape) if a is None else a + a0
    if a is None:
        return S.new_zeros(S.shape[1:])
    f = _body_forces_cm(m[:, None], c, Ic, a, v)
    return (S * _tree_up_cm(anc, f, chain)).sum(0)


_pairs_cache: dict = {}
# largest (n, n, B) all-pairs product of a chain's mass matrix (about 3 MB in float64;
# above it the per-body rows, which touch less memory, are faster)
_FULL_PRODUCT_ELEMENTS = 400_000


def _ancestor_pairs(anc):
    """Row structure of the ancestor matrix ``anc (n, n)``, computed once per tree.

    -> ``(rows, gather)``: rows[i] is a slice ``(start, stop)`` of bodies or an index
    tensor: the ancestors of body i (itself included); gather ``(n * n,)`` maps each entry
    ``(i, j)`` of the joint-space matrix to its position in the concatenated row products
    (the pair (i, j) or (j, i) that holds the ancestor), or to one past the end (zero).
    """
    a = anc.detach().to("cpu", torch.float64).numpy() > 0
    key = (anc.device, a.shape, a.tobytes())
    hit = _pairs_cache.get(key)
    if hit is not None:
        return hit
    n = a.shape[0]
    rows, pos, k = [], {}, 0
    for i in range(n):
        js = [j for j in range(n) if a[i, j]]
        if js == list(range(js[0], js[-1] + 1)):
            rows.append((js[0], js[-1] + 1))
        else:
            rows.append(torch.tensor(js, device=anc.device))
        for j in js:
            pos[(i, j)] = k
            k += 1
    gather = [pos.get((i, j), pos.get((j, i), k)) for i in range(n) for j in range(n)]
    hit = _pairs_cache[key] = (rows, torch.tensor(gather, device=anc.device))
    return hit


def crba_bl(S, inertials, anc, anc_strict, chain: bool = False):
    """As :func:`crba`, batch-last: ``S (6, n, B)`` -> ``M (B, n, n)`` (internal order, a view)."""
    return _mass_matrix_bl(S, inertials, anc, chain).permute(2, 0, 1)


def _mass_matrix_bl(S, inertials, anc, chain: bool):
    """The joint-space inertia matrix batch-last, ``(n, n, B)`` (internal order).

    Composite rigid bodies in the compact form (mass, first moment ``h``, rotational
    inertia ``J`` about the world origin): 10 planes per body. ``M_ij = S_j . (Ic_i S_i)``
    is formed only for the pairs where body j is body i or one of its ancestors (a row of
    products per body), then mirrored by one gather.
    """
    m, c, Ic = inertials
    _, n, B = S.shape
    h = c * m[:, None]
    J = torch.addcmul(Ic, h.unsqueeze(1), c.unsqueeze(0), value=-1.0)                # Ic - m c c^T
    J.diagonal(0, 0, 1).add_((h * c).sum(0).unsqueeze(-1))                          # + m |c|^2 1 (fresh tensor)
    comp = torch.cat([m[None, :, None].expand(1, n, B), h, J.reshape(9, n, B)])
    if chain:       # subtree sums in place (comp is fresh): no list of partial sums to stack
        for i in range(n - 2, -1, -1):
            comp[:, i].add_(comp[:, i + 1])
    else:
        comp = _tree_up_cm(anc, comp, chain)
    mc, hc_, Jc = comp[0], comp[1:4], comp[4:].view(3, 3, n, B)
    sw, so = S[:3], S[3:]
    # Ic S = [Jc sw + hc x so; mc so + sw x hc] = [Jc sw - so x hc; mc so + sw x hc]: both
    # crosses with hc at once from doubled vectors (S doubled by one gather: [sw; so], 5 each)
    hh = hc_.index_select(0, _d3_index(S.device))                                   # (5, n, B)
    ss = S.index_select(0, _d6_index(S.device)).view(2, 5, n, B)                  # [sw; so] doubled
    X = (ss[:, 1:4] * hh[2:5]).addcmul_(ss[:, 2:5], hh[1:4], value=-1.0)            # [sw x hc, so x hc]
    ang = (Jc[:, 0] * sw[0]).sub_(X[1]).addcmul_(Jc[:, 1], sw[1]).addcmul_(Jc[:, 2], sw[2])   # fresh: in place
    lin = X[0].addcmul_(mc, so)
    F = (*ang.unbind(0), *lin.unbind(0))
    if chain and n * n * B <= _FULL_PRODUCT_ELEMENTS:
        # a chain relates every pair: all products at once (few large ops), then mirror
        # F_i . S_j as six in-place multiply-adds of (n, n, B) planes (no (6, n, n, B) temporary)
        P = F[0].unsqueeze(1) * S[0].unsqueeze(0)                                    # (n, n, B)
        for k in range(1, 6):
            P.addcmul_(F[k].unsqueeze(1), S[k].unsqueeze(0))
        return P.view(n * n, B).index_select(0, _chain_mirror(n, S.device)).view(n, n, B)
    F = torch.cat([ang, lin])
    rows, gather = _ancestor_pairs(anc)
    prods = []
    for i, r in enumerate(rows):
        Sa = S[:, r[0]:r[1]] if isinstance(r, tuple) else S.index_select(1, r)
        prods.append((F[:, i:i + 1] * Sa).sum(0))
    prods.append(S.new_zeros(1, 1).expand(1, B))
    return torch.cat(prods, dim=0).index_select(0, gather).view(n, n, B)


_sym_cache: dict = {}


def _chain_mirror(n: int, device):
    """``(n * n,)``: entry (i, j) of a chain's joint-space matrix -> (max(i, j), min(i, j))."""
    key = ("mirror", n, device)
    idx = _sym_cache.get(key)
    if idx is None:
        idx = _sym_cache[key] = torch.tensor([max(i, j) * n + min(i, j) for i in range(n) for j in range(n)],
                                             device=device)
    return idx


def _d3_index(device):
    """``[0, 1, 2, 0, 1]``: doubles a 3-vector along dim 0 (cyclic shifts become slices)."""
    key = ("d3", device)
    idx = _sym_cache.get(key)
    if idx is None:
        idx = _sym_cache[key] = torch.tensor([0, 1, 2, 0, 1], device=device)
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


def _auto_fd_method(n: int, depth: int) -> str:
    """The forward dynamics method for a tree of n joints and the given depth (see above)."""
    return "composite" if n <= _COMPOSITE_FD_MAX_DOF and 2 * depth >= n else "articulated"


def aba_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False, method: str = "auto"):
    """Forward dynamics batch-last: ``S (6, n, B)``, ``qd, tau (n, B)`` -> ``qdd (n, B)``.

    method: "articulated" (the articulated-body algorithm, as :func:`aba`), "composite"
    (``M qdd = tau - b`` with :func:`crba_bl`'s M, the RNEA bias b and
    :func:`solve_mass_matrix_bl`) or "auto" (composite for small, deep trees).
    """
    if method == "auto":
        method = _auto_fd_method(S.shape[1], len(levels))
    if method == "composite":
        bias = rnea_bl(S, inertials, qd, None, a0, anc, chain)
        return solve_mass_matrix_bl(_mass_matrix_bl(S, inertials, anc, chain), tau - bias)
    if method != "articulated":
        raise ValueError(f"unknown forward dynamics method {method!r}")
    m, c, Ic = inertials
    body_major = (m, c.transpose(0, 1).contiguous(), Ic.permute(2, 0, 1, 3).contiguous())
    return _aba_recursion_bl(S.transpose(0, 1).contiguous(), body_major, qd, tau, a0, anc, levels, level_parents,
                             chain)


def _aba_recursion_bl(S, inertials, qd, tau, a0, anc, levels, level_parents, chain: bool = False):
    """The articulated-body algorithm on body-major tensors: ``S (n, 6, B)``, inertials
    ``(m (n,), c_w (n, 3, B), Ic_w (n, 3, 3, B))``; one vectorised step per depth.

    The articulated inertias are symmetric, so ``I x`` sums the rows of ``I`` (contiguous
    slices) weighted by the components of ``x``; ``S . (I c) = (I S) . c`` saves a product.
    """
    m, c_w, Ic_w = inertials
    I = spatial_inertia_world_bl(m, c_w, Ic_w)
    sqd = S * qd.unsqueeze(1)
    v = _tree_down_bl(anc, sqd, chain)
    vv = _d6(v)
    c = _cross_motion_bl(v, sqd, vv)
    pA = _cross_force_bl(v, _mv6(I, v), vv)
    depth = len(levels)
    sizes = [e - s for s, e in levels]
    S_l, I_l, p_l, c_l, tau_l = S.split(sizes), I.split(sizes), pA.split(sizes), c.split(sizes), tau.split(sizes)
    Sc_l = torch.stack([S, c], dim=1).split(sizes)                         # (k, 2, 6, B) per depth
    no_grad = not (torch.is_grad_enabled() and (I.requires_grad or S.requires_grad))
    acc_I = [None] * depth
    acc_p = [None] * depth
    Uos, qfree = [None] * depth, [None] * depth
    for d in range(depth - 1, -1, -1):
        IA, pa, Sd = I_l[d], p_l[d], S_l[d]
        if acc_I[d] is not None:        # the accumulators are fresh: add in place
            IA = acc_I[d].add_(IA)
            pa = acc_p[d].add_(pa)
        if d == 0:
            U = _mv6(IA, Sd)
            D = (Sd * U).sum(1)
        else:       # IA S and IA c in one pass; S . IA S and S . IA c (= U . c) in another
            UC = _mv6(IA.unsqueeze(1), Sc_l[d])
            U, IAc = UC[:, 0], UC[:, 1]
            DUc = (UC * Sd.unsqueeze(1)).sum(2)
            D, Uc = DUc[:, 0], DUc[:, 1]
        Dinv = 1.0 / D
        qf = (tau_l[d] - (Sd * pa).sum(1)) * Dinv
        Uo = U * Dinv.unsqueeze(1)
        Uos[d], qfree[d] = Uo, qf
        if d == 0:
            break
        if no_grad and acc_I[d] is not None:    # IA is a fresh accumulator; without autograd, update it in place
            Ia = IA.addcmul_(Uo.unsqueeze(2), U.unsqueeze(1), value=-1.0)
        else:
            Ia = torch.addcmul(IA, Uo.unsqueeze(2), U.unsqueeze(1), value=-1.0)
        # pa + Ia c + U qf = pa + IA c + U (qf - (U . c) / D)
        pa_out = (pa + IAc).addcmul_(U, torch.addcmul(qf, Uc, Dinv, value=-1.0).unsqueeze(1))
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
