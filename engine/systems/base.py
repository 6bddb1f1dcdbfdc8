"""A small protocol for analytic mechanical systems with a Lagrangian ``L = 1/2 qd^T H(q) qd - V(q)``.

A system knows its degrees of freedom, which coordinates are angles (embedded as (cos, sin)
by the learned models), how a control ``u`` (..., m) enters the generalised forces
(``F = u @ B^T`` with the input matrix ``B`` of shape (n, m)), its inertia matrix ``H(q)``
(..., n, n) and potential ``V(q)`` (...), all in torch, batched and differentiable. The forced
Euler-Lagrange equations give ``qdd = H^-1 (F - C(q, qd) - dV/dq)``; subclasses may override
:meth:`forward_dynamics` with a closed form. :meth:`simulate` integrates a batch of
trajectories with scipy's ``solve_ivp`` (RK45) under a control held constant per step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict

import numpy as np
import torch

__all__ = ["MechanicalSystem", "SystemError"]


class SystemError(ValueError):
    """Bad input to an analytic system (wrong shape, unknown name); the message names the field."""


class MechanicalSystem(ABC):
    """An analytic Lagrangian system. State ``x = (q, qd)`` of shape (..., 2n)."""

    name: str = ""
    dof: int = 0
    control_dim: int = 1
    angle_mask: tuple[bool, ...] = ()

    def __init__(self, params=None):
        self.params = params if params is not None else self.default_params()

    # -- description -------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def default_params(cls):
        """The physical parameters (a frozen dataclass)."""

    def describe(self) -> dict:
        return {"name": self.name, "dof": self.dof, "control_dim": self.control_dim,
                "angle_mask": list(self.angle_mask), "params": asdict(self.params)}

    def input_matrix(self, dtype=torch.float32, device=None) -> torch.Tensor:
        """``B`` (n, m): generalised force ``F = B u``. Default: ``u`` drives the first m coordinates."""
        B = torch.zeros(self.dof, self.control_dim, dtype=dtype, device=device)
        B[: self.control_dim, : self.control_dim] = torch.eye(self.control_dim, dtype=dtype, device=device)
        return B

    # -- Lagrangian ------------------------------------------------------------------------
    @abstractmethod
    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor:
        """Inertia matrix ``H(q)`` (..., n, n), kg m^2 (or kg for translations)."""

    @abstractmethod
    def potential_energy(self, q: torch.Tensor) -> torch.Tensor:
        """``V(q)`` (...), J."""

    def kinetic_energy(self, q: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        return 0.5 * torch.einsum("...i,...ij,...j->...", qd, self.mass_matrix(q), qd)

    def energy(self, q: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        """Total energy ``T + V`` (...), J."""
        return self.kinetic_energy(q, qd) + self.potential_energy(q)

    def lagrangian(self, q: torch.Tensor, qd: torch.Tensor) -> torch.Tensor:
        return self.kinetic_energy(q, qd) - self.potential_energy(q)

    def generalized_force(self, u: torch.Tensor) -> torch.Tensor:
        """``F = B u`` (..., n) from controls ``u`` (..., m)."""
        return u @ self.input_matrix(u.dtype, u.device).T

    def forward_dynamics(
        self, q: torch.Tensor, qd: torch.Tensor, u: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``qdd`` (..., n) from the forced Euler-Lagrange equations (torch.func for dH/dq, dV/dq)."""
        from torch.func import jacfwd, vmap

        n = self.dof
        batch = q.shape[:-1]
        qf = q.reshape(-1, n)
        H = self.mass_matrix(q)
        dV = vmap(jacfwd(lambda x: self.potential_energy(x.unsqueeze(0))[0]))(qf).reshape(*batch, n)
        # dH[..., i, j, k] = d H_ij / d q_k
        dH = vmap(jacfwd(lambda x: self.mass_matrix(x.unsqueeze(0))[0]))(qf).reshape(*batch, n, n, n)
        # C_i = sum_jk (dH_ij/dq_k - 1/2 dH_jk/dq_i) qd_j qd_k
        C = torch.einsum("...ijk,...j,...k->...i", dH, qd, qd) - 0.5 * torch.einsum(
            "...jki,...j,...k->...i", dH, qd, qd
        )
        F = -C - dV
        if u is not None:
            F = F + self.generalized_force(u)
        return torch.linalg.solve(H, F.unsqueeze(-1)).squeeze(-1)

    def state_derivative(self, x: torch.Tensor, u: torch.Tensor | None = None) -> torch.Tensor:
        """``xd = (qd, qdd)`` (..., 2n) for the state ``x = (q, qd)`` (..., 2n)."""
        n = self.dof
        q, qd = x[..., :n], x[..., n:]
        return torch.cat([qd, self.forward_dynamics(q, qd, u)], -1)

    # -- ground truth --------------------------------------------------------------------
    def simulate(self, x0: np.ndarray, u: np.ndarray, h: float, steps: int,
                 rtol: float = 1e-10, atol: float = 1e-10) -> np.ndarray:
        """Integrate a batch with scipy ``solve_ivp`` (RK45), controls held constant per step.

        x0: (B, 2n) initial states; u: (B, m) constant or (B, steps, m) per-step controls;
        h: time step (s). Returns (B, steps + 1, 2n) float64, the initial state first.
        All trajectories form one vectorised ODE: one adaptive solve over the whole horizon when
        the controls are constant, else one per step. Tolerances are tight (1e-10) so the data are
        exact to float32 precision (the paper's gym code used solve_ivp's defaults per step).
        """
        from scipy.integrate import solve_ivp

        x0 = np.asarray(x0, dtype=np.float64)
        if x0.ndim != 2 or x0.shape[1] != 2 * self.dof:
            raise SystemError(f"{self.name}: x0 must have shape (B, {2 * self.dof}), got {x0.shape}")
        u = np.asarray(u, dtype=np.float64)
        B = x0.shape[0]
        if u.ndim == 2:
            u = np.repeat(u[:, None, :], steps, axis=1)
        if u.shape != (B, steps, self.control_dim):
            raise SystemError(
                f"{self.name}: u must have shape (B, {self.control_dim}) or (B, steps, {self.control_dim}), "
                f"got {u.shape}"
            )
        out = np.empty((B, steps + 1, 2 * self.dof))
        out[:, 0] = x0
        constant = bool(np.all(u == u[:, :1]))
        segments = [(0, steps)] if constant else [(k, k + 1) for k in range(steps)]
        x = x0.copy()
        for k0, k1 in segments:
            uk = torch.from_numpy(np.ascontiguousarray(u[:, k0]))

            def rhs(t, y, uk=uk):
                xt = torch.from_numpy(y.reshape(B, 2 * self.dof))
                return self.state_derivative_np(xt, uk).reshape(-1)

            t_eval = h * np.arange(1, k1 - k0 + 1)
            sol = solve_ivp(rhs, (0.0, t_eval[-1]), x.reshape(-1), method="RK45", t_eval=t_eval,
                            rtol=rtol, atol=atol)
            if not sol.success:
                raise RuntimeError(f"{self.name}: solve_ivp failed at step {k0}: {sol.message}")
            seg = sol.y.T.reshape(k1 - k0, B, 2 * self.dof).transpose(1, 0, 2)
            out[:, k0 + 1:k1 + 1] = seg
            x = seg[:, -1]
        return out

    def state_derivative_np(self, x: torch.Tensor, u: torch.Tensor) -> np.ndarray:
        """The ODE right-hand side for scipy: float64 tensors in, numpy out."""
        with torch.no_grad():
            return self.state_derivative(x, u).numpy()
