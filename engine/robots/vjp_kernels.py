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
. (y x* f) = f . (y x S_k)`` with ``(X_k v_j) x S_k = v_k x S_k``). The passes are written out in
the two kernels, not as inlined helpers: numba's inlining of such multi-array helpers cost 30 to
40 % more time per sample. Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots.compiled_kernels import (
    _add_cross_force,
    _add_cross_motion,
    _composite_to_parent,
    _force_to_parent,
    _gravity_in_base,
    _inertia_times,
    _inline,
    _jit,
    _local_pose,
    _motion_to_child,
    _origin_inertias,
    _quaternion_rotation,
)
from engine.robots.lane_spatial import (
    _add_bilinear_parameters_l,
    _cross_force_l,
    _cross_motion_l,
    _force_to_parent_add_l,
    _inertia_times_l,
    _local_pose_l,
    _motion_to_child_l,
    _root_pose_l,
)
from engine.robots.regressor_kernels import _add_bilinear_parameters


@_inline
def _dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@_inline
def _mass_matrix(parent, S, m, h, Io, R, p, n, fv, armature, floating, cm, ch, cI, hr, RI, Fc, Rw, pw, Sw, Mb, off,
                 P):
    """The joint-space inertia ``M`` (internal order) of the poses ``R, p``, packed into ``P``
    (:func:`_chain_offsets`: the diagonal, then each dof's entries along its ancestors), by the
    composite inertias (CRBA, Featherstone 2008 table 6.2), in the root body's frame (a floating
    base's): each body's pose ``Rw, pw`` and joint axis ``Sw`` there first, then the composite
    inertias ``cm, ch, cI`` there, so that an entry along a chain is one dot product ``Sw_i . I_k
    Sw_k`` instead of carrying the force up the chain (Pinocchio's CRBA works in a common frame
    likewise). ``Rw (n + 1, 3, 3)``, ``pw (n + 1, 3)``, ``Sw (n + 1, 6)``, ``Mb (6, 6)``: scratch."""
    for i in range(3):
        pw[0, i] = 0.0
        for j in range(3):
            Rw[0, i, j] = 1.0 if i == j else 0.0
    for k in range(n + 1):
        cm[k] = 0.0
        for i in range(3):
            ch[k, i] = 0.0
            for j in range(3):
                cI[k, i, j] = 0.0
    for k in range(1, n + 1):
        j = parent[k]
        for r in range(3):
            pw[k, r] = pw[j, r] + Rw[j, r, 0] * p[k, 0] + Rw[j, r, 1] * p[k, 1] + Rw[j, r, 2] * p[k, 2]
            for c in range(3):
                Rw[k, r, c] = Rw[j, r, 0] * R[k, 0, c] + Rw[j, r, 1] * R[k, 1, c] + Rw[j, r, 2] * R[k, 2, c]
        Sk = S[k - 1]
        for r in range(3):      # [R s_w; R s_u + p x R s_w]
            Sw[k, r] = Rw[k, r, 0] * Sk[0] + Rw[k, r, 1] * Sk[1] + Rw[k, r, 2] * Sk[2]
            Sw[k, 3 + r] = Rw[k, r, 0] * Sk[3] + Rw[k, r, 1] * Sk[4] + Rw[k, r, 2] * Sk[5]
        Sw[k, 3] += pw[k, 1] * Sw[k, 2] - pw[k, 2] * Sw[k, 1]
        Sw[k, 4] += pw[k, 2] * Sw[k, 0] - pw[k, 0] * Sw[k, 2]
        Sw[k, 5] += pw[k, 0] * Sw[k, 1] - pw[k, 1] * Sw[k, 0]
    for k in range(n, -1 if floating else 0, -1):      # composites, leaves to root
        cm[k] = _composite_to_parent(Rw[k], pw[k], m[k], h[k], Io[k], cm[k], ch[k], cI[k], hr, RI)
        j = parent[k]
        if k > 0 and (j != 0 or floating):
            cm[j] += cm[k]
            for i in range(3):
                ch[j, i] += ch[k, i]
                for c in range(3):
                    cI[j, i, c] += cI[k, i, c]
    for k in range(n, 0, -1):
        d = fv + k - 1
        _inertia_times(cm[k], ch[k], cI[k], Sw[k], Fc)
        P[d] = _dot6(Sw[k], Fc) + armature[k - 1]
        r = off[d]
        i = parent[k]
        while i != 0:
            P[r] = _dot6(Sw[i], Fc)
            r += 1
            i = parent[i]
        if floating:        # the base dofs 5, ..., 0 ([linear; angular])
            for c in range(5, -1, -1):
                P[r] = Fc[(c + 3) % 6]
                r += 1
    if floating:        # the base block [[m 1, -[h]x], [[h]x, Io]]
        m0, h0 = cm[0], ch[0]
        for i in range(3):
            for j in range(3):
                Mb[i, j] = m0 if i == j else 0.0
                Mb[3 + i, 3 + j] = cI[0, i, j]
            Mb[3 + i, i] = 0.0
        Mb[4, 0], Mb[5, 0], Mb[3, 1] = h0[2], -h0[1], -h0[2]
        Mb[5, 1], Mb[3, 2], Mb[4, 2] = h0[0], h0[1], -h0[0]
        for i in range(6):
            P[i] = Mb[i, i]
            for j in range(i - 1, -1, -1):
                P[off[i] + i - 1 - j] = Mb[i, j]


@_inline
def _quaternion_grad(q, b, a0, wl0, wl1, wl2, wa0, wa1, wa2, C, out):
    """out[b] = d/d quat of ``w . g_base``, ``g_base = [R^T a0_lin; R^T a0_ang]`` with R(quat) the
    kernels' (Eigen's) formula, off the unit sphere too; ``w = [wl; wa]``: ``sum_ij C_ij dR_ij``,
    ``C_ij = a0_lin,i wl_j + a0_ang,i wa_j`` (``C (3, 3)``: scratch)."""
    x, y, z, w = q[b, 3], q[b, 4], q[b, 5], q[b, 6]
    wl = (wl0, wl1, wl2)
    wa = (wa0, wa1, wa2)
    for i in range(3):
        for j in range(3):
            C[i, j] = a0[3 + i] * wl[j] + a0[i] * wa[j]
    out[b, 0] = (2.0 * (y * (C[0, 1] + C[1, 0]) + z * (C[0, 2] + C[2, 0]) + w * (C[2, 1] - C[1, 2]))
                 - 4.0 * x * (C[1, 1] + C[2, 2]))
    out[b, 1] = (2.0 * (x * (C[0, 1] + C[1, 0]) + w * (C[0, 2] - C[2, 0]) + z * (C[1, 2] + C[2, 1]))
                 - 4.0 * y * (C[0, 0] + C[2, 2]))
    out[b, 2] = (2.0 * (w * (C[1, 0] - C[0, 1]) + x * (C[0, 2] + C[2, 0]) + y * (C[1, 2] + C[2, 1]))
                 - 4.0 * z * (C[0, 0] + C[1, 1]))
    out[b, 3] = 2.0 * (z * (C[1, 0] - C[0, 1]) + y * (C[0, 2] - C[2, 0]) + x * (C[2, 1] - C[1, 2]))


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
    """``off (nv + 1,)``: where the packed factors (:func:`_ltdl_packed`) keep dof ``i``'s entries
    along its ancestor chain, ``off[i]:off[i + 1]``; ``off[nv]`` their whole size."""
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
    """The length of one sample's packed ``L^T D L`` factors (:func:`forward_kernel`'s ``H`` rows)."""
    return _chain_offsets(_orders(parent, perm, floating)[1])[-1]


@_inline
def _ltdl_packed(P, lam, off):
    """Factorise ``M = L^T D L`` in place in its packed layout (:func:`_mass_matrix`): the same
    operations in the same order as :func:`engine.robots.tree_solve_kernels._ltdl` (Featherstone
    2008, table 6.3) on the dense matrix, but a dof's update of an ancestor's row is one
    contiguous loop (an ancestor's chain is the tail of its descendant's)."""
    for k in range(lam.shape[0] - 1, -1, -1):
        bk = off[k]
        m = off[k + 1] - bk
        dk = P[k]
        i = lam[k]
        t = 0
        while i != -1:
            x = P[bk + t] / dk
            P[i] -= x * P[bk + t]
            bi = off[i]
            for s in range(m - t - 1):
                P[bi + s] -= x * P[bk + t + 1 + s]
            P[bk + t] = x
            i = lam[i]
            t += 1


@_inline
def _packed_solve(L, lam, off, x):
    """x = M^-1 x in place, ``L`` the packed factors of ``M`` (:func:`_ltdl_packed`; the same
    operations as :func:`engine.robots.tree_solve_kernels._ltdl_solve` on contiguous memory)."""
    nv = x.shape[0]
    for i in range(nv - 1, -1, -1):
        r = off[i]
        j = lam[i]
        xi = x[i]
        while j != -1:
            x[j] -= L[r] * xi
            r += 1
            j = lam[j]
    for i in range(nv):
        x[i] /= L[i]
    for i in range(nv):
        r = off[i]
        j = lam[i]
        s = x[i]
        while j != -1:
            s -= L[r] * x[j]
            r += 1
            j = lam[j]
        x[i] = s


@_jit
def forward_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, out, H,
                   Rs, ps, vs, Xas, Fs, Ivs, gbs):
    """A differentiable call's forward, keeping what :func:`adjoint_kernel` reads: per sample the
    poses ``Rs (B, n + 1, 3, 3)``, ``ps (B, n + 1, 3)`` of the bodies in their parents, their
    velocities ``vs``, their parents' accelerations in their frames ``Xas`` (``X_k a_j``; the base's
    row: its acceleration), the transmitted forces ``Fs`` and ``I_k v_k`` ``Ivs`` (each ``(B, n + 1,
    6)``; body 0 the base, a fixed base's rows: identity, zeros, ``a0``, zero, zero) and a floating
    base's gravity in its frame ``gbs (B, 6)``. Without ``solve``: RNEA at ``qdd`` into ``out (B,
    nv)`` (``armature * qdd`` added). With ``solve`` (``qdd`` holds the applied forces): ABA's
    accelerations ``M^-1 (tau - h)`` into ``out``, the ``L^T D L`` factors of ``M`` (armature on its
    diagonal) into ``H (B, factor_size)``, packed (:func:`_ltdl_packed`: a sample's solve then
    reads one contiguous row), and the passes at those accelerations."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    nv = n + fv
    Io, h = _origin_inertias(m, c, Ic)
    sv = np.empty(6)
    t = np.empty(6)
    x = np.zeros(nv)
    user, lam = _orders(parent, perm, floating)
    off = _chain_offsets(lam)
    Mb = np.zeros((6, 6))
    a = np.zeros((n + 1, 6))
    vc = np.zeros((n + 1, 6))
    fc = np.zeros((n + 1, 6))
    cm = np.zeros(n + 1)
    ch = np.zeros((n + 1, 3))
    cI = np.zeros((n + 1, 3, 3))
    hr = np.empty(3)
    RI = np.empty((3, 3))
    Rw = np.zeros((n + 1, 3, 3))
    pw = np.zeros((n + 1, 3))
    Sw = np.zeros((n + 1, 6))
    for b in range(B):
        R, p, v, Xa, F, Iv, gb = Rs[b], ps[b], vs[b], Xas[b], Fs[b], Ivs[b], gbs[b]
        # poses and velocities
        for i in range(3):
            p[0, i] = 0.0
            for j in range(3):
                R[0, i, j] = 1.0 if i == j else 0.0
        if floating:
            _quaternion_rotation(q, b, R[0])
            _gravity_in_base(R[0], a0, gb)
            for i in range(3):
                v[0, i], v[0, 3 + i] = qd[b, 3 + i], qd[b, i]
        else:
            for i in range(6):
                v[0, i] = 0.0
                gb[i] = 0.0
                F[0, i] = 0.0
                Iv[0, i] = 0.0
        for k in range(1, n + 1):
            jk = perm[k - 1]
            _local_pose(C0, C, k - 1, q[b, fq + jk], R[k], p[k])
            _motion_to_child(R[k], p[k], v[parent[k]], v[k])
            xd = qd[b, fv + jk]
            for i in range(6):
                v[k, i] += S[k - 1, i] * xd
        # accelerations and forces: at qdd (RNEA); ABA: at zero (the bias), then at its result
        for rep in range(2 if solve else 1):
            acc = qdd if not solve else out
            zero = solve and rep == 0
            if floating:
                for i in range(3):
                    a[0, i] = gb[i] + (0.0 if zero else acc[b, 3 + i])
                    a[0, 3 + i] = gb[3 + i] + (0.0 if zero else acc[b, i])
            else:
                for i in range(6):
                    a[0, i] = a0[i]
            for i in range(6):
                Xa[0, i] = a[0, i]
            for k in range(1, n + 1):
                jk = perm[k - 1]
                _motion_to_child(R[k], p[k], a[parent[k]], Xa[k])
                xd = qd[b, fv + jk]
                y = 0.0 if zero else acc[b, fv + jk]
                if rep == 0:        # v x S qd, kept for ABA's second turn
                    for i in range(6):
                        sv[i] = S[k - 1, i] * xd
                        vc[k, i] = 0.0
                    _add_cross_motion(v[k], sv, vc[k])
                for i in range(6):
                    a[k, i] = Xa[k, i] + S[k - 1, i] * y + vc[k, i]
            for k in range(0 if floating else 1, n + 1):
                _inertia_times(m[k], h[k], Io[k], a[k], F[k])
                if rep == 0:        # v x* I v, kept likewise
                    _inertia_times(m[k], h[k], Io[k], v[k], Iv[k])
                    for i in range(6):
                        fc[k, i] = 0.0
                    _add_cross_force(v[k], Iv[k], fc[k])
                for i in range(6):
                    F[k, i] += fc[k, i]
            for k in range(n, 0, -1):
                if parent[k] != 0 or floating:
                    _force_to_parent(R[k], p[k], F[k], F[parent[k]], True)
            if zero:        # qdd = M^-1 (tau - h) into out[b]
                _mass_matrix(parent, S, m, h, Io, R, p, n, fv, armature, floating, cm, ch, cI, hr, RI, t, Rw, pw, Sw,
                             Mb, off, H[b])
                _ltdl_packed(H[b], lam, off)
                for k in range(1, n + 1):
                    d = fv + k - 1
                    x[d] = qdd[b, user[d]] - _dot6(S[k - 1], F[k])
                for i in range(3 if floating else 0):
                    x[i], x[3 + i] = qdd[b, i] - F[0, 3 + i], qdd[b, 3 + i] - F[0, i]
                _packed_solve(H[b], lam, off, x)
                for d in range(nv):
                    out[b, user[d]] = x[d]
        if not solve:
            for k in range(1, n + 1):
                u = fv + perm[k - 1]
                out[b, u] = _dot6(S[k - 1], F[k]) + armature[k - 1] * qdd[b, u]
            if floating:
                for i in range(3):
                    out[b, i], out[b, 3 + i] = F[0, 3 + i], F[0, i]


@_jit
def adjoint_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, g, want_pi,
                   H, Rs, ps, vs, Xas, Fs, Ivs, gbs, gq, gv, ga, gpi, gquat):
    """The products of the module docstring from what :func:`forward_kernel` kept (``qdd``: the
    accelerations its passes are at, user order), in the user's order: RNEA's ``g^T dtau/dq``
    (tangent), ``g^T dtau/dqd``, ``g^T dtau/dqdd`` into ``gq, gv, ga (B, nv)`` (``armature``:
    RNEA's); with ``solve``, ABA's at its result, ``-lam^T dtau/dq``, ``-lam^T dtau/dv`` and ``lam
    = M^-1 g`` (``H``: the packed factors). With ``want_pi`` ``gpi (n + 1, 10)`` += the regressor
    products (internal body order, summed over the batch). A floating base: ``gquat (B, 4)`` the
    gradient with respect to the quaternion's four numbers (it acts only through gravity in the
    base frame)."""
    B = q.shape[0]
    n = perm.shape[0]
    fv = 6 if floating else 0
    nv = n + fv
    Io, h = _origin_inertias(m, c, Ic)
    Fb = np.zeros((n + 1, 6))
    ab = np.zeros((n + 1, 6))
    vb = np.zeros((n + 1, 6))
    sv = np.empty(6)
    t = np.empty(6)
    t2 = np.empty(6)
    vS = np.empty(6)
    ak = np.empty(6)
    C3 = np.empty((3, 3))
    x = np.zeros(nv)
    user, lam = _orders(parent, perm, floating)
    off = _chain_offsets(lam)
    sign = -1.0 if solve else 1.0
    for b in range(B):
        R, p, v, Xa, F, Iv, gb = Rs[b], ps[b], vs[b], Xas[b], Fs[b], Ivs[b], gbs[b]
        for d in range(nv):
            x[d] = g[b, user[d]]
        if solve:
            _packed_solve(H[b], lam, off, x)
        # ---- the force weights, root to leaves
        for i in range(6):
            Fb[0, i] = 0.0
        if floating:
            for i in range(3):
                Fb[0, i], Fb[0, 3 + i] = x[3 + i], x[i]
        for k in range(0 if floating else 1, n + 1):
            if k > 0:
                _motion_to_child(R[k], p[k], Fb[parent[k]], Fb[k])
                d = fv + k - 1
                for i in range(6):
                    Fb[k, i] += S[k - 1, i] * x[d]
            _inertia_times(m[k], h[k], Io[k], Fb[k], ab[k])             # ab = I Fb
            # vb = I (Fb x v) - Fb x* I v
            for i in range(6):
                sv[i] = 0.0
                t2[i] = 0.0
            _add_cross_force(Fb[k], Iv[k], t2)
            _add_cross_motion(Fb[k], v[k], sv)
            _inertia_times(m[k], h[k], Io[k], sv, vb[k])
            for i in range(6):
                vb[k, i] -= t2[i]
            if want_pi:         # the body's acceleration a_k = X a_j + S qdd + (X v_j) x S qd
                for i in range(6):
                    ak[i] = Xa[k, i]
                if k > 0:
                    u = fv + perm[k - 1]
                    for i in range(6):
                        t[i] = S[k - 1, i] * qd[b, u]
                        t2[i] = v[k, i] - t[i]
                        ak[i] += S[k - 1, i] * qdd[b, u]
                    _add_cross_motion(t2, t, ak)
                _add_bilinear_parameters(Fb[k], ak, sign, gpi[k])
                _add_bilinear_parameters(sv, v[k], sign, gpi[k])
        # ---- leaves to root
        for k in range(n, 0, -1):
            d = fv + k - 1
            u = fv + perm[k - 1]
            xd = qd[b, u]
            Sk = S[k - 1]
            for i in range(6):
                sv[i] = Sk[i] * xd
                vS[i] = 0.0
                t[i] = 0.0
                t2[i] = Fb[k, i] - Sk[i] * x[d]
            _add_cross_force(sv, ab[k], vb[k])                          # vb += (S qd) x* ab
            # dq: -S . (X v_j x* vb + X a_j x* ab + (Fb_k - S x) x* F_k), by -S . (y x* f) = f . (y x S)
            # and (X v_j) x S = v x S
            _add_cross_motion(v[k], Sk, vS)
            _add_cross_motion(Xa[k], Sk, t)
            sq = _dot6(vb[k], vS) + _dot6(ab[k], t)
            for i in range(6):
                t[i] = 0.0
            _add_cross_motion(t2, Sk, t)
            sq += _dot6(F[k], t)
            sa = _dot6(Sk, ab[k]) + armature[k - 1] * x[d]
            sdv = _dot6(Sk, vb[k]) + _dot6(ab[k], vS)
            if solve:
                gq[b, u], gv[b, u], ga[b, u] = -sq, -sdv, x[d]
            else:
                gq[b, u], gv[b, u], ga[b, u] = sq, sdv, sa
            j = parent[k]
            if j != 0 or floating:
                _force_to_parent(R[k], p[k], ab[k], ab[j], True)
                _force_to_parent(R[k], p[k], vb[k], vb[j], True)
        if floating:
            for i in range(3):
                gq[b, i] = 0.0
                gv[b, i], gv[b, 3 + i] = sign * vb[0, 3 + i], sign * vb[0, i]
                if solve:
                    ga[b, i], ga[b, 3 + i] = x[i], x[3 + i]
                else:
                    ga[b, i], ga[b, 3 + i] = ab[0, 3 + i], ab[0, i]
            # rotation: ab_ang x gb_ang + ab_lin x gb_lin
            gq[b, 3] = sign * (ab[0, 1] * gb[2] - ab[0, 2] * gb[1] + ab[0, 4] * gb[5] - ab[0, 5] * gb[4])
            gq[b, 4] = sign * (ab[0, 2] * gb[0] - ab[0, 0] * gb[2] + ab[0, 5] * gb[3] - ab[0, 3] * gb[5])
            gq[b, 5] = sign * (ab[0, 0] * gb[1] - ab[0, 1] * gb[0] + ab[0, 3] * gb[4] - ab[0, 4] * gb[3])
            if solve:       # qdd_base + g_base does not depend on g_base
                _quaternion_grad(q, b, a0, -g[b, 0], -g[b, 1], -g[b, 2], -g[b, 3], -g[b, 4], -g[b, 5], C3, gquat)
            else:           # dtau/dg_base = dtau/dqdd_base
                _quaternion_grad(q, b, a0, ab[0, 3], ab[0, 4], ab[0, 5], ab[0, 0], ab[0, 1], ab[0, 2], C3, gquat)


@_jit
def crba_vjp_kernel(parent, C0, C, S, m, c, Ic, perm, q, floating, G, want_pi, gq, gpi):
    """``sum_ij G_ij dM_ij/dq`` (tangent, ``gq (B, nv)``; zero on a floating base's rows: ``M``
    does not depend on its pose) and, with ``want_pi``, ``gpi (n + 1, 10)`` += ``sum_ij G_ij
    dM_ij/dpi`` summed over the batch, for ``G (B, nv, nv)`` (user order; ``M`` without armature).
    Column ``j`` of ``M`` is RNEA at zero velocity and gravity with ``qdd = e_j``: per column one
    reverse pass of :func:`vjp_kernel`'s without its velocity terms, the poses computed once per
    sample and each column's accelerations only on the subtree that moves."""
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
    user = np.empty(nv, dtype=np.int64)
    for i in range(fv):
        user[i] = i
    for k in range(1, n + 1):
        user[fv + k - 1] = fv + perm[k - 1]
    for b in range(B):
        for k in range(1, n + 1):
            _local_pose(C0, C, k - 1, q[b, fq + perm[k - 1]], R[k], p[k])
        for d in range(nv):
            gq[b, d] = 0.0
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
                gq[b, user[d]] -= _dot6(S[k - 1], t)
                j = parent[k]
                if j != 0 or floating:
                    _force_to_parent(R[k], p[k], ab[k], ab[j], True)


@_jit
def forward_lanes(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, out, H,
                  Rs, ps, vs, Xas, Fs, Ivs, gbs):
    """forward_kernel with samples in lanes (see lane_spatial): kept arrays (nblk, ..., L)."""
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
    sv = np.empty((6, L))
    a = np.zeros((n + 1, 6, L))
    vc = np.zeros((n + 1, 6, L))
    fc = np.zeros((n + 1, 6, L))
    # one sample's scratch for ABA's M^-1 (its poses copied out of the lanes)
    x = np.zeros(nv)
    t = np.empty(6)
    Mb = np.zeros((6, 6))
    cm = np.zeros(n + 1)
    ch = np.zeros((n + 1, 3))
    cI = np.zeros((n + 1, 3, 3))
    hr = np.empty(3)
    RI = np.empty((3, 3))
    Rw = np.zeros((n + 1, 3, 3))
    pw = np.zeros((n + 1, 3))
    Sw = np.zeros((n + 1, 6))
    R1 = np.zeros((n + 1, 3, 3))
    p1 = np.zeros((n + 1, 3))
    for blk in range(Rs.shape[0]):
        b0 = blk * L
        nl = min(L, B - b0)
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
            _local_pose_l(C0, C, k - 1, qT[fq + jk], s, c1, R[k], p[k], nl)
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
            if solve and rep == 0:      # qdd = M^-1 (tau - h), one sample at a time
                for lane in range(nl):
                    b = b0 + lane
                    for k in range(1, n + 1):
                        for i in range(3):
                            p1[k, i] = p[k, i, lane]
                            for j in range(3):
                                R1[k, i, j] = R[k, i, j, lane]
                    _mass_matrix(parent, S, m, h, Io, R1, p1, n, fv, armature, floating, cm, ch, cI, hr, RI, t, Rw,
                                 pw, Sw, Mb, off, H[b])
                    _ltdl_packed(H[b], lam, off)
                    for k in range(1, n + 1):
                        d = fv + k - 1
                        Fk = F[k]
                        Sk = S[k - 1]
                        x[d] = qdd[b, user[d]] - (Sk[0] * Fk[0, lane] + Sk[1] * Fk[1, lane] + Sk[2] * Fk[2, lane]
                                                  + Sk[3] * Fk[3, lane] + Sk[4] * Fk[4, lane] + Sk[5] * Fk[5, lane])
                    for i in range(3 if floating else 0):
                        x[i], x[3 + i] = qdd[b, i] - F[0, 3 + i, lane], qdd[b, 3 + i] - F[0, i, lane]
                    _packed_solve(H[b], lam, off, x)
                    for d in range(nv):
                        out[b, user[d]] = x[d]
                        acc[user[d], lane] = x[d]
        if not solve:
            for k in range(1, n + 1):
                u = fv + perm[k - 1]
                s0, s1, s2, s3, s4, s5 = S[k - 1, 0], S[k - 1, 1], S[k - 1, 2], S[k - 1, 3], S[k - 1, 4], S[k - 1, 5]
                ar = armature[k - 1]
                Fk, y = F[k], acc[u]
                for lane in range(nl):
                    out[b0 + lane, u] = (s0 * Fk[0, lane] + s1 * Fk[1, lane] + s2 * Fk[2, lane] + s3 * Fk[3, lane]
                                         + s4 * Fk[4, lane] + s5 * Fk[5, lane]) + ar * y[lane]
            if floating:
                for i in range(6):
                    for lane in range(nl):
                        out[b0 + lane, i] = F[0, (i + 3) % 6, lane]


@_jit
def adjoint_lanes(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, solve, g, want_pi,
                  H, Rs, ps, vs, Xas, Fs, Ivs, gbs, gq, gv, ga, gpi, gquat):
    """adjoint_kernel with samples in lanes."""
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
    x = np.zeros(nv)
    user, lam = _orders(parent, perm, floating)
    off = _chain_offsets(lam)
    sign = -1.0 if solve else 1.0
    for blk in range(Rs.shape[0]):
        b0 = blk * L
        nl = min(L, B - b0)
        R, p, v, Xa, F, Iv, gb = Rs[blk], ps[blk], vs[blk], Xas[blk], Fs[blk], Ivs[blk], gbs[blk]
        if solve:
            for lane in range(nl):
                for d in range(nv):
                    x[d] = g[b0 + lane, user[d]]
                _packed_solve(H[b0 + lane], lam, off, x)
                for d in range(nv):
                    xs[d, lane] = x[d]
        else:
            for d in range(nv):
                ud = user[d]
                for lane in range(nl):
                    xs[d, lane] = g[b0 + lane, ud]
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
            if want_pi:         # the body's acceleration a_k = X a_j + S qdd + (X v_j) x S qd
                if k > 0:
                    u = fv + perm[k - 1]
                    for i in range(6):
                        Ski = S[k - 1, i]
                        for lane in range(nl):
                            ti = Ski * qd[b0 + lane, u]
                            t[i, lane] = ti
                            t2[i, lane] = v[k, i, lane] - ti
                            ak[i, lane] = Xa[k, i, lane] + Ski * qdd[b0 + lane, u]
                    _cross_motion_l(t2, t, t, nl)
                    for i in range(6):
                        for lane in range(nl):
                            ak[i, lane] += t[i, lane]
                    _add_bilinear_parameters_l(Fb[k], ak, sign, pacc[k], nl)
                else:
                    _add_bilinear_parameters_l(Fb[k], Xa[k], sign, pacc[k], nl)
                _add_bilinear_parameters_l(sv, v[k], sign, pacc[k], nl)
        # ---- leaves to root
        for k in range(n, 0, -1):
            d = fv + k - 1
            u = fv + perm[k - 1]
            s0, s1, s2, s3, s4, s5 = S[k - 1, 0], S[k - 1, 1], S[k - 1, 2], S[k - 1, 3], S[k - 1, 4], S[k - 1, 5]
            ar = armature[k - 1]
            for i in range(6):
                Ski = S[k - 1, i]
                for lane in range(nl):
                    sv[i, lane] = Ski * qd[b0 + lane, u]
            _cross_force_l(sv, ab[k], vb[k], True, nl)                   # vb += (S qd) x* ab
            vk, Xak, Fbk, Fk, abk, vbk, xd = v[k], Xa[k], Fb[k], F[k], ab[k], vb[k], xs[d]
            oqd, ovd, oad = oq[d], ov[d], oa[d]
            for lane in range(nl):
                # dq: -S . (X v_j x* vb + X a_j x* ab + (Fb_k - S x) x* F_k), by -S . (y x* f) = f . (y x S)
                # and (X v_j) x S = v x S
                w0, w1, w2, u0, u1, u2 = vk[0, lane], vk[1, lane], vk[2, lane], vk[3, lane], vk[4, lane], vk[5, lane]
                vS0, vS1, vS2 = w1 * s2 - w2 * s1, w2 * s0 - w0 * s2, w0 * s1 - w1 * s0
                vS3 = w1 * s5 - w2 * s4 + u1 * s2 - u2 * s1
                vS4 = w2 * s3 - w0 * s5 + u2 * s0 - u0 * s2
                vS5 = w0 * s4 - w1 * s3 + u0 * s1 - u1 * s0
                w0, w1, w2, u0, u1, u2 = Xak[0, lane], Xak[1, lane], Xak[2, lane], Xak[3, lane], Xak[4, lane], Xak[5, lane]
                aS0, aS1, aS2 = w1 * s2 - w2 * s1, w2 * s0 - w0 * s2, w0 * s1 - w1 * s0
                aS3 = w1 * s5 - w2 * s4 + u1 * s2 - u2 * s1
                aS4 = w2 * s3 - w0 * s5 + u2 * s0 - u0 * s2
                aS5 = w0 * s4 - w1 * s3 + u0 * s1 - u1 * s0
                xl = xd[lane]
                w0, w1, w2 = Fbk[0, lane] - s0 * xl, Fbk[1, lane] - s1 * xl, Fbk[2, lane] - s2 * xl
                u0, u1, u2 = Fbk[3, lane] - s3 * xl, Fbk[4, lane] - s4 * xl, Fbk[5, lane] - s5 * xl
                fS0, fS1, fS2 = w1 * s2 - w2 * s1, w2 * s0 - w0 * s2, w0 * s1 - w1 * s0
                fS3 = w1 * s5 - w2 * s4 + u1 * s2 - u2 * s1
                fS4 = w2 * s3 - w0 * s5 + u2 * s0 - u0 * s2
                fS5 = w0 * s4 - w1 * s3 + u0 * s1 - u1 * s0
                b0_, b1, b2, b3, b4, b5 = vbk[0, lane], vbk[1, lane], vbk[2, lane], vbk[3, lane], vbk[4, lane], vbk[5, lane]
                a0_, a1, a2, a3, a4, a5 = abk[0, lane], abk[1, lane], abk[2, lane], abk[3, lane], abk[4, lane], abk[5, lane]
                sq = ((b0_ * vS0 + b1 * vS1 + b2 * vS2 + b3 * vS3 + b4 * vS4 + b5 * vS5)
                      + (a0_ * aS0 + a1 * aS1 + a2 * aS2 + a3 * aS3 + a4 * aS4 + a5 * aS5))
                sq += (Fk[0, lane] * fS0 + Fk[1, lane] * fS1 + Fk[2, lane] * fS2 + Fk[3, lane] * fS3
                       + Fk[4, lane] * fS4 + Fk[5, lane] * fS5)
                sa = (s0 * a0_ + s1 * a1 + s2 * a2 + s3 * a3 + s4 * a4 + s5 * a5) + ar * xl
                sdv = ((s0 * b0_ + s1 * b1 + s2 * b2 + s3 * b3 + s4 * b4 + s5 * b5)
                       + (a0_ * vS0 + a1 * vS1 + a2 * vS2 + a3 * vS3 + a4 * vS4 + a5 * vS5))
                if solve:
                    oqd[lane], ovd[lane], oad[lane] = -sq, -sdv, xl
                else:
                    oqd[lane], ovd[lane], oad[lane] = sq, sdv, sa
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
                a0_, a1, a2, a3, a4, a5 = ab[0, 0, lane], ab[0, 1, lane], ab[0, 2, lane], ab[0, 3, lane], ab[0, 4, lane], \
                    ab[0, 5, lane]
                g0, g1, g2, g3, g4, g5 = gb[0, lane], gb[1, lane], gb[2, lane], gb[3, lane], gb[4, lane], gb[5, lane]
                gq[b, 3] = sign * (a1 * g2 - a2 * g1 + a4 * g5 - a5 * g4)
                gq[b, 4] = sign * (a2 * g0 - a0_ * g2 + a5 * g3 - a3 * g5)
                gq[b, 5] = sign * (a0_ * g1 - a1 * g0 + a3 * g4 - a4 * g3)
                if solve:       # qdd_base + g_base does not depend on g_base
                    _quaternion_grad(q, b, a0, -g[b, 0], -g[b, 1], -g[b, 2], -g[b, 3], -g[b, 4], -g[b, 5], C3, gquat)
                else:           # dtau/dg_base = dtau/dqdd_base
                    _quaternion_grad(q, b, a0, a3, a4, a5, a0_, a1, a2, C3, gquat)
    if want_pi:
        for k in range(n + 1):
            for i in range(10):
                for lane in range(L):
                    gpi[k, i] += pacc[k, i, lane]
