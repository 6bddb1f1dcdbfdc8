"""The double pendulum of METHODS section 3: point masses on massless links, joint springs, gravity.

Coordinates: ``q1`` is the angle of link 1 from the downward vertical, ``q2`` the angle of
link 2 relative to link 1 (radians). Momenta ``p = M(q) qd`` (kg m^2 / s). Every function is
batched over leading dimensions (``q`` of shape ``(..., 2)``), differentiable, and follows the
dtype and device of its inputs.

Hamiltonian form::

    H(q, p) = 1/2 p^T M(q)^-1 p + V(q)
    M11 = (m1+m2) l1^2 + m2 l2^2 + 2 m2 l1 l2 cos q2,  M12 = m2 l2^2 + m2 l1 l2 cos q2,  M22 = m2 l2^2
    V   = -(m1+m2) g l1 cos q1 - m2 g l2 cos(q1+q2) + 1/2 (k1 q1^2 + k2 q2^2)

Lagrangian form: ``L(q, qd) = 1/2 qd^T M(q) qd - V(q)`` with
``M(q) qdd + c(q, qd) + dV/dq = tau``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch

from engine.io import dataclass_from_dict

__all__ = [
    "DoublePendulumParams",
    "ParameterError",
    "coriolis_gravity",
    "elbow_position",
    "forward_dynamics",
    "forward_kinematics",
    "hamiltonian",
    "hamiltonian_vector_field",
    "kinetic_energy",
    "lagrangian",
    "mass_matrix",
    "mass_matrix_inverse",
    "momentum",
    "potential_energy",
    "potential_gradient",
    "reach",
    "tip_position",
    "velocity",
]


class ParameterError(ValueError):
    """A physical parameter that is out of range; the message names the field."""


@dataclass(frozen=True)
class DoublePendulumParams:
    """Physical parameters (SI units). Defaults: the paper's set-up (METHODS section 3)."""

    m1: float = 1.0      # kg, point mass at the elbow
    m2: float = 1.0      # kg, point mass at the tip
    l1: float = 1.0      # m, link 1
    l2: float = 1.0      # m, link 2
    k1: float = 0.0      # N m / rad, spring at joint 1
    k2: float = 0.5      # N m / rad, spring at joint 2
    g: float = 9.81      # m / s^2

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or math.isnan(v):
                raise ParameterError(f"double pendulum parameter {f.name!r}: expected a number, got {v!r}")
        for name in ("m1", "m2", "l1", "l2"):
            if getattr(self, name) <= 0:
                raise ParameterError(
                    f"double pendulum parameter {name!r} must be > 0 (got {getattr(self, name)})"
                )
        for name in ("k1", "k2", "g"):
            if getattr(self, name) < 0:
                raise ParameterError(
                    f"double pendulum parameter {name!r} must be >= 0 (got {getattr(self, name)})"
                )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DoublePendulumParams:
        return dataclass_from_dict(cls, data, "double pendulum parameters", ParameterError, float)


def _inertia_constants(P: DoublePendulumParams):
    a = (P.m1 + P.m2) * P.l1 ** 2 + P.m2 * P.l2 ** 2
    b = P.m2 * P.l1 * P.l2
    c = P.m2 * P.l2 ** 2
    return a, b, c


def mass_matrix(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """M(q): ``(..., 2) -> (..., 2, 2)`` in kg m^2."""
    a, b, c = _inertia_constants(P)
    c2 = torch.cos(q[..., 1])
    m11 = a + 2 * b * c2
    m12 = c + b * c2
    m22 = torch.full_like(c2, c)
    return torch.stack([torch.stack([m11, m12], -1), torch.stack([m12, m22], -1)], -2)


def mass_matrix_inverse(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """M(q)^-1 in closed form: ``(..., 2) -> (..., 2, 2)``."""
    a, b, c = _inertia_constants(P)
    c2 = torch.cos(q[..., 1])
    m11 = a + 2 * b * c2
    m12 = c + b * c2
    det = m11 * c - m12 * m12
    inv11 = c / det
    inv12 = -m12 / det
    inv22 = m11 / det
    return torch.stack([torch.stack([inv11, inv12], -1), torch.stack([inv12, inv22], -1)], -2)


def velocity(
    q: torch.Tensor, p: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()
) -> torch.Tensor:
    """qd = M(q)^-1 p (rad/s), ``(..., 2)``; closed form, no matrix solve."""
    a, b, c = _inertia_constants(P)
    c2 = torch.cos(q[..., 1])
    m11 = a + 2 * b * c2
    m12 = c + b * c2
    det = m11 * c - m12 * m12
    p1, p2 = p[..., 0], p[..., 1]
    return torch.stack([(c * p1 - m12 * p2) / det, (m11 * p2 - m12 * p1) / det], -1)


def momentum(
    q: torch.Tensor, qd: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()
) -> torch.Tensor:
    """p = M(q) qd, ``(..., 2)``."""
    return (mass_matrix(q, P) @ qd.unsqueeze(-1)).squeeze(-1)


def potential_energy(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """V(q) in J: ``(..., 2) -> (...)`` (gravity + joint springs)."""
    q1, q2 = q[..., 0], q[..., 1]
    return (-(P.m1 + P.m2) * P.g * P.l1 * torch.cos(q1) - P.m2 * P.g * P.l2 * torch.cos(q1 + q2)
            + 0.5 * (P.k1 * q1 ** 2 + P.k2 * q2 ** 2))


def potential_gradient(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """dV/dq in N m: ``(..., 2) -> (..., 2)``."""
    q1, q2 = q[..., 0], q[..., 1]
    s12 = P.m2 * P.g * P.l2 * torch.sin(q1 + q2)
    return torch.stack([(P.m1 + P.m2) * P.g * P.l1 * torch.sin(q1) + s12 + P.k1 * q1,
                        s12 + P.k2 * q2], -1)


def kinetic_energy(
    q: torch.Tensor, p: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()
) -> torch.Tensor:
    """1/2 p^T M^-1 p in J, ``(...)``."""
    return 0.5 * (p * velocity(q, p, P)).sum(-1)


def hamiltonian(
    q: torch.Tensor, p: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()
) -> torch.Tensor:
    """H(q, p) in J, ``(...)``."""
    return kinetic_energy(q, p, P) + potential_energy(q, P)


def hamiltonian_vector_field(q: torch.Tensor, p: torch.Tensor, u: torch.Tensor | None = None,
                             P: DoublePendulumParams = DoublePendulumParams()):
    """Hamilton's equations with a collocated input ``u`` (N m): returns ``(qd, pd)``, each ``(..., 2)``.

    ``qd = dH/dp = M^-1 p``; ``pd = -dH/dq + u``, with the kinetic part of ``dH/dq2`` equal to
    ``m2 l1 l2 sin q2 (qd1^2 + qd1 qd2)`` (dH/dq1 has none: M does not depend on q1).
    """
    qd = velocity(q, p, P)
    b = P.m2 * P.l1 * P.l2
    dV = potential_gradient(q, P)
    kin2 = b * torch.sin(q[..., 1]) * (qd[..., 0] * qd[..., 0] + qd[..., 0] * qd[..., 1])
    pd = torch.stack([-dV[..., 0], -dV[..., 1] - kin2], -1)
    if u is not None:
        pd = pd + u
    return qd, pd


def lagrangian(
    q: torch.Tensor, qd: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()
) -> torch.Tensor:
    """L(q, qd) = T - V in J, ``(...)``."""
    return 0.5 * (qd * momentum(q, qd, P)).sum(-1) - potential_energy(q, P)


def coriolis_gravity(
    q: torch.Tensor, qd: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()
) -> torch.Tensor:
    """Bias forces ``c(q, qd) + dV/dq`` of the Euler-Lagrange equations, ``(..., 2)`` in N m."""
    b = P.m2 * P.l1 * P.l2
    s2 = torch.sin(q[..., 1])
    qd1, qd2 = qd[..., 0], qd[..., 1]
    cor = torch.stack([-b * s2 * (2 * qd1 * qd2 + qd2 * qd2), b * s2 * qd1 * qd1], -1)
    return cor + potential_gradient(q, P)


def forward_dynamics(q: torch.Tensor, qd: torch.Tensor, tau: torch.Tensor | None = None,
                     P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """qdd = M^-1 (tau - c - dV/dq) in rad/s^2, ``(..., 2)``."""
    rhs = -coriolis_gravity(q, qd, P)
    if tau is not None:
        rhs = rhs + tau
    return (mass_matrix_inverse(q, P) @ rhs.unsqueeze(-1)).squeeze(-1)


def elbow_position(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """Elbow (mass 1) in the plane, ``(..., 2)`` in m; x right, y up, pivot at the origin."""
    q1 = q[..., 0]
    return torch.stack([P.l1 * torch.sin(q1), -P.l1 * torch.cos(q1)], -1)


def tip_position(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()) -> torch.Tensor:
    """Tip (mass 2, the end effector), ``(..., 2)`` in m."""
    a = q[..., 0] + q[..., 1]
    return elbow_position(q, P) + torch.stack([P.l2 * torch.sin(a), -P.l2 * torch.cos(a)], -1)


def forward_kinematics(q: torch.Tensor, P: DoublePendulumParams = DoublePendulumParams()):
    """``(elbow, tip)``, each ``(..., 2)`` in m."""
    return elbow_position(q, P), tip_position(q, P)


def reach(P: DoublePendulumParams = DoublePendulumParams()) -> tuple[float, float]:
    """Inner and outer radius (m) of the annulus the tip can reach: ``|l1 - l2|, l1 + l2``."""
    return abs(P.l1 - P.l2), P.l1 + P.l2
