"""The derivative rows of ``python -m engine bench rbd``: analytic derivatives against Pinocchio.

For each batch (``RbdBenchConfig.derivative_batches``, default 1 and 1024), in this process:

- ``rnea_derivs``: ``model.rnea_derivatives(q, v, a)`` (the three ``(B, nv, nv)`` matrices)
  against Pinocchio's ``computeRNEADerivatives`` in a Python loop over the samples;
- ``aba_derivs``: ``model.aba_derivatives(q, v, tau)`` against ``computeABADerivatives``;
- ``id_backward`` / ``fd_backward``: one training step's worth, ``inverse_dynamics`` /
  ``forward_dynamics`` on inputs that require a gradient, then ``torch.autograd.grad`` of a
  weighted sum with respect to ``q, v`` and ``a`` (or ``tau``): forward plus backward, against
  Pinocchio's full derivatives (the same loops as above), which give those gradients and more;
- ``id_vjp`` / ``fd_vjp``: the backward alone (``torch.autograd.grad`` of that weighted sum, its
  graph built once and kept), against the same loops: what the backward adds to a forward pass
  a training step makes anyway.

"torch" times each of ours through the torch algorithms (``torch_only``): autograd, one
backward pass per row for the full derivatives.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.robots.backends import compiled_switched_off

__all__ = ["DERIVATIVE_ALGORITHMS", "derivative_calls", "pinocchio_derivative_loops"]

DERIVATIVE_ALGORITHMS = ("rnea_derivs", "aba_derivs", "id_backward", "fd_backward", "id_vjp", "fd_vjp")


def derivative_calls(model, q, qd, qdd) -> dict:
    """``{algorithm: fn}`` of ours on one batch (numpy ``q (B, nq)``, ``qd, qdd (B, nv)``)."""
    q, qd, qdd = (torch.as_tensor(np.ascontiguousarray(x), device=model.device) for x in (q, qd, qdd))
    leaves = [x.clone().requires_grad_(True) for x in (q, qd, qdd)]
    w = torch.randn(qdd.shape, dtype=qdd.dtype, generator=torch.Generator().manual_seed(0)).to(qdd.device)

    def backward(fn):
        def call():
            torch.autograd.grad((fn(*leaves) * w).sum(), leaves)
        return call

    def backward_only(fn):
        graphs: dict = {}       # one graph per path (compiled, or torch_only around the call)

        def call():
            key = compiled_switched_off()
            if key not in graphs:
                graphs[key] = (fn(*leaves) * w).sum()
            torch.autograd.grad(graphs[key], leaves, retain_graph=True)
        return call

    return {"rnea_derivs": lambda: model.rnea_derivatives(q, qd, qdd),
            "aba_derivs": lambda: model.aba_derivatives(q, qd, qdd),
            "id_backward": backward(model.inverse_dynamics),
            "fd_backward": backward(model.forward_dynamics),
            "id_vjp": backward_only(model.inverse_dynamics),
            "fd_vjp": backward_only(model.forward_dynamics)}


def pinocchio_derivative_loops(pm, pd, qs, vs, as_) -> dict:
    """Pinocchio's loops over the samples (lists of its vectors): ``{algorithm: fn}``."""
    import pinocchio as pin

    def rnea():
        for x, v, a in zip(qs, vs, as_):
            pin.computeRNEADerivatives(pm, pd, x, v, a)

    def aba():
        for x, v, a in zip(qs, vs, as_):
            pin.computeABADerivatives(pm, pd, x, v, a)

    return {"rnea_derivs": rnea, "aba_derivs": aba, "id_backward": rnea, "fd_backward": aba, "id_vjp": rnea,
            "fd_vjp": aba}
