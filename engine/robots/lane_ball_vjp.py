"""Ball joints in the backward's kernels (:mod:`engine.robots.vjp_kernels`), on ``L`` samples at
once (arrays ``(..., L)``, the lane loop innermost, as :mod:`engine.robots.lane_spatial`).

A ball (:mod:`engine.robots.ball`) is three revolute sub-bodies at angle zero, the first one's
tree transform turned by the quaternion: ``R = R0 R(quat)`` (``R0`` the joint frame's rotation,
``R(quat)`` the kernels' (Eigen's) formula), and one correction to the chain's velocity products,
``K(w) = (-wy wz, wx wz, -wx wy)`` on the last sub-body's angular acceleration
(:func:`engine.robots.compiled_kernels._add_ball_bias`). The forward computes that chain, so the
reverse pass is the chain's, but for two things, which :func:`ball_adjoint_l` adds after it:

- ``K``'s adjoint on the ball's three velocities: ``g^T dK/dw`` with the cotangent ``ab`` of the
  last sub-body's acceleration;
- the configuration: only the first sub-body's transform ``X(R)`` moves with the quaternion, in
  ``v_1 = X v_j + ...``, ``a_1 = X a_j + ...`` and ``F_j += X^T F_1``. With ``X y = [R^T w; R^T (u -
  p x w)]`` for ``y = [w; u]`` of the parent, ``c . X y`` has the gradient ``w c_w^T + (u - p x w)
  c_u^T`` with respect to ``R``; summed over the three pairs ``(v_j, vb_1)``, ``(a_j, ab_1)``,
  ``(Fb_j, F_1)`` (the cotangents' totals after the reverse pass) that is ``G_R``, and ``G_q = R0^T
  G_R`` with respect to ``R(quat)``. Then the quaternion's four numbers through the formula, off
  the unit sphere too (:func:`rotation_quaternion_grad`), and the tangent rows (``R(quat)
  exp(delta)``, Pinocchio's ``q (+) dq``): ``delta_i = <G_q, R(quat) [e_i]x>``, i.e. the skew part
  of ``R(quat)^T G_q``.

RNEA's gradient is then exact for every number of the quaternion, off the unit sphere too. ABA's
(``-lam^T`` RNEA's derivatives) is exact along the sphere: off it the rotations are not
orthogonal, and the composite ``M`` of the forward's ``M^-1 (tau - h)`` is no longer RNEA's
derivative with respect to the accelerations.

Importing this module imports numba.
"""

from __future__ import annotations

from engine.robots.compiled_kernels import _inline
from engine.robots.lane_spatial import _cross_motion_l


@_inline
def ball_bias_at(out, lane, wx, wy, wz):
    """``out[:3, lane] += K(w)``: the velocity product a ball's chain of three revolutes misses, on
    its last sub-body (``w`` its three velocities, rad/s)."""
    out[0, lane] -= wy * wz
    out[1, lane] += wx * wz
    out[2, lane] -= wx * wy


@_inline
def body_acceleration_l(k, S, perm, joints, fv, qd, qdd, b0, v, Xa, t, t2, out, nl):
    """``out (6, L)`` = body ``k``'s acceleration in its frame, rebuilt from what the forward kept:
    ``X a_j + S qdd + (X v_j) x S qd`` (``+ K`` on a ball's last sub-body); the base's (``k = 0``)
    is ``Xa[0]``. ``qd, qdd (B, nv)`` user order, lanes from sample ``b0``; ``t, t2 (6, L)``: scratch."""
    if k == 0:
        for i in range(6):
            for lane in range(nl):
                out[i, lane] = Xa[0, i, lane]
        return
    u = fv + perm[k - 1]
    for i in range(6):
        Ski = S[k - 1, i]
        for lane in range(nl):
            ti = Ski * qd[b0 + lane, u]
            t[i, lane] = ti
            t2[i, lane] = v[k, i, lane] - ti
            out[i, lane] = Xa[k, i, lane] + Ski * qdd[b0 + lane, u]
    _cross_motion_l(t2, t, t, nl)
    for i in range(6):
        for lane in range(nl):
            out[i, lane] += t[i, lane]
    if joints[k - 1, 1] == 3:
        for lane in range(nl):
            b = b0 + lane
            ball_bias_at(out, lane, qd[b, u - 2], qd[b, u - 1], qd[b, u])


@_inline
def add_rotation_grad(G, y, c, p, lane):
    """``G (3, 3) +=`` the gradient of ``c . X y`` with respect to ``R`` (``X`` the motion transform
    of pose ``(R, p)``, ``y (6, L)`` of the parent, ``c (6, L)`` of the child): ``w c_w^T + (u - p
    x w) c_u^T``."""
    w0, w1, w2 = y[0, lane], y[1, lane], y[2, lane]
    p0, p1, p2 = p[0, lane], p[1, lane], p[2, lane]
    t0 = y[3, lane] + w1 * p2 - w2 * p1
    t1 = y[4, lane] + w2 * p0 - w0 * p2
    t2 = y[5, lane] + w0 * p1 - w1 * p0
    for s in range(3):
        cw, cu = c[s, lane], c[3 + s, lane]
        G[0, s] += w0 * cw + t0 * cu
        G[1, s] += w1 * cw + t1 * cu
        G[2, s] += w2 * cw + t2 * cu


@_inline
def quaternion_rotation_grad(C0, k, G, sign, Gq):
    """``Gq (3, 3) = sign R0^T G``: a ball's gradient with respect to ``R(quat)`` from the one with
    respect to its first sub-body's rotation ``R = R0 R(quat)`` (body ``k``; ``R0``: ``C0``'s rotation,
    the pose at angle zero)."""
    for r in range(3):
        for s in range(3):
            Gq[r, s] = sign * (C0[k - 1, r] * G[0, s] + C0[k - 1, 4 + r] * G[1, s] + C0[k - 1, 8 + r] * G[2, s])


@_inline
def rotation_quaternion_grad(x, y, z, w, C):
    """``sum_ij C_ij dR_ij / d(x, y, z, w)`` for ``R(x, y, z, w)`` the kernels' (Eigen's) formula,
    off the unit sphere too: a 4-tuple."""
    return ((2.0 * (y * (C[0, 1] + C[1, 0]) + z * (C[0, 2] + C[2, 0]) + w * (C[2, 1] - C[1, 2]))
             - 4.0 * x * (C[1, 1] + C[2, 2])),
            (2.0 * (x * (C[0, 1] + C[1, 0]) + w * (C[0, 2] - C[2, 0]) + z * (C[1, 2] + C[2, 1]))
             - 4.0 * y * (C[0, 0] + C[2, 2])),
            (2.0 * (w * (C[1, 0] - C[0, 1]) + x * (C[0, 2] + C[2, 0]) + y * (C[1, 2] + C[2, 1]))
             - 4.0 * z * (C[0, 0] + C[1, 1])),
            2.0 * (z * (C[1, 0] - C[0, 1]) + y * (C[0, 2] - C[2, 0]) + x * (C[2, 1] - C[1, 2])))


@_inline
def ball_adjoint_l(n, parent, C0, S, perm, joints, fq, fv, q, qd, qdd, b0, sign, R, p, v, Xa, F, Fb, ab, vb,
                   scratch, gq, gv, gcfg, nl):
    """After the chain's reverse pass of one block (the module docstring): every ball's ``K``
    adjoint added to ``gv``, its tangent rows written to ``gq`` and its quaternion's gradient to
    ``gcfg (B, nq)`` (``sign``: -1 for ABA's ``-lam^T (.)``). ``scratch``: ``(aj, t, t2 (6, L), G,
    Gq (3, 3))``."""
    aj, t, t2, G, Gq = scratch
    for k in range(1, n + 1):
        kind = joints[k - 1, 1]
        u = fv + perm[k - 1]
        if kind == 3:
            for lane in range(nl):
                b = b0 + lane
                wx, wy, wz = qd[b, u - 2], qd[b, u - 1], qd[b, u]
                A0, A1, A2 = ab[k, 0, lane], ab[k, 1, lane], ab[k, 2, lane]
                gv[b, u - 2] += sign * (A1 * wz - A2 * wy)
                gv[b, u - 1] -= sign * (A0 * wz + A2 * wx)
                gv[b, u] += sign * (A1 * wx - A0 * wy)
        elif kind == 1:
            j = parent[k]
            body_acceleration_l(j, S, perm, joints, fv, qd, qdd, b0, v, Xa, t, t2, aj, nl)
            col = fq + joints[k - 1, 0]
            for lane in range(nl):
                b = b0 + lane
                for r in range(3):
                    for s in range(3):
                        G[r, s] = 0.0
                add_rotation_grad(G, v[j], vb[k], p[k], lane)
                add_rotation_grad(G, aj, ab[k], p[k], lane)
                add_rotation_grad(G, Fb[j], F[k], p[k], lane)
                quaternion_rotation_grad(C0, k, G, sign, Gq)
                x, y, z, w = q[b, col], q[b, col + 1], q[b, col + 2], q[b, col + 3]
                g4 = rotation_quaternion_grad(x, y, z, w, Gq)
                for i in range(4):
                    gcfg[b, col + i] = g4[i]
                # the tangent rows: the skew part of Rq^T G_q
                rq = ((1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)),
                      (2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)),
                      (2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)))
                m01 = m02 = m10 = m12 = m20 = m21 = 0.0
                for r in range(3):
                    m01 += rq[r][0] * Gq[r, 1]
                    m02 += rq[r][0] * Gq[r, 2]
                    m10 += rq[r][1] * Gq[r, 0]
                    m12 += rq[r][1] * Gq[r, 2]
                    m20 += rq[r][2] * Gq[r, 0]
                    m21 += rq[r][2] * Gq[r, 1]
                gq[b, u], gq[b, u + 1], gq[b, u + 2] = m21 - m12, m02 - m20, m10 - m01
