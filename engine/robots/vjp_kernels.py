"""Numba kernels of the vector-Jacobian products of RNEA and ABA: the backward of
``inverse_dynamics`` / ``forward_dynamics`` (:mod:`engine.robots.backends.compiled_autograd`).

Same constants and conventions as :mod:`engine.robots.compiled_kernels` (bodies ``1..n`` in
the internal order, spatial vectors ``[angular; linear]`` in body frames, ``X_k`` the motion
transform from body k's parent ``j``). RNEA is

    v_k = X_k v_j + S_k qd_k,  a_k = X_k a_j + S_k qdd_k + v_k x S_k qd_k,
    f_k = I_k a_k + v_k x* I_k v_k,  F_k = f_k + sum_children X_c^T F_c,  tau_k = S_k . F_k,

and its reverse (adjoint) pass for a cotangent ``g`` is O(n) per sample, without the
``(nv, nv)`` derivative matrices: ``Fb_k = X_k Fb_j + S_k g_k`` (root to leaves: the weights of
the forces), then from the leaves ``ab_k = I_k Fb_k + sum X_c^T ab_c``, ``vb_k = I_k (Fb_k x v_k) -
Fb_k x* I_k v_k + (S_k qd_k) x* ab_k + sum X_c^T vb_c`` and

    g^T dtau/dqdd_k = S_k . ab_k,   g^T dtau/dqd_k = S_k . vb_k + ab_k . (v_k x S_k),
    g^T dtau/dq_k = -S_k . (X_k v_j x* vb_k + X_k a_j x* ab_k + X_k Fb_j x* F_k)

(``d(X_k y)/dq_k = -S_k x X_k y``). A free-flyer base: ``vb_0, ab_0`` are the base's rows
(``[linear; angular]``); the pose enters only through gravity in the base frame ``gb = R^T a0``,
so the tangent configuration row is zero on the position and ``ab_ang x gb_ang + ab_lin x
gb_lin`` on the rotation (``q (+) dq``, Pinocchio's convention). With ``want_pi`` the products
with the regressor, ``g^T Y`` per body, summed over the batch: ``Fb_k^T I_k a_k + (Fb_k x
v_k)^T I_k v_k``, bilinear in the body's ``pi = [m, h, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``.

ABA (``solve``): at ``qdd`` the ABA result, ``lam = M^-1 g`` (``M`` by the composite inertias,
armature on its diagonal, factorised ``L^T D L`` along the tree), then ``-lam^T dtau/dq``,
``-lam^T dtau/dv``, ``lam`` and ``-lam^T Y``.

A differentiable call's forward runs :func:`forward_kernel`, which keeps what the reverse pass
reads: per sample and body the pose ``R_k, p_k`` in the parent, ``v_k``, ``X_k a_j``, ``F_k`` and
``I_k v_k`` (and a floating base's ``gb``); its backward runs :func:`adjoint_kernel`, the reverse
pass alone (``a_k`` rebuilt only for the regressor products; the configuration terms read ``-S_k
. (y x* f) = f . (y x S_k)`` with ``(X_k v_j) x S_k = v_k x S_k``).

Both take the samples in blocks of ``L`` (the kept arrays' last axis, read at run time), one
sample per SIMD lane: every quantity of a block is an array ``(..., L)``, each step one loop over
the lanes (:mod:`engine.robots.lane_spatial`, :mod:`engine.robots.lane_ltdl` for ABA's ``M``),
which LLVM vectorises (AVX-512: eight samples an instruction); the joint constants are shared by
the lanes. The last block holds the remainder ``B - b0 < L`` (its other lanes are not touched). Blocks of
one sample (``L = 1``, which :mod:`engine.robots.compiled_vjp` takes below ``SMALL_BATCH``) run a
second specialisation of the same passes (``_forward_blocks``, ``_adjoint_blocks``, inlined twice),
whose lane loops of one turn compile away: per-sample code, without the vectorised loops'
overhead. The operations and their order are a per-sample pass's, so each sample's results are the same
numbers whatever the batch (but for ``want_pi``'s sums over the batch, summed per lane, then over
the lanes); the joint angles' sines and cosines are Cephes' (:func:`engine.robots.lane_spatial._sin_1mcos_l`,
vectorised), within 2 ulp of the libm values the other kernels use.

Ball joints (``joints``, :func:`engine.robots.compiled_kernels._joint_pose`): the forward poses a
ball's first sub-body by its quaternion and adds the velocity product the chain of three
revolutes misses; the reverse passes are the chain's plus the ball's two differences
(:mod:`engine.robots.lane_ball_vjp`). The configuration gradient comes with respect to every number
of ``q`` (``gcfg``; a scalar joint's is its tangent one). Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots.compiled_kernels import (
    _add_cross_force,
    _force_to_parent,
    _inertia_times,
    _inline,
    _jit,
    _joint_pose,
    _motion_to_child,
    _origin_inertias,
)
from engine.robots.lane_ball_terms import _ball_turn
from engine.robots.lane_ball_vjp import (
    add_rotation_grad,
    ball_adjoint_l,
    ball_bias_at,
    body_acceleration_l,
    quaternion_rotation_grad,
    rotation_quaternion_grad,
)
from engine.robots.lane_ltdl import (
    _chain_offsets,
    _ltdl_packed_l,
    _mass_matrix_l,
    _orders,
    _packed_solve_l,
    mass_matrix_scratch,
)
from engine.robots.lane_spatial import (
    _add_bilinear_parameters_l,
    _cross6,
    _cross_force_l,
    _cross_motion_l,
    _force_to_parent_add_l,
    _inertia_times_l,
    _lane6,
    _local_pose_l,
    _minus_times,
    _motion_to_child_l,
    _root_pose_l,
    _row6,
)
from engine.robots.regressor_kernels import _add_bilinear_parameters


@_inline
def _dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@_inline
def _quaternion_grad(q, b, a0, wl0, wl1, wl2, wa0, wa1, wa2, C, out):
    """out[b, 3:7] = d/d quat of ``w . g_base``, ``g_base = [R^T a0_lin; R^T a0_ang]`` with R(quat) the
    kernels' (Eigen's) formula, off the unit sphere too; ``w = [wl; wa]``: ``sum_ij C_ij dR_ij``,
    ``C_ij = a0_lin,i wl_j + a0_ang,i wa_j`` (``C (3, 3)``: scratch)."""
    wl = (wl0, wl1, wl2)
    wa = (wa0, wa1, wa2)
    for i in range(3):
        for j in range(3):
            C[i, j] = a0[3 + i] * wl[j] + a0[i] * wa[j]
    g4 = rotation_quaternion_grad(q[b, 3], q[b, 4], q[b, 5], q[b, 6], C)
    for i in range(4):
        out[b, 3 + i] = g4[i]


@_jit
def crba_vjp_kernel(parent, C0, C, S, m, c, Ic, perm, q, floating, G, want_pi, gq, gpi, joints):
    """``sum_ij G_ij dM_ij/dq`` with respect to the configuration's numbers, ``gq (B, nq)`` (zero on
    a floating base's: ``M`` does not depend on its pose; a ball's quaternion through its first
    sub-body's transform, :mod:`engine.robots.lane_ball_vjp`) and, with ``want_pi``, ``gpi (n + 1,
    10)`` += ``sum_ij G_ij dM_ij/dpi`` summed over the batch, for ``G (B, nv, nv)`` (user order;
    ``M`` without armature). Column ``j`` of ``M`` is RNEA at zero velocity and gravity with ``qdd =
    e_j``: per column one reverse pass of :func:`adjoint_kernel`'s without its velocity terms, the
    poses computed once per sample and each column's accelerations only on the subtree that moves.
    ``joints``: :func:`forward_kernel`'s."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    nv = n + fv
    Io, h = _origin_inertias(m, c, Ic)
    R = np.zeros((n + 1, 3, 3))
    p = np.zeros((n + 1, 3))
    a = np.zeros((n + 1, 6))
    Xa = np.zeros((n + 1, 6))
    F = np.zeros((n + 1, 6))
    Fb = np.zeros((n + 1, 6))
    ab = np.zeros((n + 1, 6))
    moving = np.zeros(n + 1, dtype=np.bool_)
    t = np.empty(6)
    t2 = np.empty(6)
    x = np.zeros(nv)
    GR = np.zeros((n + 1, 3, 3))        # per ball (its first sub-body): the gradient with respect to R
    Gq = np.empty((3, 3))
    user = np.empty(nv, dtype=np.int64)
    for i in range(fv):
        user[i] = i
    for k in range(1, n + 1):
        user[fv + k - 1] = fv + perm[k - 1]
    for b in range(B):
        for k in range(1, n + 1):
            _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], joints[k - 1, 1], R[k], p[k])
        for d in range(q.shape[1]):
            gq[b, d] = 0.0
        GR[:, :, :] = 0.0
        for col in range(nv):
            jb = 0 if col < fv else col - fv + 1
            uc = user[col]
            for d in range(nv):
                x[d] = G[b, user[d], uc]
            # accelerations of the bodies that move (the subtree of the column's joint), forces
            for i in range(6):
                a[0, i] = 0.0
                F[0, i] = 0.0
            moving[0] = col < fv
            if col < fv:
                a[0, (col + 3) % 6] = 1.0
                _inertia_times(m[0], h[0], Io[0], a[0], F[0])
            for k in range(1, n + 1):
                j = parent[k]
                moving[k] = k == jb or moving[j]
                if moving[k]:
                    _motion_to_child(R[k], p[k], a[j], Xa[k])
                    for i in range(6):
                        a[k, i] = Xa[k, i] + (S[k - 1, i] if k == jb else 0.0)
                    _inertia_times(m[k], h[k], Io[k], a[k], F[k])
                else:
                    for i in range(6):
                        Xa[k, i] = 0.0
                        a[k, i] = 0.0
                        F[k, i] = 0.0
            for k in range(n, 0, -1):
                if parent[k] != 0 or floating:
                    _force_to_parent(R[k], p[k], F[k], F[parent[k]], True)
            # the weights, root to leaves; ab = I Fb
            for i in range(6):
                Fb[0, i] = 0.0
            if floating:
                for i in range(3):
                    Fb[0, i], Fb[0, 3 + i] = x[3 + i], x[i]
                _inertia_times(m[0], h[0], Io[0], Fb[0], ab[0])
            for k in range(1, n + 1):
                _motion_to_child(R[k], p[k], Fb[parent[k]], Fb[k])
                for i in range(6):
                    Fb[k, i] += S[k - 1, i] * x[fv + k - 1]
                _inertia_times(m[k], h[k], Io[k], Fb[k], ab[k])
                if want_pi and moving[k]:
                    _add_bilinear_parameters(Fb[k], a[k], 1.0, gpi[k])
            if want_pi and floating and col < fv:
                _add_bilinear_parameters(Fb[0], a[0], 1.0, gpi[0])
            # leaves to root: dq_k = -S_k . (Xa_k x* ab_k + X_k Fb_j x* F_k)
            for k in range(n, 0, -1):
                d = fv + k - 1
                for i in range(6):
                    t[i] = 0.0
                    t2[i] = Fb[k, i] - S[k - 1, i] * x[d]
                if moving[k]:
                    _add_cross_force(Xa[k], ab[k], t)
                _add_cross_force(t2, F[k], t)
                kind = joints[k - 1, 1]
                j = parent[k]
                if kind == 0:
                    gq[b, fq + joints[k - 1, 0]] -= _dot6(S[k - 1], t)
                elif kind == 1:     # (a_j, ab_k) and (Fb_j, F_k) through R, as (6, 1) lane arrays
                    add_rotation_grad(GR[k], a[j:j + 1].T, ab[k:k + 1].T, p[k:k + 1].T, 0)
                    add_rotation_grad(GR[k], Fb[j:j + 1].T, F[k:k + 1].T, p[k:k + 1].T, 0)
                if j != 0 or floating:
                    _force_to_parent(R[k], p[k], ab[k], ab[j], True)
        for k in range(1, n + 1):
            if joints[k - 1, 1] == 1:       # a ball: its quaternion's numbers
                col = fq + joints[k - 1, 0]
                quaternion_rotation_grad(C0, k, GR[k], 1.0, Gq)
                g4 = rotation_quaternion_grad(q[b, col], q[b, col + 1], q[b, col + 2], q[b, col + 3], Gq)
                for i in range(4):
                    gq[b, col + i] = g4[i]


@_jit
def forward_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, out, H,
                   Rs, ps, vs, Xas, Fs, Ivs, gbs, joints):
    """A differentiable call's forward, keeping what :func:`adjoint_kernel` reads, in blocks of ``L``
    samples (the module docstring; ``nb = ceil(B / L)``): per block the poses ``Rs (nb, n + 1, 3, 3,
    L)``, ``ps (nb, n + 1, 3, L)`` of the bodies in their parents, their velocities ``vs``, their
    parents' accelerations in their frames ``Xas`` (``X_k a_j``; the base's row: its acceleration),
    the transmitted forces ``Fs`` and ``I_k v_k`` ``Ivs`` (each ``(nb, n + 1, 6, L)``; body 0 the
    base, a fixed base's rows: identity, zeros, ``a0``, zero, zero) and a floating base's gravity in
    its frame ``gbs (nb, 6, L)``. Without ``solve``: RNEA at ``qdd`` into ``out (B, nv)``
    (``armature * qdd`` added). With ``solve`` (``qdd`` holds the applied forces): ABA's
    accelerations ``M^-1 (tau - h)`` into ``out``, the ``L^T D L`` factors of ``M`` (armature on its
    diagonal) into ``H (nb, factor_size, L)``, packed (:func:`engine.robots.lane_ltdl._ltdl_packed_l`),
    and the passes at those accelerations. ``joints (n, 2)``: each body's configuration column and
    kind (ball joints, :func:`engine.robots.compiled_kernels._joint_pose`)."""
    if Rs.shape[-1] == 1:       # one sample a block: the lane loops compiled away
        _forward_blocks(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, out, H, Rs, ps,
                        vs, Xas, Fs, Ivs, gbs, joints, True)
    else:
        _forward_blocks(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, out, H, Rs, ps,
                        vs, Xas, Fs, Ivs, gbs, joints, False)


@_inline
def _forward_blocks(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, out, H, Rs, ps,
                    vs, Xas, Fs, Ivs, gbs, joints, single):
    """:func:`forward_kernel`'s passes; ``single``: blocks of one sample (``L = 1``)."""
    B = q.shape[0]
    L = Rs.shape[-1]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    nv = n + fv
    nq = q.shape[1]
    Io, h = _origin_inertias(m, c, Ic)
    user, lam = _orders(parent, perm, floating)
    off = _chain_offsets(lam)
    qT = np.empty((nq, L))
    qdT = np.empty((nv, L))
    acc = np.empty((nv, L))
    s = np.empty(L)
    c1 = np.empty(L)
    zl = np.zeros(L)            # a ball's sub-bodies' angles
    sv = np.empty((6, L))
    a = np.zeros((n + 1, 6, L))
    vc = np.zeros((n + 1, 6, L))
    fc = np.zeros((n + 1, 6, L))
    x = np.empty((nv, L))       # ABA: the rhs tau - h, then M^-1 of it (internal order)
    mms = mass_matrix_scratch(n, L) if solve else mass_matrix_scratch(0, 0)
    for blk in range(Rs.shape[0]):
        b0 = blk * L
        nl = 1 if single else min(L, B - b0)
        R, p, v, Xa, F, Iv, gb = Rs[blk], ps[blk], vs[blk], Xas[blk], Fs[blk], Ivs[blk], gbs[blk]
        for j in range(nq):
            for lane in range(nl):
                qT[j, lane] = q[b0 + lane, j]
        for j in range(nv):
            for lane in range(nl):
                qdT[j, lane] = qd[b0 + lane, j]
                acc[j, lane] = 0.0 if solve else qdd[b0 + lane, j]
        # poses and velocities
        _root_pose_l(qT, floating, a0, R[0], p[0], gb, nl)
        for i in range(6):
            for lane in range(nl):
                if floating:
                    v[0, i, lane] = qdT[(i + 3) % 6, lane]
                else:
                    v[0, i, lane] = 0.0
                    F[0, i, lane] = 0.0
                    Iv[0, i, lane] = 0.0
        for k in range(1, n + 1):
            jk = perm[k - 1]
            kind, col = joints[k - 1, 1], fq + joints[k - 1, 0]
            _local_pose_l(C0, C, k - 1, qT[col] if kind == 0 else zl, s, c1, R[k], p[k], nl)
            if kind == 1:       # a ball's first sub-body: turned by the quaternion
                _ball_turn(nl, qT, col, R[k])
            _motion_to_child_l(R[k], p[k], v[parent[k]], v[k], nl)
            xd = qdT[fv + jk]
            for i in range(6):
                Ski = S[k - 1, i]
                vk = v[k, i]
                for lane in range(nl):
                    vk[lane] += Ski * xd[lane]
        # accelerations and forces: at qdd (RNEA); ABA: at zero (the bias), then at its result
        for rep in range(2 if solve else 1):
            if floating:
                for i in range(6):
                    for lane in range(nl):
                        a[0, i, lane] = gb[i, lane] + acc[(i + 3) % 6, lane]
            else:
                for i in range(6):
                    for lane in range(nl):
                        a[0, i, lane] = a0[i]
            for i in range(6):
                for lane in range(nl):
                    Xa[0, i, lane] = a[0, i, lane]
            for k in range(1, n + 1):
                jk = perm[k - 1]
                _motion_to_child_l(R[k], p[k], a[parent[k]], Xa[k], nl)
                xd = qdT[fv + jk]
                y = acc[fv + jk]
                if rep == 0:        # v x S qd, kept for ABA's second turn
                    for i in range(6):
                        Ski = S[k - 1, i]
                        for lane in range(nl):
                            sv[i, lane] = Ski * xd[lane]
                    _cross_motion_l(v[k], sv, vc[k], nl)
                    if joints[k - 1, 1] == 3:       # a ball's last sub-body: K(w)
                        u = fv + jk
                        for lane in range(nl):
                            ball_bias_at(vc[k], lane, qdT[u - 2, lane], qdT[u - 1, lane], qdT[u, lane])
                for i in range(6):
                    Ski = S[k - 1, i]
                    ak, Xak, vck = a[k, i], Xa[k, i], vc[k, i]
                    for lane in range(nl):
                        ak[lane] = Xak[lane] + Ski * y[lane] + vck[lane]
            for k in range(0 if floating else 1, n + 1):
                if rep == 0:        # v x* I v, kept likewise
                    _inertia_times_l(m[k], h[k], Io[k], v[k], None, None, Iv[k], nl)
                    _cross_force_l(v[k], Iv[k], fc[k], False, nl)
                _inertia_times_l(m[k], h[k], Io[k], a[k], fc[k], None, F[k], nl)
            for k in range(n, 0, -1):
                if parent[k] != 0 or floating:
                    _force_to_parent_add_l(R[k], p[k], F[k], F[parent[k]], nl)
            if solve and rep == 0:      # qdd = M^-1 (tau - h)
                Hb = H[blk]
                _mass_matrix_l(parent, S, m, h, Io, R, p, fv, armature, floating, off, Hb, mms, nl)
                _ltdl_packed_l(Hb, lam, off, c1, nl)     # c1: scratch here
                for k in range(1, n + 1):
                    d = fv + k - 1
                    ud, Fk, xd = user[d], F[k], x[d]
                    Sk = _row6(S, k - 1)
                    for lane in range(nl):
                        xd[lane] = qdd[b0 + lane, ud] - _dot6(Sk, _lane6(Fk, lane))
                for i in range(6 if floating else 0):
                    for lane in range(nl):
                        x[i, lane] = qdd[b0 + lane, i] - F[0, (i + 3) % 6, lane]
                _packed_solve_l(Hb, lam, off, x, nl)
                for d in range(nv):
                    ud, xd, ad = user[d], x[d], acc[user[d]]
                    for lane in range(nl):
                        out[b0 + lane, ud] = xd[lane]
                        ad[lane] = xd[lane]
        if not solve:
            for k in range(1, n + 1):
                u = fv + perm[k - 1]
                Sk, ar = _row6(S, k - 1), armature[k - 1]
                Fk, y = F[k], acc[u]
                for lane in range(nl):
                    out[b0 + lane, u] = _dot6(Sk, _lane6(Fk, lane)) + ar * y[lane]
            if floating:
                for i in range(6):
                    for lane in range(nl):
                        out[b0 + lane, i] = F[0, (i + 3) % 6, lane]


@_jit
def adjoint_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, g, want_pi,
                   H, Rs, ps, vs, Xas, Fs, Ivs, gbs, gq, gv, ga, gpi, gcfg, joints):
    """The products of the module docstring from what :func:`forward_kernel` kept (``qdd``: the
    accelerations its passes are at, user order; the same blocks of ``L`` samples), in the user's
    order: RNEA's ``g^T dtau/dq`` (tangent), ``g^T dtau/dqd``, ``g^T dtau/dqdd`` into ``gq, gv, ga
    (B, nv)`` (``armature``: RNEA's); with ``solve``, ABA's at its result, ``-lam^T dtau/dq``,
    ``-lam^T dtau/dv`` and ``lam = M^-1 g`` (``H``: the packed factors). With ``want_pi`` ``gpi (n +
    1, 10)`` += the regressor products (internal body order, summed over the batch). ``gcfg (B,
    nq)``: the gradient with respect to the configuration's numbers: a scalar joint's the tangent
    one; a floating base's zero on its position and, on its quaternion's four numbers, through
    gravity in the base frame (the only way its pose acts); a ball joint's quaternion
    (:mod:`engine.robots.lane_ball_vjp`, which also gives its tangent rows in ``gq``). ``joints``:
    :func:`forward_kernel`'s."""
    if Rs.shape[-1] == 1:       # one sample a block: the lane loops compiled away
        _adjoint_blocks(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, g, want_pi, H,
                        Rs, ps, vs, Xas, Fs, Ivs, gbs, (gq, gv, ga, gpi, gcfg), joints, True)
    else:
        _adjoint_blocks(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, g, want_pi, H,
                        Rs, ps, vs, Xas, Fs, Ivs, gbs, (gq, gv, ga, gpi, gcfg), joints, False)


@_inline
def _adjoint_blocks(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, g, want_pi, H,
                    Rs, ps, vs, Xas, Fs, Ivs, gbs, outs, joints, single):
    """:func:`adjoint_kernel`'s passes (``outs``: its ``gq, gv, ga, gpi, gcfg``); ``single``: blocks of one
    sample (``L = 1``)."""
    gq, gv, ga, gpi, gcfg = outs
    B = q.shape[0]
    L = Rs.shape[-1]
    n = perm.shape[0]
    fv = 6 if floating else 0
    nv = n + fv
    Io, h = _origin_inertias(m, c, Ic)
    Fb = np.zeros((n + 1, 6, L))
    ab = np.zeros((n + 1, 6, L))
    vb = np.zeros((n + 1, 6, L))
    sv = np.empty((6, L))
    t = np.empty((6, L))
    t2 = np.empty((6, L))
    ak = np.empty((6, L))
    xs = np.empty((nv, L))          # the weights (ABA: lam = M^-1 g), internal order
    oq = np.empty((nv, L))
    ov = np.empty((nv, L))
    oa = np.empty((nv, L))
    pacc = np.zeros((n + 1, 10, L) if want_pi else (0, 10, L))
    C3 = np.empty((3, 3))
    fq = 7 if floating else 0
    balls = False
    for k in range(n):
        balls = balls or joints[k, 1] != 0
    ball_scratch = (np.empty((6, L)), t, t2, np.empty((3, 3)), C3)
    user, lam = _orders(parent, perm, floating)
    off = _chain_offsets(lam)
    sign = -1.0 if solve else 1.0
    for blk in range(Rs.shape[0]):
        b0 = blk * L
        nl = 1 if single else min(L, B - b0)
        R, p, v, Xa, F, Iv, gb = Rs[blk], ps[blk], vs[blk], Xas[blk], Fs[blk], Ivs[blk], gbs[blk]
        for d in range(nv):
            ud = user[d]
            for lane in range(nl):
                xs[d, lane] = g[b0 + lane, ud]
        if solve:
            _packed_solve_l(H[blk], lam, off, xs, nl)
        # ---- the force weights, root to leaves
        for i in range(6):
            for lane in range(nl):
                Fb[0, i, lane] = xs[(i + 3) % 6, lane] if floating else 0.0
        for k in range(0 if floating else 1, n + 1):
            if k > 0:
                _motion_to_child_l(R[k], p[k], Fb[parent[k]], Fb[k], nl)
                xd = xs[fv + k - 1]
                for i in range(6):
                    Ski = S[k - 1, i]
                    Fbk = Fb[k, i]
                    for lane in range(nl):
                        Fbk[lane] += Ski * xd[lane]
            _inertia_times_l(m[k], h[k], Io[k], Fb[k], None, None, ab[k], nl)       # ab = I Fb
            # vb = I (Fb x v) - Fb x* I v
            _cross_force_l(Fb[k], Iv[k], t2, False, nl)
            _cross_motion_l(Fb[k], v[k], sv, nl)
            _inertia_times_l(m[k], h[k], Io[k], sv, None, t2, vb[k], nl)
            if want_pi:         # the body's acceleration a_k = X a_j + S qdd + (X v_j) x S qd (+ K)
                body_acceleration_l(k, S, perm, joints, fv, qd, qdd, b0, v, Xa, t, t2, ak, nl)
                _add_bilinear_parameters_l(Fb[k], ak, sign, pacc[k], nl)
                _add_bilinear_parameters_l(sv, v[k], sign, pacc[k], nl)
        # ---- leaves to root
        for k in range(n, 0, -1):
            d = fv + k - 1
            u = fv + perm[k - 1]
            Sk = _row6(S, k - 1)
            ar = armature[k - 1]
            for i in range(6):
                Ski = Sk[i]
                for lane in range(nl):
                    sv[i, lane] = Ski * qd[b0 + lane, u]
            _cross_force_l(sv, ab[k], vb[k], True, nl)                   # vb += (S qd) x* ab
            vk, Xak, Fbk, Fk, abk, vbk, xd = v[k], Xa[k], Fb[k], F[k], ab[k], vb[k], xs[d]
            oqd, ovd, oad = oq[d], ov[d], oa[d]
            for lane in range(nl):
                # dq: -S . (X v_j x* vb + X a_j x* ab + (Fb_k - S x) x* F_k), by -S . (y x* f) = f . (y x S)
                # and (X v_j) x S = v x S
                xl = xd[lane]
                vS = _cross6(_lane6(vk, lane), Sk)
                abl, vbl = _lane6(abk, lane), _lane6(vbk, lane)
                sq = _dot6(vbl, vS) + _dot6(abl, _cross6(_lane6(Xak, lane), Sk))
                sq += _dot6(_lane6(Fk, lane), _cross6(_minus_times(_lane6(Fbk, lane), Sk, xl), Sk))
                sdv = _dot6(Sk, vbl) + _dot6(abl, vS)
                if solve:
                    oqd[lane], ovd[lane], oad[lane] = -sq, -sdv, xl
                else:
                    oqd[lane], ovd[lane], oad[lane] = sq, sdv, _dot6(Sk, abl) + ar * xl
            j = parent[k]
            if j != 0 or floating:
                _force_to_parent_add_l(R[k], p[k], ab[k], ab[j], nl)
                _force_to_parent_add_l(R[k], p[k], vb[k], vb[j], nl)
        for d in range(fv, nv):
            ud = user[d]
            for lane in range(nl):
                gq[b0 + lane, ud] = oq[d, lane]
                gv[b0 + lane, ud] = ov[d, lane]
                ga[b0 + lane, ud] = oa[d, lane]
        if floating:
            for lane in range(nl):
                b = b0 + lane
                for i in range(3):
                    gq[b, i] = 0.0
                    gv[b, i], gv[b, 3 + i] = sign * vb[0, 3 + i, lane], sign * vb[0, i, lane]
                    if solve:
                        ga[b, i], ga[b, 3 + i] = xs[i, lane], xs[3 + i, lane]
                    else:
                        ga[b, i], ga[b, 3 + i] = ab[0, 3 + i, lane], ab[0, i, lane]
                # rotation: ab_ang x gb_ang + ab_lin x gb_lin
                a0_, a1, a2, a3, a4, a5 = _lane6(ab[0], lane)
                g0, g1, g2, g3, g4, g5 = _lane6(gb, lane)
                gq[b, 3] = sign * (a1 * g2 - a2 * g1 + a4 * g5 - a5 * g4)
                gq[b, 4] = sign * (a2 * g0 - a0_ * g2 + a5 * g3 - a3 * g5)
                gq[b, 5] = sign * (a0_ * g1 - a1 * g0 + a3 * g4 - a4 * g3)
                for i in range(3):
                    gcfg[b, i] = 0.0
                if solve:       # qdd_base + g_base does not depend on g_base
                    _quaternion_grad(q, b, a0, -g[b, 0], -g[b, 1], -g[b, 2], -g[b, 3], -g[b, 4], -g[b, 5], C3, gcfg)
                else:           # dtau/dg_base = dtau/dqdd_base
                    _quaternion_grad(q, b, a0, a3, a4, a5, a0_, a1, a2, C3, gcfg)
        if balls:
            ball_adjoint_l(n, parent, C0, S, perm, joints, fq, fv, q, qd, qdd, b0, sign, R, p, v, Xa, F, Fb, ab, vb,
                           ball_scratch, gq, gv, gcfg, nl)
        for k in range(1, n + 1):       # the scalar joints' configuration gradient: the tangent one
            if joints[k - 1, 1] == 0:
                cq, u = fq + joints[k - 1, 0], fv + perm[k - 1]
                for lane in range(nl):
                    gcfg[b0 + lane, cq] = gq[b0 + lane, u]
    if want_pi:
        for k in range(n + 1):
            for i in range(10):
                for lane in range(L):
                    gpi[k, i] += pacc[k, i, lane]
