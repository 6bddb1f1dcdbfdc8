"""Training windows cut from trajectories.

From trajectories ``x`` (B, T, 2n) with controls ``u`` (B, T, m) one gets ``B * (T - 2)``
windows, each the three points ``k - 1, k, k + 1`` for ``k = 1 .. T - 2``:

- one-step (state) models use ``x_k = (q, qd)`` and ``u_k`` to predict ``x_{k+1}``;
- three-point (SyMo) models use ``q_{k-1}, q_k`` and ``u_{k-1}, u_k, u_{k+1}`` to predict
  ``q_{k+1}``.

The targets are the same points ``k + 1`` for both, as in the paper's repository.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

__all__ = ["Windows", "make_windows"]


@dataclass
class Windows:
    """A batch of windows; every field (W, n) or (W, m), one dtype and device."""

    q_prev: torch.Tensor
    q: torch.Tensor
    qd: torch.Tensor
    q_next: torch.Tensor
    qd_next: torch.Tensor
    u_prev: torch.Tensor
    u: torch.Tensor
    u_next: torch.Tensor

    def __len__(self) -> int:
        return self.q.shape[0]

    def index(self, idx) -> Windows:
        return Windows(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def pack(self) -> tuple[torch.Tensor, list[int]]:
        """All fields side by side (W, F) and their widths: one gather per mini-batch instead of eight."""
        parts = [getattr(self, f.name) for f in fields(self)]
        return torch.cat(parts, -1), [p.shape[-1] for p in parts]

    @classmethod
    def unpack(cls, packed: torch.Tensor, widths: list[int]) -> Windows:
        return cls(*torch.split(packed, widths, -1))

    def to(self, dtype=None, device=None) -> Windows:
        return Windows(**{f.name: getattr(self, f.name).to(dtype=dtype, device=device) for f in fields(self)})

    @property
    def x(self) -> torch.Tensor:
        return torch.cat([self.q, self.qd], -1)

    @property
    def x_next(self) -> torch.Tensor:
        return torch.cat([self.q_next, self.qd_next], -1)


def make_windows(x, u, dof: int, dtype=torch.float32) -> Windows:
    """Windows from trajectories ``x`` (B, T, 2n) and controls ``u`` (B, T, m), flattened to (B*(T-2), ...)."""
    x = torch.as_tensor(np.asarray(x), dtype=dtype)
    u = torch.as_tensor(np.asarray(u), dtype=dtype)
    if x.ndim != 3 or x.shape[1] < 3 or x.shape[2] != 2 * dof:
        raise ValueError(f"trajectories: expected shape (B, T >= 3, {2 * dof}), got {tuple(x.shape)}")
    if u.shape[:2] != x.shape[:2]:
        raise ValueError(f"controls: expected shape {tuple(x.shape[:2])} + (m,), got {tuple(u.shape)}")
    n = dof

    def flat(t):
        return t.reshape(-1, t.shape[-1]).contiguous()

    return Windows(q_prev=flat(x[:, :-2, :n]), q=flat(x[:, 1:-1, :n]), qd=flat(x[:, 1:-1, n:]),
                   q_next=flat(x[:, 2:, :n]), qd_next=flat(x[:, 2:, n:]),
                   u_prev=flat(u[:, :-2]), u=flat(u[:, 1:-1]), u_next=flat(u[:, 2:]))
