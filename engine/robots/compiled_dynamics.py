"""RNEA, CRBA, ABA, forward kinematics and Jacobians compiled per sample (numba); and the
analytic derivatives of RNEA and ABA and the joint-torque regressor (:func:`derivatives`,
:func:`regressor`: :mod:`engine.robots.derivative_kernels`, :mod:`engine.robots.regressor_kernels`).

The torch algorithms of :mod:`engine.robots.dynamics_body_major` and
:mod:`engine.robots.dynamics_batch_last` are a few hundred tensor operations per call, each
streaming whole ``(bodies, samples)`` planes through memory; where autograd is not needed the
same recursions compiled as one loop per sample (as Pinocchio runs them) keep every quantity
in registers and cache. Measured on a 2-core Xeon VM: RNEA on TALOS at batch 1024 9.7 ms
(torch) against 3.9 ms for Pinocchio's Python loop; compiled, 2.0 ms. Hand-written rather
than taken from a library because the model's own constants (learnable inertials, its body
order, its armature) must be the ones computed with, and the only compiled rigid-body library
at hand (Pinocchio) is the reference the engine is tested against.

Conventions (all float64, numpy; inputs and outputs in the model's user order, the kernels
read each internal body's joint through ``perm``): bodies ``1..n`` in the model's internal order (parents
before children), body 0 the root; ``parent (n + 1,)`` (``parent[0]`` unused). Spatial vectors
``[angular; linear]`` at the body's origin, in the body's axes. Per body: ``C0 (n, 16)``,
``C (n, 3, 16)`` the joint transform basis (``T_k(q) = C0_k + [sin q, 1 - cos q, q] . C_k``,
pose of body k in its parent), ``S (n, 6)`` the motion subspace in the body frame, inertials
``m (n + 1,)``, ``c (n + 1, 3)`` (CoM in the body frame), ``Ic (n + 1, 3, 3)`` (about the CoM,
body axes), ``armature (n,)``. ``a0 (6,)``: the world's spatial acceleration ``[0; -g]``
(zeros: no gravity). A floating base (``floating=True``): ``q[:, :7]`` the root's position and
quaternion (x y z w), ``v[:, :6]`` its velocity ``[linear; angular]`` in its own frame
(Pinocchio's free-flyer); base rows and wrenches are in that order too.

Importing this module does not need numba; :func:`available` says whether the kernels can run
(numba importable, the kernels built, ``LAGRANGE_NO_COMPILED`` unset); they are built on first
use (cached on disk by numba where the package folder, or the user's cache folder, is writable).
"""

from __future__ import annotations

import logging
import os
import threading

import numpy as np

__all__ = ["aba", "available", "crba", "derivatives", "jacobian", "link_poses", "regressor", "regressor_vjp", "rnea",
           "two_bodies", "warm_up"]

log = logging.getLogger(__name__)

_kernels = None
_ready = None           # None: not tried yet; then whether the kernels compiled and ran
_lock = threading.Lock()


def available() -> bool:
    """Whether the compiled kernels can be used: numba present, the kernels built (compiled or
    loaded from numba's cache, once per process, on a two-body tree: a failure is logged once
    and the torch algorithms serve every call), not switched off by ``LAGRANGE_NO_COMPILED=1``."""
    global _ready
    if os.environ.get("LAGRANGE_NO_COMPILED"):
        return False
    if _ready is None:
        with _lock:
            if _ready is None:
                _ready = _build()
    return _ready


def _build() -> bool:
    global _kernels
    try:
        import numba  # noqa: F401
    except Exception:      # absent or broken (an incompatible numpy): the torch algorithms serve
        return False
    try:
        from engine.robots import compiled_kernels

        _kernels = compiled_kernels
        _exercise()
    except Exception as exc:   # a compiler or cache failure must not stop the dynamics
        _kernels = None
        log.warning("the compiled rigid-body kernels could not be built (%s: %s); the torch algorithms "
                    "serve every call", type(exc).__name__, exc)
        return False
    return True


def _get():
    if _kernels is None:
        raise RuntimeError(
            "the compiled kernels are not available (check engine.robots.compiled_dynamics.available())"
        )
    return _kernels


def _c(x):
    return np.ascontiguousarray(x, dtype=np.float64)


_NONE = np.empty((0, 0))


def _joints(perm, joints):
    """The kernels' ``(n, 2)`` configuration column and kind per body (:func:`engine.robots.ball.
    compiled_joints`); None: no ball joint (each body's column is its joint's, ``perm``)."""
    if joints is not None:
        return joints
    return np.ascontiguousarray(np.stack([perm, np.zeros_like(perm)], axis=1))


def rnea(consts, q, qd, qdd, a0, armature, floating: bool, joints=None):
    """Generalised forces ``(B, nv)`` (armature included; floating: the base wrench first,
    ``[force; moment]`` in the base frame).

    consts: ``(parent, C0, C, S, m, c, Ic, perm)`` (perm ``(n,)``: the user index of each
    internal body's joint); q ``(B, nq)``, qd, qdd ``(B, nv)`` in the user's order (None: zero);
    joints: see :func:`_joints` (ball joints).
    """
    q = _c(q)
    out = np.empty((q.shape[0], consts[-1].shape[0] + (6 if floating else 0)))
    _get().rnea_kernel(*consts, q, _NONE if qd is None else _c(qd), _NONE if qdd is None else _c(qdd), _c(a0),
                       _c(armature), floating, out, _joints(consts[-1], joints))
    return out


def crba(consts, q, armature, floating: bool, joints=None):
    """The mass matrix ``(B, nv, nv)`` (floating: base rows first, ``[linear; angular]``),
    armature on the joints' diagonal."""
    q = _c(q)
    nv = consts[-1].shape[0] + (6 if floating else 0)
    M = np.empty((q.shape[0], nv, nv))
    _get().crba_kernel(*consts, q, _c(armature), floating, M, _joints(consts[-1], joints))
    return M


def aba(consts, q, qd, tau, a0, armature, floating: bool, joints=None):
    """Generalised accelerations ``(B, nv)`` (floating: the base's spatial acceleration in its
    frame first, ``[linear; angular]``)."""
    q = _c(q)
    qdd = np.empty((q.shape[0], consts[-1].shape[0] + (6 if floating else 0)))
    _get().aba_kernel(*consts, q, _c(qd), _c(tau), _c(a0), _c(armature), floating, qdd, _joints(consts[-1], joints))
    return qdd


def _derivative_kernels():
    """:mod:`engine.robots.derivative_kernels`, imported (and its kernels built) on first use."""
    _get()
    from engine.robots import derivative_kernels

    return derivative_kernels


def _regressor_kernels():
    """:mod:`engine.robots.regressor_kernels`, imported (and its kernels built) on first use."""
    _get()
    from engine.robots import regressor_kernels

    return regressor_kernels


def derivatives(consts, q, qd, qdd, a0, armature, floating: bool, mode: str, damping=None, g=None, joints=None):
    """Analytic derivatives (:func:`engine.robots.derivative_kernels.derivatives_kernel`):
    ``mode`` "rnea" -> ``(dtau/dq, dtau/dv, dtau/da)``, "aba" (``qdd``: the applied forces tau,
    damping subtracted) -> ``(dqdd/dq, dqdd/dv, dqdd/dtau)``, each ``(B, nv, nv)``; "rnea_vjp" /
    "aba_vjp" (``qdd``: the ABA result) -> the products ``g^T (.)`` ``(B, nv)`` each, with
    ``g (B, nv)``. q-derivatives in the tangent space; ``damping (nv,)`` enters the ABA modes
    (``dtau/dv + diag(damping)``); joints: see :func:`_joints` (ball joints)."""
    dk = _derivative_kernels()
    q = _c(q)
    B = q.shape[0]
    nv = consts[-1].shape[0] + (6 if floating else 0)
    code = {"rnea": dk.RNEA, "rnea_vjp": dk.RNEA_VJP, "aba": dk.ABA, "aba_vjp": dk.ABA_VJP}[mode]
    rows = 1 if mode.endswith("_vjp") else nv
    outs = [np.empty((B, rows, nv)) for _ in range(3)]
    tau = np.empty((B, nv))
    zeros = np.zeros((B, nv))
    dk.derivatives_kernel(*consts, q, zeros if qd is None else _c(qd), zeros if qdd is None else _c(qdd), _c(a0),
                          _c(armature), np.zeros(nv) if damping is None else _c(damping), floating, code,
                          _NONE if g is None else _c(g), *outs, tau, _joints(consts[-1], joints))
    return tuple(o[:, 0] for o in outs) if rows == 1 else tuple(outs)


def regressor(consts, q, qd, qdd, a0, floating: bool, joints=None):
    """The joint-torque regressor ``(B, nv, 10 N)`` (see
    :func:`engine.robots.regressor_kernels.regressor_kernel`); consts ``(parent, C0, C, S, perm)``;
    joints: see :func:`_joints` (ball joints)."""
    q = _c(q)
    B = q.shape[0]
    nv = consts[-1].shape[0] + (6 if floating else 0)
    n_bodies = consts[-1].shape[0] + (1 if floating else 0)
    Y = np.empty((B, nv, 10 * n_bodies))
    zeros = np.zeros((B, nv))
    _regressor_kernels().regressor_kernel(*consts, q, zeros if qd is None else _c(qd),
                                           zeros if qdd is None else _c(qdd), _c(a0), floating, Y,
                                           _joints(consts[-1], joints))
    return Y


def regressor_vjp(consts, q, qd, qdd, a0, floating: bool, w, joints=None):
    """``w^T Y`` per body ``(B, n + 1, 10)`` in the internal body order (see
    :func:`engine.robots.regressor_kernels.regressor_vjp_kernel`); consts ``(parent, C0, C, S, perm)``."""
    q = _c(q)
    B = q.shape[0]
    nv = consts[-1].shape[0] + (6 if floating else 0)
    out = np.empty((B, consts[-1].shape[0] + 1, 10))
    zeros = np.zeros((B, nv))
    _regressor_kernels().regressor_vjp_kernel(*consts, q, zeros if qd is None else _c(qd),
                                               zeros if qdd is None else _c(qdd), _c(a0), floating, _c(w), out,
                                               _joints(consts[-1], joints))
    return out


def link_poses(chain, q, link_body, link_offset, floating: bool, joints=None):
    """World poses ``(B, L, 4, 4)`` of the links: chain ``(parent, C0, C, perm)``, link_body
    ``(L,)`` (0: the root), link_offset ``(L, 4, 4)`` (each link's frame in its body)."""
    q = _c(q)
    out = np.empty((q.shape[0], link_body.shape[0], 4, 4))
    _get().fk_kernel(*chain, link_body, _c(link_offset), q, floating, out, _joints(chain[-1], joints))
    return out


def jacobian(chain, S, rev, q, body: int, offset, point, floating: bool, joints=None):
    """World Jacobian ``(B, 6, nv)`` (linear, angular; floating: base columns first) of the
    link welded at ``offset (4, 4)`` to ``body``, at its origin or at ``point (B, 3)`` (its frame)."""
    parent, C0, C, perm = chain
    q = _c(q)
    out = np.empty((q.shape[0], 6, perm.shape[0] + (6 if floating else 0)))
    _get().jacobian_kernel(parent, C0, C, S, _c(rev), perm, int(body), _c(offset),
                           _NONE if point is None else _c(point), q, floating, out, _joints(perm, joints))
    return out


def warm_up() -> bool:
    """Build the value and derivative kernels now (compiled and cached on disk by numba, or loaded
    from that cache); False where they are not available. :func:`engine.robots.kernel_warm_up.
    warm_up` (``python build_scripts/dev.py setup``) calls it, so that the first dynamics call of a
    session does not wait for the compiler."""
    if not available():
        return False
    _exercise_derivatives()
    return True


def two_bodies():
    """The kernels' constants ``(parent, C0, C, S, m, c, Ic, perm)`` of a chain of two revolutes."""
    return (np.array([0, 0, 1], dtype=np.int64), np.tile(np.eye(4).reshape(1, 16), (2, 1)), np.zeros((2, 3, 16)),
            np.array([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]] * 2), np.ones(3), np.zeros((3, 3)),
            np.tile(np.eye(3) * 0.1, (3, 1, 1)), np.array([0, 1], dtype=np.int64))


def _exercise_derivatives() -> None:
    """Build the derivative kernels (every mode, fixed and floating; RNEA and ABA for one sample
    and in lanes) on a two-body tree."""
    from engine.robots.derivative_lane_kernels import MIN_LANES
    consts = two_bodies()
    parent, C0, C, S, perm = consts[:4] + consts[-1:]
    a0 = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 9.81])
    for floating in (False, True):
        q = np.zeros((1, 9 if floating else 2))
        if floating:
            q[0, 6] = 1.0
        v = np.zeros((1, q.shape[1] - (1 if floating else 0)))
        for mode in ("rnea", "aba", "rnea_vjp", "aba_vjp"):
            derivatives(consts, q, v, v, a0, np.zeros(2), floating, mode, g=v if mode.endswith("_vjp") else None)
        for mode in ("rnea", "aba"):    # the lane bodies, for batches of MIN_LANES samples and more
            qb, vb = np.repeat(q, MIN_LANES, 0), np.repeat(v, MIN_LANES, 0)
            derivatives(consts, qb, vb, vb, a0, np.zeros(2), floating, mode)
        regressor((parent, C0, C, S, perm), q, v, v, a0, floating)
        regressor_vjp((parent, C0, C, S, perm), q, v, v, a0, floating, v)


def _exercise() -> None:
    """Run every kernel on a two-body tree, fixed and floating (the argument types of every
    later call: the kernels compile once per type signature)."""
    consts = two_bodies()
    parent, C0, C, S = consts[:4]
    a0 = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 9.81])
    arm = np.zeros(2)
    for floating in (False, True):
        q = np.zeros((1, 9 if floating else 2))
        if floating:
            q[0, 6] = 1.0
        v = np.zeros((1, q.shape[1] - (1 if floating else 0)))
        rnea(consts, q, v, v, a0, arm, floating)
        rnea(consts, q, None, None, a0, arm, floating)
        crba(consts, q, arm, floating)
        qdd = aba(consts, q, v, v, a0, arm, floating)
        chain = (parent, C0, C, consts[-1])
        link_poses(chain, q, np.array([0, 2], dtype=np.int64), np.tile(np.eye(4), (2, 1, 1)), floating)
        for point in (None, np.zeros((1, 3))):
            jacobian(chain, S, np.ones(2), q, 2, np.eye(4), point, floating)
        if not np.all(np.isfinite(qdd)):
            raise ArithmeticError("the forward dynamics kernel gave a non-finite answer on a test tree")
