"""The desired orbit as a smooth, exactly periodic curve, and the closest-phase map s*(q).

A line-shaped eigenmode retraces itself: ``q(T - t) = q(t)`` and ``p(T - t) = -p(t)``. So
``q_d(s)`` is fitted by a cosine series and ``p_d(s)`` by a sine series in ``2 pi s / T``
(least squares on the first half period); both are periodic and smooth by construction, and
the closest phase ``s*`` (METHODS: "the phase of the desired orbit closest to q") is found by
a grid search on the half orbit refined by Newton steps, so it is differentiable in ``q``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["DesiredOrbit"]


class DesiredOrbit:
    """``q_d(s)``, ``p_d(s)`` for ``s`` in ``[0, T]``; coefficients ``a (K+1, 2)``, ``b (K, 2)``."""

    def __init__(self, period: float, a: torch.Tensor, b: torch.Tensor, grid: int = 1024):
        self.period = float(period)
        self.a = a
        self.b = b
        self.k = torch.arange(a.shape[0], dtype=a.dtype)
        self.omega = 2 * math.pi / self.period
        self.s_grid = torch.linspace(0.0, self.period / 2, grid, dtype=a.dtype)
        with torch.no_grad():
            self.q_grid = self.q_at(self.s_grid)
        self.ds = float(self.s_grid[1] - self.s_grid[0])

    @classmethod
    def fit(cls, t: np.ndarray, q: np.ndarray, p: np.ndarray, harmonics: int = 24) -> DesiredOrbit:
        """Fit from a trajectory over one period on a uniform grid ``t (n,)`` (n - 1 even), ``q, p (n, 2)``."""
        t, q, p = np.asarray(t, float), np.asarray(q, float), np.asarray(p, float)
        period = float(t[-1] - t[0])
        half = (len(t) - 1) // 2 + 1
        th = t[:half] - t[0]
        w = 2 * math.pi / period
        k = np.arange(harmonics + 1)
        cos_basis = np.cos(w * th[:, None] * k[None, :])
        sin_basis = np.sin(w * th[:, None] * k[None, 1:])
        a = np.linalg.lstsq(cos_basis, q[:half], rcond=None)[0]
        # p_d is odd about both turning points: the sine basis makes p_d(0) = p_d(T/2) = 0
        b = np.linalg.lstsq(sin_basis, p[:half], rcond=None)[0]
        return cls(period, torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))

    # --- evaluation (batched over s of shape (...)) -------------------------------------------
    def q_at(self, s: torch.Tensor) -> torch.Tensor:
        return torch.cos(self.omega * s[..., None] * self.k) @ self.a

    def dq_at(self, s: torch.Tensor) -> torch.Tensor:
        return (-self.omega * self.k * torch.sin(self.omega * s[..., None] * self.k)) @ self.a

    def d2q_at(self, s: torch.Tensor) -> torch.Tensor:
        return (-(self.omega * self.k) ** 2 * torch.cos(self.omega * s[..., None] * self.k)) @ self.a

    def p_at(self, s: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.omega * s[..., None] * self.k[1:]) @ self.b

    def state_at(self, s: torch.Tensor) -> torch.Tensor:
        """``(..., 4)`` state on the orbit at phase ``s`` (s)."""
        return torch.cat([self.q_at(s), self.p_at(s)], -1)

    def closest_phase(self, q: torch.Tensor, newton_steps: int = 2) -> torch.Tensor:
        """s* in [0, T/2] (up to the Newton refinement) minimising |q - q_d(s)|, ``(...)``.

        Grid search on the half orbit, then Newton steps on ``|q - q_d(s)|^2 / 2`` (each
        clamped to two grid spacings), so s* is differentiable in ``q``.
        """
        with torch.no_grad():
            d2 = ((q.detach()[..., None, :] - self.q_grid) ** 2).sum(-1)
            s = self.s_grid[d2.argmin(-1)]
        wk = self.omega * self.k
        for _ in range(newton_steps):
            arg = s[..., None] * wk
            c, sn = torch.cos(arg), torch.sin(arg)
            r = q - c @ self.a
            d1 = -(sn * wk) @ self.a
            d2q = -(c * (wk * wk)) @ self.a
            curv = (d1 * d1).sum(-1) - (r * d2q).sum(-1)
            step = (r * d1).sum(-1) / torch.clamp(curv, min=1e-9)
            s = s + torch.clamp(step, -2 * self.ds, 2 * self.ds)
        return s

    def desired(self, q: torch.Tensor, p: torch.Tensor):
        """``(q_d(s*), p_d(s*))`` with p_d's sign aligned with the current momentum ``p``."""
        s = self.closest_phase(q)
        arg = s[..., None] * (self.omega * self.k)
        qd = torch.cos(arg) @ self.a
        pd = torch.sin(arg[..., 1:]) @ self.b
        sign = torch.where((pd * p).sum(-1, keepdim=True) < 0, -1.0, 1.0).to(pd.dtype)
        return qd, sign * pd

    def distances(self, q: torch.Tensor, p: torch.Tensor):
        """``(|q - q_d(s*)|, |p - p_d(s*)|)``, each ``(...)``."""
        qd, pd = self.desired(q, p)
        return (q - qd).norm(dim=-1), (p - pd).norm(dim=-1)

    def to_dict(self) -> dict:
        return {"period": self.period, "a": self.a, "b": self.b}
