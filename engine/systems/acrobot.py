"""The acrobot of the SyMo paper: gym's Acrobot-v1 with the "book" equations of motion.

Source: the SyMo repository's ``Code/myenv/acrobot.py`` (ssantos97/SyMo, copied from
Symplectic-ODENet, after OpenAI gym's Acrobot-v1 and RLPy; the equations of Sutton and Barto's book, 1998),
integrated there with scipy's ``solve_ivp`` (RK45) per step of h = 0.05 s.

Two links in a vertical plane, both 1 m long and 1 kg, each with its centre of mass half way
along (lc = 0.5 m) and a moment of inertia I = 1 kg m^2 about its centre of mass. Coordinates
``q = (th1, th2)`` (rad): ``th1`` is link 1's angle from the DOWNWARD vertical (0: hanging),
``th2`` link 2's angle relative to link 1 (0: in line). The control ``u`` (N m) is the torque
at joint 2 only (the elbow; the shoulder is passive). Lagrangian::

    H = [[d1, d2], [d2, m2 lc2^2 + I2]],
    d1 = m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos th2) + I1 + I2,
    d2 = m2 (lc2^2 + l1 lc2 cos th2) + I2,
    V  = -(m1 lc1 + m2 l1) g cos th1 - m2 lc2 g cos(th1 + th2)   (zero: the pivot's height)

whose Euler-Lagrange equations are gym's "book" closed form used by :meth:`forward_dynamics`
(its gravity terms ``phi2 = m2 lc2 g cos(th1 + th2 - pi/2)`` and ``phi1 - (Coriolis terms) =
(m1 lc1 + m2 l1) g cos(th1 - pi/2) + phi2`` are ``dV/dq``). gym clips the velocities to
``MAX_VEL_1 = 4 pi`` and ``MAX_VEL_2 = 9 pi`` rad/s; the paper's environment does not, its data
generation rejects trajectories that reach them (``engine.data.config``, ``reject_speed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.systems.base import MechanicalSystem

__all__ = ["MAX_VEL_1", "MAX_VEL_2", "Acrobot", "AcrobotParams"]

MAX_VEL_1 = 4 * math.pi   # rad/s, gym's speed limit of joint 1 (the paper's data: a rejection bound)
MAX_VEL_2 = 9 * math.pi   # rad/s, joint 2


@dataclass(frozen=True)
class AcrobotParams:
    l1: float = 1.0     # m, link 1 length (LINK_LENGTH_1)
    l2: float = 1.0     # m, link 2 length (LINK_LENGTH_2; not in the dynamics)
    m1: float = 1.0     # kg, link 1 mass
    m2: float = 1.0     # kg, link 2 mass
    lc1: float = 0.5    # m, joint 1 to link 1's centre of mass
    lc2: float = 0.5    # m, joint 2 to link 2's centre of mass
    I1: float = 1.0     # kg m^2, link 1's moment of inertia about its centre of mass (LINK_MOI)
    I2: float = 1.0     # kg m^2, link 2's
    g: float = 9.81     # m / s^2


class Acrobot(MechanicalSystem):
    name = "acrobot"
    dof = 2
    control_dim = 1
    angle_mask = (True, True)

    @classmethod
    def default_params(cls) -> AcrobotParams:
        return AcrobotParams()

    def input_matrix(self, dtype=torch.float32, device=None) -> torch.Tensor:
        """``B = [[0], [1]]``: the torque acts on joint 2 only."""
        return torch.tensor([[0.0], [1.0]], dtype=dtype, device=device)

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        P = self.params
        c2 = torch.cos(q[..., 1])
        d1 = P.m1 * P.lc1 ** 2 + P.m2 * (P.l1 ** 2 + P.lc2 ** 2 + 2 * P.l1 * P.lc2 * c2) + P.I1 + P.I2
        d2 = P.m2 * (P.lc2 ** 2 + P.l1 * P.lc2 * c2) + P.I2
        d22 = torch.full_like(c2, P.m2 * P.lc2 ** 2 + P.I2)
        return torch.stack([torch.stack([d1, d2], -1), torch.stack([d2, d22], -1)], -2)

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        P = self.params
        th1, th2 = q[..., 0], q[..., 1]
        return -(P.m1 * P.lc1 + P.m2 * P.l1) * P.g * torch.cos(th1) - P.m2 * P.lc2 * P.g * torch.cos(
            th1 + th2
        )

    def forward_dynamics(self, q, qd, u=None):
        """gym's "book" closed form (..., 2): ``(ddtheta1, ddtheta2)``."""
        P = self.params
        th1, th2 = q[..., 0], q[..., 1]
        dth1, dth2 = qd[..., 0], qd[..., 1]
        a = u[..., 0] if u is not None else torch.zeros_like(th1)
        s2, c2 = torch.sin(th2), torch.cos(th2)
        k = P.m2 * P.l1 * P.lc2
        d1 = P.m1 * P.lc1 ** 2 + P.m2 * (P.l1 ** 2 + P.lc2 ** 2) + 2 * k * c2 + P.I1 + P.I2
        d2 = P.m2 * P.lc2 ** 2 + k * c2 + P.I2
        phi2 = P.m2 * P.lc2 * P.g * torch.sin(th1 + th2)
        phi1 = (
            -k * dth2**2 * s2
            - 2 * k * dth2 * dth1 * s2
            + (P.m1 * P.lc1 + P.m2 * P.l1) * P.g * torch.sin(th1)
            + phi2
        )
        ddth2 = (a + d2 / d1 * phi1 - k * dth1 ** 2 * s2 - phi2) / (P.m2 * P.lc2 ** 2 + P.I2 - d2 ** 2 / d1)
        ddth1 = -(d2 * ddth2 + phi1) / d1
        return torch.stack([ddth1, ddth2], -1)
