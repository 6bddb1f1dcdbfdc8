"""Learned Lagrangian ``L = 1/2 qd^T H(q) qd - V(q)``: the Cholesky inertia and the potential networks.

``H(q) = L(q) L(q)^T + eps I`` with ``L`` lower triangular, its diagonal through softplus
(Lutter et al. 2019); ``V(q)`` a scalar network times ``potential_scale`` (J; 1 by default, see
:class:`~engine.models.base.ModelSpec`). Both see ``q`` through the angle embedding.
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
    def __init__(
        self, angle_mask, hidden: int = 128, layers: int = 2, eps: float = 1e-3, init: str = "xavier",
        potential_scale: float = 1.0,
    ):
        super().__init__()
        n = len(angle_mask)
        self.n = n
        self.eps = float(eps)
        self.potential_scale = float(potential_scale)   # V = potential_scale x the network's output
        n_off = n * (n - 1) // 2
        # two independent networks (inertia factor, potential), evaluated in lockstep
        self.nets = StackedConfigurationMLP(angle_mask, (n + n_off, 1), hidden, layers, init)
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
                d2diag = (
                    sig.unsqueeze(-2).unsqueeze(-2) * d2raw[..., :n]
                    + ds * draw[..., :, None, :n] * draw[..., None, :, :n]
                )
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
        if self.potential_scale != 1.0:
            s = self.potential_scale
            v, dv, d2v = v * s, None if dv is None else dv * s, None if d2v is None else d2v * s
        if self.n == 1:
            return self._terms_1dof(raw, draw, d2raw, v, dv, d2v, order)
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


    def acceleration_1dof(self, q: torch.Tensor, qd: torch.Tensor, force: torch.Tensor) -> torch.Tensor:
        """Euler-Lagrange ``qdd = (F - 1/2 dH/dq qd^2 - dV/dq) / H`` for one degree of freedom
        (B, 1), straight from the networks' outputs: with ``H = l^2 + eps``, ``l = softplus(raw)``,
        ``1/2 dH/dq = l sigmoid(raw) raw'`` (:meth:`terms` and the general formula, fewer ops)."""
        if self.nets.fast_dual(q):  # training: one autograd node for this formula
            Yh, Yv = self.nets.dual_rows(q)
            if self.potential_scale != 1.0:
                Yv = Yv * self.potential_scale
            return _Acceleration1DOF.apply(Yh, Yv, qd, force, self.eps)
        (raw, draw, _), (_, dv, _) = self.nets(q, order=1)
        dv = dv * self.potential_scale
        l = F.softplus(raw)
        c = l * torch.sigmoid(raw) * draw.reshape(raw.shape) * qd * qd
        return (force - c - dv.reshape(raw.shape)) / (l * l + self.eps)

    def _terms_1dof(self, raw, draw, d2raw, v, dv, d2v, order):
        """One degree of freedom in closed form: ``H = l^2 + eps``, ``l = softplus(raw)``, so
        ``dH = 2 l l'``, ``d2H = 2 (l'^2 + l l'')`` with ``l' = sigmoid(raw) raw'``,
        ``l'' = sigmoid(raw) raw'' + sigmoid'(raw) raw'^2`` (the general path's mathematics, in
        a few elementwise ops instead of the scatter and batched products)."""
        lead = raw.shape[:-1]
        l = F.softplus(raw)                                            # (..., 1)
        out = LagrangianTerms(H=(l * l + self.eps).unsqueeze(-1), V=v[..., 0])
        if order >= 1:
            sig = torch.sigmoid(raw)
            r1 = draw.reshape(*lead, 1)
            dl = sig * r1
            out.dH = (2.0 * l * dl).reshape(*lead, 1, 1, 1)
            out.dV = dv[..., 0]
            if order >= 2:
                d2l = sig * d2raw.reshape(*lead, 1) + sig * (1.0 - sig) * r1 * r1
                out.d2H = (2.0 * (dl * dl + l * d2l)).reshape(*lead, 1, 1, 1, 1)
                out.d2V = d2v[..., 0]
        return out


class _Acceleration1DOF(torch.autograd.Function):
    """:meth:`LagrangianNetworks.acceleration_1dof` from the dual rows of the inertia head ``Yh``
    (2B, 1) = (raw, raw') and the potential head ``Yv`` (2B, 1) = (V, V'), with its backward by hand::

        l = softplus(raw), sg = sigmoid(raw), num = F - l sg raw' qd^2 - V',  qdd = num / (l^2 + eps)
    """

    @staticmethod
    def forward(ctx, Yh, Yv, qd, force, eps):
        B = qd.shape[0]
        raw, draw, dv = Yh[:B], Yh[B:], Yv[B:]
        l = F.softplus(raw)
        sg = torch.sigmoid(raw)
        k = l * sg * draw
        qd2 = qd * qd
        den = l * l + eps
        qdd = (force - k * qd2 - dv) / den
        ctx.save_for_backward(l, sg, draw, qd, qd2, den, qdd)
        return qdd

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        l, sg, draw, qd, qd2, den, qdd = ctx.saved_tensors
        g_num = g / den
        g_k = -g_num * qd2                                  # d/dk, k = l sg raw'
        g_l = g_k * sg * draw - 2.0 * l * g_num * qdd       # through k and through den = l^2 + eps
        g_sg = g_k * l * draw
        g_raw = (g_l + g_sg * (1.0 - sg)) * sg              # dl/draw = sg, dsg/draw = sg (1 - sg)
        g_draw = g_k * l * sg
        gYh = torch.cat([g_raw, g_draw])
        gYv = torch.cat([torch.zeros_like(g_num), -g_num])
        g_qd = -2.0 * g_num * (l * sg * draw) * qd if ctx.needs_input_grad[2] else None
        return gYh, gYv, g_qd, g_num if ctx.needs_input_grad[3] else None, None


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
