"""Matrix products through oneDNN (bundled with torch) where it is faster than torch's BLAS.

Two uses:

- **The planner's inner loop**: ``act(x W^T + b)`` in one call. The 512-candidate line
  search spends almost all of its time in 160 small products (512 x 64 by 64 x 64) each
  followed by GELU. torch's ``addmm`` then ``gelu`` is two calls and two passes over the
  activations; oneDNN's linear with the activation as a post-op
  (``torch.ops.mkldnn._linear_pointwise``, the kernel torch's own compiler emits for a frozen
  ``Linear`` + ``GELU`` on CPU) does both in one pass and packs the weights for the vector
  units. Measured here on one core (512 x 64, exact erf GELU): 63 us for addmm + gelu against
  43 us fused.

- **The learned-dynamics networks' products** (:func:`bmm`, :func:`mm`), in the forward and
  hand-written backward passes of :mod:`engine.models.nets`. torch's CPU build multiplies
  through MKL, which takes a generic code path on AMD processors: on this machine (AMD, one
  thread, float32) a 1024 x 128 by 128 x 128 product takes 350 us in MKL and 165 us in oneDNN
  (201 GFLOP/s), with the same rounding error against float64; the transposed operands of the
  backward pass (handed over as strided views) gain about 40 %. Below about 256 x 128 x 128
  the call overhead eats the gain, so small products stay with torch. On Intel processors both
  libraries are fast and the choice costs little either way.

The operator is private to torch, so it is probed once against the plain formula (including
strided operands) and the plain formula is used wherever it is missing or disagrees. No
autograd goes through it: it is called under ``torch.no_grad`` or inside hand-written
autograd functions.
"""

from __future__ import annotations

import functools

import torch

__all__ = ["bmm", "fused_available", "fused_layer", "linear", "linear_act", "mm"]

MIN_MACS = 1 << 22  # smaller products (multiply-adds; 256 x 128 x 128 is the first above) stay with torch
MIN_WIDTH = 32      # as do products with any dimension below this

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


@functools.cache
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
            # strided (transposed) operands, as the backward passes hand them over
            xt, wt = x.t().contiguous().t(), w.t().contiguous().t()
            if not torch.allclose(op(xt, wt, None, "none", [], ""), x @ w.t(), rtol=1e-4, atol=1e-4):
                return False
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


def _worth_it(a: torch.Tensor, rows: int, inner: int, outer: int) -> bool:
    return (rows * inner * outer >= MIN_MACS and min(rows, inner, outer) >= MIN_WIDTH
            and a.device.type == "cpu" and a.dtype == torch.float32 and fused_available(torch.float32))


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for ``a`` (R, I), ``b`` (I, O), either possibly a transposed view -> (R, O).

    oneDNN for large float32 CPU products (see the module notes), else ``torch.mm``. No
    autograd: for the inside of hand-written forward and backward passes.
    """
    if _worth_it(a, a.shape[0], a.shape[1], b.shape[1]):
        return torch.ops.mkldnn._linear_pointwise.default(a, b.t(), None, "none", [], "")
    return torch.mm(a, b)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T + bias`` for ``x`` (R, I), ``weight`` (O, I), ``bias`` (O,) -> (R, O); as
    :func:`mm` (oneDNN adds the bias in the same pass), else ``torch.addmm``."""
    if _worth_it(x, x.shape[0], x.shape[1], weight.shape[0]):
        return torch.ops.mkldnn._linear_pointwise.default(x, weight, bias, "none", [], "")
    return torch.addmm(bias, x, weight.t())


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for stacks ``a`` (K, R, I), ``b`` (K, I, O) -> (K, R, O); as :func:`mm`,
    one oneDNN product per stack member for large float32 CPU products, else ``torch.bmm``."""
    if _worth_it(a, a.shape[1], a.shape[2], b.shape[2]):
        op = torch.ops.mkldnn._linear_pointwise.default
        return torch.stack([op(a[k], b[k].t(), None, "none", [], "") for k in range(a.shape[0])])
    return torch.bmm(a, b)


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
