"""Calls of the vector-Jacobian kernels (:mod:`engine.robots.vjp_kernels`): the O(n) backward of
RNEA and ABA that :mod:`engine.robots.backends.compiled_autograd` runs. A differentiable call's
forward is :func:`forward`, which keeps the per-body results of RNEA's forward passes
(:class:`Saved`); its backward is :func:`adjoint`, the reverse pass alone.

Conventions as :mod:`engine.robots.compiled_dynamics` (numpy float64, user order, full
coordinates; consts ``(parent, C0, C, S, m, c, Ic, perm)``; q-gradients in the tangent space,
a floating base's rows first, ``[linear; angular]``, and with respect to the configuration's
numbers; ``joints``: :func:`engine.robots.compiled_dynamics._joints`, ball joints). Importing this
module does not import numba.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.robots import compiled_dynamics as cdyn

__all__ = ["Saved", "aba_forward", "aba_vjp", "adjoint", "crba_vjp", "forward", "rnea_vjp"]

_NONE3 = np.empty((0, 0, 0))
# samples per block of the kernels' SIMD lanes, a run-time count (at batch 1024, forward + backward: 16
# lanes 10 to 25 % slower than 32 on the iiwa and Solo-12, 64 within the noise of 32)
LANES = 32
# below this batch, blocks of one sample (the kernels' lane loops compiled away: per-sample code; the
# iiwa's forward at batch 1: 6 us a call against 9 us in lanes, on par at 8)
SMALL_BATCH = 8


def _kernels():
    cdyn._get()
    from engine.robots import vjp_kernels

    return vjp_kernels


def _factor_size(consts, floating: bool) -> int:
    """The rows of a block's packed factors of ``M`` (:func:`engine.robots.lane_ltdl.factor_size`)."""
    _kernels()
    from engine.robots import lane_ltdl

    return lane_ltdl.factor_size(consts[0], consts[-1], floating)


class Saved(NamedTuple):
    """What a differentiable call's forward keeps for its backward (numpy; the samples in blocks of
    ``L = min(LANES, B)``, ``nb = ceil(B / L)`` blocks, the sample axis last, the last block's lanes
    past ``B`` unused: :func:`engine.robots.vjp_kernels.forward_kernel`): the accelerations ``qdd
    (B, nv)`` the passes are at (RNEA's input, or ABA's result), each body's pose in its parent ``R
    (nb, n + 1, 3, 3, L)``, ``p (nb, n + 1, 3, L)``, velocity ``v``, its parent's acceleration in
    its frame ``Xa`` (``X_k a_j``; the base's row: its acceleration), transmitted force ``F`` and
    ``Iv = I_k v_k`` (each ``(nb, n + 1, 6, L)``), a floating base's gravity in its frame ``gb (nb,
    6, L)`` and, after ABA, the ``L^T D L`` factors of ``M``, packed ``H (nb, size, L)`` (the
    diagonal, then each dof's entries along its ancestors; RNEA: empty)."""

    qdd: np.ndarray
    R: np.ndarray
    p: np.ndarray
    v: np.ndarray
    Xa: np.ndarray
    F: np.ndarray
    Iv: np.ndarray
    gb: np.ndarray
    H: np.ndarray


def forward(consts, q, qd, x, a0, armature, floating: bool, solve: bool, joints=None) -> tuple[np.ndarray, Saved]:
    """``(out (B, nv), saved)``: RNEA's forces at ``qdd = x`` (``armature * qdd`` added), or with
    ``solve`` ABA's accelerations ``M^-1 (tau - h)`` for ``tau = x`` (``M`` with ``armature`` on its
    diagonal), and what :func:`adjoint` reads (:func:`engine.robots.vjp_kernels.forward_kernel`)."""
    c = cdyn._c
    q, qd, x = c(q), c(qd), c(x)
    B, nv = x.shape
    N = consts[-1].shape[0] + 1
    L = min(LANES, B) if B >= SMALL_BATCH else 1
    nb = -(-B // L)
    out = np.empty((B, nv))
    vk = _kernels()
    H = np.empty((nb, _factor_size(consts, floating), L)) if solve else _NONE3
    R, p = np.empty((nb, N, 3, 3, L)), np.empty((nb, N, 3, L))
    v, Xa, F, Iv = (np.empty((nb, N, 6, L)) for _ in range(4))
    gb = np.empty((nb, 6, L))
    vk.forward_kernel(*consts, q, qd, x, c(a0), c(armature), floating, solve, out, H, R, p, v, Xa, F, Iv, gb,
                      cdyn._joints(consts[-1], joints))
    return out, Saved(out if solve else x, R, p, v, Xa, F, Iv, gb, H)


def adjoint(consts, saved: Saved, q, qd, a0, armature, floating: bool, g, want_pi: bool = False, joints=None):
    """:func:`rnea_vjp`'s products (``saved.H`` empty) or :func:`aba_vjp`'s, from the forward's
    ``saved`` (:func:`forward`, same ``consts, q, qd, a0, armature, joints``): the reverse pass alone."""
    c = cdyn._c
    B, nv = saved.qdd.shape
    outs = [np.empty((B, nv)) for _ in range(3)]
    N = consts[-1].shape[0] + 1
    gpi = np.zeros((N, 10)) if want_pi else np.empty((N, 10))     # the kernel writes only what is asked
    q = c(q)
    gcfg = np.empty(q.shape)
    solve = saved.H.shape[0] > 0
    _kernels().adjoint_kernel(*consts, q, c(qd), saved.qdd, c(a0), c(armature), floating, solve, c(g), want_pi,
                              saved.H, saved.R, saved.p, saved.v, saved.Xa, saved.F, saved.Iv, saved.gb, *outs,
                              gpi, gcfg, cdyn._joints(consts[-1], joints))
    gq, gv, ga = outs
    return gq, gv, ga, (gpi if want_pi else None), gcfg


def aba_forward(consts, q, qd, tau, a0, armature, floating: bool, joints=None):
    """``(qdd, H)``: the accelerations ``M^-1 (tau - h)`` ``(B, nv)`` and the packed ``L^T D L``
    factors of ``M`` (armature on its diagonal), which :func:`aba_vjp` takes."""
    qdd, saved = forward(consts, q, qd, tau, a0, armature, floating, True, joints)
    return qdd, saved.H


def rnea_vjp(consts, q, qd, qdd, a0, armature, floating: bool, g, want_pi: bool = False, joints=None):
    """``(g^T dtau/dq, g^T dtau/dqd, g^T dtau/dqdd, g^T Y or None, g^T dtau/dconfiguration)`` at ``(q,
    qd, qdd)``: ``(B, nv)`` each (q: tangent); with ``want_pi`` the regressor product per body summed
    over the batch ``(n + 1, 10)`` (internal order, root first); the gradient with respect to the
    configuration's numbers ``(B, nq)`` (a floating base's and a ball's quaternion by the kernels'
    formula, off the unit sphere too). ``armature (n,)`` as RNEA's (zeros: none). :func:`forward`
    then :func:`adjoint`."""
    _, saved = forward(consts, q, qd, qdd, a0, armature, floating, False, joints)
    return adjoint(consts, saved, q, qd, a0, armature, floating, g, want_pi, joints)


def aba_vjp(consts, q, qd, qdd, a0, armature, floating: bool, g, want_pi: bool = False, H=None, joints=None):
    """``(-lam^T dtau/dq, -lam^T dtau/dqd, lam, -lam^T Y or None, g^T dqdd/dconfiguration)`` at the
    ABA result ``qdd``, ``lam = M^-1 g`` (``H``: :func:`aba_forward`'s factors; None: ``M`` factorised
    here, by ABA's forward of RNEA's forces at ``qdd``)."""
    tau, saved = forward(consts, q, qd, qdd, a0, armature, floating, False, joints)
    if H is None:
        H = forward(consts, q, qd, tau, a0, armature, floating, True, joints)[1].H
    return adjoint(consts, saved._replace(H=H), q, qd, a0, armature, floating, g, want_pi, joints)


def crba_vjp(consts, q, floating: bool, G, want_pi: bool = False, joints=None):
    """``(sum_ij G_ij dM_ij/dq (B, nq), sum_ij G_ij dM_ij/dpi (n + 1, 10) or None)`` for ``G (B, nv,
    nv)``, ``M`` the mass matrix without armature, q the configuration's numbers
    (:func:`engine.robots.vjp_kernels.crba_vjp_kernel`)."""
    c = cdyn._c
    q = c(q)
    gq = np.empty(q.shape)
    gpi = np.zeros((consts[-1].shape[0] + 1, 10))
    _kernels().crba_vjp_kernel(*consts, q, floating, c(G), want_pi, gq, gpi, cdyn._joints(consts[-1], joints))
    return gq, (gpi if want_pi else None)
