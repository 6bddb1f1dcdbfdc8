"""A thin numpy entry to the compiled kernels, for many small calls (MPC, IK, readouts).

:class:`RobotModel`'s methods take tensors of any batch shape, choose a backend per call,
map coordinates and wrap results; at batch 1 that Python costs several times the kernel
itself (ABA on a 7-DoF arm: about 3 us of kernel in a call of about 30 us). ``CompiledCalls``
does the choosing and the preparing once::

    calls = CompiledCalls(model)              # once
    tau = calls.rnea(q, v, a)                 # numpy float64: (nv,) for one sample, (B, nv) for B
    qdd = calls.aba(q, v, tau, out=qdd)       # into a preallocated array

=============================================  ==================================================
``rnea(q, v, a)``                              ``(..., nv)``: ``model.inverse_dynamics``; ``v`` or
                                               ``a`` None: zero (``rnea(q, None, None)``: ``g(q)``)
``crba(q)``                                    ``(..., nv, nv)``: ``model.mass_matrix``
``aba(q, v, tau)``                             ``(..., nv)``: ``model.forward_dynamics``
``fk(q)``                                      ``(..., L, 4, 4)``: ``model.forward_kinematics``
``link_pose(q, link)``                         ``(..., 4, 4)``: ``model.link_pose``
``jacobian(q, link, point=None)``              ``(..., 6, nv)``: ``model.jacobian``
``rnea_derivatives(q, v, a)``                  three ``(..., nv, nv)``: ``model.rnea_derivatives``
``aba_derivatives(q, v, tau)``                 three ``(..., nv, nv)``: ``model.aba_derivatives``
``regressor(q, v, a)``                         ``(..., nv, 10 N)``: ``model.regressor``
=============================================  ==================================================

Inputs are numpy float64 arrays (anything ``np.asarray`` reads, converted once): ``q (nq,)``
and ``v (nv,)`` for one sample, ``(B, nq)`` and ``(B, nv)`` for a batch (all of one batch: no
broadcasting); units and coordinates as the model's (free-flyer ``q``, mimic joints coupled).
Results are new arrays of the same leading shape, or written into ``out=`` (float64,
C-contiguous, the result's shape; a tuple of three for the derivatives) and returned.
``gravity`` and ``damping`` mean what they mean for the model's methods.

The numbers are the model's methods' (the same kernels; to rounding where the model adds
armature, damping or the mimic projection in another order). It applies where the model's
own calls run the compiled kernels: float64 on the CPU, numba importable,
``LAGRANGE_NO_COMPILED`` unset; elsewhere the constructor raises and says why
(:func:`unavailable_reason`), and the model's methods serve. No gradient flows: for
derivatives use the ``*_derivatives`` calls, or the model's methods with autograd.

A snapshot, like Pinocchio's ``Model``: the model's link inertials, damping and gravity as they
are when it is made (learned values included, without their gradients). After changing the
model (a training step, ``make_learnable``) make a new one (about a millisecond). Calls keep
nothing between them (each writes only its result), so one object serves several threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from engine.robots import compiled_dynamics as cdyn
from engine.robots.model_build import check_forward_dynamics

__all__ = ["CompiledCalls", "unavailable_reason"]

_NONE = np.empty((0, 0))
_F64 = np.dtype(np.float64)
# engine.robots.compiled_kernels, derivative_kernels and regressor_kernels, imported on first use (they
# import numba); module globals, not attributes, so that a CompiledCalls deep-copies with the model
_K: Any = None
_DK: Any = None
_RK: Any = None


def unavailable_reason(model) -> str | None:
    """Why :class:`CompiledCalls` cannot serve ``model`` (a sentence), or None where it can."""
    if model.dtype != torch.float64 or model.device.type != "cpu":
        return f"the model is {model.dtype} on {model.device}; the compiled kernels need float64 on the CPU"
    if model._n == 0:
        return "the model has no movable joint"
    if not cdyn.available():
        return "the compiled kernels are not available (numba missing or broken, or LAGRANGE_NO_COMPILED set)"
    return None


def _rows(x, size: int, what: str) -> np.ndarray:
    """``x`` as a C-contiguous float64 array ``(size,)`` or ``(B, size)`` (no copy where it is one)."""
    x = np.ascontiguousarray(x, dtype=_F64)
    shape = x.shape
    if len(shape) not in (1, 2) or shape[-1] != size:
        raise ValueError(f"expected {what} of shape ({size},) or (B, {size}), got {shape}")
    return x


def _target(out, shape: tuple) -> np.ndarray:
    """``out`` checked (float64, C-contiguous, ``shape``), or a new array."""
    if out is None:
        return np.empty(shape)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != _F64 or not out.flags.c_contiguous:
        got = (out.shape, out.dtype) if isinstance(out, np.ndarray) else type(out).__name__
        raise ValueError(f"out must be a C-contiguous float64 array of shape {shape}, got {got}")
    return out


def _batch(x: np.ndarray, one: bool) -> np.ndarray:
    """A one-sample result as a batch of one (a view)."""
    return x[None] if one else x


class CompiledCalls:
    """The model's kinematics and dynamics on numpy arrays by the compiled kernels, without
    per-call choices (see the module docstring). ``model``: a float64 CPU
    :class:`engine.robots.model.RobotModel`."""

    def __init__(self, model):
        reason = unavailable_reason(model)
        if reason is not None:
            raise RuntimeError(f"CompiledCalls cannot serve robot {model.name!r}: {reason}; call the model's "
                               "methods instead")
        global _K
        if _K is None:
            from engine.robots import compiled_kernels

            _K = compiled_kernels
        cb = model._compiled()
        with torch.no_grad():
            parts = tuple(np.array(x.detach().numpy(), dtype=_F64) for x in model._inertials().parts)
            damping = np.array(model._joint_damping_full().detach().numpy(), dtype=_F64)
            a0 = np.array(model._a0.detach().numpy(), dtype=_F64)
        parent, C0, C, perm = cb._chain
        self.name, self.floating = model.name, model.floating
        self._singular = model.singular_joints          # joints moving no mass: aba refused
        self.nq, self.nv, self.dof = model.nq, model.nv, model.dof
        self.link_names = list(model.link_names)
        self._link_index = dict(model._link_index)
        self._f = 6 if self.floating else 0
        self._consts = (parent, C0, C, cb._S) + parts + (perm,)
        # each body's configuration column and kind (ball joints: engine.robots.ball.compiled_joints)
        self._joints = np.ascontiguousarray(cb.tree.joints if cb.tree.joints is not None
                                            else np.stack([perm, np.zeros_like(perm)], axis=1))
        self._chain = cb._chain
        self._S, self._rev = cb._S, cb._rev
        self._armature = cb._armature.copy()
        self._nv_all = self._f + model._n
        self._a0, self._no_gravity = a0, np.zeros(6)
        self._damping = damping                       # every movable joint's, tree order (n,)
        self._link_body = cb._link_body
        self._link_offset = cb._link_offset
        self._link_one = [(np.array([b], dtype=np.int64), cb._link_offset[l:l + 1].copy())
                          for l, b in enumerate(cb._link_body)]
        self._link_body_int = [int(b) for b in cb._link_body]
        if model._G is None:
            self._Gq = self._P = None
        else:
            self._Gq = model._Gq.numpy().copy()            # (nq_all, nq) joint parts: configurations
            self._mimic_offset = model._mimic_offset.numpy().copy()
            self._P = model._P.numpy().copy()             # (nv_all, nv)
            self._Pt = np.ascontiguousarray(self._P.T)

    def __repr__(self) -> str:
        return f"CompiledCalls({self.name!r}, nq={self.nq}, nv={self.nv})"

    # ---------------------------------------------------------------- inputs
    def _link(self, link) -> int:
        if isinstance(link, str):
            try:
                return self._link_index[link]
            except KeyError:
                raise KeyError(f"no link named {link!r} in robot {self.name!r}") from None
        if isinstance(link, int | np.integer) and 0 <= link < len(self.link_names):
            return int(link)
        raise KeyError(f"no link {link!r} in robot {self.name!r} (a name, or an index below {len(self.link_names)})")

    def _q(self, q) -> tuple[np.ndarray, bool]:
        """``(q (B, nq_all), one sample?)``: every movable joint's configuration."""
        q = np.ascontiguousarray(q, dtype=_F64)          # _rows, inline: the hot path of small calls
        shape = q.shape
        one = len(shape) == 1
        if not 0 < len(shape) < 3 or shape[-1] != self.nq:
            raise ValueError(f"expected configurations of shape ({self.nq},) or (B, {self.nq}), got {shape}")
        if one:
            q = q[None]
        if self._Gq is None:
            return q, one
        if not self.floating:
            return q @ self._Gq.T + self._mimic_offset, one
        return np.concatenate([q[:, :7], q[:, 7:] @ self._Gq.T + self._mimic_offset], axis=1), one

    def _v(self, x, B: int, what: str = "joint vectors"):
        """``x (B, nv_all)`` (``P x``), or ``_NONE`` for None (zero)."""
        if x is None:
            return _NONE
        x = np.ascontiguousarray(x, dtype=_F64)
        shape = x.shape
        if len(shape) == 1 and shape[0] == self.nv:
            x = x[None]
        elif len(shape) != 2 or shape[1] != self.nv:
            raise ValueError(f"expected {what} of shape ({self.nv},) or (B, {self.nv}), got {shape}")
        if x.shape[0] != B:
            raise ValueError(f"expected {what} of {B} samples (as q), got {x.shape[0]}")
        return x if self._P is None else x @ self._Pt

    def _gravity(self, gravity) -> np.ndarray:
        if gravity is True:
            return self._a0
        if gravity is False or gravity is None:
            return self._no_gravity
        return np.concatenate([np.zeros(3), -np.asarray(gravity, dtype=_F64).reshape(3)])

    @staticmethod
    def _shape(one: bool, B: int, tail: tuple) -> tuple:
        return tail if one else (B,) + tail

    def _project_rows(self, x_all, out):
        """Forces ``(B, nv_all)`` -> ``x P`` into ``out`` (a ``(B, nv)`` view)."""
        return np.matmul(x_all, self._P, out=out)

    def _add_damping(self, tau, v, sign: float):
        """``tau += sign * D v`` on the joints (full coordinates, ``v (B, nv_all)``)."""
        f = self._f
        if v is not _NONE:
            tau[:, f:] += sign * self._damping * v[:, f:]

    # ---------------------------------------------------------------- dynamics
    def rnea(self, q, v, a, gravity=True, damping: bool = False, out=None) -> np.ndarray:
        """Joint forces ``(..., nv)`` (``model.inverse_dynamics``); ``v``, ``a`` None: zero."""
        qa, one = self._q(q)
        B = qa.shape[0]
        va, aa = self._v(v, B), self._v(a, B)
        res = _target(out, self._shape(one, B, (self.nv,)))
        tau = _batch(res, one) if self._P is None else np.empty((B, self._nv_all))
        _K.rnea_kernel(*self._consts, qa, va, aa, self._gravity(gravity), self._armature, self.floating, tau,
                       self._joints)
        if damping:
            self._add_damping(tau, va, 1.0)
        if self._P is not None:
            self._project_rows(tau, _batch(res, one))
        return res

    def crba(self, q, out=None) -> np.ndarray:
        """The joint-space inertia ``(..., nv, nv)`` (``model.mass_matrix``, armature included)."""
        qa, one = self._q(q)
        B = qa.shape[0]
        res = _target(out, self._shape(one, B, (self.nv, self.nv)))
        if self._P is None:
            _K.crba_kernel(*self._consts, qa, self._armature, self.floating, _batch(res, one), self._joints)
            return res
        M = np.empty((B, self._nv_all, self._nv_all))
        _K.crba_kernel(*self._consts, qa, self._armature, self.floating, M, self._joints)
        np.matmul(self._Pt, M @ self._P, out=_batch(res, one))
        return res

    def aba(self, q, v, tau, gravity=True, damping: bool = False, out=None) -> np.ndarray:
        """Joint accelerations ``(..., nv)`` (``model.forward_dynamics``); coupled mimic joints:
        ``M^-1 (tau - h)`` with the projected ``M`` and ``h``, as the model."""
        check_forward_dynamics(self.name, self._singular)
        qa, one = self._q(q)
        B = qa.shape[0]
        res = _target(out, self._shape(one, B, (self.nv,)))
        if self._P is not None:
            M = self.crba(q)
            h = self.rnea(q, v, None, gravity=gravity, damping=damping)
            r = _rows(tau, self.nv, "joint forces")
            if r.shape != h.shape:
                raise ValueError(f"expected joint forces of shape {h.shape} (as q), got {r.shape}")
            r = r - h
            res[...] = np.linalg.solve(M, r[..., None])[..., 0]
            return res
        va = self._v(v, B, "velocities")
        ta = self._v(tau, B, "joint forces")
        if va is _NONE or ta is _NONE:
            raise ValueError("aba needs v and tau (arrays, not None)")
        if damping:
            ta = ta.copy()
            self._add_damping(ta, va, -1.0)
        _K.aba_kernel(*self._consts, qa, va, ta, self._gravity(gravity), self._armature, self.floating,
                      _batch(res, one), self._joints)
        return res

    # ---------------------------------------------------------------- kinematics
    def fk(self, q, out=None) -> np.ndarray:
        """World poses of every link ``(..., L, 4, 4)`` (``link_names`` order)."""
        qa, one = self._q(q)
        B, L = qa.shape[0], len(self.link_names)
        res = _target(out, self._shape(one, B, (L, 4, 4)))
        _K.fk_kernel(*self._chain, self._link_body, self._link_offset, qa, self.floating, _batch(res, one),
                     self._joints)
        return res

    def link_pose(self, q, link, out=None) -> np.ndarray:
        """World pose of one link ``(..., 4, 4)`` (a name or a ``link_names`` index)."""
        body, offset = self._link_one[self._link(link)]
        qa, one = self._q(q)
        B = qa.shape[0]
        res = _target(out, self._shape(one, B, (4, 4)))
        _K.fk_kernel(*self._chain, body, offset, qa, self.floating, res.reshape(B, 1, 4, 4), self._joints)
        return res

    def jacobian(self, q, link, point=None, out=None) -> np.ndarray:
        """World Jacobian ``(..., 6, nv)`` of ``link`` (rows linear, angular) at its origin or at
        ``point`` (``(3,)`` or ``(B, 3)``, link frame, m), as ``model.jacobian``."""
        l = self._link(link)
        qa, one = self._q(q)
        B = qa.shape[0]
        pa = _NONE
        if point is not None:
            pa = np.ascontiguousarray(np.broadcast_to(np.asarray(point, dtype=_F64), (B, 3)))
        res = _target(out, self._shape(one, B, (6, self.nv)))
        J = _batch(res, one) if self._P is None else np.empty((B, 6, self._nv_all))
        _K.jacobian_kernel(self._chain[0], self._chain[1], self._chain[2], self._S, self._rev, self._chain[3],
                           self._link_body_int[l], self._link_offset[l], pa, qa, self.floating, J, self._joints)
        if self._P is not None:
            np.matmul(J, self._P, out=_batch(res, one))
        return res

    # ---------------------------------------------------------------- derivatives
    @staticmethod
    def _derivative_kernels():
        global _DK
        if _DK is None:
            from engine.robots import derivative_kernels

            _DK = derivative_kernels
        return _DK

    @staticmethod
    def _regressor_kernels():
        global _RK
        if _RK is None:
            from engine.robots import regressor_kernels

            _RK = regressor_kernels
        return _RK

    def _zeros_if_none(self, x, B: int):
        return np.zeros((B, self._nv_all)) if x is _NONE else x

    def _targets(self, out, shape: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if out is None:
            return np.empty(shape), np.empty(shape), np.empty(shape)
        if not isinstance(out, tuple | list) or len(out) != 3:
            raise ValueError("out must be a tuple of three arrays")
        return _target(out[0], shape), _target(out[1], shape), _target(out[2], shape)

    def rnea_derivatives(self, q, v, a, gravity=True, damping: bool = False, out=None):
        """``(dtau/dq, dtau/dv, dtau/da)`` ``(..., nv, nv)`` each (``model.rnea_derivatives``;
        a free flyer's q-derivatives in the tangent space)."""
        dk = self._derivative_kernels()
        qa, one = self._q(q)
        B, nv, na = qa.shape[0], self.nv, self._nv_all
        va, aa = self._zeros_if_none(self._v(v, B), B), self._zeros_if_none(self._v(a, B), B)
        res = self._targets(out, self._shape(one, B, (nv, nv)))
        mats = [_batch(r, one) for r in res] if self._P is None else [np.empty((B, na, na)) for _ in res]
        dk.derivatives_kernel(*self._consts, qa, va, aa, self._gravity(gravity), self._armature, np.zeros(na),
                              self.floating, dk.RNEA, _NONE, *mats, np.empty((B, na)), self._joints)
        if damping:
            f = self._f
            idx = np.arange(f, na)
            mats[1][:, idx, idx] += self._damping
        if self._P is not None:
            for x, r in zip(mats, res):
                np.matmul(self._Pt, x @ self._P, out=_batch(r, one))
        return res

    def aba_derivatives(self, q, v, tau, gravity=True, damping: bool = False, out=None):
        """``(dqdd/dq, dqdd/dv, dqdd/dtau = M^-1)`` ``(..., nv, nv)`` each at ``qdd = aba(q, v, tau)``
        (``model.aba_derivatives``)."""
        if self._P is not None:       # coupled joints: -M^-1 times the projected RNEA derivatives
            qdd = self.aba(q, v, tau, gravity=gravity, damping=damping)
            dq, dv, M = self.rnea_derivatives(q, v, qdd, gravity=gravity, damping=damping)
            Minv = np.linalg.inv(M)
            res = self._targets(out, dq.shape)
            np.matmul(-Minv, dq, out=res[0])
            np.matmul(-Minv, dv, out=res[1])
            res[2][...] = Minv
            return res
        dk = self._derivative_kernels()
        qa, one = self._q(q)
        B, nv = qa.shape[0], self.nv
        va, ta = self._v(v, B, "velocities"), self._v(tau, B, "joint forces")
        if va is _NONE or ta is _NONE:
            raise ValueError("aba_derivatives needs v and tau (arrays, not None)")
        d = np.zeros(nv)
        if damping:
            d[self._f:] = self._damping
            ta = ta - d * va
        res = self._targets(out, self._shape(one, B, (nv, nv)))
        dk.derivatives_kernel(*self._consts, qa, va, ta, self._gravity(gravity), self._armature, d, self.floating,
                              dk.ABA, _NONE, *(_batch(r, one) for r in res), np.empty((B, nv)), self._joints)
        return res

    def regressor(self, q, v, a, gravity=True, out=None) -> np.ndarray:
        """The joint-torque regressor ``(..., nv, 10 N)`` (``model.regressor``; no armature)."""
        rk = self._regressor_kernels()
        qa, one = self._q(q)
        B, na = qa.shape[0], self._nv_all
        va, aa = self._zeros_if_none(self._v(v, B), B), self._zeros_if_none(self._v(a, B), B)
        cols = 10 * (self._consts[-1].shape[0] + (1 if self.floating else 0))
        res = _target(out, self._shape(one, B, (self.nv, cols)))
        Y = _batch(res, one) if self._P is None else np.empty((B, na, cols))
        parent, C0, C, perm = self._chain
        rk.regressor_kernel(parent, C0, C, self._S, perm, qa, va, aa, self._gravity(gravity), self.floating, Y,
                            self._joints)
        if self._P is not None:
            np.matmul(self._Pt, Y, out=_batch(res, one))
        return res
