"""Inverse-dynamics metrics: the joint torques a model predicts for a logged motion, against the
logged torques, for every model that can give them (and why not, for the others).

- the robot model (``robot-rk4``...): ``M qdd + C qd + g + tau_joint`` (its ``inverse_dynamics``);
- L-NODE: the Euler-Lagrange equations of its learned ``H(q)`` and ``V(q)``:
  ``F = H qdd + C(q, qd) + dV/dq``, ``C_i = sum_jk (dH_ij/dq_k - 1/2 dH_jk/dq_i) qd_j qd_k``;
- NODE, MLP: forward models ``x_{k+1} = f(x_k, u_k)``: no torque for a given motion without
  inverting them, which they do not offer;
- SyMo, E2E-SyMo: discrete models whose forced Euler-Lagrange residual holds the sum of three
  neighbouring controls, not one torque per sample.

The controls are ``u = B^+ F`` (``B`` the model's input matrix; the identity on a robot log).

Two RMSEs: over every sample, and over the *sliding* samples (joint i's residuals where
``|qd_i| >= 0.1`` rad/s: :func:`engine.logs.torques.sliding_rmse`). Near rest a dry friction
sticks: any torque inside the friction band gives the same (zero) motion, so the torque is not a
function of the motion there and no inverse-dynamics model - the true one included - predicts it;
friction identification leaves those samples out for the same reason
(:mod:`engine.identification.closed_form`).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["lagrangian_forces", "torque_predictor", "torque_residuals"]

NO_TORQUE = {
    "state": "a forward model x_next = f(x, u); it gives no torque for a given motion",
    "del": "a discrete model: its forced Euler-Lagrange residual holds the sum of three neighbouring "
           "controls, not one torque per sample",
}


def lagrangian_forces(lagrangian, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor) -> torch.Tensor:
    """``H qdd + C(q, qd) + dV/dq`` (B, n) of :class:`engine.models.lagrangian.LagrangianNetworks`."""
    t = lagrangian.terms(q, order=1)
    dHqd = (t.dH @ qd.unsqueeze(-2).unsqueeze(-1)).squeeze(-1)          # [b, k, i] = sum_j dH_ij/dq_k qd_j
    c = (dHqd.transpose(-1, -2) @ qd.unsqueeze(-1)).squeeze(-1) - 0.5 * (dHqd @ qd.unsqueeze(-1)).squeeze(-1)
    return (t.H @ qdd.unsqueeze(-1)).squeeze(-1) + c + t.dV


def torque_predictor(model):
    """``(predict, None)`` with ``predict(q, qd, qdd) -> u`` (B, m), or ``(None, reason)``."""
    if hasattr(model, "inverse_dynamics"):
        forces = model.inverse_dynamics
    elif hasattr(model, "lagrangian") and getattr(model, "kind", "") == "state":
        def forces(q, qd, qdd):   # B u = H qdd + C + dV/dq - Q(qd)
            F = lagrangian_forces(model.lagrangian, q, qd, qdd)
            diss = getattr(model, "dissipation", None)
            return F if diss is None else F - diss.force(qd).to(F.dtype)
    else:
        return None, NO_TORQUE.get(getattr(model, "kind", ""), "this model gives no joint torques")

    def predict(q, qd, qdd):
        F = forces(q, qd, qdd)
        B = model.B.to(F.dtype)
        if B.shape[0] == B.shape[1] and torch.equal(B, torch.eye(B.shape[0], dtype=B.dtype, device=B.device)):
            return F
        return F @ torch.linalg.pinv(B).T

    return predict, None


def torque_residuals(model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, tau: np.ndarray,
                     batch: int = 4096) -> tuple[np.ndarray | None, str | None]:
    """``(residuals, reason)``: predicted minus logged torques (N, n) of ``model`` on samples ``q``,
    ``qd``, ``qdd``, ``tau`` (N, n) each; ``None`` and the reason when the model gives no torques."""
    predict, reason = torque_predictor(model)
    if predict is None:
        return None, reason
    dtype = next(model.parameters()).dtype
    device = next(model.parameters()).device
    preds = []
    for a in range(0, len(q), batch):
        args = [torch.as_tensor(np.asarray(v[a:a + batch]), dtype=dtype, device=device) for v in (q, qd, qdd)]
        with torch.no_grad():   # the Lagrangian terms' derivatives are the networks' own (no autograd)
            preds.append(predict(*args).detach().double().cpu().numpy())
    return np.concatenate(preds) - np.asarray(tau, dtype=np.float64), None
