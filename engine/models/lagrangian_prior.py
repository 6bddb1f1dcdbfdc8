"""A robot-aware prior for the Lagrangian models (``spec.lagrangian_prior = "robot"``): the learned Lagrangian as a
residual on top of a fixed rigid body, the physics-informed prior of the field (e.g. residual
DeLaN-style models on a nominal robot).

The Euler-Lagrange equations are linear in the Lagrangian, so with ``L = L_rb + L_net``::

    (M_rb(q) + diag(Ia) + H_net(q)) qdd = B u + Q(qd) - [C_rb(q, qd) qd + g_rb(q)] - [C_net + dV_net/dq]

with ``M_rb``, ``C_rb qd + g_rb`` the rigid body of ``spec.robot`` (CRBA and RNEA,
:class:`~engine.robots.model.RobotModel`; in a robot comparison the robot identified from the
log's torques) and ``Ia`` its armature, all frozen. The model still learns its own ``H_net``,
``V_net`` and friction ``Q``, which start as nothing: the potential network's last layer is zero,
the inertia network's last layer is zero and its diagonal starts at ``softplus(-8)`` (so ``H_net
= L L^T`` is about ``1e-7 I`` kg m^2 and stays positive semi-definite, ``M_rb`` keeps ``H``
positive definite, no ``eps I``), and the friction starts at the robot file's damping and Coulomb
friction (and offset). So the model starts as the rigid body with its joint friction, and training
moves it wherever the log says.

SyMo and E2E-SyMo add the prior's discrete Lagrangian ``h [1/2 v^T M_rb(m) v - V_rb(m)]`` the same
way: its slots need ``M_rb v``, ``v^T dM_rb/dq v`` and ``g_rb`` at the midpoint
(:meth:`RigidBodyPrior.slot_terms`), so the residual is exact; Newton's Jacobian takes only the
prior's leading term ``-M_rb/h`` (its ``O(|v| dM/dq)`` and ``O(h dg/dq)`` terms are left out: Newton
still converges to the exact root, a little slower, and E2E-SyMo's implicit gradients are
approximate to that order).
"""

from __future__ import annotations

import torch
from torch import nn

from engine.models.robot_source import load_rigid_body

__all__ = ["LAGRANGIAN_PRIORS", "PRIOR_DIAGONAL_SHIFT", "RigidBodyPrior", "start_as_residual"]

LAGRANGIAN_PRIORS = ("none", "robot")
PRIOR_DIAGONAL_SHIFT = -8.0    # the inertia network's diagonal bias with a prior: softplus(-8)^2 ~ 1e-7 kg m^2


class RigidBodyPrior(nn.Module):
    """The frozen rigid body of ``robot`` (a library name or robot file) with its armature: the
    mass matrix ``M_rb + diag(Ia)`` (..., n, n) and the bias forces ``C_rb qd + g_rb`` (..., n)."""

    armature: torch.Tensor   # (n,) kg m^2, a buffer

    def __init__(self, robot: str):
        super().__init__()
        start = load_rigid_body(robot, dtype=torch.float64)
        self.robot = start.model
        for p in self.robot.parameters():
            p.requires_grad_(False)
        self.friction = {k: list(v) for k, v in start.friction.items()}
        self.velocity_scale = float(start.velocity_scale)
        self.register_buffer("armature", torch.as_tensor(start.friction["armature"], dtype=torch.float64),
                             persistent=False)

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        arm = self.armature
        M = self.robot.mass_matrix(q.to(arm.dtype))
        return (M + torch.diag_embed(arm.expand(M.shape[:-1]))).to(q.dtype)

    def bias_forces(self, q: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        arm = self.armature
        return self.robot.bias_forces(q.to(arm.dtype), qd.to(arm.dtype)).to(q.dtype)


    def slot_terms(self, m: torch.Tensor, v: torch.Tensor):
        """``(M, v^T dM/dq_k v, g)`` (B, n, n), (B, n), (B, n) at the midpoint ``m`` with velocity ``v``
        (``M`` with the armature): the
        prior's part of the discrete Euler-Lagrange slots (no graph: the prior is fixed).
        ``v^T dM/dq_k v = 2 dT/dq_k`` with ``T = 1/2 v^T M(q) v``, one backward pass through CRBA;
        ``g`` the RNEA at rest."""
        dt = self.armature.dtype
        v2 = v.detach().to(dt)
        with torch.enable_grad():
            mq = m.detach().to(dt).requires_grad_(True)
            M = self.robot.mass_matrix(mq)
            Mv = (M @ v2.unsqueeze(-1)).squeeze(-1)
            (dT,) = torch.autograd.grad(0.5 * (Mv * v2).sum(), mq)
        M = M.detach() + torch.diag_embed(self.armature.expand(v2.shape))
        g = self.robot.bias_forces(mq.detach(), torch.zeros_like(v2))
        return M.to(m.dtype), (2.0 * dT).to(m.dtype), g.to(m.dtype)


@torch.no_grad()
def start_as_residual(lagrangian, dissipation, prior: RigidBodyPrior) -> None:
    """Make the learned terms start as nothing on top of ``prior`` (module doc)."""
    heads = lagrangian.nets.heads   # the output layers: inertia factor (0), potential (1)
    for head in heads:
        head.weight.zero_()
        head.bias.zero_()
    heads[0].bias[: lagrangian.n] = PRIOR_DIAGONAL_SHIFT
    lagrangian.eps = 0.0
    if dissipation is not None:
        f = prior.friction
        dissipation.velocity_scale = prior.velocity_scale
        dissipation.set_values([max(v, 1e-6) for v in f["damping"]], [max(v, 1e-6) for v in f["coulomb"]],
                               f["offset"])
