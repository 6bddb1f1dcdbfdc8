"""Cost evaluators for the optimiser: the cost and its gradient for one control sequence, and
the costs of a batch of candidate sequences.

An evaluator holds a planning problem (start state, horizon, stage cost, control weights) and
offers ``cost_and_grad(W) -> (cost, grad, traj)`` for normalised controls ``W`` (N, 2) and
``batch_costs(Wc) -> (costs (B,), traj_of_best)`` for candidates ``Wc`` (B, N, 2); ``traj`` is
``(P, V)`` with shapes (N+1, 3).

- :class:`AutogradEvaluator` works for any dynamics with ``step(pose, v, u)`` (the simulator
  or a learned model) through torch autograd (back-propagation through the rollout).
- :class:`MLPEvaluator` is the fast path for an MLP velocity model: the candidates are rolled
  out as one chain of matrix multiplies with the normalisation folded into the weights, and
  the gradient is the adjoint of the rollout written by hand: the per-step Jacobians
  ``df/d(v, u)`` of all N steps are formed at once (batched over time), then a 3x3 backward
  recursion carries the velocity adjoint; the pose part of the adjoint (the pose update is
  a cumulative sum) is done by autograd on a vectorised graph.

Both also offer ``residual_jacobian(W) -> (r (R,), J (R, N, 2))`` when the stage cost is a sum
of squares (it has ``residuals(P)``, as :class:`engine.car.costs.TargetCost` does): the
Jacobian of the residuals through the whole rollout, for the Gauss-Newton search direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import torch

from engine.car.costs import PlanWeights, TargetCost, control_cost, poses_from_velocities
from engine.car.dynamics import rollout
from engine.onednn import fused_layer

__all__ = ["AutogradEvaluator", "MLPEvaluator", "StageCost", "make_evaluator"]

StageCost = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (P, V) (B, N+1, 3) -> (B,)


class _Base:
    batch_costs: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]  # defined by each evaluator

    def __init__(self, pose0, v0, stage_cost: StageCost, weights: PlanWeights, u_scale,
                 w_prev=None, dtype=torch.float32):
        self.dtype = dtype
        self.pose0 = torch.as_tensor(pose0, dtype=dtype).reshape(3)
        self.v0 = torch.as_tensor(v0, dtype=dtype).reshape(3)
        self.stage_cost = stage_cost
        self.weights = weights
        self.u_scale = torch.as_tensor(u_scale, dtype=dtype).reshape(2)
        self.w_prev = None if w_prev is None else torch.as_tensor(w_prev, dtype=dtype).reshape(2)

    def total_cost(self, P, V, W):
        return self.stage_cost(P, V) + control_cost(W, self.weights, self.w_prev)

    def trajectory(self, W: torch.Tensor):
        """Poses and velocities (N+1, 3) for normalised controls ``W`` (N, 2)."""
        with torch.no_grad():
            _, traj = self.batch_costs(W.unsqueeze(0).to(self.dtype))
        return traj


class AutogradEvaluator(_Base):
    """Gradient by back-propagation through ``dynamics.step`` (any model)."""

    def __init__(self, dynamics, pose0, v0, stage_cost, weights, u_scale, w_prev=None,
                 dtype=torch.float32):
        super().__init__(pose0, v0, stage_cost, weights, u_scale, w_prev, dtype)
        self.dynamics = dynamics

    def cost_and_grad(self, W: torch.Tensor):
        W = W.detach().to(self.dtype).clone().requires_grad_(True)
        with torch.enable_grad():
            P, V = rollout(self.dynamics, self.pose0, self.v0, W * self.u_scale)
            cost = self.total_cost(P.unsqueeze(0), V.unsqueeze(0), W.unsqueeze(0))[0]
            (grad,) = torch.autograd.grad(cost, W)
        return float(cost.detach()), grad.detach(), (P.detach(), V.detach())

    def batch_costs(self, Wc: torch.Tensor):
        with torch.no_grad():
            P, V = rollout(self.dynamics, self.pose0, self.v0, Wc * self.u_scale)
            costs = self.total_cost(P, V, Wc)
            k = int(torch.argmin(costs))
        return costs, (P[k], V[k])

    def residual_jacobian(self, W: torch.Tensor, V: torch.Tensor | None = None):
        """Residuals (R,) of the stage cost and their Jacobian (R, N, 2) over ``W``, one
        backward pass per residual through the rollout."""
        W = W.detach().to(self.dtype).clone().requires_grad_(True)
        with torch.enable_grad():
            P, _ = rollout(self.dynamics, self.pose0, self.v0, W * self.u_scale)
            r = cast(TargetCost, self.stage_cost).residuals(P)
            rows = [
                torch.autograd.grad(r[i], W, retain_graph=i + 1 < r.shape[0])[0] for i in range(r.shape[0])
            ]
        return r.detach(), torch.stack(rows)


class MLPEvaluator(_Base):
    """The fast path for :class:`engine.car.model.CarMLP` (any width, depth, GELU/ReLU)."""

    def __init__(self, model, h, pose0, v0, stage_cost, weights, u_scale, w_prev=None):
        super().__init__(pose0, v0, stage_cost, weights, u_scale, w_prev, torch.float32)
        self.h = float(h)
        layers = model.folded_layers()
        self.gelu = model.config.activation == "gelu"
        W1, b1 = layers[0]
        self.W1v_t = W1[:, :3].t().contiguous()                       # (3, H)
        self.W1u_t = (W1[:, 3:] * self.u_scale).t().contiguous()      # (2, H): acts on normalised w
        self.b1 = b1
        self.hidden = [(W.t().contiguous(), b) for W, b in layers[1:-1]]
        self.hidden_oi = [(W.contiguous(), b) for W, b in layers[1:-1]]  # (out, in) for the fused layer
        self.WL_t, self.bL = layers[-1][0].t().contiguous(), layers[-1][1]
        self.act_name = "gelu" if self.gelu else "relu"
        self._fused_layer = fused_layer(self.act_name)
        # for the Jacobians: (out, in) layouts
        self.W1 = torch.cat([W1[:, :3], W1[:, 3:] * self.u_scale], 1)  # (H, 5)
        self.Ws = [W for W, _ in layers[1:-1]]
        self.WL = layers[-1][0]

    def _act(self, z):
        return torch.nn.functional.gelu(z) if self.gelu else torch.relu(z)

    def _act_and_grad(self, z):
        if self.gelu:
            cdf = 0.5 * (1.0 + torch.erf(z * 0.7071067811865476))
            pdf = torch.exp(-0.5 * z * z) * 0.3989422804014327
            return z * cdf, cdf + z * pdf
        mask = (z > 0).to(z.dtype)
        return z * mask, mask

    def velocities(self, Wc: torch.Tensor) -> torch.Tensor:
        """Velocities (B, N+1, 3) for normalised candidates ``Wc`` (B, N, 2), no autograd."""
        B, N, _ = Wc.shape
        Zu = torch.matmul(Wc, self.W1u_t) + self.b1                   # (B, N, H) in one product
        v = self.v0.expand(B, 3).contiguous()
        out = [v]
        act = self._act
        fused = B >= 32  # oneDNN's call overhead only pays off on a batch of candidates
        layer = self._fused_layer
        for i in range(N):
            a = act(torch.addmm(Zu[:, i], v, self.W1v_t))
            if fused:
                for W, b in self.hidden_oi:
                    a = layer(a, W, b)                 # one fused oneDNN call per layer where available
            else:
                for Wt, b in self.hidden:
                    a = act(torch.addmm(b, a, Wt))
            v = v + torch.addmm(self.bL, a, self.WL_t)
            out.append(v)
        return torch.stack(out, 1)

    def batch_costs(self, Wc: torch.Tensor):
        with torch.no_grad():
            V = self.velocities(Wc)
            P = poses_from_velocities(self.pose0.expand(Wc.shape[0], 3), V, self.h)
            costs = self.total_cost(P, V, Wc)
            k = int(torch.argmin(costs))
        return costs, (P[k], V[k])

    def jacobians(self, V: torch.Tensor, W: torch.Tensor):
        """``df/dv`` (N, 3, 3) and ``df/dw`` (N, 3, 2) at the N steps of a trajectory (batched over time)."""
        X = torch.cat([V[:-1], W], -1)                                # (N, 5)
        z = torch.addmm(self.b1, X, self.W1.t())
        derivs = []
        a, d = self._act_and_grad(z)
        derivs.append(d)
        for (Wt, b) in self.hidden:
            a, d = self._act_and_grad(torch.addmm(b, a, Wt))
            derivs.append(d)
        M = self.WL.expand(X.shape[0], *self.WL.shape)                # (N, 3, H)
        for d, Wl in zip(reversed(derivs), list(reversed(self.Ws)) + [self.W1]):
            M = torch.matmul(M * d[:, None, :], Wl)
        Jv = M[:, :, :3] + torch.eye(3, dtype=M.dtype)
        return Jv, M[:, :, 3:]

    def _step_jacobians(self, W: torch.Tensor, V: torch.Tensor | None):
        """``(W, V, Jv (N, 3, 3), Ju (N, 3, 2))`` at controls ``W``; ``V`` rolled out if not given."""
        W = W.detach().to(self.dtype)
        with torch.no_grad():
            if V is None:
                V = self.velocities(W.unsqueeze(0))[0]
            Jv, Ju = self.jacobians(V, W)
        return W, V, Jv, Ju

    def cost_and_grad(self, W: torch.Tensor, V: torch.Tensor | None = None):
        W, V, Jv, Ju = self._step_jacobians(W, V)
        Vl = V.detach().clone().requires_grad_(True)
        Wl = W.clone().requires_grad_(True)
        with torch.enable_grad():
            P = poses_from_velocities(self.pose0, Vl, self.h)
            cost = self.total_cost(P.unsqueeze(0), Vl.unsqueeze(0), Wl.unsqueeze(0))[0]
            gV, gW = torch.autograd.grad(cost, (Vl, Wl))
        lam = _velocity_adjoint(Jv, gV.unsqueeze(0))[0]                # dl/dv_{k+1}, (N, 3)
        grad = gW + torch.einsum("nij,ni->nj", Ju, lam)
        return float(cost.detach()), grad.detach(), (P.detach(), V.detach())

    def residual_jacobian(self, W: torch.Tensor, V: torch.Tensor | None = None):
        """Residuals (R,) of the stage cost and their Jacobian (R, N, 2) over ``W``: the
        residuals' derivatives with respect to the velocities by autograd through the pose
        update, then the same backward recursion as the gradient with R rows at once."""
        W, V, Jv, Ju = self._step_jacobians(W, V)
        Vl = V.detach().clone().requires_grad_(True)
        with torch.enable_grad():  # one small backward per residual (torch.func would import ~1 s of modules)
            r = cast(TargetCost, self.stage_cost).residuals(poses_from_velocities(self.pose0, Vl, self.h))
            G = torch.stack([torch.autograd.grad(r[i], Vl, retain_graph=i + 1 < r.shape[0])[0]
                             for i in range(r.shape[0])])                 # (R, N+1, 3)
        lam = _velocity_adjoint(Jv, G)                                    # (R, N, 3)
        return r.detach(), torch.einsum("rni,nij->rnj", lam, Ju)


def _velocity_adjoint(Jv: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """The backward recursion through ``v_{k+1} = f(v_k, w_k)`` for R outputs at once.

    ``Jv`` (N, 3, 3): ``dv_{k+1}/dv_k``; ``G`` (R, N+1, 3): each output's direct derivative
    with respect to ``v_0 .. v_N``. Returns ``lam`` (R, N, 3), ``lam[:, k]`` = the total
    derivative with respect to ``v_{k+1}`` (``v_0`` is given, so it has none). A short NumPy
    loop in float64: N small products, cheaper than as many torch calls.
    """
    Jv_np = Jv.numpy().astype(np.float64)
    G_np = G.numpy().astype(np.float64)
    N = Jv_np.shape[0]
    lam = np.empty((G_np.shape[0], N, 3))
    cur = G_np[:, N]
    lam[:, N - 1] = cur
    for k in range(N - 1, 0, -1):
        cur = G_np[:, k] + cur @ Jv_np[k]
        lam[:, k - 1] = cur
    return torch.from_numpy(lam).to(Jv.dtype)


def make_evaluator(dynamics, pose0, v0, stage_cost, weights, u_scale, w_prev=None, fast: bool = True):
    """The fast MLP evaluator for a learned MLP model on the CPU, else the autograd one.

    The fast path is a CPU design (small fused products, a NumPy adjoint recursion); a model
    on another device is planned through autograd on that device.
    """
    model = getattr(dynamics, "model", None)
    on_cpu = model is not None and all(p.device.type == "cpu" for p in model.parameters())
    if fast and on_cpu and hasattr(model, "folded_layers"):
        return MLPEvaluator(model, dynamics.h, pose0, v0, stage_cost, weights, u_scale, w_prev)
    return AutogradEvaluator(dynamics, pose0, v0, stage_cost, weights, u_scale, w_prev)
