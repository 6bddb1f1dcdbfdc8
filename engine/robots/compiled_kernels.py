"""The numba kernels of :mod:`engine.robots.compiled_dynamics` (see its conventions).

One loop over the samples; inside it the textbook recursions in body frames (Featherstone,
*Rigid Body Dynamics Algorithms*, 2008: RNEA table 5.1, CRBA table 6.2, ABA table 7.1) on
small preallocated arrays. Spatial vectors ``[angular; linear]``; ``X`` the motion transform
from a body's parent to the body (pose ``R, p`` of the body in its parent): ``w' = R^T w``,
``u' = R^T (u + w x p)``; forces go back by ``X^T``: ``f = R f'``, ``n = R n' + p x f``.
Importing this module imports numba.
"""

from __future__ import annotations

import math
from typing import Literal, TypedDict

import numpy as np
from numba import njit

from engine.robots.kernel_cache import can_cache


class _JitOptions(TypedDict):
    cache: bool
    nogil: bool
    error_model: Literal["python", "numpy"]


# cached on disk where numba can (engine.robots.kernel_cache: a frozen app in the user's cache folder)
_OPTIONS: _JitOptions = {"cache": can_cache(), "nogil": True, "error_model": "numpy"}
_jit = njit(**_OPTIONS)
_inline = njit(inline="always", **_OPTIONS)       # the small helpers, inlined into the kernels


@_inline
def _local_pose(C0, C, k, qk, R, p):
    """Pose of body k+1 in its parent for joint position qk: R (3, 3), p (3,) written."""
    s = math.sin(qk)
    c1 = 1.0 - math.cos(qk)
    for r in range(3):
        for col in range(4):
            i = 4 * r + col
            x = C0[k, i] + s * C[k, 0, i] + c1 * C[k, 1, i] + qk * C[k, 2, i]
            if col < 3:
                R[r, col] = x
            else:
                p[r] = x


@_inline
def _joint_pose(C0, C, k, q, b, col, kind, R, p):
    """Pose of body k+1 in its parent (R, p written) from the configuration ``q[b]``: kind 0 a
    scalar joint at column ``col``; a ball joint's sub-bodies (:mod:`engine.robots.ball`): kind 1
    the first, its tree transform turned by the quaternion ``q[b, col:col + 4]`` (x, y, z, w), kinds
    2 and 3 the others (angle zero)."""
    if kind == 0:
        _local_pose(C0, C, k, q[b, col], R, p)
        return
    _local_pose(C0, C, k, 0.0, R, p)
    if kind == 1:
        x, y, z, w = q[b, col], q[b, col + 1], q[b, col + 2], q[b, col + 3]
        r00, r01, r02 = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)
        r10, r11, r12 = 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)
        r20, r21, r22 = 2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)
        for r in range(3):
            a0, a1, a2 = R[r, 0], R[r, 1], R[r, 2]
            R[r, 0] = a0 * r00 + a1 * r10 + a2 * r20
            R[r, 1] = a0 * r01 + a1 * r11 + a2 * r21
            R[r, 2] = a0 * r02 + a1 * r12 + a2 * r22


@_inline
def _add_ball_bias(qd, b, col, out):
    """out += the velocity-product term a ball joint's chain of three revolutes misses, on its last
    sub-body: ``(-wy wz, wx wz, -wx wy)`` angular, ``(wx, wy, wz) = qd[b, col - 2:col + 1]``."""
    wx, wy, wz = qd[b, col - 2], qd[b, col - 1], qd[b, col]
    out[0] -= wy * wz
    out[1] += wx * wz
    out[2] -= wx * wy


@_jit
def _origin_inertias(m, c, Ic):
    """Each body's rotational inertia about its origin ``Io (n+1, 3, 3)`` and first moment ``h = m c``."""
    N = m.shape[0]
    Io = np.empty((N, 3, 3))
    h = np.empty((N, 3))
    for k in range(N):
        cc = c[k, 0] * c[k, 0] + c[k, 1] * c[k, 1] + c[k, 2] * c[k, 2]
        for i in range(3):
            h[k, i] = m[k] * c[k, i]
            for j in range(3):
                Io[k, i, j] = Ic[k, i, j] + m[k] * ((cc if i == j else 0.0) - c[k, i] * c[k, j])
    return Io, h


@_inline
def _motion_to_child(R, p, x, out):
    """out = X x for a motion vector x (6,) of the parent."""
    t0 = x[3] + x[1] * p[2] - x[2] * p[1]
    t1 = x[4] + x[2] * p[0] - x[0] * p[2]
    t2 = x[5] + x[0] * p[1] - x[1] * p[0]
    for i in range(3):
        out[i] = R[0, i] * x[0] + R[1, i] * x[1] + R[2, i] * x[2]
        out[3 + i] = R[0, i] * t0 + R[1, i] * t1 + R[2, i] * t2


@_inline
def _force_to_parent(R, p, f, out, add):
    """out (+)= X^T f for a force f (6,) of the child (out may be f: f is read whole first)."""
    F0 = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    F1 = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    F2 = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    N0 = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2] + p[1] * F2 - p[2] * F1
    N1 = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2] + p[2] * F0 - p[0] * F2
    N2 = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2] + p[0] * F1 - p[1] * F0
    if add:
        out[0] += N0
        out[1] += N1
        out[2] += N2
        out[3] += F0
        out[4] += F1
        out[5] += F2
    else:
        out[0], out[1], out[2], out[3], out[4], out[5] = N0, N1, N2, F0, F1, F2


@_inline
def _inertia_times(m, h, Io, x, out):
    """out = I x: ``[Io w + h x u; m u - h x w]`` for x = ``[w; u]``."""
    w0, w1, w2, u0, u1, u2 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = Io[0, 0] * w0 + Io[0, 1] * w1 + Io[0, 2] * w2 + h[1] * u2 - h[2] * u1
    out[1] = Io[1, 0] * w0 + Io[1, 1] * w1 + Io[1, 2] * w2 + h[2] * u0 - h[0] * u2
    out[2] = Io[2, 0] * w0 + Io[2, 1] * w1 + Io[2, 2] * w2 + h[0] * u1 - h[1] * u0
    out[3] = m * u0 - (h[1] * w2 - h[2] * w1)
    out[4] = m * u1 - (h[2] * w0 - h[0] * w2)
    out[5] = m * u2 - (h[0] * w1 - h[1] * w0)


@_inline
def _add_cross_motion(v, x, out):
    """out += v x x (motion): ``[w x xw; w x xu + u x xw]``."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] += w1 * x[2] - w2 * x[1]
    out[1] += w2 * x[0] - w0 * x[2]
    out[2] += w0 * x[1] - w1 * x[0]
    out[3] += w1 * x[5] - w2 * x[4] + u1 * x[2] - u2 * x[1]
    out[4] += w2 * x[3] - w0 * x[5] + u2 * x[0] - u0 * x[2]
    out[5] += w0 * x[4] - w1 * x[3] + u0 * x[1] - u1 * x[0]


@_inline
def _add_cross_force(v, f, out):
    """out += v x* f (force): ``[w x n + u x f; w x f]``."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] += w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4]
    out[1] += w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5]
    out[2] += w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3]
    out[3] += w1 * f[5] - w2 * f[4]
    out[4] += w2 * f[3] - w0 * f[5]
    out[5] += w0 * f[4] - w1 * f[3]


@_inline
def _quaternion_rotation(pose, b, R):
    """R (3, 3) of the unit quaternion ``pose[b, 3:7]`` (x, y, z, w)."""
    x, y, z, w = pose[b, 3], pose[b, 4], pose[b, 5], pose[b, 6]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[2, 1] = 2.0 * (y * z + x * w)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@_inline
def _gravity_in_base(R0, a0, out):
    """out = the world's acceleration a0 (6,) in the base's axes (R0^T per half)."""
    for i in range(3):
        out[i] = R0[0, i] * a0[0] + R0[1, i] * a0[1] + R0[2, i] * a0[2]
        out[3 + i] = R0[0, i] * a0[3] + R0[1, i] * a0[4] + R0[2, i] * a0[5]


@_jit
def rnea_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, out, joints):
    """Inverse dynamics, see :func:`engine.robots.compiled_dynamics.rnea` (joints ``(n, 2)``: each
    body's configuration column and kind, :func:`_joint_pose`)."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    has_qd, has_qdd = qd.shape[0] > 0, qdd.shape[0] > 0
    Io, h = _origin_inertias(m, c, Ic)
    R = np.zeros((n + 1, 3, 3))
    p = np.zeros((n + 1, 3))
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    f = np.zeros((n + 1, 6))
    sv = np.empty(6)
    t = np.empty(6)
    g = np.empty(6)
    for b in range(B):
        if floating:
            _quaternion_rotation(q, b, R[0])
            _gravity_in_base(R[0], a0, g)
            for i in range(3):
                v[0, i], v[0, 3 + i] = (qd[b, 3 + i], qd[b, i]) if has_qd else (0.0, 0.0)
                a[0, i], a[0, 3 + i] = g[i], g[3 + i]
                if has_qdd:
                    a[0, i] += qdd[b, 3 + i]
                    a[0, 3 + i] += qdd[b, i]
        else:
            for i in range(6):
                v[0, i] = 0.0
                a[0, i] = a0[i]
        for k in range(1, n + 1):
            jk = perm[k - 1]
            kind = joints[k - 1, 1]
            _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], kind, R[k], p[k])
            j = parent[k]
            _motion_to_child(R[k], p[k], v[j], v[k])
            _motion_to_child(R[k], p[k], a[j], a[k])
            x = qd[b, fv + jk] if has_qd else 0.0
            y = qdd[b, fv + jk] if has_qdd else 0.0
            for i in range(6):
                sv[i] = S[k - 1, i] * x
                v[k, i] += sv[i]
                a[k, i] += S[k - 1, i] * y
            _add_cross_motion(v[k], sv, a[k])
            if kind == 3 and has_qd:
                _add_ball_bias(qd, b, fv + jk, a[k])
        for k in range(0 if floating else 1, n + 1):
            _inertia_times(m[k], h[k], Io[k], a[k], f[k])
            _inertia_times(m[k], h[k], Io[k], v[k], t)
            _add_cross_force(v[k], t, f[k])
        for k in range(n, 0, -1):
            s = 0.0
            for i in range(6):
                s += S[k - 1, i] * f[k, i]
            jk = perm[k - 1]
            out[b, fv + jk] = s + (armature[k - 1] * qdd[b, fv + jk] if has_qdd else 0.0)
            if parent[k] != 0 or floating:
                _force_to_parent(R[k], p[k], f[k], f[parent[k]], True)
        if floating:
            for i in range(3):
                out[b, i], out[b, 3 + i] = f[0, 3 + i], f[0, i]


@_inline
def _composite_to_parent(R, p, mk, hk, Iok, mj, hj, Ioj, hr, RI):
    """Add a rigid inertia (m, h, Io about the child's origin) to the parent's, in the parent's
    frame; returns the parent's new mass (hr (3,), RI (3, 3): scratch)."""
    for i in range(3):
        hr[i] = R[i, 0] * hk[0] + R[i, 1] * hk[1] + R[i, 2] * hk[2]
    for i in range(3):
        for j in range(3):
            RI[i, j] = R[i, 0] * Iok[0, j] + R[i, 1] * Iok[1, j] + R[i, 2] * Iok[2, j]
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    ph = p[0] * hr[0] + p[1] * hr[1] + p[2] * hr[2]
    for i in range(3):
        for j in range(3):
            x = RI[i, 0] * R[j, 0] + RI[i, 1] * R[j, 1] + RI[i, 2] * R[j, 2]
            x += -mk * p[i] * p[j] - p[i] * hr[j] - hr[i] * p[j]
            if i == j:
                x += mk * pp + 2.0 * ph
            Ioj[i, j] += x
        hj[i] += hr[i] + mk * p[i]
    return mj + mk


@_jit
def crba_kernel(parent, C0, C, S, m, c, Ic, perm, q, armature, floating, M, joints):
    """Mass matrix, see :func:`engine.robots.compiled_dynamics.crba`."""
    B = q.shape[0]
    n = perm.shape[0]
    fq = 7 if floating else 0
    Io, h = _origin_inertias(m, c, Ic)
    R = np.zeros((n + 1, 3, 3))
    p = np.zeros((n + 1, 3))
    cm = np.empty(n + 1)
    ch = np.empty((n + 1, 3))
    cI = np.empty((n + 1, 3, 3))
    F = np.empty(6)
    G = np.empty(6)
    hr = np.empty(3)
    RI = np.empty((3, 3))
    off = 6 if floating else 0
    for b in range(B):
        for k in range(1, n + 1):
            _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], joints[k - 1, 1], R[k], p[k])
        cm[:] = m
        ch[:] = h
        cI[:] = Io
        for k in range(n, 0, -1):
            j = parent[k]
            if j != 0 or floating:
                cm[j] = _composite_to_parent(R[k], p[k], cm[k], ch[k], cI[k], cm[j], ch[j], cI[j], hr, RI)
        M[b] = 0.0
        for k in range(1, n + 1):
            _inertia_times(cm[k], ch[k], cI[k], S[k - 1], F)
            s = 0.0
            for i in range(6):
                s += S[k - 1, i] * F[i]
            ik = off + perm[k - 1]
            M[b, ik, ik] = s + armature[k - 1]
            j = k
            while parent[j] != 0:
                _force_to_parent(R[j], p[j], F, F, False)     # in place: it reads F whole first
                j = parent[j]
                s = 0.0
                for i in range(6):
                    s += S[j - 1, i] * F[i]
                ij = off + perm[j - 1]
                M[b, ik, ij] = s
                M[b, ij, ik] = s
            if floating:
                _force_to_parent(R[j], p[j], F, G, False)
                for i in range(3):      # base rows [linear; angular] = [force; moment]
                    M[b, i, ik] = M[b, ik, i] = G[3 + i]
                    M[b, 3 + i, ik] = M[b, ik, 3 + i] = G[i]
        if floating:
            m0, h0 = cm[0], ch[0]
            for i in range(3):
                M[b, i, i] = m0
                for j in range(3):
                    M[b, 3 + i, 3 + j] = cI[0, i, j]
            # [[m 1, -[h]x], [[h]x, Io]]
            M[b, 4, 0], M[b, 5, 0], M[b, 3, 1] = h0[2], -h0[1], -h0[2]
            M[b, 5, 1], M[b, 3, 2], M[b, 4, 2] = h0[0], h0[1], -h0[0]
            for i in range(3):
                for j in range(3):
                    M[b, i, 3 + j] = M[b, 3 + j, i]


@_inline
def _spatial_inertia(m, h, Io, out):
    """The 6x6 spatial inertia ``[[Io, [h]x], [-[h]x, m 1]]``."""
    out[:, :] = 0.0
    for i in range(3):
        for j in range(3):
            out[i, j] = Io[i, j]
        out[3 + i, 3 + i] = m
    out[0, 4], out[0, 5], out[1, 3] = -h[2], h[1], h[2]
    out[1, 5], out[2, 3], out[2, 4] = -h[0], -h[1], h[0]
    for i in range(3):
        for j in range(3):
            out[3 + i, j] = -out[i, 3 + j]


@_inline
def _inertia6_to_parent(R, p, A, out, Bm, T):
    """out += X^T A X for a 6x6 A of the child (Bm (6, 6), T (3, 3): scratch)."""
    # Bm = blockdiag(R) A blockdiag(R)^T
    for bi in range(2):
        for bj in range(2):
            for i in range(3):
                for j in range(3):
                    T[i, j] = (R[i, 0] * A[3 * bi, 3 * bj + j] + R[i, 1] * A[3 * bi + 1, 3 * bj + j]
                               + R[i, 2] * A[3 * bi + 2, 3 * bj + j])
            for i in range(3):
                for j in range(3):
                    Bm[3 * bi + i, 3 * bj + j] = T[i, 0] * R[j, 0] + T[i, 1] * R[j, 1] + T[i, 2] * R[j, 2]
    # with P = [p]x: [[B11 + P B21 - B12 P - P B22 P, B12 + P B22], [B21 - B22 P, B22]]
    # P y = p x y (columns), Y P: row r of Y P = -(p x Y_r) ... written out per element
    for i in range(3):
        for j in range(3):
            # (P B22)[i, j], (P B21)[i, j]
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            pb22 = p[i1] * Bm[3 + i2, 3 + j] - p[i2] * Bm[3 + i1, 3 + j]
            pb21 = p[i1] * Bm[3 + i2, j] - p[i2] * Bm[3 + i1, j]
            T[i, j] = pb22
            out[i, 3 + j] += Bm[i, 3 + j] + pb22
            out[3 + i, 3 + j] += Bm[3 + i, 3 + j]
            out[i, j] += Bm[i, j] + pb21
    # Y P for Y in (B12, P B22, B22): (Y P)[i, j] = sum_k Y[i, k] P[k, j], P[k, j] = -eps_kjl p_l
    for i in range(3):
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            # (Y P)[i, j] = Y[i, j1] p[j2] - Y[i, j2] p[j1]
            b12p = Bm[i, 3 + j1] * p[j2] - Bm[i, 3 + j2] * p[j1]
            pb22p = T[i, j1] * p[j2] - T[i, j2] * p[j1]
            b22p = Bm[3 + i, 3 + j1] * p[j2] - Bm[3 + i, 3 + j2] * p[j1]
            out[i, j] -= b12p + pb22p
            out[3 + i, j] += Bm[3 + i, j] - b22p


@_inline
def _solve_spd6(A, r, x, L):
    """x = A^-1 r for a symmetric positive definite 6x6 A (Cholesky into L)."""
    for j in range(6):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, 6):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    for i in range(6):
        s = r[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(5, -1, -1):
        s = x[i]
        for k in range(i + 1, 6):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@_jit
def aba_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, tau, a0, armature, floating, qdd, joints):
    """Forward dynamics, see :func:`engine.robots.compiled_dynamics.aba`."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    Io, h = _origin_inertias(m, c, Ic)
    I6 = np.empty((n + 1, 6, 6))
    for k in range(n + 1):
        _spatial_inertia(m[k], h[k], Io[k], I6[k])
    R = np.zeros((n + 1, 3, 3))
    p = np.zeros((n + 1, 3))
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    cb = np.zeros((n + 1, 6))
    IA = np.empty((n + 1, 6, 6))
    pA = np.zeros((n + 1, 6))
    U = np.empty((n + 1, 6))
    D = np.empty(n + 1)
    u = np.empty(n + 1)
    Ia = np.empty((6, 6))
    pa = np.empty(6)
    sv = np.empty(6)
    t = np.empty(6)
    g = np.empty(6)
    r6 = np.empty(6)
    Bm = np.empty((6, 6))
    T3 = np.empty((3, 3))
    L = np.zeros((6, 6))
    for b in range(B):
        if floating:
            _quaternion_rotation(q, b, R[0])
            for i in range(3):
                v[0, i], v[0, 3 + i] = qd[b, 3 + i], qd[b, i]
            IA[0] = I6[0]
            _inertia_times(m[0], h[0], Io[0], v[0], t)
            pA[0, :] = 0.0
            _add_cross_force(v[0], t, pA[0])
        else:
            v[0, :] = 0.0
        for k in range(1, n + 1):
            _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], joints[k - 1, 1], R[k], p[k])
            _motion_to_child(R[k], p[k], v[parent[k]], v[k])
            x = qd[b, fv + perm[k - 1]]
            for i in range(6):
                sv[i] = S[k - 1, i] * x
                v[k, i] += sv[i]
                cb[k, i] = 0.0
            _add_cross_motion(v[k], sv, cb[k])
            if joints[k - 1, 1] == 3:
                _add_ball_bias(qd, b, fv + perm[k - 1], cb[k])
            IA[k] = I6[k]
            _inertia_times(m[k], h[k], Io[k], v[k], t)
            pA[k, :] = 0.0
            _add_cross_force(v[k], t, pA[k])
        for k in range(n, 0, -1):
            Dk = armature[k - 1]
            sp = 0.0
            for i in range(6):
                s = 0.0
                for j in range(6):
                    s += IA[k, i, j] * S[k - 1, j]
                U[k, i] = s
                Dk += S[k - 1, i] * s
                sp += S[k - 1, i] * pA[k, i]
            D[k] = Dk
            u[k] = tau[b, fv + perm[k - 1]] - sp
            j = parent[k]
            if j == 0 and not floating:
                continue
            uD = u[k] / Dk
            for i in range(6):
                for l in range(6):
                    Ia[i, l] = IA[k, i, l] - U[k, i] * U[k, l] / Dk
            for i in range(6):
                s = pA[k, i] + U[k, i] * uD
                for l in range(6):
                    s += Ia[i, l] * cb[k, l]
                pa[i] = s
            _inertia6_to_parent(R[k], p[k], Ia, IA[j], Bm, T3)
            _force_to_parent(R[k], p[k], pa, pA[j], True)
        if floating:
            _gravity_in_base(R[0], a0, g)
            for i in range(3):
                r6[i], r6[3 + i] = tau[b, 3 + i] - pA[0, i], tau[b, i] - pA[0, 3 + i]
            _solve_spd6(IA[0], r6, a[0], L)
            for i in range(3):
                qdd[b, i], qdd[b, 3 + i] = a[0, 3 + i] - g[3 + i], a[0, i] - g[i]
        else:
            for i in range(6):
                a[0, i] = a0[i]
        for k in range(1, n + 1):
            _motion_to_child(R[k], p[k], a[parent[k]], a[k])
            s = u[k]
            for i in range(6):
                a[k, i] += cb[k, i]
                s -= U[k, i] * a[k, i]
            x = s / D[k]
            qdd[b, fv + perm[k - 1]] = x
            for i in range(6):
                a[k, i] += S[k - 1, i] * x


@_inline
def _world_poses(parent, C0, C, perm, q, b, fq, floating, Rw, pw, Rl, pl, joints):
    """World poses of the root (row 0) and the bodies of sample b: Rw (n+1, 3, 3), pw (n+1, 3)
    (Rl (3, 3), pl (3,): scratch)."""
    n = perm.shape[0]
    if floating:
        _quaternion_rotation(q, b, Rw[0])
        for i in range(3):
            pw[0, i] = q[b, i]
    else:
        for i in range(3):
            pw[0, i] = 0.0
            for j in range(3):
                Rw[0, i, j] = 1.0 if i == j else 0.0
    for k in range(1, n + 1):
        _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], joints[k - 1, 1], Rl, pl)
        j = parent[k]
        for r in range(3):
            for col in range(3):
                Rw[k, r, col] = Rw[j, r, 0] * Rl[0, col] + Rw[j, r, 1] * Rl[1, col] + Rw[j, r, 2] * Rl[2, col]
            pw[k, r] = Rw[j, r, 0] * pl[0] + Rw[j, r, 1] * pl[1] + Rw[j, r, 2] * pl[2] + pw[j, r]


@_jit
def fk_kernel(parent, C0, C, perm, link_body, link_offset, q, floating, out, joints):
    """World poses of every link ``out (B, L, 4, 4)``: its body's pose times its fixed offset."""
    B = q.shape[0]
    n = perm.shape[0]
    fq = 7 if floating else 0
    Rw = np.zeros((n + 1, 3, 3))
    pw = np.zeros((n + 1, 3))
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for b in range(B):
        _world_poses(parent, C0, C, perm, q, b, fq, floating, Rw, pw, Rl, pl, joints)
        for l in range(link_body.shape[0]):
            k = link_body[l]
            for r in range(3):
                for col in range(4):
                    x = (Rw[k, r, 0] * link_offset[l, 0, col] + Rw[k, r, 1] * link_offset[l, 1, col]
                         + Rw[k, r, 2] * link_offset[l, 2, col])
                    out[b, l, r, col] = x + pw[k, r] if col == 3 else x
            out[b, l, 3, 0], out[b, l, 3, 1], out[b, l, 3, 2], out[b, l, 3, 3] = 0.0, 0.0, 0.0, 1.0


@_jit
def jacobian_kernel(parent, C0, C, S, rev, perm, body, offset, point, q, floating, out, joints):
    """World Jacobian ``out (B, 6, nv)`` (rows linear then angular velocity; floating: base
    columns first) of a point fixed to ``body``: ``offset (4, 4)`` its link's frame in the body,
    ``point (B, 3)`` in that frame or ``(0, 0)`` (the link's origin)."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    has_point = point.shape[0] > 0
    Rw = np.zeros((n + 1, 3, 3))
    pw = np.zeros((n + 1, 3))
    loc = np.empty(3)
    p = np.empty(3)
    z = np.empty(3)
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for b in range(B):
        _world_poses(parent, C0, C, perm, q, b, fq, floating, Rw, pw, Rl, pl, joints)
        for i in range(3):
            loc[i] = offset[i, 3]
            if has_point:
                loc[i] += offset[i, 0] * point[b, 0] + offset[i, 1] * point[b, 1] + offset[i, 2] * point[b, 2]
        for i in range(3):
            p[i] = Rw[body, i, 0] * loc[0] + Rw[body, i, 1] * loc[1] + Rw[body, i, 2] * loc[2] + pw[body, i]
        out[b] = 0.0
        k = body
        while k != 0:
            col = fv + perm[k - 1]
            for i in range(3):
                z[i] = (Rw[k, i, 0] * (S[k - 1, 0] + S[k - 1, 3]) + Rw[k, i, 1] * (S[k - 1, 1] + S[k - 1, 4])
                        + Rw[k, i, 2] * (S[k - 1, 2] + S[k - 1, 5]))
            if rev[k - 1] != 0.0:
                d0, d1, d2 = p[0] - pw[k, 0], p[1] - pw[k, 1], p[2] - pw[k, 2]
                out[b, 0, col] = z[1] * d2 - z[2] * d1
                out[b, 1, col] = z[2] * d0 - z[0] * d2
                out[b, 2, col] = z[0] * d1 - z[1] * d0
                for i in range(3):
                    out[b, 3 + i, col] = z[i]
            else:
                for i in range(3):
                    out[b, i, col] = z[i]
            k = parent[k]
        if floating:
            d0, d1, d2 = p[0] - pw[0, 0], p[1] - pw[0, 1], p[2] - pw[0, 2]
            for j in range(3):
                e0, e1, e2 = Rw[0, 0, j], Rw[0, 1, j], Rw[0, 2, j]      # the base's axis j in the world
                for i in range(3):
                    out[b, i, j] = Rw[0, i, j]
                    out[b, 3 + i, 3 + j] = Rw[0, i, j]
                out[b, 0, 3 + j] = e1 * d2 - e2 * d1
                out[b, 1, 3 + j] = e2 * d0 - e0 * d2
                out[b, 2, 3 + j] = e0 * d1 - e1 * d0
