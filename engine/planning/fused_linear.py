"""``act(x W^T + b)`` in one call for the planner's inner loop, through oneDNN when torch has it.

The 512-candidate line search spends almost all of its time in 160 small products
(512 x 64 by 64 x 64) each followed by GELU. torch's ``addmm`` then ``gelu`` is two calls and
two passes over the activations; oneDNN's linear with the activation as a post-op
(``torch.ops.mkldnn._linear_pointwise``, the kernel torch's own compiler emits for a frozen
``Linear`` + ``GELU`` on CPU) does both in one pass and packs the weights for the vector
units. Measured here on one core (512 x 64, exact erf GELU): 63 us for addmm + gelu against
43 us fused. The operator is private to torch, so it is probed once against the plain
formula and the plain formula is used wherever it is missing or disagrees; no autograd
goes through it (the planner calls it under ``torch.no_grad``).
"""

from __future__ import annotations

import functools

import torch

__all__ = ["fused_available", "fused_layer", "linear_act"]

_ACT_ARGS = {"gelu": ("gelu", [None], "none"),   # exact (erf) GELU, as torch.nn.functional.gelu
             "relu": ("relu", [], ""),
             "none": ("none", [], "")}


def _reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, act: str) -> torch.Tensor:
    z = torch.nn.functional.linear(x, weight, bias)
    if act == "gelu":
        return torch.nn.functional.gelu(z)
    if act == "relu":
        return torch.relu(z)
    return z


@functools.lru_cache(maxsize=None)
def fused_available(dtype: torch.dtype = torch.float32) -> bool:
    """True when oneDNN's fused linear runs here and matches the plain formula for every activation."""
    op = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
    if op is None or not torch.backends.mkldnn.is_available():
        return False
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(37, 19, generator=gen, dtype=dtype)
    w = torch.randn(23, 19, generator=gen, dtype=dtype)
    b = torch.randn(23, generator=gen, dtype=dtype)
    try:
        with torch.no_grad():
            for act, args in _ACT_ARGS.items():
                out = op(x, w, b, *args)
                if not torch.allclose(out, _reference(x, w, b, act), rtol=1e-4, atol=1e-4):
                    return False
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


def linear_act(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, act: str = "gelu") -> torch.Tensor:
    """``act(x @ weight.T + bias)``: ``x`` (B, in), ``weight`` (out, in), ``bias`` (out,) -> (B, out).

    ``act`` is ``"gelu"`` (exact), ``"relu"`` or ``"none"``. No autograd (call under no_grad).
    """
    if x.device.type == "cpu" and fused_available(x.dtype):
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, *_ACT_ARGS[act])
    return _reference(x, weight, bias, act)


def fused_layer(act: str = "gelu", dtype: torch.dtype = torch.float32):
    """``f(x, weight, bias)`` for a hot loop: the fused operator bound once (no per-call checks),
    or the plain formula where it is unavailable. CPU tensors of ``dtype``, no autograd."""
    if fused_available(dtype):
        op, args = torch.ops.mkldnn._linear_pointwise.default, _ACT_ARGS[act]
        return lambda x, weight, bias: op(x, weight, bias, *args)
    return lambda x, weight, bias: _reference(x, weight, bias, act)
