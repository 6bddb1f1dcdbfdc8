"""Numba kernels of the joint-torque regressor ``Y(q, v, a)`` (``tau = Y pi``) and of its
vector-Jacobian product ``w^T Y`` (the gradient with respect to the inertial parameters), see
:mod:`engine.robots.derivatives`.

Same constants and conventions as :mod:`engine.robots.compiled_kernels` (body frames; spatial
vectors ``[angular; linear]``). Per body, ``pi`` is Pinocchio's ``Inertia.toDynamicParameters``:
``[m, m c_x, m c_y, m c_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` with the rotational inertia about the
body's origin. The body force ``f = I a + v x* I v`` is linear in it: ``f = Phi(v, a) pi``.

Ball joints (``joints``, :func:`engine.robots.compiled_kernels._joint_pose`): three sub-bodies, the
first two massless; each sub-body's velocity product ``v x S qd`` takes the ball's child's
velocity (the torch algorithms' ``bias_src``, :mod:`engine.robots.ball`), so that the massless
sub-bodies' columns are the torch regressor's too and the last one's acceleration is the ball's.
Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots.compiled_kernels import (
    _add_cross_force,
    _add_cross_motion,
    _force_to_parent,
    _gravity_in_base,
    _inertia_times,
    _inline,
    _jit,
    _joint_pose,
    _motion_to_child,
    _quaternion_rotation,
)
from engine.robots.derivative_kernels import _cross_motion

_SYM = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))


@_inline
def _parameter_forces(mk_v, mk_a, Phi, hu, Iu, col, t):
    """Phi (6, 10): the body force ``I a + v x* I v`` per unit inertial parameter (Pinocchio's
    order ``m, h (3), Ixx, Ixy, Iyy, Ixz, Iyz, Izz``), for the body's v, a (6,) in its frame."""
    for cidx in range(10):
        mu = 1.0 if cidx == 0 else 0.0
        hu[:] = 0.0
        Iu[:, :] = 0.0
        if 1 <= cidx <= 3:
            hu[cidx - 1] = 1.0
        elif cidx >= 4:
            r_, c_ = _SYM[cidx - 4]
            Iu[r_, c_] = 1.0
            Iu[c_, r_] = 1.0
        _inertia_times(mu, hu, Iu, mk_a, col)
        _inertia_times(mu, hu, Iu, mk_v, t)
        _add_cross_force(mk_v, t, col)
        for i in range(6):
            Phi[i, cidx] = col[i]


@_inline
def _add_velocity_product(qd, b, col, kind, vk, sv, t, ak):
    """``ak += v x S qd`` (``sv = S qd``): ``v`` the body's velocity ``vk``, or on a ball's
    sub-body (kind 1, 2, 3; the ball's three velocities at columns ``col - kind + 1 ..``, its
    sub-bodies turning about x, y, z) the child's: ``vk`` plus the later sub-bodies' ``w``
    (``t (6,)``: scratch)."""
    if kind == 0:
        _add_cross_motion(vk, sv, ak)
        return
    first = col - kind + 1
    for i in range(6):
        t[i] = vk[i]
    for i in range(kind, 3):
        t[i] += qd[b, first + i]
    _add_cross_motion(t, sv, ak)


@_jit
def regressor_kernel(parent, C0, C, S, perm, q, qd, qdd, a0, floating, Y, joints):
    """The joint-torque regressor ``Y (B, nv, 10 N)`` (``tau = Y pi`` without armature), ``N``
    bodies: the floating base's (if any) first, then each movable joint's child body in the user
    order. ``pi`` per body: Pinocchio's ``Inertia.toDynamicParameters`` ``[m, m c (3), Ixx, Ixy,
    Iyy, Ixz, Iyz, Izz]`` with the rotational inertia about the body's origin, body axes.
    ``joints (n, 2)``: each body's configuration column and kind (ball joints)."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    fb = 1 if floating else 0
    R = np.zeros((n + 1, 3, 3))
    p = np.zeros((n + 1, 3))
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    sv = np.empty(6)
    g = np.empty(6)
    Phi = np.empty((6, 10))
    col = np.empty(6)
    t = np.empty(6)
    hu = np.zeros(3)
    Iu = np.zeros((3, 3))
    for b in range(B):
        Y[b] = 0.0
        if floating:
            _quaternion_rotation(q, b, R[0])
            _gravity_in_base(R[0], a0, g)
            for i in range(3):
                v[0, i], v[0, 3 + i] = qd[b, 3 + i], qd[b, i]
                a[0, i], a[0, 3 + i] = g[i] + qdd[b, 3 + i], g[3 + i] + qdd[b, i]
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
            x = qd[b, fv + jk]
            y = qdd[b, fv + jk]
            for i in range(6):
                sv[i] = S[k - 1, i] * x
                v[k, i] += sv[i]
                a[k, i] += S[k - 1, i] * y
            _add_velocity_product(qd, b, fv + jk, kind, v[k], sv, t, a[k])
        for k in range(0 if floating else 1, n + 1):
            # Phi: the body's force I a + v x* I v, one column per parameter
            _parameter_forces(v[k], a[k], Phi, hu, Iu, col, t)
            blk = 10 * (0 if k == 0 else fb + perm[k - 1])
            j = k
            while j != 0:
                row = fv + perm[j - 1]
                for cidx in range(10):
                    s = 0.0
                    for i in range(6):
                        s += S[j - 1, i] * Phi[i, cidx]
                    Y[b, row, blk + cidx] = s
                if parent[j] == 0 and not floating:
                    break
                for cidx in range(10):
                    for i in range(6):
                        col[i] = Phi[i, cidx]
                    _force_to_parent(R[j], p[j], col, col, False)
                    for i in range(6):
                        Phi[i, cidx] = col[i]
                j = parent[j]
            if floating:
                for cidx in range(10):
                    for i in range(3):
                        Y[b, i, blk + cidx] = Phi[3 + i, cidx]
                        Y[b, 3 + i, blk + cidx] = Phi[i, cidx]


@_inline
def _add_bilinear_parameters(x, y, sign, out):
    """out (10,) += sign * d(x^T I y)/d pi: ``x^T I y = xw^T Io yw + m xu.yu + h.(yu x xw + xu x yw)``."""
    out[0] += sign * (x[3] * y[3] + x[4] * y[4] + x[5] * y[5])
    out[1] += sign * (y[4] * x[2] - y[5] * x[1] + x[4] * y[2] - x[5] * y[1])
    out[2] += sign * (y[5] * x[0] - y[3] * x[2] + x[5] * y[0] - x[3] * y[2])
    out[3] += sign * (y[3] * x[1] - y[4] * x[0] + x[3] * y[1] - x[4] * y[0])
    out[4] += sign * x[0] * y[0]
    out[5] += sign * (x[0] * y[1] + x[1] * y[0])
    out[6] += sign * x[1] * y[1]
    out[7] += sign * (x[0] * y[2] + x[2] * y[0])
    out[8] += sign * (x[1] * y[2] + x[2] * y[1])
    out[9] += sign * x[2] * y[2]


@_jit
def regressor_vjp_kernel(parent, C0, C, S, perm, q, qd, qdd, a0, floating, w, out, joints):
    """``out (B, n + 1, 10)``: ``w^T Y`` per body in the internal order (root first; zero for a
    fixed root), ``w (B, nv)``: with ``lam_k = X_k lam_parent + S_k w_k`` (the weights carried to
    each body's frame; a floating root starts from its own), ``out_k = d(lam_k . f_k)/d pi_k``
    for the body force ``f = I a + v x* I v``. O(n). ``joints``: :func:`regressor_kernel`'s."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    R = np.zeros((n + 1, 3, 3))
    p = np.zeros((n + 1, 3))
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    lam = np.zeros((n + 1, 6))
    sv = np.empty(6)
    g = np.empty(6)
    t = np.empty(6)
    for b in range(B):
        out[b] = 0.0
        if floating:
            _quaternion_rotation(q, b, R[0])
            _gravity_in_base(R[0], a0, g)
            for i in range(3):
                v[0, i], v[0, 3 + i] = qd[b, 3 + i], qd[b, i]
                a[0, i], a[0, 3 + i] = g[i] + qdd[b, 3 + i], g[3 + i] + qdd[b, i]
                lam[0, i], lam[0, 3 + i] = w[b, 3 + i], w[b, i]
        else:
            for i in range(6):
                v[0, i] = 0.0
                a[0, i] = a0[i]
                lam[0, i] = 0.0
        for k in range(1, n + 1):
            jk = perm[k - 1]
            kind = joints[k - 1, 1]
            _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], kind, R[k], p[k])
            j = parent[k]
            _motion_to_child(R[k], p[k], v[j], v[k])
            _motion_to_child(R[k], p[k], a[j], a[k])
            _motion_to_child(R[k], p[k], lam[j], lam[k])
            x = qd[b, fv + jk]
            y = qdd[b, fv + jk]
            for i in range(6):
                sv[i] = S[k - 1, i] * x
                v[k, i] += sv[i]
                a[k, i] += S[k - 1, i] * y
                lam[k, i] += S[k - 1, i] * w[b, fv + jk]
            _add_velocity_product(qd, b, fv + jk, kind, v[k], sv, t, a[k])
        for k in range(0 if floating else 1, n + 1):
            # lam . f = lam^T I a - mu^T I v with mu = v x lam: bilinear in the parameters
            _cross_motion(v[k], lam[k], t)
            _add_bilinear_parameters(lam[k], a[k], 1.0, out[b, k])
            _add_bilinear_parameters(t, v[k], -1.0, out[b, k])
