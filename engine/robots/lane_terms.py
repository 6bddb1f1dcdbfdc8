"""Lane helpers of :mod:`engine.robots.derivative_lane_kernels`: the spatial algebra of
:mod:`engine.robots.derivative_kernels` on many samples at once.

Every per-sample quantity gains a last axis of lanes, one sample per lane: a spatial vector of
a body is ``(6, lanes)``, a rotation ``(3, 3, lanes)``. Each helper loops over the first ``L``
lanes innermost, ``L`` its first argument, a run-time value (a compile-time trip count lets LLVM
unroll the loop before its loop vectoriser sees it, and then nothing vectorises; the arrays' lane
axis may be a constant), and inside the loop loads a lane's inputs into locals, computes on
tuples (the ``_t`` functions, pure arithmetic on scalars) and stores: LLVM vectorises the lane
loop (AVX-512: eight samples per instruction), with run-time checks that the arrays do not
overlap. Per-joint constants (motion subspace, tree transforms, inertias) are the same in every
lane, loaded before the loop. The shapes below name the lane axis ``L``: an array's lane axis
has at least the ``L`` lanes in use.

The composites of a body are packed in one ``(NK, lanes)`` array (one store target per loop, fewer
overlap checks): mass at ``KM``, first moment ``h`` (3) at ``KH``, rotational inertia about the
world origin (6, symmetric ``xx, xy, xz, yy, yz, zz``) at ``KI``, ``Q`` (6, symmetric) at
``KQ``, momentum ``(n, L)`` at ``KN`` and ``KL`` (3 each), force at ``KF`` (6); see
:mod:`engine.robots.derivative_kernels` for their meaning. Importing this module imports numba.
"""

from __future__ import annotations

from engine.robots.compiled_kernels import _inline

KM, KH, KI, KQ, KN, KL, KF, NK = 0, 1, 4, 10, 16, 19, 22, 28
NB = 10     # a body's own inertia: the first NB rows (m, h, I)


@_inline
def _ld3(A, l):
    return A[0, l], A[1, l], A[2, l]


@_inline
def _ld6(A, l):
    return A[0, l], A[1, l], A[2, l], A[3, l], A[4, l], A[5, l]


@_inline
def _ld3o(A, o, l):
    return A[o, l], A[o + 1, l], A[o + 2, l]


@_inline
def _ld6o(A, o, l):
    return A[o, l], A[o + 1, l], A[o + 2, l], A[o + 3, l], A[o + 4, l], A[o + 5, l]


@_inline
def _st3(A, l, x):
    A[0, l], A[1, l], A[2, l] = x[0], x[1], x[2]


@_inline
def _st6(A, l, x):
    A[0, l], A[1, l], A[2, l] = x[0], x[1], x[2]
    A[3, l], A[4, l], A[5, l] = x[3], x[4], x[5]


@_inline
def _st3o(A, o, l, x):
    A[o, l], A[o + 1, l], A[o + 2, l] = x[0], x[1], x[2]


@_inline
def _st6o(A, o, l, x):
    A[o, l], A[o + 1, l], A[o + 2, l] = x[0], x[1], x[2]
    A[o + 3, l], A[o + 4, l], A[o + 5, l] = x[3], x[4], x[5]


@_inline
def _cross_t(x, y):
    """x x y (motion), 6-tuples."""
    return (x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0],
            x[1] * y[5] - x[2] * y[4] + x[4] * y[2] - x[5] * y[1],
            x[2] * y[3] - x[0] * y[5] + x[5] * y[0] - x[3] * y[2],
            x[0] * y[4] - x[1] * y[3] + x[3] * y[1] - x[4] * y[0])


@_inline
def _cross_force_t(x, f):
    """x x* f (force), 6-tuples."""
    w0, w1, w2, u0, u1, u2 = x
    return (w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4], w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5],
            w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3], w1 * f[5] - w2 * f[4], w2 * f[3] - w0 * f[5],
            w0 * f[4] - w1 * f[3])


@_inline
def _add6(x, y):
    return x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5]


@_inline
def _dot6_t(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@_inline
def _dot3_t(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2]


@_inline
def _sym_t(A, x):
    """A x for a symmetric 3x3 ``A = (xx, xy, xz, yy, yz, zz)``."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2], A[1] * x[0] + A[3] * x[1] + A[4] * x[2],
            A[2] * x[0] + A[4] * x[1] + A[5] * x[2])


@_inline
def _ic_t(m, h, I, x):
    """IC x for the composite ``(m, h, I)`` (I symmetric about the world origin)."""
    s = _sym_t(I, (x[0], x[1], x[2]))
    return (s[0] + h[1] * x[5] - h[2] * x[4], s[1] + h[2] * x[3] - h[0] * x[5], s[2] + h[0] * x[4] - h[1] * x[3],
            m * x[3] - (h[1] * x[2] - h[2] * x[1]), m * x[4] - (h[2] * x[0] - h[0] * x[2]),
            m * x[5] - (h[0] * x[1] - h[1] * x[0]))


@_inline
def _bc_t(Q, n, Lm, x):
    """BC x = ``[Q xw + xw x n; 2 xw x L]``."""
    s = _sym_t(Q, (x[0], x[1], x[2]))
    return (s[0] + x[1] * n[2] - x[2] * n[1], s[1] + x[2] * n[0] - x[0] * n[2], s[2] + x[0] * n[1] - x[1] * n[0],
            2.0 * (x[1] * Lm[2] - x[2] * Lm[1]), 2.0 * (x[2] * Lm[0] - x[0] * Lm[2]),
            2.0 * (x[0] * Lm[1] - x[1] * Lm[0]))


@_inline
def _bct_t(Q, n, Lm, s):
    """The angular half of BC^T s = ``Q sw + n x sw + 2 L x su`` (its linear half is 0)."""
    q = _sym_t(Q, (s[0], s[1], s[2]))
    return (q[0] + n[1] * s[2] - n[2] * s[1] + 2.0 * (Lm[1] * s[5] - Lm[2] * s[4]),
            q[1] + n[2] * s[0] - n[0] * s[2] + 2.0 * (Lm[2] * s[3] - Lm[0] * s[5]),
            q[2] + n[0] * s[1] - n[1] * s[0] + 2.0 * (Lm[0] * s[4] - Lm[1] * s[3]))


@_inline
def _rot_sym_t(R, J):
    """R J R^T for R (9-tuple, row-major) and J (9-tuple, symmetric): its 6 entries."""
    t = (J[0] * R[0] + J[1] * R[1] + J[2] * R[2], J[3] * R[0] + J[4] * R[1] + J[5] * R[2],
         J[6] * R[0] + J[7] * R[1] + J[8] * R[2],
         J[0] * R[3] + J[1] * R[4] + J[2] * R[5], J[3] * R[3] + J[4] * R[4] + J[5] * R[5],
         J[6] * R[3] + J[7] * R[4] + J[8] * R[5],
         J[0] * R[6] + J[1] * R[7] + J[2] * R[8], J[3] * R[6] + J[4] * R[7] + J[5] * R[8],
         J[6] * R[6] + J[7] * R[7] + J[8] * R[8])       # t[3 j + k] = (J R^T)[k, j]
    return (R[0] * t[0] + R[1] * t[1] + R[2] * t[2], R[0] * t[3] + R[1] * t[4] + R[2] * t[5],
            R[0] * t[6] + R[1] * t[7] + R[2] * t[8], R[3] * t[3] + R[4] * t[4] + R[5] * t[5],
            R[3] * t[6] + R[4] * t[7] + R[5] * t[8], R[6] * t[6] + R[7] * t[7] + R[8] * t[8])


@_inline
def _q_t(I, h, w, u):
    """``Q = -(T + T^T) - (u h^T + h u^T) + 2 (h . u) 1``, ``T = Io [w]x`` (row i of T: ``Io_i x w``)."""
    t0 = (I[1] * w[2] - I[2] * w[1], I[2] * w[0] - I[0] * w[2], I[0] * w[1] - I[1] * w[0])
    t1 = (I[3] * w[2] - I[4] * w[1], I[4] * w[0] - I[1] * w[2], I[1] * w[1] - I[3] * w[0])
    t2 = (I[4] * w[2] - I[5] * w[1], I[5] * w[0] - I[2] * w[2], I[2] * w[1] - I[4] * w[0])
    hu2 = 2.0 * (h[0] * u[0] + h[1] * u[1] + h[2] * u[2])
    return (-(t0[0] + t0[0]) - (u[0] * h[0] + h[0] * u[0]) + hu2, -(t0[1] + t1[0]) - (u[0] * h[1] + h[0] * u[1]),
            -(t0[2] + t2[0]) - (u[0] * h[2] + h[0] * u[2]), -(t1[1] + t1[1]) - (u[1] * h[1] + h[1] * u[1]) + hu2,
            -(t1[2] + t2[1]) - (u[1] * h[2] + h[1] * u[2]), -(t2[2] + t2[2]) - (u[2] * h[2] + h[2] * u[2]) + hu2)


@_inline
def _body_terms(L, R, p, mk, ck, Ick, v, a, K):
    """Each lane's world terms of one body into its composite slots ``K (NK, L)`` (see the module
    docstring): ``R (3, 3, L)``, ``p (3, L)`` its pose, ``v, a (6, L)`` its velocity and
    acceleration; ``mk``, ``ck (3,)``, ``Ick (3, 3)`` its mass, centre of mass and inertia about it."""
    c0, c1, c2 = ck[0], ck[1], ck[2]
    J = (Ick[0, 0], Ick[0, 1], Ick[0, 2], Ick[1, 0], Ick[1, 1], Ick[1, 2], Ick[2, 0], Ick[2, 1], Ick[2, 2])
    for l in range(L):
        Rt = (R[0, 0, l], R[0, 1, l], R[0, 2, l], R[1, 0, l], R[1, 1, l], R[1, 2, l], R[2, 0, l], R[2, 1, l],
              R[2, 2, l])
        w = _ld3(v, l)
        u = _ld3o(v, 3, l)
        aw = _ld3(a, l)
        au = _ld3o(a, 3, l)
        cw = (Rt[0] * c0 + Rt[1] * c1 + Rt[2] * c2 + p[0, l], Rt[3] * c0 + Rt[4] * c1 + Rt[5] * c2 + p[1, l],
              Rt[6] * c0 + Rt[7] * c1 + Rt[8] * c2 + p[2, l])
        cc = cw[0] * cw[0] + cw[1] * cw[1] + cw[2] * cw[2]
        r = _rot_sym_t(Rt, J)
        I = (r[0] - mk * cw[0] * cw[0] + mk * cc, r[1] - mk * cw[0] * cw[1], r[2] - mk * cw[0] * cw[2],
             r[3] - mk * cw[1] * cw[1] + mk * cc, r[4] - mk * cw[1] * cw[2], r[5] - mk * cw[2] * cw[2] + mk * cc)
        h = (mk * cw[0], mk * cw[1], mk * cw[2])
        sw = _sym_t(I, w)
        n = (sw[0] + h[1] * u[2] - h[2] * u[1], sw[1] + h[2] * u[0] - h[0] * u[2], sw[2] + h[0] * u[1] - h[1] * u[0])
        Lm = (mk * u[0] - (h[1] * w[2] - h[2] * w[1]), mk * u[1] - (h[2] * w[0] - h[0] * w[2]),
              mk * u[2] - (h[0] * w[1] - h[1] * w[0]))
        Q = _q_t(I, h, w, u)
        f = _add6(_ic_t(mk, h, I, (aw[0], aw[1], aw[2], au[0], au[1], au[2])),
                  _cross_force_t((w[0], w[1], w[2], u[0], u[1], u[2]), (n[0], n[1], n[2], Lm[0], Lm[1], Lm[2])))
        K[KM, l] = mk
        _st3o(K, KH, l, h)
        _st6o(K, KI, l, I)
        _st6o(K, KQ, l, Q)
        _st3o(K, KN, l, n)
        _st3o(K, KL, l, Lm)
        _st6o(K, KF, l, f)


@_inline
def _row_terms(L, K, s_, pd_, pdd_, phi_, U, W, Y, Z):
    """The composite terms of one dof over the subtree with composites ``K (NK, L)``, its ``S,
    psi, psi2, Phi (6, L)``: ``U = IC S``, ``W = (BC^T S)_angular`` ``(3, L)``, ``Y = S x* F + IC
    psi2 + BC psi``, ``Z = IC Phi + BC S``."""
    for l in range(L):
        m = K[KM, l]
        h = _ld3o(K, KH, l)
        I = _ld6o(K, KI, l)
        Q = _ld6o(K, KQ, l)
        n = _ld3o(K, KN, l)
        Lm = _ld3o(K, KL, l)
        F = _ld6o(K, KF, l)
        s = _ld6(s_, l)
        pd = _ld6(pd_, l)
        pdd = _ld6(pdd_, l)
        phi = _ld6(phi_, l)
        _st6(U, l, _ic_t(m, h, I, s))
        _st3(W, l, _bct_t(Q, n, Lm, s))
        _st6(Y, l, _add6(_add6(_ic_t(m, h, I, pdd), _bc_t(Q, n, Lm, pd)), _cross_force_t(s, F)))
        _st6(Z, l, _add6(_ic_t(m, h, I, phi), _bc_t(Q, n, Lm, s)))


@_inline
def _add_rows(L, A, B):
    """A += B, ``(r, L)`` each."""
    for i in range(A.shape[0]):
        for l in range(L):
            A[i, l] += B[i, l]


@_inline
def _pose(L, C0, C, k, qk, sn, c1, T, Rj, pj, Rk, pk):
    """Body k+1's world pose ``Rk (3, 3, L)``, ``pk (3, L)`` from its parent's ``Rj``, ``pj`` and
    its joint's positions ``qk (L,)`` (``sn``, ``c1`` their sines and ``1 - cos``; ``T (12, L)``
    scratch: the pose in the parent, ``C0 + sin C_0 + (1 - cos) C_1 + q C_2`` row-major 3x4)."""
    for i in range(12):
        k0, k1, k2, k3 = C0[k, i], C[k, 0, i], C[k, 1, i], C[k, 2, i]
        for l in range(L):
            T[i, l] = k0 + sn[l] * k1 + c1[l] * k2 + qk[l] * k3
    for l in range(L):
        t = (T[0, l], T[1, l], T[2, l], T[3, l], T[4, l], T[5, l], T[6, l], T[7, l], T[8, l], T[9, l], T[10, l],
             T[11, l])
        for r in range(3):
            a0, a1, a2 = Rj[r, 0, l], Rj[r, 1, l], Rj[r, 2, l]
            Rk[r, 0, l] = a0 * t[0] + a1 * t[4] + a2 * t[8]
            Rk[r, 1, l] = a0 * t[1] + a1 * t[5] + a2 * t[9]
            Rk[r, 2, l] = a0 * t[2] + a1 * t[6] + a2 * t[10]
            pk[r, l] = a0 * t[3] + a1 * t[7] + a2 * t[11] + pj[r, l]


@_inline
def _motion(L, R, p, Sk, xd, xdd, vj, aj, Sw, Pd, Pdd, Phi, vk, ak):
    """One joint's world terms from its body's pose ``R (3, 3, L)``, ``p (3, L)``, its motion
    subspace ``Sk (6,)`` (body axes), its velocity and acceleration ``xd, xdd (L,)`` and its
    parent's velocity and acceleration ``vj, aj (6, L)``: ``S``, ``psi = v_p x S``, ``psi2 = a_p
    x S + v_p x psi``, ``Phi = 2 psi`` and the body's ``vk = v_p + S xd``, ``ak = a_p + S xdd +
    psi xd`` ``(6, L)`` each."""
    s0, s1, s2, s3, s4, s5 = Sk[0], Sk[1], Sk[2], Sk[3], Sk[4], Sk[5]
    for l in range(L):
        w = (R[0, 0, l] * s0 + R[0, 1, l] * s1 + R[0, 2, l] * s2, R[1, 0, l] * s0 + R[1, 1, l] * s1
             + R[1, 2, l] * s2, R[2, 0, l] * s0 + R[2, 1, l] * s1 + R[2, 2, l] * s2)
        u = (R[0, 0, l] * s3 + R[0, 1, l] * s4 + R[0, 2, l] * s5, R[1, 0, l] * s3 + R[1, 1, l] * s4
             + R[1, 2, l] * s5, R[2, 0, l] * s3 + R[2, 1, l] * s4 + R[2, 2, l] * s5)
        p0, p1, p2 = p[0, l], p[1, l], p[2, l]
        s = (w[0], w[1], w[2], u[0] + (p1 * w[2] - p2 * w[1]), u[1] + (p2 * w[0] - p0 * w[2]),
             u[2] + (p0 * w[1] - p1 * w[0]))
        v = _ld6(vj, l)
        a = _ld6(aj, l)
        x, y = xd[l], xdd[l]
        pd = _cross_t(v, s)
        pdd = _add6(_cross_t(a, s), _cross_t(v, pd))
        _st6(Sw, l, s)
        _st6(Pd, l, pd)
        _st6(Pdd, l, pdd)
        _st6(Phi, l, (2.0 * pd[0], 2.0 * pd[1], 2.0 * pd[2], 2.0 * pd[3], 2.0 * pd[4], 2.0 * pd[5]))
        _st6(vk, l, (v[0] + s[0] * x, v[1] + s[1] * x, v[2] + s[2] * x, v[3] + s[3] * x, v[4] + s[4] * x,
                     v[5] + s[5] * x))
        _st6(ak, l, (a[0] + s[0] * y + pd[0] * x, a[1] + s[1] * y + pd[1] * x, a[2] + s[2] * y + pd[2] * x,
                     a[3] + s[3] * y + pd[3] * x, a[4] + s[4] * y + pd[4] * x, a[5] + s[5] * y + pd[5] * x))


@_inline
def _cross_lanes(L, x, y, out, force):
    """out = x x y (motion) or, ``force``, x x* y, ``(6, L)`` each."""
    for l in range(L):
        a = _ld6(x, l)
        b = _ld6(y, l)
        _st6(out, l, _cross_force_t(a, b) if force else _cross_t(a, b))


@_inline
def _pair(L, d, e, rd, re, cd, ce, ov, md, me, Sw, Pd, Pdd, Phi, U, W, Y, Z, DQ, DV, DM):
    """Entries (d, e) and (e, d) for dof e an ancestor of (or in the same joint as) dof d, in
    every lane: of ``DQ`` at rows ``rd, re`` and columns ``cd, ce``, of ``DV`` there with the
    columns ``ov`` further on, of ``DM`` at ``md, me`` (``(rows, columns, L)`` each)."""
    Ud, Wd, Se, Pde, Pdde, Phie = U[d], W[d], Sw[e], Pd[e], Pdd[e], Phi[e]
    for l in range(L):
        u = _ld6(Ud, l)
        w = _ld3(Wd, l)
        s = _ld6(Se, l)
        DQ[rd, ce, l] = _dot6_t(u, _ld6(Pdde, l)) + _dot3_t(w, _ld3(Pde, l))
        DV[rd, ov + ce, l] = _dot6_t(u, _ld6(Phie, l)) + _dot3_t(w, s)
        DM[md, me, l] = _dot6_t(u, s)
    if e != d:
        Yd, Zd = Y[d], Z[d]
        for l in range(L):
            s = _ld6(Se, l)
            DQ[re, cd, l] = _dot6_t(s, _ld6(Yd, l))
            DV[re, ov + cd, l] = _dot6_t(s, _ld6(Zd, l))
            DM[me, md, l] = DM[md, me, l]


@_inline
def _base_columns(L, d, rd, ud, md, ov, ab, v0, U, W, Y, Z, GQ, GV, DQ, DV, DM, cols):
    """Row ``d``'s entries in the base's columns ``S_e`` in every lane (unit vectors in the base's
    frame, ``psi_e = 0``, ``psi2_e = a_b x S_e``, ``dS_e/dt = v_0 x S_e``: ``U . (x x S_e) = -(x x*
    U)_r``, ``r`` the spatial index of ``S_e``), at row ``rd`` of DQ and DV, ``md`` of DM; where
    ``cols`` (d not a base dof) also column ``d``'s entries in the base's rows (column ``ud``,
    ``md``). ``GQ, GV (6, L)`` scratch."""
    _cross_lanes(L, ab, U[d], GQ, True)
    _cross_lanes(L, v0, U[d], GV, True)
    for e in range(6):
        r = (e + 3) % 6
        for l in range(L):
            DM[md, e, l] = U[d, r, l]
            DQ[rd, e, l] = -GQ[r, l]
        if e >= 3:
            for l in range(L):
                DV[rd, ov + e, l] = -GV[r, l] + W[d, r, l]
        else:
            for l in range(L):
                DV[rd, ov + e, l] = -GV[r, l]
        if cols:
            for l in range(L):
                DM[e, md, l] = U[d, r, l]
                DQ[e, ud, l] = Y[d, r, l]
                DV[e, ov + ud, l] = Z[d, r, l]
