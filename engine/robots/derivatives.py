"""Analytic derivatives of the rigid-body algorithms and the joint-torque regressor.

=============================================  =================================================
``model.rnea_derivatives(q, qd, qdd)``         ``(dtau/dq, dtau/dqd, dtau/dqdd)``, ``(..., nv, nv)`` each
``model.aba_derivatives(q, qd, tau)``          ``(dqdd/dq, dqdd/dqd, dqdd/dtau)``, ``(..., nv, nv)`` each
``model.regressor(q, qd, qdd)``                ``Y (..., nv, 10 N)`` with ``tau = Y pi`` (no armature)
``model.dynamic_parameters()``                 ``pi (10 N,)``
=============================================  =================================================

Units: N m/rad, N m s/rad, kg m^2 (N/m ... for prismatic joints); for a free-flyer base the
derivatives with respect to ``q`` are taken in the tangent space (``q (+) dq``, the base moved
by ``M exp(dq)``, ``dq`` a base-frame twist ``[linear; angular]``), as Pinocchio's
``computeRNEADerivatives``. Armature is on ``dtau/dqdd``'s diagonal; ``damping=True`` adds the
joint damping ``D`` to ``dtau/dqd`` (ABA: the accelerations of ``tau - D qd``); coupled mimic
joints are projected (``P^T (.) P``; ABA: ``-M^-1`` times the projected RNEA derivatives at the
ABA result, ``dqdd/dtau = M^-1``).

Float64 CPU calls without a gradient to carry run the compiled kernels
(:mod:`engine.robots.derivative_kernels`, :mod:`engine.robots.regressor_kernels`; ball joints
included); every other call (another dtype or device, inputs
requiring a gradient, learnable parameters, a torch.func transform) differentiates the torch
algorithms with autograd (one backward pass per row), so the functions always work and their
results are differentiable there.

The regressor: ``N`` bodies, the floating base's first (if any), then the child body of each
movable joint (coupled mimic joints included) in the tree's joint order; per body Pinocchio's
``Inertia.toDynamicParameters`` ``[m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]``
(kg, kg m, kg m^2; ``c`` the centre of mass and ``I`` the rotational inertia about the body's
origin, body axes). Links welded to a body are merged into it, as Pinocchio does.

:func:`compiled_backend_for` chooses the compiled backend of a value call, and for calls whose
inputs need a gradient the compiled backend with analytic backwards
(:mod:`engine.robots.backends.compiled_autograd`).
"""

from __future__ import annotations

from typing import Any

import torch

from engine.robots import compiled_dynamics as cdyn
from engine.robots.backends import compiled_autograd as cag
from engine.robots.backends import compiled_switched_off, needs_grad, torch_only, transformed
from engine.robots.backends.tree import Inertials
from engine.robots.compiled_shortcut import shortcut_call
from engine.spatial import quaternion_multiply, quaternion_to_rotation

__all__ = ["DerivativeMethods", "aba_derivatives", "compiled_backend_for", "dynamic_parameters", "regressor",
           "rnea_derivatives"]


def _compiled_ok(model: Any, t: torch.Tensor) -> bool:
    """The compiled kernels serve a call on ``t`` (ball joints included)."""
    return (model._n > 0
            and t.dtype == torch.float64 and t.device.type == "cpu" and not compiled_switched_off()
            and cdyn.available())


def compiled_backend_for(model: Any, tensors, batch_last_from: int) -> Any:
    """The compiled backend of one call on flat float64 CPU inputs, or None (a torch backend):
    the plain kernels where nothing needs a gradient; else (no transform active) the kernels
    with analytic backwards, to the inputs and to learnable inertials (see
    :mod:`engine.robots.backends.compiled_autograd`), their torch parts on batch-last tensors
    from ``batch_last_from`` samples on."""
    if transformed():               # once: it costs microseconds (needs_grad asks it too)
        return None
    if not (torch.is_grad_enabled() and (model.has_learnable_parameters() or any(t.requires_grad for t in tensors)
                                         or any(p.requires_grad for p in model.parameters()))):
        return model._compiled()    # nothing to differentiate (needs_grad without the transform)
    if not cag.ENABLED:
        return None
    backends = model._backends()
    out = backends.get("compiled-autograd")
    if out is None:
        body_major, batch_last = backends["body-major"], backends["batch-last"]
        out = backends.setdefault("compiled-autograd", cag.CompiledAutogradBackend(
            model._compiled(), lambda q: batch_last if q.shape[0] >= batch_last_from else body_major))
    return out


def _torch_backend(model: Any, q):
    """The torch backend the model picks for flat inputs ``q``."""
    with torch_only():
        return model._backend_for(q)


def _project(model: Any, X):
    """Full-coordinate matrices ``(B, nv_all, nv_all)`` -> the independent coordinates' ``P^T X P``."""
    return X if model._P is None else model._P.t() @ X @ model._P


def _damping_matrix(model: Any) -> torch.Tensor:
    """``D (nv, nv)``: ``P^T diag(d) P`` over every joint, zero on a floating base."""
    f = 6 if model.floating else 0
    d = torch.cat([torch.zeros(f, dtype=model.dtype, device=model.device), model._joint_damping_full()])
    return _project(model, torch.diag(d))


def _a0(model: Any, gravity):
    return model._gravity_acc(gravity)


def rnea_derivatives(model: Any, q, qd, qdd, gravity=True, damping: bool = False):
    """``(dtau/dq, dtau/dqd, dtau/dqdd)``, ``(..., nv, nv)`` each (see the module docstring)."""
    shape, (q, qd, qdd) = model._flat(q, qd, qdd, kinds="qvv")
    nv = model.nv
    if _compiled_ok(model, q) and not needs_grad(model, [q, qd, qdd]):
        with torch.no_grad():
            cb = model._compiled()
            out = cb.derivatives(model._all_q(q), model._all_v(qd), model._all_v(qdd), _a0(model, gravity),
                                 model._inertials(), "rnea")
            dq, dv, da = (_project(model, torch.from_numpy(x)) for x in out)
            if damping:
                dv = dv + _damping_matrix(model)
    else:
        dq, dv, da = _torch_rnea_derivatives(model, q, qd, qdd, gravity, damping)
    return tuple(x.reshape(shape + (nv, nv)) for x in (dq, dv, da))


def aba_derivatives(model: Any, q, qd, tau, gravity=True, damping: bool = False):
    """``(dqdd/dq, dqdd/dqd, dqdd/dtau = M^-1)``, ``(..., nv, nv)`` each, at ``qdd = ABA(q, qd, tau)``."""
    shape, (q, qd, tau) = model._flat(q, qd, tau, kinds="qvv")
    nv = model.nv
    if _compiled_ok(model, q) and model._G is None and not needs_grad(model, [q, qd, tau]):
        with torch.no_grad():
            cb = model._compiled()
            a0, inertials = _a0(model, gravity), model._inertials()
            d = None
            if damping:
                d = torch.cat([torch.zeros(6 if model.floating else 0, dtype=q.dtype), model._joint_damping_full()])
                tau = tau - d * qd
            out = tuple(torch.from_numpy(x) for x in cb.derivatives(q, qd, tau, a0, inertials, "aba", damping=d))
    else:
        qdd = model.forward_dynamics(q, qd, tau, gravity=gravity, damping=damping)
        dq, dv, M = rnea_derivatives(model, q, qd, qdd, gravity=gravity, damping=damping)
        Minv = torch.cholesky_inverse(torch.linalg.cholesky(M))
        out = (-Minv @ dq, -Minv @ dv, Minv)
    return tuple(x.reshape(shape + (nv, nv)) for x in out)


def _retract(model: Any, q, dx):
    """``q (+) dx`` to first order (exact derivative at ``dx = 0``): joints ``q + dx``; a floating
    base moved by ``M exp(dx_b)``: ``p + R dx_lin``, ``quat (x) [dx_ang / 2, 1]``."""
    if model._ball_names:           # ball joints: q exp(dx) on every quaternion (engine.robots.ball)
        return model.integrate(q, dx)
    if not model.floating:
        return q + dx
    quat = q[:, 3:7]
    p = q[:, :3] + (quaternion_to_rotation(quat) @ dx[:, :3, None])[..., 0]
    half = torch.cat([0.5 * dx[:, 3:6], torch.ones_like(dx[:, :1])], dim=-1)
    return torch.cat([p, quaternion_multiply(quat, half), q[:, 7:] + dx[:, 6:]], dim=-1)


def _torch_rnea_derivatives(model: Any, q, qd, qdd, gravity, damping):
    """RNEA's derivatives by autograd through the torch algorithms, one backward pass per row;
    differentiable where the inputs or parameters need a gradient."""
    keep = needs_grad(model, [q, qd, qdd])
    B, nv = q.shape[0], model.nv
    with torch.enable_grad(), torch_only():
        offsets = [torch.zeros(B, nv, dtype=q.dtype, device=q.device, requires_grad=True) for _ in range(3)]
        tau = model.inverse_dynamics(_retract(model, q, offsets[0]), qd + offsets[1], qdd + offsets[2],
                                     gravity=gravity, damping=damping)
        rows = [torch.autograd.grad(tau[:, i].sum(), offsets, retain_graph=True, create_graph=keep,
                                    allow_unused=True) for i in range(nv)]
    return tuple(torch.stack([torch.zeros_like(offsets[0]) if r[k] is None else r[k] for r in rows], dim=1)
                 for k in range(3))


def dynamic_parameters(model: Any) -> torch.Tensor:
    """``pi (10 N,)`` in the regressor's body order (see the module docstring); differentiable
    with respect to learnable inertials."""
    pi = cag.inertial_parameters(*model._inertials().parts)     # (n + 1, 10), root first, internal order
    order = model._dof_body + 1
    if model.floating:
        order = torch.cat([order.new_zeros(1), order])
    return pi.index_select(0, order).reshape(-1)


def regressor(model: Any, q, qd, qdd, gravity=True) -> torch.Tensor:
    """``Y (..., nv, 10 N)``: ``inverse_dynamics(q, qd, qdd) = Y @ dynamic_parameters()`` plus the
    armature's ``armature * qdd`` (see the module docstring)."""
    shape, (q, qd, qdd) = model._flat(q, qd, qdd, kinds="qvv")
    if _compiled_ok(model, q):
        with torch.no_grad():
            Y = model._compiled().regressor(model._all_q(q), model._all_v(qd), model._all_v(qdd),
                                            _a0(model, gravity))
    else:
        Y = _torch_regressor(model, q, qd, qdd, gravity)
    Y = Y if model._P is None else model._P.t() @ Y
    return Y.reshape(shape + Y.shape[1:])


def _torch_regressor(model: Any, q, qd, qdd, gravity):
    """The regressor through a torch backend, one column per RNEA: tau is linear in pi, so column
    ``k`` is ``tau(pi0 + e_k) - tau(pi0)`` at ``pi0`` unit masses, zero first moments and unit
    inertias (every body's centre of mass defined)."""
    n1 = model._n + 1
    kw = {"dtype": q.dtype, "device": q.device}
    base = torch.cat([torch.ones(n1, 1, **kw), torch.zeros(n1, 3, **kw),
                      torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0], **kw).expand(n1, 6)], dim=-1)
    backend = _torch_backend(model, q)
    args = (model._all_q(q), model._all_v(qd), model._all_v(qdd), _a0(model, gravity))

    def tau(pi):
        m, h, s = pi[:, 0], pi[:, 1:4], pi[:, 4:]
        c = h / m[:, None]
        Io = s[:, [0, 1, 3, 1, 2, 4, 3, 4, 5]].reshape(n1, 3, 3)
        eye = torch.eye(3, **kw)
        Ic = Io - m[:, None, None] * ((c * c).sum(-1)[:, None, None] * eye - c[:, :, None] * c[:, None, :])
        return backend.rnea(*args, Inertials((m, c, Ic)))

    order = (model._dof_body + 1).tolist()
    bodies = ([0] if model.floating else []) + order
    with torch.no_grad():
        t0 = tau(base)
        cols = []
        for k in bodies:
            for j in range(10):
                pi = base.clone()
                pi[k, j] += 1.0
                cols.append(tau(pi) - t0)
    return torch.stack(cols, dim=-1)


class DerivativeMethods:
    """The model's derivative methods (mixed into :class:`engine.robots.model.RobotModel`); plain
    calls on simple inputs take the model's CompiledCalls (:mod:`engine.robots.compiled_shortcut`)."""

    def rnea_derivatives(self, q, qd, qdd, gravity=True, damping: bool = False):
        """``(dtau/dq, dtau/dqd, dtau/dqdd)`` ``(..., nv, nv)``: :func:`engine.robots.derivatives.rnea_derivatives`."""
        fast = shortcut_call("rnea_derivatives", self, q, (qd, qdd), {"gravity": gravity, "damping": damping})
        return fast if fast is not None else rnea_derivatives(self, q, qd, qdd, gravity, damping)

    def aba_derivatives(self, q, qd, tau, gravity=True, damping: bool = False):
        """``(dqdd/dq, dqdd/dqd, M^-1)`` ``(..., nv, nv)``: :func:`engine.robots.derivatives.aba_derivatives`."""
        fast = shortcut_call("aba_derivatives", self, q, (qd, tau), {"gravity": gravity, "damping": damping})
        return fast if fast is not None else aba_derivatives(self, q, qd, tau, gravity, damping)

    def regressor(self, q, qd, qdd, gravity=True) -> torch.Tensor:
        """``Y (..., nv, 10 N)``, ``tau = Y pi``: :func:`engine.robots.derivatives.regressor`."""
        fast = shortcut_call("regressor", self, q, (qd, qdd), {"gravity": gravity})
        return fast if fast is not None else regressor(self, q, qd, qdd, gravity)

    def _compiled_for(self, tensors, batch_last_from: int):
        """:func:`engine.robots.derivatives.compiled_backend_for` (the model's backend choice)."""
        return compiled_backend_for(self, tensors, batch_last_from)

    def dynamic_parameters(self) -> torch.Tensor:
        """``pi (10 N,)`` of :meth:`regressor`: :func:`engine.robots.derivatives.dynamic_parameters`."""
        return dynamic_parameters(self)
