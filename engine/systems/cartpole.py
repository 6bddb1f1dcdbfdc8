"""The cart-pole of the SyMo paper (its repository's gym environment, after Barto, Sutton, Anderson).

Coordinates ``q = (x, th)``: cart position (m) and pole angle from the upright (rad); the
control ``u`` is a horizontal force on the cart (N). Parameters: cart 1 kg, pole 0.1 kg,
half pole length 0.5 m, g = 9.81. Lagrangian (the pole a uniform rod of length 2 l)::

    H = [[mc + mp, mp l cos th], [mp l cos th, 4/3 mp l^2]],   V = mp g l cos th

whose Euler-Lagrange equations are the gym closed form used by :meth:`forward_dynamics`
(https://coneural.org/florian/papers/05_cart_pole.pdf).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.systems.base import MechanicalSystem

__all__ = ["CartPoleParams", "CartPole"]


@dataclass(frozen=True)
class CartPoleParams:
    mc: float = 1.0    # kg, cart
    mp: float = 0.1    # kg, pole
    l: float = 0.5     # m, half the pole's length
    g: float = 9.81    # m / s^2


class CartPole(MechanicalSystem):
    name = "cartpole"
    dof = 2
    control_dim = 1
    angle_mask = (False, True)

    @classmethod
    def default_params(cls) -> CartPoleParams:
        return CartPoleParams()

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        P = self.params
        c = torch.cos(q[..., 1])
        h11 = torch.full_like(c, P.mc + P.mp)
        h12 = P.mp * P.l * c
        h22 = torch.full_like(c, 4.0 / 3.0 * P.mp * P.l ** 2)
        return torch.stack([torch.stack([h11, h12], -1), torch.stack([h12, h22], -1)], -2)

    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        P = self.params
        return P.mp * P.g * P.l * torch.cos(q[..., 1])

    def forward_dynamics(self, q, qd, u=None):
        """The gym closed form (..., 2): ``(xacc, thacc)``."""
        P = self.params
        M = P.mc + P.mp
        th, thd = q[..., 1], qd[..., 1]
        s, c = torch.sin(th), torch.cos(th)
        force = u[..., 0] if u is not None else torch.zeros_like(th)
        temp = (force + P.mp * P.l * thd ** 2 * s) / M
        thacc = (P.g * s - c * temp) / (P.l * (4.0 / 3.0 - P.mp * c ** 2 / M))
        xacc = temp - P.mp * P.l * thacc * c / M
        return torch.stack([xacc, thacc], -1)
