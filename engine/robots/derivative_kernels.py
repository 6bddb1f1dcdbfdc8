"""Numba kernels of the analytic derivatives of RNEA and ABA (see :mod:`engine.robots.derivatives`).

Same constants and conventions as :mod:`engine.robots.compiled_kernels` (bodies ``1..n`` in the
internal order, ``perm`` their user joint index, spatial vectors ``[angular; linear]``).

The recursions run in the world frame, at the world origin, as Carpentier and Mansard
(*Analytical derivatives of rigid body dynamics algorithms*, RSS 2018) and Pinocchio's
``computeRNEADerivatives`` do: there a joint's motion subspace ``S_i`` depends on ``q`` only
through the joints above it (``dS_j/dq_i = S_i x S_j`` for i an ancestor of j or j), and
composite quantities are plain sums. With ``psi_i = v_p x S_i`` and ``psi2_i = a_p x S_i +
v_p x psi_i`` (p the parent) and the composites of the subtree of i, ``IC_i`` (inertia),
``BC_i`` (the body terms ``B = v x* I - I v x + (. x* I v)``) and ``F_i`` (forces):

- row j, column i, j in the subtree of i: ``dtau_j/dq_i = S_j^T (IC_j psi2_i + BC_j psi_i)``,
  ``dtau_j/dv_i = S_j^T (IC_j (2 psi_i) + BC_j S_i)``, ``M_ji = S_j^T IC_j S_i``;
- j a strict ancestor of i: ``dtau_j/dq_i = S_j^T (S_i x* F_i + IC_i psi2_i + BC_i psi_i)``,
  ``dtau_j/dv_i = S_j^T (IC_i (2 psi_i) + BC_i S_i)``, ``M_ji = S_j^T IC_i S_i``.

A body's ``B`` about the world origin reduces to ``[[Q - [n]x, 0], [-2 [L]x, 0]]`` with
``(n, L) = I v`` its momentum and ``Q = -(Io [w]x - [w]x Io) - (u h^T + h u^T) + 2 (h . u) 1``
(``v = [w; u]``, ``h = m c``, ``Io`` the rotational inertia about the world origin), so every
composite is 22 numbers. A free-flyer base is a joint of six columns ``S_c = X_0 e_c`` (its
velocity ``[linear; angular]`` in its frame) whose parent is the world (``psi_c = 0``, ``psi2_c
= a_g x S_c``; its own ``dS/dt = v_0 x S_c`` enters ``dtau/dv``); derivatives with respect to
``q`` are then taken in the tangent space (``q (+) dq``: the base moves by ``M exp(dq)``), as
Pinocchio does. With a free-flyer base the "world" of these recursions is the base's frame
(the root at the origin, gravity ``R^T a_g`` rotated into it): the dynamics in base
coordinates depend on the base's pose only through that gravity, and the base's columns are
unit vectors, so their entries are components of ``U``, ``Y``, ``Z``. ABA's derivatives are
``-M^-1`` times these at the ABA result, ``M`` factorised as ``L^T D L`` along the tree
(Featherstone 2008, table 6.3), applied to ``[dtau/dq | dtau/dv | 1]`` by the tree's sparse
triangular solves, a few rows at a time (:mod:`engine.robots.tree_solve_kernels`).

The full matrices (modes RNEA and ABA) run these passes with the samples in SIMD lanes
(:mod:`engine.robots.derivative_lane_kernels`); this module's per-sample passes serve the
vector-Jacobian products (RNEA_VJP, ABA_VJP), which need ``M`` only to solve with it.

A ball joint (:mod:`engine.robots.ball`: three revolute sub-bodies about the child's axes, the
first turned by the quaternion, the mass on the last) is one joint of three columns ``S_c``
(Pinocchio's JointModelSpherical; ``q exp(dq)`` rotates the child frame about ``S_c``, so
``dS_c'/dq_c = S_c x S_c'`` within the joint too). Per body, once per call, ``jf`` (the joint's
first body) and ``jp`` (the body above the joint: a scalar joint's parent, for a ball's three
sub-bodies the parent of the first; :func:`_joint_bodies`); the formulas differ in three places:
``psi_c = v_jp x S_c`` and ``psi2_c = a_jp x S_c + v_jp x psi_c`` (the joint's parent, not the
sub-body's; the sub-bodies' accelerations ``a_k = a_j + S_c qdd_c + psi_c qd_c`` then sum to the
ball's ``a_p + S qdd + v_p x S qd``, no bias term); ``Phi_c = psi_c + v_child x S_c`` (not ``2
psi_c``: the child's velocity has the other columns' part, :func:`_ball_phi`); and within one
ball every column is in the subtree of every other, so its entries above the diagonal of
``dtau/dq`` lose ``S_e^T (S_d x* F)``: ``+ (S_d x S_e) . F_d`` (:func:`_cross_dot`; likewise in
ABA's acceleration pass and the products). ``dtau/dv`` and ``M`` need nothing more (``Z`` has no
force term); the massless sub-bodies add nothing to the composites. Checked against Pinocchio
(tests/engine/robots/test_ball_derivatives.py). The lane kernels' versions of these steps:
:mod:`engine.robots.lane_ball_terms`.
Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots.compiled_kernels import (
    _add_cross_force,
    _gravity_in_base,
    _inline,
    _jit,
    _joint_pose,
    _quaternion_rotation,
)
from engine.robots.derivative_lane_kernels import LANES, MIN_LANES, aba_lanes, aba_one, rnea_lanes, rnea_one
from engine.robots.lane_ball_terms import _joint_bodies
from engine.robots.lane_ltdl import _orders
from engine.robots.tree_solve_kernels import _ltdl, _ltdl_solve

# what a call of derivatives_kernel writes (its ``mode``)
RNEA, RNEA_VJP, ABA, ABA_VJP = 0, 1, 2, 3


@_inline
def _cross_motion(x, y, out):
    """out = x x y (motion)."""
    out[0] = x[1] * y[2] - x[2] * y[1]
    out[1] = x[2] * y[0] - x[0] * y[2]
    out[2] = x[0] * y[1] - x[1] * y[0]
    out[3] = x[1] * y[5] - x[2] * y[4] + x[4] * y[2] - x[5] * y[1]
    out[4] = x[2] * y[3] - x[0] * y[5] + x[5] * y[0] - x[3] * y[2]
    out[5] = x[0] * y[4] - x[1] * y[3] + x[3] * y[1] - x[4] * y[0]


@_inline
def _dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@_inline
def _dot3(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2]


@_inline
def _to_world(R, p, s, out):
    """out = the motion s (6,) of a frame at pose (R, p), in world axes at the world origin."""
    for i in range(3):
        out[i] = R[i, 0] * s[0] + R[i, 1] * s[1] + R[i, 2] * s[2]
    for i in range(3):
        out[3 + i] = R[i, 0] * s[3] + R[i, 1] * s[4] + R[i, 2] * s[5]
    out[3] += p[1] * out[2] - p[2] * out[1]
    out[4] += p[2] * out[0] - p[0] * out[2]
    out[5] += p[0] * out[1] - p[1] * out[0]


@_inline
def _sym_times(A, x, i):
    """Row i of a symmetric 3x3 ``A = (xx, xy, xz, yy, yz, zz)`` times x (3,)."""
    if i == 0:
        return A[0] * x[0] + A[1] * x[1] + A[2] * x[2]
    if i == 1:
        return A[1] * x[0] + A[3] * x[1] + A[4] * x[2]
    return A[2] * x[0] + A[4] * x[1] + A[5] * x[2]


@_inline
def _body_terms(R, p, mk, ck, Ick, v, a, m_, h_, I_, Q_, n_, L_, f_):
    """One body's world terms, written into its composite slots: mass, first moment ``h``,
    rotational inertia about the world origin ``I_ (6,)`` (symmetric), ``Q_ (6,)``, momentum
    ``(n_, L_)`` and force ``f_ = I a + v x* I v``."""
    cw0 = R[0, 0] * ck[0] + R[0, 1] * ck[1] + R[0, 2] * ck[2] + p[0]
    cw1 = R[1, 0] * ck[0] + R[1, 1] * ck[1] + R[1, 2] * ck[2] + p[1]
    cw2 = R[2, 0] * ck[0] + R[2, 1] * ck[1] + R[2, 2] * ck[2] + p[2]
    cc = cw0 * cw0 + cw1 * cw1 + cw2 * cw2
    cw = (cw0, cw1, cw2)
    s = 0
    for i in range(3):
        for j in range(i, 3):
            x = 0.0
            for k in range(3):
                x += R[i, k] * (Ick[k, 0] * R[j, 0] + Ick[k, 1] * R[j, 1] + Ick[k, 2] * R[j, 2])
            x -= mk * cw[i] * cw[j]
            if i == j:
                x += mk * cc
            I_[s] = x
            s += 1
    m_[0] = mk
    h_[0], h_[1], h_[2] = mk * cw0, mk * cw1, mk * cw2
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    w = (w0, w1, w2)
    # momentum
    n_[0] = _sym_times(I_, w, 0) + h_[1] * u2 - h_[2] * u1
    n_[1] = _sym_times(I_, w, 1) + h_[2] * u0 - h_[0] * u2
    n_[2] = _sym_times(I_, w, 2) + h_[0] * u1 - h_[1] * u0
    L_[0] = mk * u0 - (h_[1] * w2 - h_[2] * w1)
    L_[1] = mk * u1 - (h_[2] * w0 - h_[0] * w2)
    L_[2] = mk * u2 - (h_[0] * w1 - h_[1] * w0)
    # Q = -(T + T^T) - (u h^T + h u^T) + 2 (h.u) 1, T = Io [w]x
    hu = h_[0] * u0 + h_[1] * u1 + h_[2] * u2
    u = (u0, u1, u2)
    s = 0
    for i in range(3):
        a0_, a1_, a2_ = _sym_row(I_, i)
        t0 = a1_ * w2 - a2_ * w1
        t1 = a2_ * w0 - a0_ * w2
        t2 = a0_ * w1 - a1_ * w0
        ti = (t0, t1, t2)           # row i of T = Io [w]x: T[i, j] = (Io_i x w)_j
        for j in range(i, 3):
            b0_, b1_, b2_ = _sym_row(I_, j)
            tj = (b1_ * w2 - b2_ * w1, b2_ * w0 - b0_ * w2, b0_ * w1 - b1_ * w0)
            x = -(ti[j] + tj[i]) - (u[i] * h_[j] + h_[i] * u[j])
            if i == j:
                x += 2.0 * hu
            Q_[s] = x
            s += 1
    # force f = I a + v x* (n, L)
    aw = (a[0], a[1], a[2])
    f_[0] = _sym_times(I_, aw, 0) + h_[1] * a[5] - h_[2] * a[4]
    f_[1] = _sym_times(I_, aw, 1) + h_[2] * a[3] - h_[0] * a[5]
    f_[2] = _sym_times(I_, aw, 2) + h_[0] * a[4] - h_[1] * a[3]
    f_[3] = mk * a[3] - (h_[1] * a[2] - h_[2] * a[1])
    f_[4] = mk * a[4] - (h_[2] * a[0] - h_[0] * a[2])
    f_[5] = mk * a[5] - (h_[0] * a[1] - h_[1] * a[0])
    f_[0] += w1 * n_[2] - w2 * n_[1] + u1 * L_[2] - u2 * L_[1]
    f_[1] += w2 * n_[0] - w0 * n_[2] + u2 * L_[0] - u0 * L_[2]
    f_[2] += w0 * n_[1] - w1 * n_[0] + u0 * L_[1] - u1 * L_[0]
    f_[3] += w1 * L_[2] - w2 * L_[1]
    f_[4] += w2 * L_[0] - w0 * L_[2]
    f_[5] += w0 * L_[1] - w1 * L_[0]


@_inline
def _sym_row(A, i):
    if i == 0:
        return A[0], A[1], A[2]
    if i == 1:
        return A[1], A[3], A[4]
    return A[2], A[4], A[5]


@_inline
def _ic_times(m, h, I, x, out):
    """out = IC x for the composite ``(m, h (3,), I (6,) symmetric about the world origin)``."""
    xw = (x[0], x[1], x[2])
    out[0] = _sym_times(I, xw, 0) + h[1] * x[5] - h[2] * x[4]
    out[1] = _sym_times(I, xw, 1) + h[2] * x[3] - h[0] * x[5]
    out[2] = _sym_times(I, xw, 2) + h[0] * x[4] - h[1] * x[3]
    out[3] = m * x[3] - (h[1] * x[2] - h[2] * x[1])
    out[4] = m * x[4] - (h[2] * x[0] - h[0] * x[2])
    out[5] = m * x[5] - (h[0] * x[1] - h[1] * x[0])


@_inline
def _add_bc_times(Q, n, L, x, out):
    """out += BC x = ``[Q xw + xw x n; 2 xw x L]``."""
    xw = (x[0], x[1], x[2])
    out[0] += _sym_times(Q, xw, 0) + x[1] * n[2] - x[2] * n[1]
    out[1] += _sym_times(Q, xw, 1) + x[2] * n[0] - x[0] * n[2]
    out[2] += _sym_times(Q, xw, 2) + x[0] * n[1] - x[1] * n[0]
    out[3] += 2.0 * (x[1] * L[2] - x[2] * L[1])
    out[4] += 2.0 * (x[2] * L[0] - x[0] * L[2])
    out[5] += 2.0 * (x[0] * L[1] - x[1] * L[0])


@_inline
def _bct_times(Q, n, L, s, out):
    """out (3,) = the angular half of BC^T s = ``Q sw + n x sw + 2 L x su`` (its linear half is 0)."""
    sw = (s[0], s[1], s[2])
    for i in range(3):
        out[i] = _sym_times(Q, sw, i)
    out[0] += n[1] * s[2] - n[2] * s[1] + 2.0 * (L[1] * s[5] - L[2] * s[4])
    out[1] += n[2] * s[0] - n[0] * s[2] + 2.0 * (L[2] * s[3] - L[0] * s[5])
    out[2] += n[0] * s[1] - n[1] * s[0] + 2.0 * (L[0] * s[4] - L[1] * s[3])


@_inline
def _row_terms(d, m, h, I, Q, n, L, F, Sw, Pd, Pdd, Phi, U, W, Y, Z):
    """The composite terms of dof d over the subtree with composites (m, h, I, Q, n, L, F):
    ``U = IC S``, ``W = (BC^T S)_angular``, ``Y = S x* F + IC psi2 + BC psi``, ``Z = IC Phi + BC S``."""
    _ic_times(m, h, I, Sw[d], U[d])
    _bct_times(Q, n, L, Sw[d], W[d])
    _ic_times(m, h, I, Pdd[d], Y[d])
    _add_bc_times(Q, n, L, Pd[d], Y[d])
    _add_cross_force(Sw[d], F, Y[d])
    _ic_times(m, h, I, Phi[d], Z[d])
    _add_bc_times(Q, n, L, Sw[d], Z[d])


@_inline
def _cross_dot(x, y, f):
    """``(x x y) . f`` (x, y motions, f a force) ``= -y . (x x* f)``."""
    return (f[0] * (x[1] * y[2] - x[2] * y[1]) + f[1] * (x[2] * y[0] - x[0] * y[2]) + f[2] * (x[0] * y[1] - x[1] * y[0])
            + f[3] * (x[1] * y[5] - x[2] * y[4] + x[4] * y[2] - x[5] * y[1])
            + f[4] * (x[2] * y[3] - x[0] * y[5] + x[5] * y[0] - x[3] * y[2])
            + f[5] * (x[0] * y[4] - x[1] * y[3] + x[3] * y[1] - x[4] * y[0]))


@_inline
def _ball_phi(k, fv, parent, vc, Sw, Pd, Phi, t6):
    """A ball joint's ``Phi_c = psi_c + v_child x S_c`` for its three columns (sub-bodies ``k``, its
    parent and grandparent; ``vc`` the child's velocity; a scalar joint's ``2 psi``)."""
    i = k
    for _ in range(3):
        e = fv + i - 1
        _cross_motion(vc, Sw[e], t6)
        for r in range(6):
            Phi[e, r] = Pd[e, r] + t6[r]
        i = parent[i]


@_inline
def _base_columns(d, md, U, DM, cols):
    """Row ``d``'s entries of M in the base's columns ``S_e`` (unit vectors in the base's frame:
    ``U_d . S_e = U[d, r]``, ``r`` the spatial index of ``S_e``), at row ``md``; where ``cols`` (d
    not a base dof) also column ``d``'s entries in the base's rows."""
    for e in range(6):
        r = (e + 3) % 6
        DM[md, e] = U[d, r]
        if cols:
            DM[e, md] = U[d, r]


@_inline
def _vjp(b, n, fv, parent, jp, user, x, Sw, Pd, Pdd, Phi, U, W, Y, Z, F, A, Aw, Lam, t6, armature, damping, aba,
         O1, O2, O3):
    """``x^T`` times the derivative matrices in O(n): with the subtree sums ``A_i = sum_{j >= i}
    x_j U_j``, ``Aw_i = sum x_j W_j`` and the ancestor sums ``Lam_k = sum_{j <= k} x_j S_j``, column
    i (parent p) is ``A_i . psi2_i + Aw_i . psi_i + Lam_p . Y_i`` (q), ``A_i . Phi_i + Aw_i . S_i +
    Lam_p . Z_i`` (v), ``A_i . S_i + Lam_p . U_i`` (a); the base's columns take the sums over the
    whole tree. A ball's column drops ``S_i x* F_i`` from the rows of its own joint above it:
    ``+ (S_i x (Lam_p - Lam_jp)) . F_i`` (``jp`` the body above the joint, ``F_i`` the subtree's
    force). RNEA: into ``O[b, 0]``; ABA (x = lambda): ``-``, ``-(. + damping x)``, ``x``."""
    for k in range(n + 1):
        A[k, :] = 0.0
        Aw[k, :] = 0.0
        Lam[k, :] = 0.0
    for c in range(fv):
        for i in range(6):
            A[0, i] += x[c] * U[c, i]
            Lam[0, i] += x[c] * Sw[c, i]
        for i in range(3):
            Aw[0, i] += x[c] * W[c, i]
    for k in range(1, n + 1):
        d = fv + k - 1
        p = parent[k]
        for i in range(6):
            Lam[k, i] = Lam[p, i] + x[d] * Sw[d, i]
            A[k, i] += x[d] * U[d, i]
        for i in range(3):
            Aw[k, i] += x[d] * W[d, i]
    for k in range(n, 0, -1):
        p = parent[k]
        for i in range(6):
            A[p, i] += A[k, i]
        for i in range(3):
            Aw[p, i] += Aw[k, i]
    for d in range(fv + n):
        k = 0 if d < fv else d - fv + 1
        p = parent[k] if k > 0 else 0
        s1 = _dot6(A[k], Pdd[d]) + _dot3(Aw[k], Pd[d])
        s2 = _dot6(A[k], Phi[d]) + _dot3(Aw[k], Sw[d])
        s3 = _dot6(A[k], Sw[d])
        if k > 0:
            s1 += _dot6(Lam[p], Y[d])
            if jp[k] != p:          # a ball's second or third sub-body
                for i in range(6):
                    t6[i] = Lam[p, i] - Lam[jp[k], i]
                s1 += _cross_dot(Sw[d], t6, F[k])
            s2 += _dot6(Lam[p], Z[d])
            s3 += _dot6(Lam[p], U[d]) + armature[k - 1] * x[d]
        u = user[d]
        if aba:
            O1[b, 0, u] = -s1
            O2[b, 0, u] = -(s2 + damping[u] * x[d])
            O3[b, 0, u] = x[d]
        else:
            O1[b, 0, u] = s1
            O2[b, 0, u] = s2
            O3[b, 0, u] = s3



def derivatives_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, mode, g,
                       O1, O2, O3, tau, joints):
    """Derivatives of RNEA (``mode`` RNEA, at ``qdd``) or of ABA, all coordinates in the user's
    order, ``(B, nv, nv)`` each:

    - RNEA: ``O1 = dtau/dq`` (tangent), ``O2 = dtau/dv``, ``O3 = dtau/da = M`` (armature on its diagonal);
    - RNEA_VJP: ``O1[:, 0], O2[:, 0], O3[:, 0]`` ``(B, nv)`` the products ``g^T dtau/dq`` etc. with
      ``g (B, nv)``;
    - ABA: ``qdd`` holds the applied forces (damping subtracted); the accelerations ``M^-1 (qdd - h)``
      are written into ``tau``, and ``O1 = -M^-1 dtau/dq``, ``O2 = -M^-1 (dtau/dv + diag(damping))``,
      ``O3 = M^-1`` at them (one pass at zero acceleration gives ``h``, ``M`` and the derivatives
      there, a second, acceleration-only pass the rest: the derivatives are affine in ``qdd``);
    - ABA_VJP: ``qdd`` the ABA result; ``g^T`` times the ABA derivatives.

    RNEA and ABA run in blocks of ``LANES`` samples (:mod:`engine.robots.derivative_lane_kernels`;
    batches under ``MIN_LANES`` one sample at a time, compiled for one lane);
    ABA solves ``[DQ | DV | 1]`` per sample (:func:`engine.robots.tree_solve_kernels._tree_solve`).
    ``damping (nv,)`` only enters the ABA modes; ``tau (B, nv)``: RNEA's value (armature included);
    ``joints (n, 2)`` each body's configuration column and kind (:func:`engine.robots.compiled_kernels._joint_pose`).

    A Python function: it calls the kernel compiled for ``mode`` (one compiled body per mode, the
    mode a constant there, so LLVM keeps only that mode's code; only the modes called compile).
    """
    if mode == RNEA and q.shape[0] >= MIN_LANES:
        rnea_lanes(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, O1, O2, O3, tau, joints, LANES)
    elif mode == RNEA:
        rnea_one(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, floating, O1, O2, O3, tau, joints)
    elif mode == ABA and q.shape[0] >= MIN_LANES:
        aba_lanes(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, O1, O2, O3, tau,
                  joints, LANES)
    elif mode == ABA:
        aba_one(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, O1, O2, O3, tau,
                joints)
    else:
        _KERNELS[mode](parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, g, O1, O2, O3,
                       tau, joints)


@_jit
def _rnea_vjp_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, g, O1, O2, O3,
                     tau, joints):
    _derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, RNEA_VJP, g,
                 O1, O2, O3, tau, joints)


@_jit
def _aba_vjp_kernel(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, g, O1, O2, O3,
                    tau, joints):
    _derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, ABA_VJP, g,
                 O1, O2, O3, tau, joints)


@_inline
def _derivatives(parent, C0, C, S, m, c, Ic, perm, q, qd, qdd, a0, armature, damping, floating, mode, g,
                 O1, O2, O3, tau, joints):
    """The body of :func:`derivatives_kernel`'s vector-Jacobian products, compiled once per ``mode``
    (RNEA_VJP or ABA_VJP, a constant there). The full matrices (RNEA, ABA) run the same passes
    with the samples in SIMD lanes (:mod:`engine.robots.derivative_lane_kernels`)."""
    B = q.shape[0]
    n = perm.shape[0]
    fq, fv = (7, 6) if floating else (0, 0)
    nv = n + fv
    Rw = np.zeros((n + 1, 3, 3))
    pw = np.zeros((n + 1, 3))
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    Sw = np.zeros((nv, 6))
    Pd = np.zeros((nv, 6))
    Pdd = np.zeros((nv, 6))
    Phi = np.zeros((nv, 6))
    U = np.zeros((nv, 6))
    W = np.zeros((nv, 3))
    Y = np.zeros((nv, 6))
    Z = np.zeros((nv, 6))
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    cm = np.zeros((n + 1, 1))
    ch = np.zeros((n + 1, 3))
    cI = np.zeros((n + 1, 6))
    cQ = np.zeros((n + 1, 6))
    cn = np.zeros((n + 1, 3))
    cL = np.zeros((n + 1, 3))
    F = np.zeros((n + 1, 6))
    DM = np.zeros((nv, nv))         # M in the internal order (ABA_VJP)
    A = np.zeros((n + 1, 6))
    Aw = np.zeros((n + 1, 3))
    Lam = np.zeros((n + 1, 6))
    e6 = np.zeros(6)
    ab = np.zeros(6)
    Rq = np.zeros((3, 3))
    x = np.zeros(nv)
    user, lam = _orders(parent, perm, floating)     # internal dof -> its user index, its parent dof
    jf = np.empty(n + 1, dtype=np.int64)    # body -> its joint's first body (a ball: its first sub-body)
    jp = np.empty(n + 1, dtype=np.int64)    # body -> the body above its joint (psi's v_p, a_p)
    _joint_bodies(parent, joints, jf, jp)
    for i in range(3):
        Rw[0, i, i] = 1.0                   # a fixed base: the root is the world
    aba = mode == ABA_VJP
    for b in range(B):
        if floating:    # computed in the base's frame (the root at the origin), gravity rotated into it
            _quaternion_rotation(q, b, Rq)
            _gravity_in_base(Rq, a0, ab)
            for col in range(6):
                Sw[col, :] = 0.0
                Sw[col, (col + 3) % 6] = 1.0    # velocity [linear; angular] -> spatial [angular; linear]
            for i in range(3):
                v[0, i], v[0, 3 + i] = qd[b, 3 + i], qd[b, i]
                a[0, i] = ab[i] + qdd[b, 3 + i]
                a[0, 3 + i] = ab[3 + i] + qdd[b, i]
            for col in range(6):
                Pd[col, :] = 0.0
                _cross_motion(ab, Sw[col], Pdd[col])
                _cross_motion(v[0], Sw[col], Phi[col])
            _body_terms(Rw[0], pw[0], m[0], c[0], Ic[0], v[0], a[0], cm[0], ch[0], cI[0], cQ[0], cn[0], cL[0], F[0])
        else:
            for i in range(6):
                v[0, i] = 0.0
                a[0, i] = a0[i]
        for k in range(1, n + 1):
            d = fv + k - 1
            j = parent[k]
            jj = jp[k]
            _joint_pose(C0, C, k - 1, q, b, fq + joints[k - 1, 0], joints[k - 1, 1], Rl, pl)
            for r in range(3):
                for col in range(3):
                    Rw[k, r, col] = Rw[j, r, 0] * Rl[0, col] + Rw[j, r, 1] * Rl[1, col] + Rw[j, r, 2] * Rl[2, col]
                pw[k, r] = Rw[j, r, 0] * pl[0] + Rw[j, r, 1] * pl[1] + Rw[j, r, 2] * pl[2] + pw[j, r]
            _to_world(Rw[k], pw[k], S[k - 1], Sw[d])
            _cross_motion(v[jj], Sw[d], Pd[d])
            _cross_motion(a[jj], Sw[d], Pdd[d])
            _cross_motion(v[jj], Pd[d], e6)
            xd = qd[b, fv + perm[k - 1]]
            xdd = qdd[b, fv + perm[k - 1]]
            for i in range(6):
                Pdd[d, i] += e6[i]
                Phi[d, i] = 2.0 * Pd[d, i]
                v[k, i] = v[j, i] + Sw[d, i] * xd
                a[k, i] = a[j, i] + Sw[d, i] * xdd + Pd[d, i] * xd
            if joints[k - 1, 1] == 3:       # a ball's last sub-body: its child's velocity is known
                _ball_phi(k, fv, parent, v[k], Sw, Pd, Phi, e6)
            _body_terms(Rw[k], pw[k], m[k], c[k], Ic[k], v[k], a[k], cm[k], ch[k], cI[k], cQ[k], cn[k], cL[k], F[k])
        for k in range(n, 0, -1):
            d = fv + k - 1
            ud = user[d]
            _row_terms(d, cm[k, 0], ch[k], cI[k], cQ[k], cn[k], cL[k], F[k], Sw, Pd, Pdd, Phi, U, W, Y, Z)
            tau[b, ud] = _dot6(Sw[d], F[k]) + armature[k - 1] * qdd[b, ud]
            if aba:         # M only: the vector-Jacobian products are O(n) below
                i = k
                while i != 0:
                    e = fv + i - 1
                    DM[d, e] = DM[e, d] = _dot6(U[d], Sw[e])
                    i = parent[i]
                if floating:
                    _base_columns(d, d, U, DM, True)
                DM[d, d] += armature[k - 1]
            j = parent[k]
            if j != 0 or floating:
                cm[j, 0] += cm[k, 0]
                for i in range(3):
                    ch[j, i] += ch[k, i]
                    cn[j, i] += cn[k, i]
                    cL[j, i] += cL[k, i]
                for i in range(6):
                    cI[j, i] += cI[k, i]
                    cQ[j, i] += cQ[k, i]
                    F[j, i] += F[k, i]
        for d in range(fv):
            _row_terms(d, cm[0, 0], ch[0], cI[0], cQ[0], cn[0], cL[0], F[0], Sw, Pd, Pdd, Phi, U, W, Y, Z)
            tau[b, d] = _dot6(Sw[d], F[0])
            if aba:
                _base_columns(d, d, U, DM, False)
        for d in range(nv):
            x[d] = g[b, user[d]]
        if aba:             # lambda = M^-1 g; then -lambda^T dtau/dq, -lambda^T dtau/dv, lambda
            _ltdl(DM, lam)
            _ltdl_solve(DM, lam, x)
        _vjp(b, n, fv, parent, jp, user, x, Sw, Pd, Pdd, Phi, U, W, Y, Z, F, A, Aw, Lam, e6, armature, damping, aba,
             O1, O2, O3)


_KERNELS = {RNEA_VJP: _rnea_vjp_kernel, ABA_VJP: _aba_vjp_kernel}
