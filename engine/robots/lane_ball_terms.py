"""Ball joints in the lane kernels (:mod:`engine.robots.derivative_lane_kernels`): the places
where a ball's derivatives differ from a chain of three revolutes (see the docstring of
:mod:`engine.robots.derivative_kernels`), on ``L`` samples at once (arrays ``(..., L)``, the lane
loop innermost, as :mod:`engine.robots.lane_terms`), and :func:`_joint_bodies`, which both the
lane and the per-sample kernels use.

A ball (:mod:`engine.robots.ball`) is three massless-but-the-last revolute sub-bodies, the first
turned by the quaternion (``joints[k - 1, 1]`` 1, 2, 3 for the sub-bodies, 0 for a scalar joint).
Per body ``k``: ``jf[k]`` its joint's first body, ``jp[k]`` the body above the joint. Then
``psi = v_jp x S``, ``psi2 = a_jp x S + v_jp x psi`` (:func:`_ball_motion`), ``Phi_c = psi_c +
v_child x S_c`` on the ball's three columns (:func:`_ball_phi`), and within one ball the entries
of dtau/dq above the diagonal gain ``(S_d x S_e) . F_k`` (:func:`_ball_upper`).
Importing this module imports numba.
"""

from __future__ import annotations

from engine.robots.compiled_kernels import _inline
from engine.robots.lane_terms import _add6, _cross_t, _ld6, _ld6o, _st6


@_inline
def _joint_bodies(parent, joints, jf, jp):
    """Per body ``k`` (1..n): ``jf[k]`` its joint's first body and ``jp[k]`` the body above the
    joint (``parent[jf[k]]``): ``k`` and its parent but for a ball's second and third sub-bodies
    (``joints[k - 1, 1]`` 2 and 3, :func:`engine.robots.compiled_kernels._joint_pose`)."""
    jf[0] = jp[0] = 0
    for k in range(1, parent.shape[0]):
        f = k
        for _ in range(joints[k - 1, 1] - 1):
            f = parent[f]
        jf[k] = f
        jp[k] = parent[f]


@_inline
def _ball_turn(L, qT, col, Rk):
    """``Rk (3, 3, L) <- Rk Rq``: a ball's first sub-body's world rotation (posed at angle zero)
    turned by each lane's quaternion ``qT[col:col + 4, l]`` (x, y, z, w; the position is unchanged)."""
    for l in range(L):
        x, y, z, w = qT[col, l], qT[col + 1, l], qT[col + 2, l], qT[col + 3, l]
        r00, r01, r02 = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)
        r10, r11, r12 = 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)
        r20, r21, r22 = 2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)
        for r in range(3):
            a0, a1, a2 = Rk[r, 0, l], Rk[r, 1, l], Rk[r, 2, l]
            Rk[r, 0, l] = a0 * r00 + a1 * r10 + a2 * r20
            Rk[r, 1, l] = a0 * r01 + a1 * r11 + a2 * r21
            Rk[r, 2, l] = a0 * r02 + a1 * r12 + a2 * r22


@_inline
def _ball_motion(L, Sw, xd, xdd, vp, ap, aj, Pd, Pdd, Phi, ak):
    """A ball's second or third sub-body (after :func:`engine.robots.lane_terms._motion`, which
    took its parent sub-body's velocity): ``psi = v_jp x S``, ``psi2 = a_jp x S + v_jp x psi``,
    ``Phi = 2 psi`` (:func:`_ball_phi` corrects it) from the joint's parent's ``vp, ap (6, L)``,
    and the body's ``ak = aj + S xdd + psi xd`` (``aj`` its parent sub-body's)."""
    for l in range(L):
        s = _ld6(Sw, l)
        v = _ld6(vp, l)
        a = _ld6(ap, l)
        b = _ld6(aj, l)
        x, y = xd[l], xdd[l]
        pd = _cross_t(v, s)
        _st6(Pd, l, pd)
        _st6(Pdd, l, _add6(_cross_t(a, s), _cross_t(v, pd)))
        _st6(Phi, l, (2.0 * pd[0], 2.0 * pd[1], 2.0 * pd[2], 2.0 * pd[3], 2.0 * pd[4], 2.0 * pd[5]))
        _st6(ak, l, (b[0] + s[0] * y + pd[0] * x, b[1] + s[1] * y + pd[1] * x, b[2] + s[2] * y + pd[2] * x,
                     b[3] + s[3] * y + pd[3] * x, b[4] + s[4] * y + pd[4] * x, b[5] + s[5] * y + pd[5] * x))


@_inline
def _ball_phi(L, k, fv, parent, vc, Sw, Pd, Phi):
    """A ball joint's ``Phi_c = psi_c + v_child x S_c`` ``(6, L)`` for its three columns (sub-bodies
    ``k``, its last, its parent and grandparent; ``vc (6, L)`` the child's velocity, that of ``k``)."""
    i = k
    for _ in range(3):
        e = fv + i - 1
        Se, Pe, Fe = Sw[e], Pd[e], Phi[e]
        for l in range(L):
            _st6(Fe, l, _add6(_ld6(Pe, l), _cross_t(_ld6(vc, l), _ld6(Se, l))))
        i = parent[i]


@_inline
def _cross_dot_t(x, y, f):
    """``(x x y) . f`` (x, y motions, f a force; 6-tuples)."""
    return (f[0] * (x[1] * y[2] - x[2] * y[1]) + f[1] * (x[2] * y[0] - x[0] * y[2]) + f[2] * (x[0] * y[1] - x[1] * y[0])
            + f[3] * (x[1] * y[5] - x[2] * y[4] + x[4] * y[2] - x[5] * y[1])
            + f[4] * (x[2] * y[3] - x[0] * y[5] + x[5] * y[0] - x[3] * y[2])
            + f[5] * (x[0] * y[4] - x[1] * y[3] + x[3] * y[1] - x[4] * y[0]))


@_inline
def _ball_upper(L, k, d, ud, fv, parent, jf, rows, Sw, Fk, o, DQ):
    """Dof d (body k, a ball's second or third sub-body), every lane: the entries of dtau/dq in
    the rows of its joint's dofs above it, column ``ud``, less ``S_e^T (S_d x* F_k)`` (within one
    ball every column is in the subtree of every other): ``DQ[rows[e], ud] += (S_d x S_e) . F_k``,
    ``F_k`` the subtree's force, rows ``o..o+5`` of ``Fk``; ``DQ (rows, columns, L)``."""
    Sd = Sw[d]
    i = k
    while i != jf[k]:
        i = parent[i]
        e = fv + i - 1
        Se = Sw[e]
        re = rows[e]
        for l in range(L):
            DQ[re, ud, l] += _cross_dot_t(_ld6(Sd, l), _ld6(Se, l), _ld6o(Fk, o, l))
