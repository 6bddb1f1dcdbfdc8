"""The model's methods on the compiled kernels without the torch glue, for small calls.

A plain call that the compiled kernels serve (float64 CPU tensors, nothing to differentiate)
spends most of its time at batch 1 in choosing a backend, flattening and mapping its inputs and
wrapping the result: about 30 us (CPU time) around a 2 to 3 us kernel on a 7-DoF arm. Where such
a call's inputs are simple, :func:`engine.robots.call_policy.call_policy` (and, for the
derivatives and the regressor, :func:`shortcut_call`) hands it instead to the model's
:class:`engine.robots.compiled_calls.CompiledCalls` (built once, kept with the model's backends)
on the tensors' numpy views, and returns its array as a tensor (sharing memory): about 10 us.

When: every tensor argument float64 on the CPU, strided, of one leading shape ``()`` or ``(B,)``
(no broadcasting), none requiring a gradient in grad mode; not inside
:class:`engine.robots.backends.torch_only`, a torch.func transform or forward-mode AD; the
compiled kernels available; the model without learnable link parameters (its values change
between calls) and without other parameters or submodules. The numbers are the compiled
backend's (the same kernels; to rounding where armature, damping or a mimic projection is
applied in another order), so the model's results do not depend on the route. The
snapshot's constants are rebuilt when the model's buffers are replaced (``.to()``) or its
inertials, damping or gravity are edited in place (their version counters).
``LAGRANGE_COMPILED_SHORTCUT=0`` (or :data:`ENABLED` set False) sends every call through the
model's backends, as before the shortcut (tests that force a backend, comparisons).
"""

from __future__ import annotations

import os

import torch

from engine.robots import compiled_dynamics as cdyn
from engine.robots.backends import compiled_switched_off, transformed
from engine.robots.compiled_calls import CompiledCalls

__all__ = ["ENABLED", "SHORTCUTS", "model_calls", "run_shortcut", "shortcut_call"]

ENABLED = os.environ.get("LAGRANGE_COMPILED_SHORTCUT", "1") != "0"

_F64 = torch.float64
_REFUSED = object()          # an argument the shortcut does not take


def _versions(b) -> tuple:
    """Version counters of the buffers a CompiledCalls copies (inertials, damping, gravity)."""
    return b["_body_m"]._version, b["_body_c"]._version, b["_body_Ic"]._version, b["_damping"]._version, \
        b["_a0"]._version


def model_calls(model) -> CompiledCalls | None:
    """The model's :class:`CompiledCalls`, kept with its backends (built again after ``.to()``)
    and rebuilt after an in-place edit of a copied buffer; None where it cannot serve the model
    (not float64 on the CPU, no movable joint). For models without learnable link parameters (a
    snapshot would not follow them)."""
    backends = model._backends()
    versions = _versions(model._buffers)
    cached = backends.get("compiled-calls")
    if cached is None or cached[0] != versions:
        c0 = model._buffers["_C0"]         # the kernels' availability is the caller's check, per call
        calls = CompiledCalls(model) if c0.dtype is _F64 and c0.is_cpu and model._n else None
        cached = backends["compiled-calls"] = (versions, calls)
    return cached[1]


def _plain(model) -> bool:
    """No parameter or learnable anywhere in the model (RobotModel's one submodule, empty)."""
    modules = model._modules
    return (not model._learnable and not model._parameters and len(modules) == 1 and "learnable" in modules
            and not modules["learnable"]._modules)


def _model_ready(model) -> bool:
    """The model and the thread allow the compiled kernels without a gradient to carry (the
    model's dtype and device: :func:`model_calls`)."""
    return _plain(model) and not compiled_switched_off() and not transformed() and cdyn.available()


def _array(x, dim: int, B: int, grad: bool):
    """A tensor argument's numpy view where the shortcut takes it (float64, the leading shape
    of ``q``, no gradient wanted); None, bools and names as they are; else ``_REFUSED`` (arrays,
    lists and numbers: the model's route broadcasts and converts them)."""
    if isinstance(x, torch.Tensor):
        if x.dtype is not _F64 or x.ndim != dim or (dim == 2 and x.shape[0] != B):
            return _REFUSED
        if x.requires_grad:
            return _REFUSED if grad else x.detach().numpy()
        return x.numpy()
    return x if x is None or isinstance(x, bool | str) else _REFUSED


def run_shortcut(fn, model, q, args, kwargs):
    """``fn(calls, q, *args, **kwargs)`` on numpy views, as a tensor, where the shortcut applies
    to the call (see the module docstring), else None: the model's route then serves it, and
    raises its own errors. ``q``: a CPU tensor of at least one dimension, outside inference mode."""
    dim = q.ndim
    if not ENABLED or dim > 2 or q.dtype is not _F64 or not _model_ready(model):
        return None
    grad = torch.is_grad_enabled()
    B = q.shape[0] if dim == 2 else 0
    try:               # numpy() refuses other layouts (TypeError) and a negative bit (RuntimeError)
        qa = _array(q, dim, B, grad)
        xs = []
        for x in args:
            x = _array(x, dim, B, grad)
            if x is _REFUSED:
                return None
            xs.append(x)
        kw = {}
        for k, x in kwargs.items():
            x = kw[k] = _array(x, dim, B, grad)
            if x is _REFUSED:
                return None
    except (TypeError, RuntimeError):
        return None
    if qa is _REFUSED:
        return None
    calls = model_calls(model)
    if calls is None:
        return None
    try:
        out = fn(calls, qa, *xs, **kw)
    except (ValueError, KeyError, TypeError):     # shapes, names or arguments the model's route reports
        return None
    if isinstance(out, tuple):
        return tuple(torch.from_numpy(x) for x in out)
    return None if out is None else torch.from_numpy(out)


def shortcut_call(name: str, model, q, args: tuple, kwargs: dict):
    """``SHORTCUTS[name]`` for a method that :func:`engine.robots.call_policy.call_policy` does
    not wrap (the derivatives): its result, or None where the model's route serves the call."""
    if not isinstance(q, torch.Tensor) or not q.is_cpu or q.dim() == 0 or torch.is_inference_mode_enabled():
        return None
    return run_shortcut(SHORTCUTS[name], model, q, args, kwargs)


def _fd(calls, q, qd, tau, gravity=True, damping=False, method="auto"):
    if method not in ("auto", "articulated", "composite"):
        return None              # the model's own route raises its error
    return calls.aba(q, qd, tau, gravity=gravity, damping=damping)


# the methods of RobotModel that call_policy can shortcut: name -> (calls, numpy args...) -> array
SHORTCUTS = {
    "inverse_dynamics": lambda c, q, qd, qdd, gravity=True, damping=False: c.rnea(q, qd, qdd, gravity, damping),
    "bias_forces": lambda c, q, qd, gravity=True: c.rnea(q, qd, None, gravity),
    "gravity_torques": lambda c, q, gravity=True: c.rnea(q, None, None, gravity),
    "mass_matrix": lambda c, q: c.crba(q),
    "forward_dynamics": _fd,
    "forward_kinematics": lambda c, q: c.fk(q),
    "link_pose": lambda c, q, link: c.link_pose(q, link) if isinstance(link, str) else None,
    "jacobian": lambda c, q, link, point=None: c.jacobian(q, link, point) if isinstance(link, str) else None,
    "rnea_derivatives": lambda c, q, qd, qdd, gravity=True, damping=False: c.rnea_derivatives(q, qd, qdd, gravity,
                                                                                             damping),
    "aba_derivatives": lambda c, q, qd, tau, gravity=True, damping=False: c.aba_derivatives(q, qd, tau, gravity,
                                                                                            damping),
    "regressor": lambda c, q, qd, qdd, gravity=True: c.regressor(q, qd, qdd, gravity),
}

