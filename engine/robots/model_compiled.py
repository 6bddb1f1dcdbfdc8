"""RobotModel's compiled path: RNEA, CRBA and ABA for calls that need no derivative.

:class:`CompiledDynamics` is a mixin of :class:`engine.robots.model.RobotModel`. Where a call
carries no derivative (see :func:`needs_grad`) and runs on the CPU in float64,
``inverse_dynamics``, ``bias_forces``, ``gravity_torques``, ``mass_matrix``,
``forward_dynamics``, ``forward_kinematics`` and ``jacobian`` run the per-sample kernels of :mod:`engine.robots.compiled_dynamics`
instead of the batched torch algorithms (same results to rounding; both are tested against
Pinocchio). Coupled mimic joints: the kernels run on every movable joint (``q_all = G q +
offset``) and the results are projected (``G^T tau``, ``P^T M P``); forward dynamics is then
``M^-1 (tau - h)``. Everything else, and every call that autograd,
``torch.func`` or forward-mode AD may differentiate, takes the torch algorithms.
``LAGRANGE_NO_COMPILED=1`` (or :func:`torch_only`) switches the compiled path off.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from engine.robots import compiled_dynamics as cdyn

__all__ = ["CompiledDynamics", "needs_grad", "torch_only", "transformed"]

_local = threading.local()


class torch_only:  # noqa: N801 - used as a context manager, like torch.no_grad
    """``with torch_only(): ...``: the calling thread's model calls use the torch algorithms
    (benchmarks and tests of that path). Reusable and nestable."""

    def __init__(self):
        self._prev = []

    def __enter__(self):
        self._prev.append(getattr(_local, "off", False))
        _local.off = True
        return self

    def __exit__(self, *exc):
        _local.off = self._prev.pop()
        return False


def transformed() -> bool:
    """Whether a torch.func transform (jacfwd, vmap...) or a forward-mode AD level is active:
    their tensors carry derivatives that ``requires_grad`` does not show (and no_grad does not
    stop forward AD). Unknown (private API gone): True, the safe answer."""
    try:
        return (torch._C._functorch.maybe_current_level() is not None
                or torch.autograd.forward_ad._current_level >= 0)
    except AttributeError:
        return True


def needs_grad(model, tensors) -> bool:
    """Whether a call may have to carry derivatives: a torch.func transform or forward AD, or
    grad mode with an input requiring a gradient, a parameter, or any learnable link parameter
    (its module may hand out any tensor)."""
    if transformed():
        return True
    if not torch.is_grad_enabled():
        return False
    return (bool(model._learnable) or any(t.requires_grad for t in tensors)
            or any(p.requires_grad for p in model.parameters()))


def _np(x):
    return x.detach().numpy()


def _tensor(x: np.ndarray) -> torch.Tensor:
    """A kernel's result as a normal tensor (not an inference tensor: the call policy then has
    nothing to copy), sharing its memory."""
    with torch.inference_mode(False):
        return torch.from_numpy(x)


class CompiledDynamics:
    """The compiled path of RobotModel (see the module docstring)."""

    def _use_compiled(self, *tensors) -> bool:
        """Whether this call (flat inputs, already of the model's dtype and device) runs the compiled kernels."""
        if getattr(_local, "off", False) or self._n == 0:
            return False
        t = tensors[0]
        if t.dtype != torch.float64 or t.device.type != "cpu" or not cdyn.available():
            return False
        return not needs_grad(self, tensors)

    def _compiled_tree(self):
        """(parent, C0, C, S, perm) as numpy, the kernels' layout: the tree's constants, built once."""
        tree = getattr(self, "_compiled_tree_arrays", None)
        if tree is None:
            n = self._n
            axis = self._axis3.cpu().numpy()
            rev = self._rev.cpu().numpy()[:, None]
            S = np.concatenate([axis * rev, axis * (1.0 - rev)], axis=1)
            tree = self._compiled_tree_arrays = (
                np.ascontiguousarray(self.topology.body_parent, dtype=np.int64),
                np.ascontiguousarray(self._C0.cpu().numpy().reshape(n, 16)),
                np.ascontiguousarray(self._C.cpu().numpy().reshape(n, 3, 16)),
                np.ascontiguousarray(S),
                np.ascontiguousarray(self.topology.body_dof, dtype=np.int64))
        return tree

    def _compiled_constants(self):
        """(parent, C0, C, S, m, c, Ic, perm) as numpy, the dynamics kernels' layout (inertials: current values)."""
        parent, C0, C, S, perm = self._compiled_tree()
        parts = self._body_parts()
        if self._learnable:         # fresh tensors of the current learned values (maybe inference tensors)
            return (parent, C0, C, S) + tuple(np.ascontiguousarray(_np(x)) for x in parts) + (perm,)
        key = tuple((id(x), x._version) for x in parts)     # the model's buffers: edited in place, read again
        cached = getattr(self, "_compiled_inertials", None)
        if cached is None or cached[0] != key:
            cached = self._compiled_inertials = (key, tuple(np.ascontiguousarray(_np(x)) for x in parts))
        return (parent, C0, C, S) + cached[1] + (perm,)

    def _compiled_armature(self):
        arm = self._armature_int
        return np.zeros(self._n) if arm is None else _np(arm)

    def _compiled_gravity(self, gravity):
        a0 = self._gravity_acc(gravity)
        return np.zeros(6) if a0 is None else _np(a0)

    def _compiled_mimic(self):
        """``(G (n, dof), offset (n,))`` as numpy: every movable joint from the independent ones."""
        mimic = getattr(self, "_compiled_mimic_arrays", None)
        if mimic is None:
            mimic = self._compiled_mimic_arrays = (_np(self._G).copy(), _np(self._mimic_offset).copy())
        return mimic

    def _compiled_all(self, x, base: int, offset: bool = False):
        """User-order ``(B, base + dof)`` -> numpy ``(B, base + n)``: mimic joints expanded
        (``G x (+ offset)``, positions only for the offset)."""
        xn = _np(x)
        if self._G is None:
            return xn
        G, off = self._compiled_mimic()
        joints = xn[:, base:] @ G.T
        if offset:
            joints += off
        return np.concatenate([xn[:, :base], joints], axis=1) if base else joints

    def _compiled_project(self, x, base: int):
        """Every joint's entries on the last axis ``(..., base + n)`` -> the independent joints'
        (``x G``: forces ``G^T tau``, Jacobian columns ``J G``)."""
        if self._G is None:
            return x
        joints = x[..., base:] @ self._compiled_mimic()[0]
        return np.concatenate([x[..., :base], joints], axis=-1) if base else joints

    def _compiled_rnea(self, q, qd, qdd, gravity) -> np.ndarray:
        f7, f6 = (7, 6) if self.floating else (0, 0)
        out = cdyn.rnea(self._compiled_constants(), self._compiled_all(q, f7, offset=True),
                        None if qd is None else self._compiled_all(qd, f6),
                        None if qdd is None else self._compiled_all(qdd, f6),
                        self._compiled_gravity(gravity), self._compiled_armature(), self.floating)
        return self._compiled_project(out, f6)

    def _compiled_mass_matrix(self, q) -> np.ndarray:
        M = cdyn.crba(self._compiled_constants(), self._compiled_all(q, 7 if self.floating else 0, offset=True),
                      self._compiled_armature(), self.floating)
        if self._G is None:
            return M
        f = 6 if self.floating else 0
        G = self._compiled_mimic()[0]
        P = np.zeros((f + G.shape[0], f + G.shape[1]))
        P[:f, :f] = np.eye(f)
        P[f:, f:] = G
        return P.T @ M @ P

    def _c_rnea(self, q, qd, qdd, gravity) -> torch.Tensor:
        """``(B, nv)``: joint forces (armature included) and, floating, the base wrench first."""
        return _tensor(np.ascontiguousarray(self._compiled_rnea(q, qd, qdd, gravity)))

    def _c_mass_matrix(self, q) -> torch.Tensor:
        """``(B, nv, nv)``, base rows first for a floating base."""
        return _tensor(np.ascontiguousarray(self._compiled_mass_matrix(q)))

    def _c_forward_dynamics(self, q, qd, tau, gravity) -> torch.Tensor:
        """``(B, nv)``, base first for a floating base: the articulated-body algorithm, or with
        mimic joints (which it cannot take) ``M^-1 (tau - h)`` from the compiled CRBA and RNEA."""
        if self._G is not None:
            M = self._compiled_mass_matrix(q)
            h = self._compiled_rnea(q, qd, None, gravity)
            return _tensor(np.linalg.solve(M, (_np(tau) - h)[..., None])[..., 0])
        return _tensor(cdyn.aba(self._compiled_constants(), _np(q), _np(qd), _np(tau),
                                self._compiled_gravity(gravity), self._compiled_armature(), self.floating))

    # ---------------------------------------------------------------- kinematics
    def _c_forward_kinematics(self, q) -> torch.Tensor:
        """World poses of every link ``(B, L, 4, 4)``."""
        if getattr(self, "_compiled_links", None) is None:
            self._compiled_links = (np.ascontiguousarray(_np(self._link_body), dtype=np.int64),
                                    np.ascontiguousarray(_np(self._link_offset)))
        parent, C0, C, _, perm = self._compiled_tree()
        q_all = self._compiled_all(q, 7 if self.floating else 0, offset=True)
        return _tensor(cdyn.link_poses((parent, C0, C, perm), q_all, *self._compiled_links, self.floating))

    def _c_jacobian(self, q, l: int, point) -> torch.Tensor:
        """World Jacobian ``(B, 6, nv)`` of link ``l`` (rows linear, angular; floating: base columns first)."""
        parent, C0, C, S, perm = self._compiled_tree()
        q_all = self._compiled_all(q, 7 if self.floating else 0, offset=True)
        J = cdyn.jacobian((parent, C0, C, perm), S, _np(self._rev), q_all, self._link_body_int[l],
                          _np(self._link_offset[l]), None if point is None else _np(point), self.floating)
        return _tensor(np.ascontiguousarray(self._compiled_project(J, 6 if self.floating else 0)))
