"""Rigid-body dynamics after Featherstone (2008) in world-frame spatial vectors, body-major (small batches).

All spatial quantities are expressed in the world frame about the world origin
(``[angular; linear]``), which turns the tree recursions of RNEA and CRBA into products
with the constant ancestor matrix ``A`` (``A[i, j] = 1`` when body ``j`` is body ``i`` or
one of its ancestors): velocities ``v = A (S qd)``, accelerations ``a = A (S qdd + v x S qd)
+ a0``, subtree sums ``F = A^T f``. ABA needs one vectorised step per tree depth.

Shapes are body-major: ``n`` movable bodies (= dof, internal breadth-first order) first,
then ``B`` samples: ``S (n, B, 6)`` the joint motion subspaces, ``I (n, B, 6, 6)`` the world
spatial inertias, joint vectors ``(n, B)``,
``a0 (6,)`` the base acceleration (``[0; -gravity]``). Units: SI (N m, N, rad, m, kg).
The same algorithms on batch-last tensors, used for large batches, are in
:mod:`engine.robots.dynamics_batch_last`; the per-body constants here serve both.
"""

from __future__ import annotations

from typing import cast

import torch

from engine.robots import dynamics_batch_last as dyn_bl
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
        return mass_[:, None, None] * (
            (c_ * c_).sum(-1)[:, None, None] * eye - c_.unsqueeze(-1) * c_.unsqueeze(-2)
        )

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
    return torch.cat(
        [torch.cat([J, hx], -1), torch.cat([hx.transpose(-1, -2), mm * eye.expand_as(J)], -1)], -2
    )


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


def rnea(S, inertials, qd, qdd, a0, anc, chain: bool = False, v0=None, total: bool = False, bias_src=None):
    """Inverse dynamics ``tau (n, B)`` for ``qd, qdd (n, B)`` (None = zero); ``a0 (6,)``, ``(B, 6)`` or None.

    inertials: ``(m (n,), c_w (n, B, 3), Ic_w (n, B, 3, 3))`` from :func:`world_inertia_terms`.
    A moving root (a floating base): ``v0 (B, 6)`` its velocity, ``a0`` its acceleration (gravity
    included); ``total``: also return the sum of the body forces ``(B, 6)`` (world, about the origin).
    """
    m, c_w, Ic_w = inertials
    if qd is None and v0 is None:
        v = None
        acc = S * qdd.unsqueeze(-1) if qdd is not None else None
    else:
        if qd is None:
            v = v0.expand(S.shape)
            acc = S * qdd.unsqueeze(-1) if qdd is not None else None
        else:
            sqd = S * qd.unsqueeze(-1)
            v = tree_down(anc, sqd, chain)
            if v0 is not None:
                v = v + v0
            acc = cross_motion(v if bias_src is None else v.index_select(0, bias_src), sqd)
            if qdd is not None:
                acc = acc + S * qdd.unsqueeze(-1)
    a = tree_down(anc, acc, chain) if acc is not None else None
    if a0 is not None:
        a = a0.expand(S.shape) if a is None else a + a0
    if a is None:
        tau = torch.zeros(S.shape[:-1], dtype=S.dtype, device=S.device)
        return (tau, S.new_zeros(S.shape[1:])) if total else tau
    if v is None:
        f = inertia_times(m, c_w, Ic_w, a.unsqueeze(-2)).squeeze(-2)
    else:
        h = inertia_times(m, c_w, Ic_w, torch.stack([a, v], dim=-2))
        f = h[..., 0, :] + cross_force(v, h[..., 1, :])
    F = tree_up(anc, f, chain)
    tau = (S * F).sum(-1)
    return (tau, f.sum(0)) if total else tau


def crba(S, inertials, anc, anc_strict, chain: bool = False, composite: bool = False):
    """Joint-space inertia matrix ``(B, n, n)`` (internal order), symmetric positive definite.

    Composite rigid bodies in the compact form (mass, first moment ``h``, rotational
    inertia ``J`` about the world origin): 13 numbers per body instead of a 6x6 matrix.
    ``composite``: also return ``F (n, B, 6)``, each composite inertia times its joint's
    motion subspace, and the whole tree's compact inertia ``(B, 13)`` ``[m, h, J row-major]``
    (for a floating base).
    """
    m, c_w, Ic_w = inertials
    n, B = c_w.shape[:2]
    mm = m[:, None, None]
    h = mm * c_w
    eye = torch.eye(3, dtype=c_w.dtype, device=c_w.device)
    J = Ic_w + mm[..., None] * (
        (c_w * c_w).sum(-1)[..., None, None] * eye - c_w.unsqueeze(-1) * c_w.unsqueeze(-2)
    )
    packed = torch.cat([mm.expand(n, B, 1), h, J.reshape(n, B, 9)], dim=-1)
    comp = tree_up(anc, packed, chain)
    mc, hc, Jc = comp[..., :1], comp[..., 1:4], comp[..., 4:].reshape(n, B, 3, 3)
    sw, so = S[..., :3], S[..., 3:]
    F = torch.cat([torch.matmul(Jc, sw.unsqueeze(-1)).squeeze(-1) + torch.linalg.cross(hc, so),
                   mc * so - torch.linalg.cross(hc, sw)], dim=-1)                # (n, B, 6) = Ic_i S_i
    P = torch.matmul(F.transpose(0, 1), S.permute(1, 2, 0))                    # (B, n, n): S_j . Ic_i S_i
    M = P * anc + (P * anc_strict).transpose(-1, -2)
    return (M, F, packed.sum(0)) if composite else M


def aba(
    S,
    I,
    qd,
    tau,
    a0,
    anc,
    levels,
    level_parents,
    chain: bool = False,
    method: str = "auto",
    armature=None,
    root=None,
    bias_src=None,
):
    """Forward dynamics ``qdd (n, B)``; I ``(n, B, 6, 6)`` the world spatial inertias.

    method: "articulated" (the articulated-body algorithm, one step per depth), "composite"
    (``M qdd = tau - b``: composite-rigid-body M, RNEA bias b, a Cholesky solve) or "auto"
    (composite for small, deep trees: a few batched products and one LAPACK solve instead
    of about twenty small ops per depth; see ``_COMPOSITE_FD_MAX_DOF``).
    levels: ``[(start, stop), ...]`` per depth of the bodies (0-based slices of the n
    movable bodies); level_parents: per depth, None when each body's parent is the body at
    the same position of the previous depth (chains), else the parent's position there.
    armature ``(n,)`` or None: rotor inertias added to the joint-space inertia's diagonal.
    root: a floating base, ``(I0 (B, 6, 6), S0 (B, 6, 6), v0 (B, 6), tau0 (B, 6))`` (its world
    inertia, motion subspace, velocity and generalised force; articulated only) -> returns
    ``(qdd, qdd_base (B, 6))``; a0 is then the gravity term alone.
    """
    if method == "auto":
        method = dyn_bl.auto_fd_method(S.shape[0], len(levels))
    if method == "composite":
        return _forward_dynamics_composite(S, I, qd, tau, a0, anc, chain, armature, bias_src)
    if method != "articulated":
        raise ValueError(f"unknown forward dynamics method {method!r}")
    sqd = S * qd.unsqueeze(-1)
    v = tree_down(anc, sqd, chain)
    if root is not None:
        v = v + root[2]
    c = cross_motion(v if bias_src is None else v.index_select(0, bias_src), sqd)
    pA = cross_force(v, (I * v.unsqueeze(-2)).sum(-1))
    depth = len(levels)
    sizes = [e - s for s, e in levels]
    S_l, S_row, I_l, p_l = S.split(sizes), S.unsqueeze(-2).split(sizes), I.split(sizes), pA.split(sizes)
    c_l, c_row, tau_l = c.split(sizes), c.unsqueeze(-2).split(sizes), tau.split(sizes)
    arm_l = [None] * depth if armature is None else armature[:, None].split(sizes)
    acc_I: list[torch.Tensor | None] = [None] * depth
    acc_p: list[torch.Tensor | None] = [None] * depth
    Uos, qfree = [None] * depth, [None] * depth
    # small matrix-vector products as broadcast multiply-and-sum: fewer dispatches than
    # batched matmul at small batches, and no slower at large ones
    for d in range(depth - 1, -1, -1):
        IA, pa, Sd = I_l[d], p_l[d], S_l[d]
        if acc_I[d] is not None:
            IA = IA + acc_I[d]
            pa = pa + acc_p[d]
        U = (IA * S_row[d]).sum(-1)
        D = (Sd * U).sum(-1)
        Dinv = 1.0 / (D if arm_l[d] is None else D + arm_l[d])
        qf = (tau_l[d] - (Sd * pa).sum(-1)) * Dinv
        Uo = U * Dinv.unsqueeze(-1)
        Uos[d], qfree[d] = Uo, qf
        if d == 0 and root is None:
            break
        Ia = torch.addcmul(IA, Uo.unsqueeze(-1), U.unsqueeze(-2), value=-1.0)
        pa_out = torch.addcmul(pa + (Ia * c_row[d]).sum(-1), U, qf.unsqueeze(-1))
        if d == 0:          # the floating base: every body of depth 1 hangs from it
            a0, qdd_base = dyn_bl.root_acceleration(root, Ia.sum(0), pa_out.sum(0), a0)
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
            ap = c_l[0] if a0 is None else c_l[0] + a0
        else:
            lp = level_parents[d]
            ap = (a_prev if lp is None else cast(torch.Tensor, a_prev).index_select(0, lp)) + c_l[d]
        qdd_d = qfree[d] - (Uos[d] * ap).sum(-1)
        a_prev = ap + S_l[d] * qdd_d.unsqueeze(-1)
        parts.append(qdd_d)
    qdd = torch.cat(parts, dim=0) if len(parts) > 1 else parts[0]
    return qdd if root is None else (qdd, qdd_base)


def _forward_dynamics_composite(S, I, qd, tau, a0, anc, chain: bool, armature=None, bias_src=None):
    """``M^-1 (tau - b)`` from 6x6 world inertias ``I (n, B, 6, 6)`` (small batches)."""
    n = S.shape[0]
    sqd = S * qd.unsqueeze(-1)
    v = tree_down(anc, sqd, chain)
    a = tree_down(anc, cross_motion(v if bias_src is None else v.index_select(0, bias_src), sqd), chain)
    if a0 is not None:
        a = a + a0
    # small products as broadcast multiply-and-sum, as in the recursion below (no BLAS calls,
    # which may start threads for tiny matrices)
    h = (I.unsqueeze(2) * torch.stack([a, v], dim=2).unsqueeze(-2)).sum(-1)                 # (n, B, 2, 6)
    f = h[..., 0, :] + cross_force(v, h[..., 1, :])
    bias = (S * tree_up(anc, f, chain)).sum(-1)  # (n, B)
    F = (tree_up(anc, I, chain) * S.unsqueeze(-2)).sum(-1)  # (n, B, 6) = Ic_i S_i
    P = (F.transpose(0, 1).unsqueeze(2) * S.transpose(0, 1).unsqueeze(1)).sum(-1)  # (B, n, n): S_j . Ic_i S_i
    M = P * anc + (P * (anc - torch.eye(n, dtype=anc.dtype, device=anc.device))).transpose(-1, -2)
    if armature is not None:
        M = M + torch.diag(armature)
    # the tree-sparse LTDL of solve_mass_matrix_bl, on a batch-last view: a few tiny ops, where
    # a LAPACK Cholesky may start its threads even for one 7x7 matrix (costly on a busy machine)
    return dyn_bl.solve_mass_matrix_bl(M.permute(1, 2, 0), tau - bias)


def kinetic_energy(S, inertials, qd, anc, chain: bool = False):
    """``0.5 sum_i v_i . I_i v_i`` (J), ``(B,)``."""
    m, c_w, Ic_w = inertials
    v = tree_down(anc, S * qd.unsqueeze(-1), chain)
    return 0.5 * (v * inertia_times(m, c_w, Ic_w, v.unsqueeze(-2)).squeeze(-2)).sum(-1).sum(0)


def potential_energy(m, c_w, gravity):
    """``-sum_i m_i g . c_i`` over the movable bodies (J), ``(B,)``; gravity ``(3,)`` m/s^2."""
    return -((m[:, None, None] * c_w) * gravity).sum(-1).sum(0)
