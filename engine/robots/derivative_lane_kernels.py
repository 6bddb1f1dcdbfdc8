"""The full derivative matrices of RNEA and ABA (modes RNEA and ABA of
:func:`engine.robots.derivative_kernels.derivatives_kernel`) with the samples in SIMD lanes.

The math is :mod:`engine.robots.derivative_kernels`' (see its docstring: the world-frame
recursions of Carpentier and Mansard 2018, composites, row terms ``U, W, Y, Z``, the (dof,
ancestor) pairs, a free flyer's base columns; ABA: ``M = L^T D L`` along the tree, the
accelerations, the acceleration-only pass, the solve of ``[DQ | DV | 1]``). Here the batch runs
in blocks of ``LANES`` samples, each per-sample array of that kernel gaining a last axis of lanes
(``Sw (nv, 6, lanes)``, composites ``K (n + 1, NK, lanes)``, ...), and every step loops over the
lanes innermost (:mod:`engine.robots.lane_terms`), which LLVM turns into AVX-512 instructions on
eight samples at once: the joints' types, parents, motion subspaces and tree transforms are the
same in every lane, so the lanes never diverge. The loops' trip count is the block's sample
count, read at run time (a last, partial block runs in fewer lanes); the arrays' lane axis is a
constant of each compiled body (LANES, or 1 for batches under MIN_LANES: :func:`rnea_one`,
:func:`aba_one`), so LLVM knows their row strides: with run-time strides every row of every
array is a pointer of its own for the vectoriser's overlap checks, and it refused the large
loops ("too many memory checks").

The matrices are built lane-major (``(rows, columns, lanes)``: contiguous stores in the lane
loops) and copied out per sample; RNEA's scratch is in the user's order, and only the entries of
the tree's (dof, ancestor) pairs and the base's rows and columns are ever written (the same in
every block: the rest stays zero from the allocation). ABA's factorisation, accelerations and
acceleration-only pass run in lanes (:mod:`engine.robots.lane_solve_kernels`), its row solve per
sample on a copy of its lane (:func:`engine.robots.tree_solve_kernels._tree_solve`, vectorised
along the rows already). The joint angles' sines and cosines are Cephes' (vectorised:
:func:`engine.robots.lane_spatial._sin_1mcos_l`, within 2 ulp of libm's), in the one-lane build too,
so a sample's numbers do not depend on the batch size. Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots.compiled_kernels import _inline, _jit
from engine.robots.lane_ball_terms import _ball_motion, _ball_phi, _ball_turn, _ball_upper, _joint_bodies
from engine.robots.lane_ltdl import _orders
from engine.robots.lane_solve_kernels import _ltdl_lanes, _ltdl_solve_lanes
from engine.robots.lane_spatial import _sin_1mcos_l
from engine.robots.lane_terms import (
    KF,
    KH,
    KI,
    KM,
    NB,
    NK,
    _add_rows,
    _base_columns,
    _body_terms,
    _cross_force_t,
    _cross_lanes,
    _dot6_t,
    _ic_t,
    _ld3o,
    _ld6,
    _ld6o,
    _motion,
    _pair,
    _pose,
    _row_terms,
    _st6,
)
from engine.robots.tree_solve_kernels import _chain_solve, _tree_lists, _tree_solve

LANES = 32      # samples per block (see results/benchmarks/derivatives.md for the choice)
MIN_LANES = 8   # smaller batches run one sample at a time (rnea_one, aba_one)


@_jit
def rnea_lanes(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, O1, O2, O3, tau, joints, L):
    """Mode RNEA of :func:`engine.robots.derivative_kernels.derivatives_kernel` in blocks of ``L``
    lanes (at most LANES)."""
    _lane_derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, armature, floating, False,
                      O1, O2, O3, tau, joints, L, LANES)


@_jit
def aba_lanes(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, O1, O2, O3, tau, joints,
              L):
    """Mode ABA of :func:`engine.robots.derivative_kernels.derivatives_kernel` in blocks of ``L``
    lanes (at most LANES)."""
    _lane_derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, True,
                      O1, O2, O3, tau, joints, L, LANES)


@_jit
def rnea_one(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, O1, O2, O3, tau, joints):
    """:func:`rnea_lanes` compiled for one lane (one sample at a time): small batches, where the
    LANES-wide scratch would cost more to allocate than the samples to compute."""
    _lane_derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, armature, floating, False,
                      O1, O2, O3, tau, joints, 1, 1)


@_jit
def aba_one(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, O1, O2, O3, tau, joints):
    """:func:`aba_lanes` compiled for one lane (see :func:`rnea_one`)."""
    _lane_derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, True,
                      O1, O2, O3, tau, joints, 1, 1)


@_inline
def _base_state(L, a0, qT, vT, aT, solve, ab, v0, a_0):
    """A free flyer's lanes: gravity in the base's frame ``ab``, its velocity ``v0`` and
    acceleration ``a_0`` (``(6, L)``, spatial ``[angular; linear]``), from the block's
    configuration ``qT (nq, L)`` and velocities ``vT``, accelerations ``aT (nv, L)`` (``[linear;
    angular]``; none when ``solve``)."""
    for l in range(L):
        x, y, z, w = qT[3, l], qT[4, l], qT[5, l], qT[6, l]
        R = (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
             2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
             2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))
        for i in range(3):
            g0 = R[i] * a0[0] + R[3 + i] * a0[1] + R[6 + i] * a0[2]
            g1 = R[i] * a0[3] + R[3 + i] * a0[4] + R[6 + i] * a0[5]
            ab[i, l] = g0
            ab[3 + i, l] = g1
            v0[i, l] = vT[3 + i, l]
            v0[3 + i, l] = vT[i, l]
            a_0[i, l] = g0 + (0.0 if solve else aT[3 + i, l])
            a_0[3 + i, l] = g1 + (0.0 if solve else aT[i, l])


@_inline
def _acceleration_pass(L, n, fv, parent, jf, jp, user, iden, x, Sw, U, Kb, K, a2, P2, F2, Y2, DQ):
    """DQ ``(nv, nv.., L)`` += the part of dtau/dq linear in the accelerations ``x (nv, L)``
    (internal order; DQ's rows internal, its columns the user's): accelerations ``a2`` without
    gravity or velocity, ``P2 = a2_jp x S`` (``jp`` the body above the joint), forces ``F2 = sum
    I a2``, ``Y2 = S x* F2 + IC P2`` (the composites ``K`` of the first pass, the bodies' own
    ``Kb``; ``jf``: within one ball no ``S x* F2``, :func:`engine.robots.lane_ball_terms._ball_upper`)."""
    for i in range(6):
        for l in range(L):
            a2[0, i, l] = 0.0
    for col in range(fv):
        for i in range(6):
            for l in range(L):
                a2[0, i, l] += Sw[col, i, l] * x[col, l]
    for k in range(1, n + 1):
        d = fv + k - 1
        j = parent[k]
        _cross_lanes(L, a2[jp[k]], Sw[d], P2[d], False)
        for i in range(6):
            for l in range(L):
                a2[k, i, l] = a2[j, i, l] + Sw[d, i, l] * x[d, l]
        Bk, ak, Fk = Kb[k], a2[k], F2[k]
        for l in range(L):
            _st6(Fk, l, _ic_t(Bk[KM, l], _ld3o(Bk, KH, l), _ld6o(Bk, KI, l), _ld6(ak, l)))
    for k in range(n, 0, -1):
        d = fv + k - 1
        ud = user[d]
        Kk, Pd_, Fk, Sd, Yd = K[k], P2[d], F2[k], Sw[d], Y2[d]
        for l in range(L):
            y = _ic_t(Kk[KM, l], _ld3o(Kk, KH, l), _ld6o(Kk, KI, l), _ld6(Pd_, l))
            f = _cross_force_t(_ld6(Sd, l), _ld6(Fk, l))
            _st6(Yd, l, (y[0] + f[0], y[1] + f[1], y[2] + f[2], y[3] + f[3], y[4] + f[4], y[5] + f[5]))
        i = k
        while i != 0:
            e = fv + i - 1
            ue = user[e]
            Ud, Pe, Se = U[d], P2[e], Sw[e]
            for l in range(L):
                DQ[d, ue, l] += _dot6_t(_ld6(Ud, l), _ld6(Pe, l))
            if e != d:
                for l in range(L):
                    DQ[e, ud, l] += _dot6_t(_ld6(Se, l), _ld6(Yd, l))
            i = parent[i]
        if jf[k] != k:
            _ball_upper(L, k, d, ud, fv, parent, jf, iden, Sw, Fk, 0, DQ)
        for e in range(fv):     # the base's columns S_e: unit vectors
            for l in range(L):
                DQ[e, ud, l] += Yd[(e + 3) % 6, l]
        j = parent[k]
        if j != 0:
            _add_rows(L, F2[j], Fk)


@_inline
def _lane_derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, solve,
                      O1, O2, O3, tau, joints, L, width):
    """The body of :func:`rnea_lanes` (``solve`` False) and :func:`aba_lanes` (True); arguments
    as :func:`engine.robots.derivative_kernels.derivatives_kernel`'s, ``L`` the lanes per block,
    ``width`` the scratch arrays' lane axis (a constant in each compiled body: LLVM then knows
    the arrays' row strides)."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    nv = n + fv
    nq = q.shape[1]
    Lc = max(1, min(L, B, width))     # lanes per block
    qT = np.zeros((nq, width))
    vT = np.zeros((nv, width))
    aT = np.zeros((nv, width))
    qk = np.zeros(width)
    zero = np.zeros(width)
    sn = np.zeros(width)
    c1 = np.zeros(width)
    T = np.zeros((12, width))
    Rw = np.zeros((n + 1, 3, 3, width))
    pw = np.zeros((n + 1, 3, width))
    Sw = np.zeros((nv, 6, width))
    Pd = np.zeros((nv, 6, width))
    Pdd = np.zeros((nv, 6, width))
    Phi = np.zeros((nv, 6, width))
    U = np.zeros((nv, 6, width))
    W = np.zeros((nv, 3, width))
    Y = np.zeros((nv, 6, width))
    Z = np.zeros((nv, 6, width))
    v = np.zeros((n + 1, 6, width))
    a = np.zeros((n + 1, 6, width))
    K = np.zeros((n + 1, NK, width))       # composites (lane_terms: KM, KH, ...), summed in place
    hT = np.zeros((nv, width))              # RNEA's tau (ABA: at zero acceleration), internal order
    ab = np.zeros((6, width))
    GQ = np.zeros((6, width))
    GV = np.zeros((6, width))
    DM = np.zeros((nv, nv, width))          # RNEA: M in the user's order; ABA: internal, then factorised
    user, lam = _orders(parent, perm, floating)     # internal dof -> its user index, its parent dof
    iden = np.arange(nv)
    rmap = iden if solve else user          # rows of DQ and DV
    ov = nv if solve else 0                 # DV's first column
    # RNEA: DQ, DV (nv, nv, L) in the user's order; ABA: X = [DQ | DV] (nv, 2 nv, L), internal rows
    X = np.zeros((nv, 2 * nv if solve else nv, width))
    DQ = X
    DV = X if solve else np.zeros((nv, nv, width))
    # ABA only (sized 1 for RNEA)
    nb = n + 1 if solve else 1
    Kb = np.zeros((nb, NB, width))             # the bodies' own inertia
    x = np.zeros((nv if solve else 1, width))
    F2 = np.zeros((nb, 6, width))
    r_ = np.zeros(width)
    x_ = np.zeros(width)
    Xs = np.zeros((nv, 3 * nv) if solve else (1, 1))   # one sample's [DQ | DV | 1], solved in place
    hi_sub = np.empty(nv, dtype=np.int64)
    rel = np.empty(nv * nv, dtype=np.int64)
    rel_ptr = np.empty(2 * nv + 1, dtype=np.int64)
    _tree_lists(user, lam, hi_sub, rel, rel_ptr)
    jf = np.empty(n + 1, dtype=np.int64)    # body -> its joint's first body (a ball: its first sub-body)
    jp = np.empty(n + 1, dtype=np.int64)    # body -> the body above its joint (psi's v_p, a_p)
    _joint_bodies(parent, joints, jf, jp)
    for l in range(width):
        for i in range(3):
            Rw[0, i, i, l] = 1.0            # the root's frame is the world (a free flyer: the base's)
        for col in range(fv):
            Sw[col, (col + 3) % 6, l] = 1.0  # velocity [linear; angular] -> spatial [angular; linear]
    for b0 in range(0, B, Lc):
        L = min(Lc, B - b0)                 # the lanes of this block (the last one may have fewer)
        for l in range(L):
            b = b0 + l
            for i in range(nq):
                qT[i, l] = q[b, i]
            for i in range(nv):
                vT[i, l] = qd[b, i]
                aT[i, l] = qdd[b, i]
        if floating:    # computed in the base's frame (the root at the origin), gravity rotated into it
            _base_state(L, a0, qT, vT, aT, solve, ab, v[0], a[0])
            for col in range(6):
                _cross_lanes(L, ab, Sw[col], Pdd[col], False)
                _cross_lanes(L, v[0], Sw[col], Phi[col], False)
            _body_terms(L, Rw[0], pw[0], m[0], c[0], Ic[0], v[0], a[0], K[0])
        else:           # (the acceleration pass below reuses a)
            for i in range(6):
                for l in range(L):
                    a[0, i, l] = a0[i]
        for k in range(1, n + 1):
            d = fv + k - 1
            j = parent[k]
            col = fv + perm[k - 1]
            kind = joints[k - 1, 1]
            if kind == 0:
                for l in range(L):
                    qk[l] = qT[fq + joints[k - 1, 0], l]
                _sin_1mcos_l(qk, sn, c1, L)     # Cephes' formulas, vectorised (libm's calls are not)
                _pose(L, C0, C, k - 1, qk, sn, c1, T, Rw[j], pw[j], Rw[k], pw[k])
            else:               # a ball's sub-body: at angle zero, the first turned by the quaternion
                _pose(L, C0, C, k - 1, zero, zero, zero, T, Rw[j], pw[j], Rw[k], pw[k])
                if kind == 1:
                    _ball_turn(L, qT, fq + joints[k - 1, 0], Rw[k])
            _motion(L, Rw[k], pw[k], S[k - 1], vT[col], zero if solve else aT[col], v[j], a[j], Sw[d], Pd[d],
                    Pdd[d], Phi[d], v[k], a[k])
            if jp[k] != j:      # a ball's second or third sub-body: psi from the joint's parent
                _ball_motion(L, Sw[d], vT[col], zero if solve else aT[col], v[jp[k]], a[jp[k]], a[j], Pd[d], Pdd[d],
                             Phi[d], a[k])
            if kind == 3:       # a ball's last sub-body: its child's velocity is known
                _ball_phi(L, k, fv, parent, v[k], Sw, Pd, Phi)
            _body_terms(L, Rw[k], pw[k], m[k], c[k], Ic[k], v[k], a[k], K[k])
            if solve:
                for i in range(NB):
                    for l in range(L):
                        Kb[k, i, l] = K[k, i, l]
        for k in range(n, 0, -1):
            d = fv + k - 1
            ud, rd, md = user[d], rmap[d], rmap[d]
            Kk = K[k]
            _row_terms(L, Kk, Sw[d], Pd[d], Pdd[d], Phi[d], U[d], W[d], Y[d], Z[d])
            arm = 0.0 if solve else armature[k - 1]
            for l in range(L):
                hT[d, l] = _dot6_t(_ld6(Sw[d], l), _ld6o(Kk, KF, l)) + arm * aT[ud, l]
            i = k
            while i != 0:
                e = fv + i - 1
                _pair(L, d, e, rd, rmap[e], ud, user[e], ov, md, rmap[e], Sw, Pd, Pdd, Phi, U, W, Y, Z, DQ, DV, DM)
                i = parent[i]
            if jf[k] != k:      # a ball's 2nd or 3rd sub-body: its joint's rows above without S x* F
                _ball_upper(L, k, d, ud, fv, parent, jf, rmap, Sw, Kk, KF, DQ)
            if floating:
                _base_columns(L, d, rd, ud, md, ov, ab, v[0], U, W, Y, Z, GQ, GV, DQ, DV, DM, True)
            for l in range(L):
                DM[md, md, l] += armature[k - 1]
            j = parent[k]
            if j != 0 or floating:
                _add_rows(L, K[j], Kk)
        for d in range(fv):
            _row_terms(L, K[0], Sw[d], Pd[d], Pdd[d], Phi[d], U[d], W[d], Y[d], Z[d])
            for l in range(L):
                hT[d, l] = _dot6_t(_ld6(Sw[d], l), _ld6o(K[0], KF, l))
        for d in range(fv):
            _base_columns(L, d, d, d, d, ov, ab, v[0], U, W, Y, Z, GQ, GV, DQ, DV, DM, False)
        if not solve:
            for l in range(L):
                b = b0 + l
                for d in range(nv):
                    tau[b, user[d]] = hT[d, l]
                for r in range(nv):
                    for e in range(nv):
                        O1[b, r, e] = DQ[r, e, l]
                    for e in range(nv):
                        O2[b, r, e] = DV[r, e, l]
                    for e in range(nv):
                        O3[b, r, e] = DM[r, e, l]
            continue
        for d in range(nv):
            for l in range(L):
                X[d, nv + user[d], l] += damping[user[d]]
        _ltdl_lanes(L, DM, lam, r_, x_)
        for d in range(nv):                     # qdd = M^-1 (tau - h)
            for l in range(L):
                x[d, l] = aT[user[d], l] - hT[d, l]
        _ltdl_solve_lanes(L, DM, lam, x)
        _acceleration_pass(L, n, fv, parent, jf, jp, user, iden, x, Sw, U, Kb, K, a, Pdd, F2, Y, X)
        for l in range(L):
            b = b0 + l
            for d in range(nv):
                tau[b, user[d]] = x[d, l]
            for d in range(nv):
                for e in range(2 * nv):
                    Xs[d, e] = X[d, e, l]
                for e in range(2 * nv, 3 * nv):
                    Xs[d, e] = 0.0
                Xs[d, 2 * nv + user[d]] = 1.0
            if nv > 12:     # -M^-1 DQ | -M^-1 DV | M^-1; grouped rows pay on longer trees only
                _tree_solve(DM[:, :, l], rel, rel_ptr, hi_sub, Xs)
            else:
                _chain_solve(DM[:, :, l], lam, Xs)
            for d in range(nv):
                ud = user[d]
                for e in range(nv):
                    O1[b, ud, e] = Xs[d, e]
                for e in range(nv):
                    O2[b, ud, e] = Xs[d, nv + e]
                for e in range(nv):
                    O3[b, ud, e] = Xs[d, 2 * nv + e]
