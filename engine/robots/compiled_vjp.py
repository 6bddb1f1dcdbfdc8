"""Calls of the vector-Jacobian kernel (:func:`engine.robots.vjp_kernels.vjp_kernel`): the O(n)
backward of RNEA and ABA that :mod:`engine.robots.backends.compiled_autograd` runs.

Conventions as :mod:`engine.robots.compiled_dynamics` (numpy float64, user order, full
coordinates; consts ``(parent, C0, C, S, m, c, Ic, perm)``; q-gradients in the tangent space,
a floating base's rows first, ``[linear; angular]``). Importing this module does not import numba.
"""

from __future__ import annotations

import numpy as np

from engine.robots import compiled_dynamics as cdyn

__all__ = ["aba_forward", "aba_vjp", "crba_vjp", "rnea_vjp"]

_NONE3 = np.empty((0, 0, 0))


def _kernels():
    cdyn._get()
    from engine.robots import vjp_kernels

    return vjp_kernels


def _call(mode, consts, q, qd, qdd, a0, armature, floating, g, want_pi, H):
    c = cdyn._c
    q = c(q)
    B = q.shape[0]
    nv = q.shape[1] - (1 if floating else 0)
    outs = [np.empty((B, nv)) for _ in range(3)]
    gpi = np.zeros((consts[-1].shape[0] + 1, 10))
    gquat = np.zeros((B, 4))
    _kernels().vjp_kernel(*consts, q, c(qd), c(qdd), c(a0), c(armature), floating, mode,
                          cdyn._NONE if g is None else c(g), want_pi, *outs, gpi, _NONE3 if H is None else H, gquat)
    return outs, gpi, gquat


def rnea_vjp(consts, q, qd, qdd, a0, armature, floating: bool, g, want_pi: bool = False):
    """``(g^T dtau/dq, g^T dtau/dqd, g^T dtau/dqdd, g^T Y or None, g^T dtau/dquat)`` at ``(q, qd,
    qdd)``: ``(B, nv)`` each; with ``want_pi`` the regressor product per body summed over the batch
    ``(n + 1, 10)`` (internal order, root first); a floating base's quaternion gradient ``(B, 4)``
    (zeros on a fixed base). ``armature (n,)`` as RNEA's (zeros: none)."""
    (gq, gv, ga), gpi, gquat = _call(_kernels().RNEA_VJP, consts, q, qd, qdd, a0, armature, floating, g, want_pi,
                                     None)
    return gq, gv, ga, (gpi if want_pi else None), gquat


def aba_forward(consts, q, qd, tau, a0, armature, floating: bool):
    """``(qdd, H)``: the accelerations ``M^-1 (tau - h)`` ``(B, nv)`` and the ``L^T D L`` factors of
    ``M`` (armature on its diagonal) ``(B, nv, nv)``, which :func:`aba_vjp` takes."""
    q = cdyn._c(q)
    nv = q.shape[1] - (1 if floating else 0)
    H = np.zeros((q.shape[0], nv, nv))
    (_, _, qdd), _, _ = _call(_kernels().ABA_FORWARD, consts, q, qd, tau, a0, armature, floating, None, False, H)
    return qdd, H


def aba_vjp(consts, q, qd, qdd, a0, armature, floating: bool, g, want_pi: bool = False, H=None):
    """``(-lam^T dtau/dq, -lam^T dtau/dqd, lam, -lam^T Y or None, g^T dqdd/dquat)`` at the ABA
    result ``qdd``, ``lam = M^-1 g`` (``H``: :func:`aba_forward`'s factors; None: ``M`` computed
    here)."""
    vk = _kernels()
    mode = vk.ABA_VJP_M if H is None else vk.ABA_VJP
    (gq, gv, lam), gpi, gquat = _call(mode, consts, q, qd, qdd, a0, armature, floating, g, want_pi, H)
    return gq, gv, lam, (gpi if want_pi else None), gquat


def crba_vjp(consts, q, floating: bool, G, want_pi: bool = False):
    """``(sum_ij G_ij dM_ij/dq (B, nv) tangent, sum_ij G_ij dM_ij/dpi (n + 1, 10) or None)`` for
    ``G (B, nv, nv)``, ``M`` the mass matrix without armature (:func:`engine.robots.vjp_kernels.crba_vjp_kernel`)."""
    c = cdyn._c
    q = c(q)
    gq = np.empty((q.shape[0], q.shape[1] - (1 if floating else 0)))
    gpi = np.zeros((consts[-1].shape[0] + 1, 10))
    _kernels().crba_vjp_kernel(*consts, q, floating, c(G), want_pi, gq, gpi)
    return gq, (gpi if want_pi else None)
