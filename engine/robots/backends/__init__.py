"""Execution paths of :class:`engine.robots.model.RobotModel`: one backend object per path.

::

    RobotModel (public: inverse_dynamics, mass_matrix, forward_dynamics, jacobian, ...)
       |  model._backend_for(inputs): chosen once per call (:func:`choose`)
       v
    Backend: fk, jacobians(links), rnea, crba, aba, body_poses
       |  over the tree's constants (:class:`engine.robots.backends.tree.Tree`), built once per
       v  model (and again after a move to another device or dtype)
    compiled (numba, float64 CPU, no derivative) | body-major (torch, small batches)
                                                  | batch-last (torch, large batches)

- *compiled* (:mod:`engine.robots.backends.compiled`, numba per-sample kernels): float64 CPU
  calls that carry no derivative (nothing requires a gradient, or no_grad; no torch.func
  transform or forward AD), 2 to 10 times faster than torch at batch 1024, about 10 at batch
  1; ``LAGRANGE_NO_COMPILED=1`` or ``with engine.robots.backends.torch_only():`` turns it off;
- *body-major* (:mod:`engine.robots.backends.body_major`): torch, tensors ``(n, B, ...)``,
  below ``engine.robots.model.BATCH_LAST_BATCH`` samples;
- *batch-last* (:mod:`engine.robots.backends.batch_last`): torch, tensors ``(n, k, B)``
  (samples innermost), about twice as fast at batches in the thousands.

Every backend takes and returns *full* coordinates: every movable joint (coupled mimic
joints included) in the tree's joint order, after the floating base's ``7`` configuration /
``6`` velocity coordinates where there is one; flat batches (``B`` first). The model maps the
user's independent coordinates to them and back (``q_all = G q + offset``, ``G^T tau``,
``P^T M P``, ``J P``), adds joint armature to RNEA and CRBA and applies joint damping, once,
above the backends (ABA takes the armature from the tree: it enters the articulated inertias).
Link inertials are an argument of each dynamics call (:class:`Inertials`), so learnable
parameters reach every torch backend with their gradients.

Adding an algorithm: one method per backend with the signature below, then one public
method on the model (a few lines: flatten, expand, ``self._backend_for(...)``, project), and
a case in ``tests/engine/robots/test_backends.py`` (every backend against Pinocchio).
"""

from __future__ import annotations

import threading
from typing import Protocol

import torch

from engine.robots.backends.tree import Inertials, Tree

__all__ = ["Backend", "Inertials", "Tree", "needs_grad", "torch_only", "transformed"]

_local = threading.local()


class Backend(Protocol):
    """What every execution path provides (flat, full coordinates; see the module docstring).

    q ``(B, nq_all)``, v / a / tau ``(B, nv_all)`` (None: zero), a0 ``(6,)`` the world's spatial
    acceleration ``[0; -g]`` or None, inertials: the call's :class:`Inertials`.
    """

    name: str

    def fk(self, q: torch.Tensor) -> torch.Tensor:
        """World poses of every link ``(B, L, 4, 4)`` (the model's ``link_names`` order)."""

    def jacobians(self, q: torch.Tensor, links: list[int], point: torch.Tensor | None = None,
                  with_poses: bool = False):
        """World Jacobians ``(B, T, 6, nv_all)`` (rows linear, angular; base columns first) of
        the links' origins (or of ``point (B, 3)`` in each link's frame); with_poses: also the
        links' poses ``(B, T, 4, 4)``, first."""

    def rnea(self, q, v, a, a0, inertials: Inertials) -> torch.Tensor:
        """Generalised forces ``(B, nv_all)`` without armature (floating: the base wrench first)."""

    def crba(self, q, inertials: Inertials) -> torch.Tensor:
        """Joint-space inertia ``(B, nv_all, nv_all)`` without armature."""

    def aba(self, q, v, tau, a0, inertials: Inertials, method: str = "auto") -> torch.Tensor:
        """Generalised accelerations ``(B, nv_all)`` (the tree's armature included). Not for
        coupled joints: the model solves those above the backends."""


class torch_only:  # noqa: N801 - used as a context manager, like torch.no_grad
    """``with torch_only(): ...``: the calling thread's model calls use the torch backends, not
    the compiled kernels (benchmarks and tests of those paths). Reusable and nestable."""

    def __init__(self):
        self._prev = []

    def __enter__(self):
        self._prev.append(getattr(_local, "off", False))
        _local.off = True
        return self

    def __exit__(self, *exc):
        _local.off = self._prev.pop()
        return False


def compiled_switched_off() -> bool:
    """Whether the calling thread is inside :class:`torch_only`."""
    return getattr(_local, "off", False)


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
    return (model.has_learnable_parameters() or any(t.requires_grad for t in tensors)
            or any(p.requires_grad for p in model.parameters()))
