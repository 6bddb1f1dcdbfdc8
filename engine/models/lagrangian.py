"""Learned Lagrangian ``L = 1/2 qd^T H(q) qd - V(q)``: the Cholesky inertia and the potential networks.

``H(q) = L(q) L(q)^T + eps I`` with ``L`` lower triangular, its diagonal through softplus
(Lutter et al. 2019); ``V(q)`` a scalar network. Both see ``q`` through the angle embedding.
:meth:`LagrangianNetworks.terms` returns the values and exact derivatives needed by the
Euler-Lagrange equations (order 1) and by Newton's Jacobian of the discrete ones (order 2).

Conventions: ``dH[b, k, i, j] = d H_ij / d q_k``; ``d2H[b, k, l, i, j] = d^2 H_ij / d q_k d q_l``;
``dV`` (B, n), ``d2V`` (B, n, n).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from engine.models.nets import StackedConfigurationMLP

__all__ = ["LagrangianTerms", "LagrangianNetworks", "AnalyticLagrangian"]


@dataclass
class LagrangianTerms:
    H: torch.Tensor                  # (B, n, n)
    V: torch.Tensor                  # (B,)
    dH: torch.Tensor | None = None   # (B, n, n, n)
    dV: torch.Tensor | None = None   # (B, n)
    d2H: torch.Tensor | None = None  # (B, n, n, n, n)
    d2V: torch.Tensor | None = None  # (B, n, n)


class LagrangianNetworks(nn.Module):
    def __init__(self, angle_mask, hidden: int = 128, layers: int = 2, eps: float = 1e-3):
        super().__init__()
        n = len(angle_mask)
        self.n = n
        self.eps = float(eps)
        n_off = n * (n - 1) // 2
        # two independent networks (inertia factor, potential), evaluated in lockstep
        self.nets = StackedConfigurationMLP(angle_mask, (n + n_off, 1), hidden, layers)
        # scatter matrix: [diag (n), strictly lower (n_off)] -> L flattened row-major (n*n)
        S = torch.zeros(n + n_off, n * n)
        for i in range(n):
            S[i, i * n + i] = 1.0
        rows, cols = torch.tril_indices(n, n, offset=-1)
        for r, (i, j) in enumerate(zip(rows.tolist(), cols.tolist())):
            S[n + r, i * n + j] = 1.0
        self.register_buffer("scatter", S, persistent=False)

    def _cholesky_factor(self, raw, draw, d2raw):
        n = self.n
        diag, off = raw[..., :n], raw[..., n:]
        S = self.scatter.to(raw.dtype)
        lvec = torch.cat([F.softplus(diag), off], -1)
        L = (lvec @ S).unflatten(-1, (n, n))
        dL = d2L = None
        if draw is not None:
            sig = torch.sigmoid(diag)
            dl = torch.cat([sig.unsqueeze(-2) * draw[..., :n], draw[..., n:]], -1)  # (B, n, R)
            dL = (dl @ S).unflatten(-1, (n, n))                                     # (B, n, n, n)
            if d2raw is not None:
                ds = (sig * (1 - sig)).unsqueeze(-2).unsqueeze(-2)
                d2diag = sig.unsqueeze(-2).unsqueeze(-2) * d2raw[..., :n] + ds * draw[..., :, None, :n] * draw[..., None, :, :n]
                d2l = torch.cat([d2diag, d2raw[..., n:]], -1)
                d2L = (d2l @ S).unflatten(-1, (n, n))                               # (B, n, n, n, n)
        return L, dL, d2L

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        return self.terms(q, order=0).H

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        return self.terms(q, order=0).V

    def terms(self, q: torch.Tensor, order: int = 1) -> LagrangianTerms:
        """H, V and their derivatives up to ``order`` (0, 1 or 2) at ``q`` (B, n)."""
        (raw, draw, d2raw), (v, dv, d2v) = self.nets(q, order=order)
        L, dL, d2L = self._cholesky_factor(raw, draw, d2raw)
        Lt = L.transpose(-1, -2)
        H = L @ Lt + self.eps * torch.eye(self.n, dtype=q.dtype, device=q.device)
        out = LagrangianTerms(H=H, V=v[..., 0])
        if order >= 1:
            LdLt = L.unsqueeze(-3) @ dL.transpose(-1, -2)        # (B, n_k, n, n) = L dL_k^T
            out.dH = LdLt + LdLt.transpose(-1, -2)
            out.dV = dv[..., 0]
        if order >= 2:
            Lb = L.unsqueeze(-3).unsqueeze(-3)
            t1 = Lb @ d2L.transpose(-1, -2)
            t2 = dL.unsqueeze(-3) @ dL.unsqueeze(-4).transpose(-1, -2)  # dL_k dL_l^T at [k, l]
            out.d2H = t1 + t1.transpose(-1, -2) + t2 + t2.transpose(-1, -2)
            out.d2V = d2v[..., 0]
        return out


class AnalyticLagrangian(nn.Module):
    """The :meth:`LagrangianNetworks.terms` interface for an analytic system (derivatives by torch.func).

    Plugging it into a SyMo model (``model.lagrangian = AnalyticLagrangian(system)``) turns the model
    into the exact variational integrator of that system: a reference for tests and for users.
    """

    def __init__(self, system):
        super().__init__()
        self.system = system
        self.n = system.dof

    def mass_matrix(self, q):
        return self.system.mass_matrix(q)

    def potential_energy(self, q):
        return self.system.potential_energy(q)

    def terms(self, q: torch.Tensor, order: int = 1) -> LagrangianTerms:
        from torch.func import jacfwd, vmap

        Hf = lambda x: self.system.mass_matrix(x.unsqueeze(0))[0]
        Vf = lambda x: self.system.potential_energy(x.unsqueeze(0))[0]
        out = LagrangianTerms(H=self.system.mass_matrix(q), V=self.system.potential_energy(q))
        if order >= 1:
            out.dH = vmap(jacfwd(Hf))(q).permute(0, 3, 1, 2)
            out.dV = vmap(jacfwd(Vf))(q)
        if order >= 2:
            out.d2H = vmap(jacfwd(jacfwd(Hf)))(q).permute(0, 3, 4, 1, 2)
            out.d2V = vmap(jacfwd(jacfwd(Vf)))(q)
        return out
