"""The joint-space inertia ``M`` of a block of samples in SIMD lanes (:mod:`engine.robots.lane_spatial`'s
layout: the sample axis last), its ``L^T D L`` factors and solves, packed along the tree, for the
ABA path of :mod:`engine.robots.vjp_kernels`. Internal dof order (a floating base's six first,
``[linear; angular]``); ``lam (nv,)`` each dof's parent dof (-1: none). Importing this module
imports numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots.compiled_kernels import _inline, _jit


@_inline
def _orders(parent, perm, floating):
    """``user (nv,)``: each internal dof's user index; ``lam (nv,)``: its parent dof (-1: none)."""
    n = perm.shape[0]
    fv = 6 if floating else 0
    user = np.empty(n + fv, dtype=np.int64)
    lam = np.empty(n + fv, dtype=np.int64)
    for i in range(fv):
        user[i] = i
        lam[i] = i - 1
    for k in range(1, n + 1):
        user[fv + k - 1] = fv + perm[k - 1]
        lam[fv + k - 1] = (fv - 1) if parent[k] == 0 else fv + parent[k] - 1
    return user, lam


@_inline
def _chain_offsets(lam):
    """``off (nv + 1,)``: where the packed factors (:func:`_ltdl_packed_l`) keep dof ``i``'s entries
    along its ancestor chain, rows ``off[i]:off[i + 1]``; ``off[nv]`` their whole size."""
    nv = lam.shape[0]
    off = np.empty(nv + 1, dtype=np.int64)
    off[0] = nv
    for i in range(nv):
        c = 0
        j = lam[i]
        while j != -1:
            c += 1
            j = lam[j]
        off[i + 1] = off[i] + c
    return off


@_jit
def factor_size(parent, perm, floating):
    """The rows of one block's packed ``L^T D L`` factors (:func:`_ltdl_packed_l`)."""
    return _chain_offsets(_orders(parent, perm, floating)[1])[-1]


@_inline
def _composite_to_parent_l(R, p, mk, hk, Iok, hj, Ioj, hr, RI, nl):
    """Add a rigid inertia (``mk, hk (3,), Iok (3, 3)`` about the child's origin, shared by the
    lanes) to the parent's ``hj (3, L)``, ``Ioj (3, 3, L)`` in the parent's frame, for the poses
    ``R (3, 3, L)``, ``p (3, L)`` of the child (``_composite_to_parent`` of
    :mod:`engine.robots.compiled_kernels` per lane; its mass is the caller's sum). ``hr (3, L)``,
    ``RI (3, 3, L)``: scratch."""
    for i in range(3):
        for lane in range(nl):
            hr[i, lane] = R[i, 0, lane] * hk[0] + R[i, 1, lane] * hk[1] + R[i, 2, lane] * hk[2]
    for i in range(3):
        for j in range(3):
            a0, a1, a2 = Iok[0, j], Iok[1, j], Iok[2, j]
            for lane in range(nl):
                RI[i, j, lane] = R[i, 0, lane] * a0 + R[i, 1, lane] * a1 + R[i, 2, lane] * a2
    for i in range(3):
        for j in range(3):
            for lane in range(nl):
                pi, pj = p[i, lane], p[j, lane]
                x = RI[i, 0, lane] * R[j, 0, lane] + RI[i, 1, lane] * R[j, 1, lane] + RI[i, 2, lane] * R[j, 2, lane]
                x += -mk * pi * pj - pi * hr[j, lane] - hr[i, lane] * pj
                if i == j:
                    p0, p1, p2 = p[0, lane], p[1, lane], p[2, lane]
                    pp = p0 * p0 + p1 * p1 + p2 * p2
                    ph = p0 * hr[0, lane] + p1 * hr[1, lane] + p2 * hr[2, lane]
                    x += mk * pp + 2.0 * ph
                Ioj[i, j, lane] += x
        for lane in range(nl):
            hj[i, lane] += hr[i, lane] + mk * p[i, lane]


@_inline
def _composite_times_l(m, h, Io, x, out, nl):
    """out = I x for ``x (6, L)`` and per-lane inertias ``h (3, L)``, ``Io (3, 3, L)`` (mass ``m``
    shared): ``_inertia_times`` of :mod:`engine.robots.compiled_kernels` per lane."""
    for lane in range(nl):
        w0, w1, w2, u0, u1, u2 = x[0, lane], x[1, lane], x[2, lane], x[3, lane], x[4, lane], x[5, lane]
        h0, h1, h2 = h[0, lane], h[1, lane], h[2, lane]
        out[0, lane] = Io[0, 0, lane] * w0 + Io[0, 1, lane] * w1 + Io[0, 2, lane] * w2 + h1 * u2 - h2 * u1
        out[1, lane] = Io[1, 0, lane] * w0 + Io[1, 1, lane] * w1 + Io[1, 2, lane] * w2 + h2 * u0 - h0 * u2
        out[2, lane] = Io[2, 0, lane] * w0 + Io[2, 1, lane] * w1 + Io[2, 2, lane] * w2 + h0 * u1 - h1 * u0
        out[3, lane] = m * u0 - (h1 * w2 - h2 * w1)
        out[4, lane] = m * u1 - (h2 * w0 - h0 * w2)
        out[5, lane] = m * u2 - (h0 * w1 - h1 * w0)


@_inline
def _dot6_l(x, y, lane):
    return (x[0, lane] * y[0, lane] + x[1, lane] * y[1, lane] + x[2, lane] * y[2, lane] + x[3, lane] * y[3, lane]
            + x[4, lane] * y[4, lane] + x[5, lane] * y[5, lane])


@_inline
def _mass_matrix_l(parent, S, m, h, Io, R, p, fv, armature, floating, off, P, s, nl):
    """The joint-space inertia ``M`` (internal order) of the poses ``R (n + 1, 3, 3, L)``, ``p (n +
    1, 3, L)``, packed into ``P (size, L)`` (the diagonal, then each dof's entries along its
    ancestors, :func:`_chain_offsets`), by the composite inertias (CRBA, Featherstone 2008 table
    6.2), in the root body's frame (a floating base's): each body's pose ``Rw, pw`` and joint axis
    ``Sw`` there first, then the composite inertias ``cm, ch, cI`` there, so that an entry along a
    chain is one dot product ``Sw_i . I_k Sw_k`` (Pinocchio's CRBA works in a common frame
    likewise). ``s``: :func:`mass_matrix_scratch`'s tuple."""
    cm, ch, cI, hr, RI, Fc, Rw, pw, Sw = s
    n = R.shape[0] - 1
    for i in range(3):
        for lane in range(nl):
            pw[0, i, lane] = 0.0
        for j in range(3):
            for lane in range(nl):
                Rw[0, i, j, lane] = 1.0 if i == j else 0.0
    cm[:] = 0.0
    ch[:] = 0.0
    cI[:] = 0.0
    for k in range(1, n + 1):
        j = parent[k]
        Rj, Rk, pk = Rw[j], R[k], p[k]
        for r in range(3):
            for lane in range(nl):
                pw[k, r, lane] = (pw[j, r, lane] + Rj[r, 0, lane] * pk[0, lane] + Rj[r, 1, lane] * pk[1, lane]
                                  + Rj[r, 2, lane] * pk[2, lane])
            for c in range(3):
                for lane in range(nl):
                    Rw[k, r, c, lane] = (Rj[r, 0, lane] * Rk[0, c, lane] + Rj[r, 1, lane] * Rk[1, c, lane]
                                         + Rj[r, 2, lane] * Rk[2, c, lane])
        s0, s1, s2, s3, s4, s5 = S[k - 1, 0], S[k - 1, 1], S[k - 1, 2], S[k - 1, 3], S[k - 1, 4], S[k - 1, 5]
        Rk, pk, Sk = Rw[k], pw[k], Sw[k]
        for lane in range(nl):      # [R s_w; R s_u + p x R s_w]
            w0 = Rk[0, 0, lane] * s0 + Rk[0, 1, lane] * s1 + Rk[0, 2, lane] * s2
            w1 = Rk[1, 0, lane] * s0 + Rk[1, 1, lane] * s1 + Rk[1, 2, lane] * s2
            w2 = Rk[2, 0, lane] * s0 + Rk[2, 1, lane] * s1 + Rk[2, 2, lane] * s2
            u0 = Rk[0, 0, lane] * s3 + Rk[0, 1, lane] * s4 + Rk[0, 2, lane] * s5
            u1 = Rk[1, 0, lane] * s3 + Rk[1, 1, lane] * s4 + Rk[1, 2, lane] * s5
            u2 = Rk[2, 0, lane] * s3 + Rk[2, 1, lane] * s4 + Rk[2, 2, lane] * s5
            p0, p1, p2 = pk[0, lane], pk[1, lane], pk[2, lane]
            Sk[0, lane], Sk[1, lane], Sk[2, lane] = w0, w1, w2
            Sk[3, lane] = u0 + (p1 * w2 - p2 * w1)
            Sk[4, lane] = u1 + (p2 * w0 - p0 * w2)
            Sk[5, lane] = u2 + (p0 * w1 - p1 * w0)
    for k in range(n, -1 if floating else 0, -1):      # composites, leaves to root
        _composite_to_parent_l(Rw[k], pw[k], m[k], h[k], Io[k], ch[k], cI[k], hr, RI, nl)
        cm[k] += m[k]
        j = parent[k]
        if k > 0 and (j != 0 or floating):      # (all the lanes: the unused ones are zero or ignored)
            cm[j] += cm[k]
            chj, chk, cIj, cIk = ch[j].reshape(-1), ch[k].reshape(-1), cI[j].reshape(-1), cI[k].reshape(-1)
            for e in range(chj.shape[0]):
                chj[e] += chk[e]
            for e in range(cIj.shape[0]):
                cIj[e] += cIk[e]
    for k in range(n, 0, -1):
        d = fv + k - 1
        _composite_times_l(cm[k], ch[k], cI[k], Sw[k], Fc, nl)
        Sk, ar = Sw[k], armature[k - 1]
        for lane in range(nl):
            P[d, lane] = _dot6_l(Sk, Fc, lane) + ar
        r = off[d]
        i = parent[k]
        while i != 0:
            Si = Sw[i]
            for lane in range(nl):
                P[r, lane] = _dot6_l(Si, Fc, lane)
            r += 1
            i = parent[i]
        if floating:        # the base dofs 5, ..., 0 ([linear; angular])
            for c in range(5, -1, -1):
                for lane in range(nl):
                    P[r, lane] = Fc[(c + 3) % 6, lane]
                r += 1
    if floating:        # the base block [[m 1, -[h]x], [[h]x, Io]]: its diagonal, then below it
        m0 = cm[0]
        for i in range(3):
            for lane in range(nl):
                P[i, lane] = m0
                P[3 + i, lane] = cI[0, i, i, lane]
        for i in range(1, 6):
            for j in range(i - 1, -1, -1):
                r = off[i] + i - 1 - j
                if i < 3:
                    for lane in range(nl):
                        P[r, lane] = 0.0
                elif j >= 3:
                    for lane in range(nl):
                        P[r, lane] = cI[0, i - 3, j - 3, lane]
                elif i - 3 == j:
                    for lane in range(nl):
                        P[r, lane] = 0.0
                else:       # [h]x: rows 3..5, columns 0..2
                    e = (i - 3) * 3 + j
                    c, sg = (2, 1.0) if e == 3 else (1, -1.0) if e == 6 else (2, -1.0) if e == 1 else \
                        (0, 1.0) if e == 7 else (1, 1.0) if e == 2 else (0, -1.0)
                    for lane in range(nl):
                        P[r, lane] = sg * ch[0, c, lane]


@_inline
def mass_matrix_scratch(n, L):
    """The scratch arrays of :func:`_mass_matrix_l` for ``n`` bodies (the base besides) and ``L`` lanes."""
    return (np.zeros(n + 1), np.zeros((n + 1, 3, L)), np.zeros((n + 1, 3, 3, L)), np.empty((3, L)),
            np.empty((3, 3, L)), np.empty((6, L)), np.zeros((n + 1, 3, 3, L)), np.zeros((n + 1, 3, L)),
            np.zeros((n + 1, 6, L)))


@_inline
def _ltdl_packed_l(P, lam, off, xs, nl):
    """Factorise each lane's ``M = L^T D L`` in place in its packed layout ``P (size, L)``
    (:func:`_mass_matrix_l`): the same operations in the same order as
    :func:`engine.robots.tree_solve_kernels._ltdl` (Featherstone 2008, table 6.3) on the dense
    matrix, a dof's update of an ancestor's row one contiguous loop (an ancestor's chain is the
    tail of its descendant's). ``xs (L,)``: scratch."""
    for k in range(lam.shape[0] - 1, -1, -1):
        bk = off[k]
        m = off[k + 1] - bk
        dk = P[k]
        i = lam[k]
        t = 0
        while i != -1:
            row, Pi = P[bk + t], P[i]
            for lane in range(nl):
                x = row[lane] / dk[lane]
                Pi[lane] -= x * row[lane]
                xs[lane] = x
            bi = off[i]
            for s in range(m - t - 1):
                dst, src = P[bi + s], P[bk + t + 1 + s]
                for lane in range(nl):
                    dst[lane] -= xs[lane] * src[lane]
            for lane in range(nl):
                row[lane] = xs[lane]
            i = lam[i]
            t += 1


@_inline
def _packed_solve_l(Lf, lam, off, x, nl):
    """x = M^-1 x in place for ``x (nv, L)``, ``Lf (size, L)`` the packed factors of each lane's
    ``M`` (:func:`_ltdl_packed_l`; the same operations as
    :func:`engine.robots.tree_solve_kernels._ltdl_solve`)."""
    nv = x.shape[0]
    for i in range(nv - 1, -1, -1):
        r = off[i]
        j = lam[i]
        xi = x[i]
        while j != -1:
            xj, Lr = x[j], Lf[r]
            for lane in range(nl):
                xj[lane] -= Lr[lane] * xi[lane]
            r += 1
            j = lam[j]
    for i in range(nv):
        xi, Li = x[i], Lf[i]
        for lane in range(nl):
            xi[lane] /= Li[lane]
    for i in range(nv):
        r = off[i]
        j = lam[i]
        xi = x[i]
        while j != -1:
            xj, Lr = x[j], Lf[r]
            for lane in range(nl):
                xi[lane] -= Lr[lane] * xj[lane]
            r += 1
            j = lam[j]
