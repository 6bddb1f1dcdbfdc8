"""The pendulum of the SyMo paper's data set (OpenAI-gym style): a uniform rod on a pivot.

Angle ``th`` from the upright (rad), torque ``u`` (N m) at the pivot. Parameters m = l = 1,
g = 9.81. The paper's equation of motion (METHODS section 2)::

    thdd = -3 g / (2 l) sin(th + pi) + 3 / (m l^2) u

which is the Euler-Lagrange equation of ``H = m l^2 / 3`` (rod about its end) and
``V = m g l / 2 (1 + cos th)`` (the centre of mass at l/2, zero at the bottom).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.systems.base import MechanicalSystem

__all__ = ["PendulumParams", "Pendulum"]


@dataclass(frozen=True)
class PendulumParams:
    m: float = 1.0    # kg
    l: float = 1.0    # m, rod length
    g: float = 9.81   # m / s^2


class Pendulum(MechanicalSystem):
    name = "pendulum"
    dof = 1
    control_dim = 1
    angle_mask = (True,)

    @classmethod
    def default_params(cls) -> PendulumParams:
        return PendulumParams()

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        P = self.params
        return torch.full((*q.shape[:-1], 1, 1), P.m * P.l ** 2 / 3.0, dtype=q.dtype, device=q.device)

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        P = self.params
        return 0.5 * P.m * P.g * P.l * (1.0 + torch.cos(q[..., 0]))

    def forward_dynamics(self, q, qd, u=None):
        """The paper's closed form: ``thdd = -3g/(2l) sin(th + pi) + 3/(m l^2) u`` (..., 1)."""
        P = self.params
        thdd = -3.0 * P.g / (2.0 * P.l) * torch.sin(q + math.pi)
        if u is not None:
            thdd = thdd + 3.0 / (P.m * P.l ** 2) * u
        return thdd
