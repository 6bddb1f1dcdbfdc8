"""The compiled backend with a backward: values by the numba kernels, gradients by the O(n)
vector-Jacobian kernel (:mod:`engine.robots.compiled_vjp`, :mod:`engine.robots.vjp_kernels`),
as ``torch.autograd.Function`` s.

Chosen by :func:`engine.robots.derivatives.compiled_backend_for` for float64 CPU calls that
need a gradient in grad mode, where no torch.func transform or forward-mode AD is active, and
:data:`ENABLED`. RNEA's backward is ``g^T dtau/dq, g^T dtau/dv, g^T dtau/da`` and, for learnable
link inertials, ``g^T Y`` (the regressor) with respect to each body's inertial parameters ``pi``
(:func:`inertial_parameters`, computed from the call's inertials by torch, so autograd carries
it on to the learnable modules): one reverse (adjoint) pass of RNEA per sample, no ``(nv, nv)``
matrix. ABA's is ``-lambda^T dtau/dq, -lambda^T dtau/dv, lambda`` and ``-lambda^T Y`` at the ABA
result, ``lambda = M^-1 g``: the forward computes the accelerations as ``M^-1 (tau - h)`` and
keeps the ``L^T D L`` factors of ``M`` for the backward's solve. The forward of either keeps,
on the autograd context, what the reverse pass reads (each body's pose, velocity, acceleration
and transmitted force, at ABA's result for ABA; :func:`engine.robots.compiled_vjp.forward`), so
the backward does not run the forward passes again (memory: 288 bytes per body and sample,
plus ABA's packed factors, held until the graph is freed); the plain value path (nothing to
differentiate) stays on the kernels that keep nothing. CRBA's backward is RNEA's
product at the unit accelerations (see :class:`_Crba`). Kinematics and Jacobians stay on the
torch backends.

A free-flyer base: the kernels depend on the base pose only through gravity in the base frame
(``R(quat)^T a0``), so the configuration gradient is the tangent one on the joints, zero on
the base position and, on the quaternion, ``dtau/dg`` (the base columns of ``M``) through Eigen's
quaternion formula, in the kernel: the derivative of the computed value in every direction, off the unit sphere
too (the torch algorithms, in the world frame, agree with it along the sphere). Ball joints: RNEA's
and ABA's backward in the kernels too, their quaternions' gradient by the same formula
(:mod:`engine.robots.lane_ball_vjp`, which says where it is exact), CRBA's likewise.
A backward that must itself be differentiable (``create_graph=True``) differentiates the torch
algorithms instead; with learnable inertials it raises (use ``LAGRANGE_COMPILED_BACKWARD=0`` or
:class:`engine.robots.backends.torch_only` for second-order gradients of those).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from engine.robots import compiled_dynamics as cdyn
from engine.robots import compiled_vjp
from engine.robots.backends.compiled import CompiledBackend, _np
from engine.robots.backends.tree import Inertials

__all__ = ["ENABLED", "CompiledAutogradBackend", "inertial_parameters"]

# LAGRANGE_COMPILED_BACKWARD=0 keeps every gradient-carrying call on the torch backends
ENABLED = os.environ.get("LAGRANGE_COMPILED_BACKWARD", "1") != "0"


def inertial_parameters(m, c, Ic) -> torch.Tensor:
    """``pi (n, 10)`` per body from ``m (n,)``, ``c (n, 3)``, ``Ic (n, 3, 3)`` (about the CoM):
    Pinocchio's ``[m, m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``, the rotational inertia about the body's
    origin (its off-diagonal entries the mean of the two, so both carry a gradient)."""
    eye = torch.eye(3, dtype=m.dtype, device=m.device)
    Io = Ic + m[:, None, None] * ((c * c).sum(-1)[:, None, None] * eye - c[:, :, None] * c[:, None, :])
    Io = 0.5 * (Io + Io.transpose(-1, -2))
    return torch.cat([m[:, None], m[:, None] * c, Io[:, [0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]], dim=-1)


def _no_second_order(pi):
    if pi is not None and pi.requires_grad:
        raise RuntimeError("second-order gradients (create_graph) through the compiled backward do not reach "
                           "learnable inertials: set LAGRANGE_COMPILED_BACKWARD=0 or use "
                           "engine.robots.backends.torch_only()")


def _torch_vjp(fn, xs, rest, g):
    """A differentiable vector-Jacobian product through the torch algorithm ``fn`` (create_graph)."""
    with torch.enable_grad():
        out = fn(*xs, *rest)
        wanted = [x for x in xs if x is not None and x.requires_grad]
        grads = iter(torch.autograd.grad(out, wanted, g, create_graph=True) if wanted else ())
    return tuple(next(grads) if x is not None and x.requires_grad else None for x in xs)


def _t(x):
    """A kernel's array as a normal tensor (not an inference tensor), sharing its memory."""
    if not torch.is_inference_mode_enabled():       # the usual case: no context to enter
        return torch.from_numpy(x)
    with torch.inference_mode(False):
        return torch.from_numpy(x)


class _Rnea(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, v, a, pi, backend, a0, inertials):
        ctx.backend, ctx.a0, ctx.inertials = backend, a0, inertials
        ctx.save_for_backward(q, v, a, pi)
        tau, ctx.kept = backend.forward_kept(q, v, a, a0, inertials, False)
        return tau

    @staticmethod
    def backward(ctx, g):
        q, v, a, pi = ctx.saved_tensors
        bk = ctx.backend
        if torch.is_grad_enabled():
            _no_second_order(pi)
            return _torch_vjp(bk.torch_backend(q).rnea, (q, v, a), (ctx.a0, ctx.inertials), g) + (None,) * 4
        need = ctx.needs_input_grad
        _, gv, ga, gpi, gcfg = bk.adjoint(ctx.kept, g, need[3])
        return (gcfg if need[0] else None, gv if need[1] else None, ga if need[2] else None, gpi, None, None, None)


class _Aba(torch.autograd.Function):
    """ABA; ``armature (n,)`` (or None): rotor inertia beyond the tree's, in its joint order, with
    its gradient ``-lambda * qdd`` summed over the batch (``(M + diag Ia) qdd = tau - h``)."""

    @staticmethod
    def forward(ctx, q, v, tau, pi, backend, a0, inertials, armature=None):
        ctx.backend, ctx.a0, ctx.inertials = backend, a0, inertials
        qdd, ctx.kept = backend.forward_kept(q, v, tau, a0, inertials, True, armature)
        ctx.save_for_backward(q, v, tau, pi, armature, qdd if armature is not None else None)
        return qdd

    @staticmethod
    def backward(ctx, g):
        q, v, tau, pi, armature, qdd = ctx.saved_tensors
        bk = ctx.backend
        if torch.is_grad_enabled():
            _no_second_order(pi)
            if armature is not None:
                raise RuntimeError("second-order gradients (create_graph) of forward dynamics with an extra "
                                   "armature: set LAGRANGE_COMPILED_BACKWARD=0")
            return _torch_vjp(bk.torch_backend(q).aba, (q, v, tau), (ctx.a0, ctx.inertials), g) + (None,) * 5
        need = ctx.needs_input_grad
        _, gv, lam, gpi, gcfg = bk.adjoint(ctx.kept, g, need[3])
        garm = -(lam * qdd).sum(0) if armature is not None and need[7] else None
        return (gcfg if need[0] else None, gv if need[1] else None,
                lam if need[2] else None, gpi, None, None, None, garm)


class _Crba(torch.autograd.Function):
    """CRBA (no armature) with ``sum_ij G_ij dM_ij/d(q, pi)`` as its backward: ``M e_j`` is RNEA at
    zero velocity and gravity with ``qdd = e_j``, so the product is RNEA's vector-Jacobian product
    of ``G[:, :, j]`` at those ``nv`` accelerations per sample
    (:func:`engine.robots.compiled_vjp.crba_vjp`: the poses once per sample, O(n) per column)."""

    @staticmethod
    def forward(ctx, q, pi, backend, inertials):
        ctx.backend, ctx.inertials = backend, inertials
        ctx.save_for_backward(q, pi)
        return backend.compiled.crba(q, inertials)

    @staticmethod
    def backward(ctx, G):
        q, pi = ctx.saved_tensors
        bk = ctx.backend
        if torch.is_grad_enabled():
            _no_second_order(pi)
            return _torch_vjp(bk.torch_backend(q).crba, (q,), (ctx.inertials,), G) + (None,) * 3
        need = ctx.needs_input_grad
        c = bk.compiled
        gq, gpi = compiled_vjp.crba_vjp(c._constants(ctx.inertials), _np(q), bk.floating, _np(G), need[1],
                                        bk._joints)
        return _t(gq) if need[0] else None, None if gpi is None else _t(gpi), None, None


class CompiledAutogradBackend:
    """rnea, aba and crba by the kernels with analytic backwards; fk and jacobians by the torch
    backend that ``torch_backend(q)`` picks (see the module docstring)."""

    name = "compiled-autograd"

    def __init__(self, compiled: CompiledBackend, torch_backend):
        self.compiled = compiled
        self.tree = compiled.tree
        self.floating = compiled.tree.floating
        self.torch_backend = torch_backend
        perm = compiled._chain[3]
        self._joints = cdyn._joints(perm, compiled._joints)       # the kernels' layout (ball joints)
        self._nv = perm.shape[0] + (6 if self.floating else 0)

    def fk(self, q):
        return self.torch_backend(q).fk(q)

    def jacobians(self, q, links, point=None, with_poses: bool = False):
        return self.torch_backend(q).jacobians(q, links, point, with_poses)

    def crba(self, q, inertials: Inertials):
        return _Crba.apply(q, self._parameters(inertials), self, inertials)

    def forward_kept(self, q, v, x, a0, inertials: Inertials, solve: bool, armature=None):
        """``(out, kept)``: RNEA's forces at ``a = x`` or (``solve``) ABA's accelerations for ``tau = x``
        (computed as ``M^-1 (tau - h)``, armature in ``M``), and what :meth:`adjoint` takes: the
        forward passes' per-body results (:func:`engine.robots.compiled_vjp.forward`), the factors of
        ``M`` after ABA, and the kernel's inputs. ``armature``: ABA's extra rotor inertia (see
        :meth:`CompiledBackend.armature_with`)."""
        c = self.compiled
        qn = _np(q)
        zero = None if v is not None and x is not None else np.zeros((qn.shape[0], self._nv))
        args = (c._constants(inertials), qn, zero if v is None else _np(v))
        a0n, arm = c._gravity(a0), c.armature_with(armature) if solve else c._no_armature
        out, saved = compiled_vjp.forward(*args, zero if x is None else _np(x), a0n, arm, self.floating, solve,
                                          self._joints)
        return _t(out), args + (a0n, arm, saved)

    def adjoint(self, kept, g, want_pi: bool):
        """``(gq (tangent), gv, ga, gpi, gcfg)`` tensors from :meth:`forward_kept`'s ``kept``: ``g^T``
        times RNEA's derivatives at its ``a``, or ABA's at its result (``-lam^T dtau/dq``, ``-lam^T
        dtau/dv``, ``lam``); ``gpi`` the regressor products per body ``(n + 1, 10)`` summed over the
        batch (None without ``want_pi``), ``gcfg`` the gradient with respect to the configuration ``(B, nq)``.
        The reverse pass alone (:func:`engine.robots.compiled_vjp.adjoint`), O(n) per sample."""
        consts, qn, vn, a0n, arm, saved = kept
        out = compiled_vjp.adjoint(consts, saved, qn, vn, a0n, arm, self.floating, _np(g), want_pi, self._joints)
        return tuple(None if x is None else _t(x) for x in out)

    @staticmethod
    def _parameters(inertials: Inertials):
        """``pi`` of learnable inertials (the autograd path to them), None for the model's constants."""
        return None if inertials.fixed else inertial_parameters(*inertials.parts)

    def rnea(self, q, v, a, a0, inertials: Inertials):
        if a0 is not None and a0.requires_grad:        # a gravity to differentiate: torch
            return self.torch_backend(q).rnea(q, v, a, a0, inertials)
        return _Rnea.apply(q, v, a, self._parameters(inertials), self, a0, inertials)

    def aba(self, q, v, tau, a0, inertials: Inertials, method: str = "auto", armature=None):
        if a0 is not None and a0.requires_grad:
            if armature is not None:
                raise ValueError("a differentiable gravity with an extra armature: use the torch algorithms")
            return self.torch_backend(q).aba(q, v, tau, a0, inertials, method)
        return _Aba.apply(q, v, tau, self._parameters(inertials), self, a0, inertials, armature)
