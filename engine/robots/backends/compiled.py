"""The compiled backend: per-sample kernels (numba, :mod:`engine.robots.compiled_dynamics`) for
calls that carry no derivative, float64 on the CPU.

Same results as the torch backends to rounding (both are tested against Pinocchio); chosen by
:meth:`engine.robots.model.RobotModel._backend_for` where no input or parameter needs a
gradient and no torch.func transform or forward-mode AD is active. ``LAGRANGE_NO_COMPILED=1``
or :class:`engine.robots.backends.torch_only` keeps every call on the torch backends. Full
coordinates (see :mod:`engine.robots.backends`); results are normal tensors sharing the
kernels' arrays.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.robots import compiled_dynamics as cdyn
from engine.robots.backends.tree import Inertials, Tree

__all__ = ["CompiledBackend"]


def _np(x):
    x = x.detach()
    return (x.resolve_neg() if x.is_neg() else x).numpy()    # a negative bit (z.conj().imag): numpy() refuses it


def _tensor(x: np.ndarray) -> torch.Tensor:
    """A kernel's result as a normal tensor (not an inference tensor: the call policy then has
    nothing to copy), sharing its memory."""
    with torch.inference_mode(False):
        return torch.from_numpy(x)


class CompiledBackend:
    """fk, jacobians, rnea, crba and aba by the compiled kernels (see the module docstring)."""

    name = "compiled"

    def __init__(self, tree: Tree):
        if not cdyn.available():  # builds the kernels (once per process) where it can
            raise RuntimeError(
                "the compiled kernels are not available (numba missing, or LAGRANGE_NO_COMPILED set)"
            )
        self.tree = tree
        n = tree.n
        axis = _np(tree.axis3)
        rev = _np(tree.rev)
        self._chain = (np.ascontiguousarray(tree.body_parent, dtype=np.int64),
                       np.ascontiguousarray(_np(tree.C0).reshape(n, 16)),
                       np.ascontiguousarray(_np(tree.C).reshape(n, 3, 16)),
                       np.ascontiguousarray(_np(tree.body_dof), dtype=np.int64))
        self._S = np.ascontiguousarray(
            np.concatenate([axis * rev[:, None], axis * (1.0 - rev[:, None])], axis=1)
        )
        self._rev = np.ascontiguousarray(rev)
        self._no_armature = np.zeros(n)
        self._armature = self._no_armature if tree.armature_int is None else np.ascontiguousarray(
            _np(tree.armature_int))
        self._joints = None if tree.ball is None else tree.joints     # ball joints: the kernels' layout
        self._link_body = np.ascontiguousarray(_np(tree.link_body), dtype=np.int64)
        self._link_offset = np.ascontiguousarray(_np(tree.link_offset))
        # (key, numpy parts) of the model's constant inertials
        self._inertials: tuple[tuple, tuple[np.ndarray, ...]] | None = None

    def _constants(self, inertials: Inertials):
        """``(parent, C0, C, S, m, c, Ic, perm)``, the dynamics kernels' layout."""
        parts = inertials.parts
        parent, C0, C, perm = self._chain
        if not inertials.fixed:         # fresh values of learnable inertials
            return (parent, C0, C, self._S) + tuple(np.ascontiguousarray(_np(x)) for x in parts) + (perm,)
        key = tuple((id(x), x._version) for x in parts)     # the model's buffers: edited in place, read again
        cached = self._inertials
        if cached is None or cached[0] != key:
            cached = self._inertials = (key, tuple(np.ascontiguousarray(_np(x)) for x in parts))
        return (parent, C0, C, self._S) + cached[1] + (perm,)

    @staticmethod
    def _gravity(a0):
        return np.zeros(6) if a0 is None else _np(a0)

    # ---------------------------------------------------------------- kinematics
    def fk(self, q) -> torch.Tensor:
        return _tensor(
            cdyn.link_poses(self._chain, _np(q), self._link_body, self._link_offset, self.tree.floating, self._joints)
        )

    def jacobians(self, q, links, point=None, with_poses: bool = False):
        qn = _np(q)
        pn = None if point is None else _np(point)
        t = self.tree
        Js = [cdyn.jacobian(self._chain, self._S, self._rev, qn, t.link_body_int[l], self._link_offset[l], pn,
                            t.floating, self._joints) for l in links]
        J = _tensor(Js[0][:, None] if len(Js) == 1 else np.stack(Js, axis=1))
        if not with_poses:
            return J
        return self.fk(q)[:, list(links)], J

    # ---------------------------------------------------------------- dynamics
    def rnea(self, q, v, a, a0, inertials: Inertials) -> torch.Tensor:
        return _tensor(cdyn.rnea(self._constants(inertials), _np(q), None if v is None else _np(v),
                                 None if a is None else _np(a), self._gravity(a0), self._no_armature,
                                 self.tree.floating, self._joints))

    def crba(self, q, inertials: Inertials) -> torch.Tensor:
        return _tensor(cdyn.crba(self._constants(inertials), _np(q), self._no_armature, self.tree.floating,
                                 self._joints))

    def derivatives(self, q, v, a, a0, inertials: Inertials, mode: str, armature: bool = True, damping=None,
                    g=None) -> tuple[np.ndarray, ...]:
        """Analytic derivatives of RNEA or ABA in full coordinates (numpy; see
        :func:`engine.robots.compiled_dynamics.derivatives` for ``mode``: "aba" takes tau as ``a``);
        ``armature``: with the
        tree's armature (ABA always has it), ``damping (nv_all,)`` for the ABA modes."""
        arm = self._armature if armature or mode.startswith("aba") else self._no_armature
        return cdyn.derivatives(self._constants(inertials), _np(q), None if v is None else _np(v),
                                None if a is None else _np(a), self._gravity(a0), arm, self.tree.floating, mode,
                                None if damping is None else _np(damping), None if g is None else _np(g),
                                self._joints)

    def regressor(self, q, v, a, a0) -> torch.Tensor:
        """The joint-torque regressor ``(B, nv_all, 10 N)`` in full coordinates (no armature)."""
        parent, C0, C, perm = self._chain
        return _tensor(cdyn.regressor((parent, C0, C, self._S, perm), _np(q), None if v is None else _np(v),
                                      None if a is None else _np(a), self._gravity(a0), self.tree.floating,
                                      self._joints))

    def regressor_vjp(self, q, v, a, a0, w) -> np.ndarray:
        """``w^T Y`` per body ``(B, n + 1, 10)`` (internal order, root first): the gradient of
        ``w . tau`` with respect to each body's inertial parameters (numpy)."""
        parent, C0, C, perm = self._chain
        return cdyn.regressor_vjp((parent, C0, C, self._S, perm), _np(q), None if v is None else _np(v),
                                  None if a is None else _np(a), self._gravity(a0), self.tree.floating, _np(w),
                                  self._joints)

    def aba(self, q, v, tau, a0, inertials: Inertials, method: str = "auto", armature=None) -> torch.Tensor:
        """The articulated-body algorithm whatever the method; ``armature (n,)``: rotor inertia beyond
        the tree's, in its joint order (a fixed base's velocities)."""
        return _tensor(cdyn.aba(self._constants(inertials), _np(q), _np(v), _np(tau), self._gravity(a0),
                                self.armature_with(armature), self.tree.floating, self._joints))

    def armature_with(self, extra) -> np.ndarray:
        """The kernels' armature ``(n,)`` (internal order): the tree's, plus ``extra (n,)`` given in
        the tree's joint order (None: none)."""
        if extra is None:
            return self._armature
        return np.ascontiguousarray(self._armature + _np(extra)[self._chain[3]])
