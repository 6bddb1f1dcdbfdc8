"""Physical parametrisations of learnable link parameters.

Each parametrisation is a ``torch.nn.Module`` whose ``forward()`` (no arguments) returns the
physical value; its ``nn.Parameter`` s are unconstrained, so any optimiser can move them
without leaving the physical set:

- :class:`PositiveScalar`: mass (kg) or joint damping (N m s/rad), ``softplus(raw)`` or
  ``exp(raw)``, always > 0;
- :class:`FreeVector`: centre of mass (m, link frame), unconstrained;
- :class:`CholeskyInertia`: rotational inertia about the CoM (kg m^2, link-frame axes) through
  the log-Cholesky factor of the mass distribution's second moment
  ``Sigma = 0.5 tr(I) 1 - I = L L^T`` (``L`` lower triangular, positive diagonal
  ``exp(raw)``); ``I = tr(Sigma) 1 - Sigma`` is then symmetric positive definite and
  satisfies the triangle inequality strictly (Wensing et al. 2017; Rucker & Wensing 2022:
  with a positive mass this is the log-Cholesky parametrisation of a positive-definite
  pseudo-inertia).

Any other ``nn.Module`` whose ``forward()`` returns a tensor of the right shape (``()`` for
mass and damping, ``(3,)`` for the CoM, ``(3, 3)`` for the inertia) can take their place.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "KINDS",
    "CholeskyInertia",
    "FreeVector",
    "PositiveScalar",
    "default_parametrization",
    "moving_links",
]

KINDS = ("mass", "com", "inertia", "damping")


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y)) if y < 30 else y


class PositiveScalar(nn.Module):
    """A positive scalar ``softplus(raw)`` (or ``exp(raw)`` with ``kind="exp"``); shape ``()``."""

    def __init__(
        self, value: float, kind: str = "softplus", floor: float = 1e-9, dtype=torch.float64, device=None
    ):
        super().__init__()
        if kind not in ("softplus", "exp"):
            raise ValueError(f"kind must be 'softplus' or 'exp', got {kind!r}")
        value = max(float(value), floor)
        self.kind = kind
        raw = _inverse_softplus(value) if kind == "softplus" else math.log(value)
        self.raw = nn.Parameter(torch.tensor(raw, dtype=dtype, device=device))

    def forward(self) -> torch.Tensor:
        return nn.functional.softplus(self.raw) if self.kind == "softplus" else torch.exp(self.raw)


class FreeVector(nn.Module):
    """An unconstrained vector parameter (e.g. a centre of mass, m)."""

    def __init__(self, value, dtype=torch.float64, device=None):
        super().__init__()
        self.value = nn.Parameter(torch.as_tensor(value, dtype=dtype, device=device).clone())

    def forward(self) -> torch.Tensor:
        return self.value


class CholeskyInertia(nn.Module):
    """A physically consistent rotational inertia ``(3, 3)`` from 6 unconstrained numbers.

    Initialised from ``inertia``; an initial value that is not physically consistent is
    projected first (eigenvalues of ``Sigma`` clamped to ``min_moment``).
    """

    def __init__(self, inertia, min_moment: float = 1e-12, dtype=torch.float64, device=None):
        super().__init__()
        I = torch.as_tensor(inertia, dtype=torch.float64).reshape(3, 3)
        I = 0.5 * (I + I.T)
        sigma = 0.5 * torch.trace(I) * torch.eye(3, dtype=torch.float64) - I
        evals, evecs = torch.linalg.eigh(sigma)
        scale = max(float(evals.abs().max()), min_moment)
        evals = evals.clamp_min(max(min_moment, 1e-9 * scale))
        sigma = evecs @ torch.diag(evals) @ evecs.T
        L = torch.linalg.cholesky(sigma)
        self.log_diag = nn.Parameter(torch.log(torch.diagonal(L)).to(dtype=dtype, device=device))
        self.off_diag = nn.Parameter(torch.stack([L[1, 0], L[2, 0], L[2, 1]]).to(dtype=dtype, device=device))

    def forward(self) -> torch.Tensor:
        d = torch.exp(self.log_diag)
        zero = torch.zeros((), dtype=d.dtype, device=d.device)
        L = torch.stack([
            torch.stack([d[0], zero, zero]),
            torch.stack([self.off_diag[0], d[1], zero]),
            torch.stack([self.off_diag[1], self.off_diag[2], d[2]]),
        ])
        sigma = L @ L.T
        return torch.trace(sigma) * torch.eye(3, dtype=d.dtype, device=d.device) - sigma


def default_parametrization(kind: str, value: torch.Tensor) -> nn.Module:
    """The default physical parametrisation of ``kind`` initialised at ``value``."""
    dtype, device = value.dtype, value.device
    if kind in ("mass", "damping"):
        return PositiveScalar(float(value), dtype=dtype, device=device)
    if kind == "com":
        return FreeVector(value.detach(), dtype=dtype, device=device)
    if kind == "inertia":
        return CholeskyInertia(value.detach().cpu(), dtype=dtype, device=device)
    raise ValueError(f"unknown parameter kind {kind!r}; expected one of {KINDS}")


def moving_links(model) -> tuple[list[str], list[str], list[str]]:
    """Links with a mass, sorted: (body links, attached links, fixed links).

    body links: the child link of a movable joint (one per moving body); attached links:
    rigidly fixed to a moving body (a hand, fingers: merged into that body's inertia);
    fixed links: never move (the base and what is fixed to it).
    """
    desc = model.description
    parent_joint = {j.child: j for j in desc.joints}
    body: list[str] = []
    attached: list[str] = []
    fixed: list[str] = []
    for link in model.link_names:
        inertial = desc.link(link).inertial
        if inertial is None or inertial.mass <= 0:
            continue
        j = parent_joint.get(link)
        if j is not None and j.movable:
            body.append(link)
            continue
        cur, moves = link, False
        while cur in parent_joint:
            j = parent_joint[cur]
            if j.movable:
                moves = True
                break
            cur = j.parent
        (attached if moves else fixed).append(link)
    return body, attached, fixed
