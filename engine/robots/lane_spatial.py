"""Spatial algebra on a block of samples in SIMD lanes, for the kernels of
:mod:`engine.robots.vjp_kernels`: each quantity is an array whose last axis is the sample
(lane) axis, ``(..., L)`` contiguous, e.g. a motion vector ``(6, L)``, a rotation ``(3, 3, L)``;
each helper is one loop over the first ``nl <= L`` lanes (a run-time trip count: so LLVM's loop
vectoriser emits SIMD code, with run-time alias checks; a compile-time one gets unrolled and
then not vectorised), with a lane's inputs read into locals before its outputs are stored (so an
output may be one of the inputs). Per-joint data (``S``, inertias, the joint constants) are shared
by the lanes. The same operations in the same order as the one-sample helpers of
:mod:`engine.robots.compiled_kernels` (``_motion_to_child``, ``_force_to_parent``, ...), so the
results are the same numbers. Importing this module imports numba.
"""

from __future__ import annotations

import math

import numpy as np

from engine.robots.compiled_kernels import _inline


@_inline
def _lane6(x, lane):
    """Column ``lane`` of ``x (6, L)`` as a 6-tuple."""
    return x[0, lane], x[1, lane], x[2, lane], x[3, lane], x[4, lane], x[5, lane]


@_inline
def _row6(x, r):
    """Row ``r`` of ``x (., 6)`` (a joint's ``S``) as a 6-tuple."""
    return x[r, 0], x[r, 1], x[r, 2], x[r, 3], x[r, 4], x[r, 5]


@_inline
def _cross6(x, y):
    """x x y (motion) of 6-tuples: ``[w x yw; w x yu + u x yw]``."""
    w0, w1, w2, u0, u1, u2 = x
    y0, y1, y2, y3, y4, y5 = y
    return (w1 * y2 - w2 * y1, w2 * y0 - w0 * y2, w0 * y1 - w1 * y0, w1 * y5 - w2 * y4 + u1 * y2 - u2 * y1,
            w2 * y3 - w0 * y5 + u2 * y0 - u0 * y2, w0 * y4 - w1 * y3 + u0 * y1 - u1 * y0)


@_inline
def _minus_times(x, y, c):
    """x - c y of 6-tuples."""
    return x[0] - y[0] * c, x[1] - y[1] * c, x[2] - y[2] * c, x[3] - y[3] * c, x[4] - y[4] * c, x[5] - y[5] * c


# sin and cos as Cephes' sin.c and cos.c (S. L. Moshier): pi/4 in three parts for the reduction to
# [-pi/4, pi/4], polynomials there
_DP1, _DP2, _DP3 = 7.85398125648498535156E-1, 3.77489470793079817668E-8, 2.69515142907905952645E-15
_PIO4 = 7.85398163397448309616E-1
_LOSSTH = 1.073741824e9
_S0, _S1, _S2, _S3, _S4, _S5 = (1.58962301576546568060E-10, -2.50507477628578072866E-8, 2.75573136213857245213E-6,
                                -1.98412698295895385996E-4, 8.33333333332211858878E-3, -1.66666666666666307295E-1)
_C0, _C1, _C2, _C3, _C4, _C5 = (-1.13585365213876817300E-11, 2.08757008419747316778E-9, -2.75573141792967388112E-7,
                                2.48015872888517045348E-5, -1.38888888888730564116E-3, 4.16666666666665929218E-2)


@_inline
def _sin_1mcos_l(qk, s, c1, nl):
    """``s = sin(qk)``, ``c1 = 1 - cos(qk)`` for ``qk, s, c1 (L,)``: Cephes' formulas, one
    vectorised loop of plain arithmetic (libm's calls are not vectorised, and cost as much as the
    rest of a body's forward pass), within 2 units in the last place of libm's for ``|q| <=
    2^30`` (the sine near its zeros ``k pi``: within ``1e-30 |q|``; beyond ``2^30``, and inf or
    nan: libm's). The same numbers on every CPU (no fused multiply-add)."""
    for lane in range(nl):
        x = qk[lane]
        ax = abs(x)
        y = math.floor(ax / _PIO4)      # the octant, rounded up to an even one
        j = np.int64(y)
        odd = j & 1
        j = (j + odd) & 7
        y = y + odd
        z = ((ax - y * _DP1) - y * _DP2) - y * _DP3
        zz = z * z
        ps = z + z * (zz * (((((_S0 * zz + _S1) * zz + _S2) * zz + _S3) * zz + _S4) * zz + _S5))
        pc = 1.0 - 0.5 * zz + zz * zz * (((((_C0 * zz + _C1) * zz + _C2) * zz + _C3) * zz + _C4) * zz + _C5)
        swap = (j & 3) == 1 or (j & 3) == 2
        sv = pc if swap else ps
        cv = ps if swap else pc
        s[lane] = -sv if (j > 3) != (x < 0.0) else sv
        c1[lane] = 1.0 - (-cv if (j > 3) != ((j & 3) > 1) else cv)
    for lane in range(nl):
        x = qk[lane]
        if not abs(x) <= _LOSSTH:
            s[lane] = math.sin(x)
            c1[lane] = 1.0 - math.cos(x)


@_inline
def _local_pose_l(C0, C, k, qk, s, c1, R, p, nl):
    """Pose of body k+1 in its parent for the joint positions ``qk (L,)``: ``R (3, 3, L)``,
    ``p (3, L)`` written (``_local_pose`` per lane, with :func:`_sin_1mcos_l`); ``s, c1 (L,)``:
    scratch."""
    _sin_1mcos_l(qk, s, c1, nl)
    for r in range(3):      # one loop an entry, its constants loaded first (so that LLVM vectorises it)
        for col in range(4):
            i = 4 * r + col
            e0, e1, e2, e3 = C0[k, i], C[k, 0, i], C[k, 1, i], C[k, 2, i]
            out = R[r, col] if col < 3 else p[r]
            for lane in range(nl):
                out[lane] = e0 + s[lane] * e1 + c1[lane] * e2 + qk[lane] * e3


@_inline
def _motion_to_child_l(R, p, x, out, nl):
    """out = X x for motion vectors ``x (6, L)`` of the parent (``_motion_to_child`` per lane)."""
    for lane in range(nl):
        x0, x1, x2, x3, x4, x5 = x[0, lane], x[1, lane], x[2, lane], x[3, lane], x[4, lane], x[5, lane]
        p0, p1, p2 = p[0, lane], p[1, lane], p[2, lane]
        r00, r01, r02 = R[0, 0, lane], R[0, 1, lane], R[0, 2, lane]
        r10, r11, r12 = R[1, 0, lane], R[1, 1, lane], R[1, 2, lane]
        r20, r21, r22 = R[2, 0, lane], R[2, 1, lane], R[2, 2, lane]
        t0 = x3 + x1 * p2 - x2 * p1
        t1 = x4 + x2 * p0 - x0 * p2
        t2 = x5 + x0 * p1 - x1 * p0
        out[0, lane] = r00 * x0 + r10 * x1 + r20 * x2
        out[1, lane] = r01 * x0 + r11 * x1 + r21 * x2
        out[2, lane] = r02 * x0 + r12 * x1 + r22 * x2
        out[3, lane] = r00 * t0 + r10 * t1 + r20 * t2
        out[4, lane] = r01 * t0 + r11 * t1 + r21 * t2
        out[5, lane] = r02 * t0 + r12 * t1 + r22 * t2


@_inline
def _force_to_parent_add_l(R, p, f, out, nl):
    """out += X^T f for forces ``f (6, L)`` of the child (``_force_to_parent`` per lane, adding)."""
    for lane in range(nl):
        f0, f1, f2, f3, f4, f5 = f[0, lane], f[1, lane], f[2, lane], f[3, lane], f[4, lane], f[5, lane]
        p0, p1, p2 = p[0, lane], p[1, lane], p[2, lane]
        r00, r01, r02 = R[0, 0, lane], R[0, 1, lane], R[0, 2, lane]
        r10, r11, r12 = R[1, 0, lane], R[1, 1, lane], R[1, 2, lane]
        r20, r21, r22 = R[2, 0, lane], R[2, 1, lane], R[2, 2, lane]
        F0 = r00 * f3 + r01 * f4 + r02 * f5
        F1 = r10 * f3 + r11 * f4 + r12 * f5
        F2 = r20 * f3 + r21 * f4 + r22 * f5
        out[0, lane] += r00 * f0 + r01 * f1 + r02 * f2 + p1 * F2 - p2 * F1
        out[1, lane] += r10 * f0 + r11 * f1 + r12 * f2 + p2 * F0 - p0 * F2
        out[2, lane] += r20 * f0 + r21 * f1 + r22 * f2 + p0 * F1 - p1 * F0
        out[3, lane] += F0
        out[4, lane] += F1
        out[5, lane] += F2


@_inline
def _inertia_times_l(m, h, Io, x, plus, minus, out, nl):
    """out = I x (+ plus) (- minus) for ``x (6, L)`` (``_inertia_times`` per lane, then the
    optional ``(6, L)`` terms; None: left out)."""
    h0, h1, h2 = h[0], h[1], h[2]
    i00, i01, i02 = Io[0, 0], Io[0, 1], Io[0, 2]
    i10, i11, i12 = Io[1, 0], Io[1, 1], Io[1, 2]
    i20, i21, i22 = Io[2, 0], Io[2, 1], Io[2, 2]
    for lane in range(nl):
        w0, w1, w2, u0, u1, u2 = x[0, lane], x[1, lane], x[2, lane], x[3, lane], x[4, lane], x[5, lane]
        y0 = i00 * w0 + i01 * w1 + i02 * w2 + h1 * u2 - h2 * u1
        y1 = i10 * w0 + i11 * w1 + i12 * w2 + h2 * u0 - h0 * u2
        y2 = i20 * w0 + i21 * w1 + i22 * w2 + h0 * u1 - h1 * u0
        y3 = m * u0 - (h1 * w2 - h2 * w1)
        y4 = m * u1 - (h2 * w0 - h0 * w2)
        y5 = m * u2 - (h0 * w1 - h1 * w0)
        if plus is not None:
            y0, y1, y2 = y0 + plus[0, lane], y1 + plus[1, lane], y2 + plus[2, lane]
            y3, y4, y5 = y3 + plus[3, lane], y4 + plus[4, lane], y5 + plus[5, lane]
        if minus is not None:
            y0, y1, y2 = y0 - minus[0, lane], y1 - minus[1, lane], y2 - minus[2, lane]
            y3, y4, y5 = y3 - minus[3, lane], y4 - minus[4, lane], y5 - minus[5, lane]
        out[0, lane], out[1, lane], out[2, lane] = y0, y1, y2
        out[3, lane], out[4, lane], out[5, lane] = y3, y4, y5


@_inline
def _cross_motion_l(v, x, out, nl):
    """out = v x x (motion) for ``v, x (6, L)`` (``_add_cross_motion`` per lane, onto zero)."""
    for lane in range(nl):
        w0, w1, w2, u0, u1, u2 = v[0, lane], v[1, lane], v[2, lane], v[3, lane], v[4, lane], v[5, lane]
        x0, x1, x2, x3, x4, x5 = x[0, lane], x[1, lane], x[2, lane], x[3, lane], x[4, lane], x[5, lane]
        out[0, lane] = w1 * x2 - w2 * x1
        out[1, lane] = w2 * x0 - w0 * x2
        out[2, lane] = w0 * x1 - w1 * x0
        out[3, lane] = w1 * x5 - w2 * x4 + u1 * x2 - u2 * x1
        out[4, lane] = w2 * x3 - w0 * x5 + u2 * x0 - u0 * x2
        out[5, lane] = w0 * x4 - w1 * x3 + u0 * x1 - u1 * x0


@_inline
def _cross_force_l(v, f, out, add, nl):
    """out (+)= v x* f (force) for ``v, f (6, L)`` (``_add_cross_force`` per lane; without
    ``add``: onto zero)."""
    for lane in range(nl):
        w0, w1, w2, u0, u1, u2 = v[0, lane], v[1, lane], v[2, lane], v[3, lane], v[4, lane], v[5, lane]
        f0, f1, f2, f3, f4, f5 = f[0, lane], f[1, lane], f[2, lane], f[3, lane], f[4, lane], f[5, lane]
        y0 = w1 * f2 - w2 * f1 + u1 * f5 - u2 * f4
        y1 = w2 * f0 - w0 * f2 + u2 * f3 - u0 * f5
        y2 = w0 * f1 - w1 * f0 + u0 * f4 - u1 * f3
        y3 = w1 * f5 - w2 * f4
        y4 = w2 * f3 - w0 * f5
        y5 = w0 * f4 - w1 * f3
        if add:
            out[0, lane] += y0
            out[1, lane] += y1
            out[2, lane] += y2
            out[3, lane] += y3
            out[4, lane] += y4
            out[5, lane] += y5
        else:
            out[0, lane], out[1, lane], out[2, lane] = y0, y1, y2
            out[3, lane], out[4, lane], out[5, lane] = y3, y4, y5


@_inline
def _root_pose_l(qT, floating, a0, R, p, gb, nl):
    """The root's pose ``R (3, 3, L)``, ``p (3, L)``: a floating base's rotation from the
    quaternions ``qT[3:7] (4, L)`` (x, y, z, w; ``_quaternion_rotation`` per lane), with gravity in
    its axes ``gb (6, L)`` (``_gravity_in_base``), else the identity (``gb`` zero)."""
    for i in range(3):
        for lane in range(nl):
            p[i, lane] = 0.0
    if not floating:
        for i in range(3):
            for j in range(3):
                for lane in range(nl):
                    R[i, j, lane] = 1.0 if i == j else 0.0
        for i in range(6):
            for lane in range(nl):
                gb[i, lane] = 0.0
        return
    a00, a01, a02, a03, a04, a05 = a0[0], a0[1], a0[2], a0[3], a0[4], a0[5]
    for lane in range(nl):
        x, y, z, w = qT[3, lane], qT[4, lane], qT[5, lane], qT[6, lane]
        r00 = 1.0 - 2.0 * (y * y + z * z)
        r01 = 2.0 * (x * y - z * w)
        r02 = 2.0 * (x * z + y * w)
        r10 = 2.0 * (x * y + z * w)
        r11 = 1.0 - 2.0 * (x * x + z * z)
        r12 = 2.0 * (y * z - x * w)
        r20 = 2.0 * (x * z - y * w)
        r21 = 2.0 * (y * z + x * w)
        r22 = 1.0 - 2.0 * (x * x + y * y)
        R[0, 0, lane], R[0, 1, lane], R[0, 2, lane] = r00, r01, r02
        R[1, 0, lane], R[1, 1, lane], R[1, 2, lane] = r10, r11, r12
        R[2, 0, lane], R[2, 1, lane], R[2, 2, lane] = r20, r21, r22
    for lane in range(nl):      # (a loop of its own: LLVM does not vectorise the two in one)
        r00, r01, r02 = R[0, 0, lane], R[0, 1, lane], R[0, 2, lane]
        r10, r11, r12 = R[1, 0, lane], R[1, 1, lane], R[1, 2, lane]
        r20, r21, r22 = R[2, 0, lane], R[2, 1, lane], R[2, 2, lane]
        gb[0, lane] = r00 * a00 + r10 * a01 + r20 * a02
        gb[1, lane] = r01 * a00 + r11 * a01 + r21 * a02
        gb[2, lane] = r02 * a00 + r12 * a01 + r22 * a02
        gb[3, lane] = r00 * a03 + r10 * a04 + r20 * a05
        gb[4, lane] = r01 * a03 + r11 * a04 + r21 * a05
        gb[5, lane] = r02 * a03 + r12 * a04 + r22 * a05


@_inline
def _add_bilinear_parameters_l(x, y, sign, acc, nl):
    """acc (10, L) += sign * d(x^T I y)/d pi per lane, for ``x, y (6, L)``
    (:func:`engine.robots.regressor_kernels._add_bilinear_parameters` per lane; LLVM leaves this
    loop scalar, and its vectorised split into two loops of five rows ran slower)."""
    for lane in range(nl):
        x0, x1, x2, x3, x4, x5 = x[0, lane], x[1, lane], x[2, lane], x[3, lane], x[4, lane], x[5, lane]
        y0, y1, y2, y3, y4, y5 = y[0, lane], y[1, lane], y[2, lane], y[3, lane], y[4, lane], y[5, lane]
        acc[0, lane] += sign * (x3 * y3 + x4 * y4 + x5 * y5)
        acc[1, lane] += sign * (y4 * x2 - y5 * x1 + x4 * y2 - x5 * y1)
        acc[2, lane] += sign * (y5 * x0 - y3 * x2 + x5 * y0 - x3 * y2)
        acc[3, lane] += sign * (y3 * x1 - y4 * x0 + x3 * y1 - x4 * y0)
        acc[4, lane] += sign * x0 * y0
        acc[5, lane] += sign * (x0 * y1 + x1 * y0)
        acc[6, lane] += sign * x1 * y1
        acc[7, lane] += sign * (x0 * y2 + x2 * y0)
        acc[8, lane] += sign * (x1 * y2 + x2 * y1)
        acc[9, lane] += sign * x2 * y2
