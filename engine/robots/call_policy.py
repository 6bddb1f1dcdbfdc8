"""How :class:`engine.robots.model.RobotModel`'s methods run on the CPU (see :func:`call_policy`)."""

from __future__ import annotations

import contextlib
import functools

import torch

from engine.robots.backends import needs_grad
from engine.robots.compiled_shortcut import SHORTCUTS, run_shortcut
from engine.runtime import intra_op_threads

__all__ = ["call_policy"]

# samples x bodies from which torch's intra-op threads serve a call; between these bounds each
# call runs on its calling thread alone (see call_policy)
_ONE_THREAD_WORK = (4096, 1 << 17)
# largest result (elements) a call computes in inference mode and copies out (see call_policy)
_INFERENCE_RESULT = 1 << 16


def call_policy(result_per_sample):
    """How a model method ``(self, q, ...)`` runs on the CPU; ``result_per_sample(model)``: the
    number of elements of its result per sample.

    - One intra-op thread at moderate batches. The algorithms are a few hundred elementwise
      operations over ``(bodies, samples)`` planes; from batches of a few hundred, many are
      just above torch's parallel grain and open an OpenMP region over every core, whose fork
      and join cost about what the arithmetic saves, and when a core is busy elsewhere (other
      processes, the GUI, a virtual machine's host) each region waits for a descheduled
      thread: measured here, a call at batch 1024 took 1.5 to 2.7 ms on two threads from one
      minute to the next (up to 900 ms with the cores shared by a test run), and a steady 1.6
      to 1.9 ms on one. At the largest batches the threads pay for themselves and are kept.
      Other threads of the program keep their settings (:class:`engine.runtime.intra_op_threads`).
    - Inference mode when nothing needs a gradient (no grad mode, or no input and no parameter
      requires one) and the result is small: autograd's bookkeeping (version counters, view
      tracking) costs each of the hundreds of small operations a share, 10 to 20 % of a call
      at batch 1. The result is copied out, so callers get a normal tensor; cached constants
      are built outside inference mode (``torch.inference_mode(False)`` where they are made).
    - A shortcut for calls that the compiled kernels serve on simple inputs (one sample or one
      flat batch, float64, nothing to differentiate): the model's
      :class:`engine.robots.compiled_calls.CompiledCalls` on numpy views, without choosing a
      backend or wrapping tensors per step (:mod:`engine.robots.compiled_shortcut`; the methods
      named in its ``SHORTCUTS``). Same kernels, same numbers.
    """

    def decorate(method):
        fast = SHORTCUTS.get(method.__name__)

        @functools.wraps(method)
        def run(self, q, *args, **kwargs):
            if not isinstance(q, torch.Tensor) or not q.is_cpu or q.dim() == 0 \
                    or torch.is_inference_mode_enabled():
                return method(self, q, *args, **kwargs)
            if fast is not None and (out := run_shortcut(fast, self, q, args, kwargs)) is not None:
                return out
            B = q.numel() // max(q.shape[-1], 1)
            work = B * max(self._n, 1)
            one_thread = _ONE_THREAD_WORK[0] <= work < _ONE_THREAD_WORK[1] and torch.get_num_threads() > 1
            tensors = [q] + [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]
            inference = B * result_per_sample(self) <= _INFERENCE_RESULT and not needs_grad(self, tensors)
            with intra_op_threads(1) if one_thread else contextlib.nullcontext():
                if not inference:
                    return method(self, q, *args, **kwargs)
                with torch.inference_mode():
                    out = method(self, q, *args, **kwargs)
            return out.clone() if out.is_inference() else out  # compiled results are normal tensors already

        return run

    return decorate
