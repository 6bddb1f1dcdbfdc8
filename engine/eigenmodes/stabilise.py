"""The stabilising controller u = u_E + u_M on the plant plus learned potential, with viscous damping.

METHODS section 3 / paper section 4.2:

- ``u_E = -k_E (H_cl(q, p) - H_d) p / |p|`` (0 when ``|p| < p_threshold``) drives the
  closed-loop energy ``H_cl = H + V_theta`` to the mode's energy ``H_d``;
- ``u_M = -k_M Pi (p - p_d(s*))`` with ``Pi = I - qd qd^T / |qd|^2``, so ``qd^T u_M = 0``:
  the mode controller never changes the energy;
- the damped plant adds ``-D qd``.

``simulate_stabilised`` is a job body; it returns the time series of energy, distances to the
orbit in position and momentum, and the inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from engine.eigenmodes.config import StabiliseConfig
from engine.eigenmodes.dynamics import closed_loop_energy, rk4_step
from engine.eigenmodes.orbit import DesiredOrbit
from engine.eigenmodes.potential import PotentialMLP
from engine.jobs import JobContext, NullJobContext
from engine.systems.double_pendulum import DoublePendulumParams, hamiltonian_vector_field, velocity

__all__ = ["StabiliseResult", "StabilisingController", "desired_orbit_of", "simulate_stabilised"]


def desired_orbit_of(mode, harmonics: int = 24) -> DesiredOrbit:
    """The smooth desired orbit fitted to a designed mode's trajectory."""
    tr = mode.trajectory
    return DesiredOrbit.fit(tr["t"], tr["q"], tr["p"], harmonics)


@dataclass
class StabilisingController:
    """u_E, u_M and the stabilised vector field; pure functions of the state ``x (..., 4)``."""

    potential: PotentialMLP
    plant: DoublePendulumParams
    orbit: DesiredOrbit
    energy: float                    # H_d (J)
    config: StabiliseConfig = field(default_factory=StabiliseConfig)

    def energy_input(self, x: torch.Tensor) -> torch.Tensor:
        p = x[..., 2:]
        h = closed_loop_energy(x, self.potential, self.plant)
        norm = p.norm(dim=-1, keepdim=True)
        unit = torch.where(norm > self.config.p_threshold, p / torch.clamp(norm, min=self.config.p_threshold),
                           torch.zeros_like(p))
        return -self.config.k_energy * (h - self.energy)[..., None] * unit

    def mode_input(self, x: torch.Tensor) -> torch.Tensor:
        q, p = x[..., :2], x[..., 2:]
        _, pd = self.orbit.desired(q, p)
        e = p - pd
        v = velocity(q, p, self.plant)
        vv = (v * v).sum(-1, keepdim=True)
        proj = torch.where(vv > 1e-24, v * (v * e).sum(-1, keepdim=True) / torch.clamp(vv, min=1e-24),
                           torch.zeros_like(e))
        return -self.config.k_mode * (e - proj)

    def inputs(self, x: torch.Tensor):
        """``(u_E, u_M, u_D)``: energy, mode and damping forces, each ``(..., 2)`` (N m)."""
        q, p = x[..., :2], x[..., 2:]
        return (self.energy_input(x), self.mode_input(x), -self.config.damping * velocity(q, p, self.plant))

    def field(self, x: torch.Tensor) -> torch.Tensor:
        """The stabilised closed loop ``xd = f(x)``, ``(..., 4)``.

        Written out with shared intermediate results (one pass through V_theta's hidden layer for
        both H_cl and dV_theta/dq, the plant's closed forms); equal to composing
        :meth:`inputs` with the plant's Hamiltonian vector field (checked in the tests).
        """
        hidden = getattr(self.potential, "hidden", None)
        if hidden is None or len(hidden) != 1:
            return self.field_composed(x)
        P, cfg = self.plant, self.config
        a = (P.m1 + P.m2) * P.l1 ** 2 + P.m2 * P.l2 ** 2
        b = P.m2 * P.l1 * P.l2
        c = P.m2 * P.l2 ** 2
        g1 = (P.m1 + P.m2) * P.g * P.l1
        g2 = P.m2 * P.g * P.l2
        q, p = x[..., :2], x[..., 2:]
        q1, q2 = q.unbind(-1)
        p1, p2 = p.unbind(-1)
        c2 = torch.cos(q2)
        m12 = c + b * c2
        m11 = m12 + (a - c) + b * c2
        inv_det = 1.0 / (m11 * c - m12 * m12)
        v = torch.stack([(c * p1 - m12 * p2) * inv_det, (m11 * p2 - m12 * p1) * inv_det], -1)
        c12 = torch.cos(q1 + q2)
        layer, out = hidden[0], self.potential.out
        h = torch.tanh(torch.nn.functional.linear(q, layer.weight, layer.bias))
        w = out.weight[0]
        v_theta = h @ w + out.bias[0]
        grad_theta = (w - w * h * h) @ layer.weight
        energy = (
            0.5 * (p * v).sum(-1)
            - g1 * torch.cos(q1)
            - g2 * c12
            + 0.5 * (P.k1 * q1 * q1 + P.k2 * q2 * q2)
            + v_theta
        )
        norm = p.norm(dim=-1, keepdim=True)
        unit = torch.where(
            norm > cfg.p_threshold, p / torch.clamp(norm, min=cfg.p_threshold), torch.zeros_like(p)
        )
        u = -grad_theta - cfg.k_energy * (energy - self.energy)[..., None] * unit
        _, pd = self.orbit.desired(q, p)
        e = p - pd
        vv = (v * v).sum(-1, keepdim=True)
        proj = torch.where(vv > 1e-24, v * (v * e).sum(-1, keepdim=True) / torch.clamp(vv, min=1e-24),
                           torch.zeros_like(e))
        u = u - cfg.k_mode * (e - proj) - cfg.damping * v
        s12 = g2 * torch.sin(q1 + q2)
        qd1, qd2 = v.unbind(-1)
        pd1 = -(g1 * torch.sin(q1) + s12 + P.k1 * q1)
        pd2 = -(s12 + P.k2 * q2) - b * torch.sin(q2) * qd1 * (qd1 + qd2)
        return torch.cat([v, torch.stack([pd1, pd2], -1) + u], -1)

    def field_composed(self, x: torch.Tensor) -> torch.Tensor:
        """The same vector field composed from :meth:`inputs` and the plant (the reference form)."""
        q, p = x[..., :2], x[..., 2:]
        u_e, u_m, u_d = self.inputs(x)
        u = -self.potential.gradient(q) + u_e + u_m + u_d
        qd, pd = hamiltonian_vector_field(q, p, u, self.plant)
        return torch.cat([qd, pd], -1)

    @classmethod
    def for_mode(cls, mode, config: StabiliseConfig | None = None) -> StabilisingController:
        config = config if config is not None else StabiliseConfig()
        config.validate()
        return cls(potential=mode.potential.to(torch.float64), plant=mode.design.plant,
                   orbit=desired_orbit_of(mode, config.harmonics), energy=mode.energy, config=config)


@dataclass
class StabiliseResult:
    """Time series of a stabilised run (numpy): ``t (n,)``, ``q, p (n, 2)``, ``energy (n,)``,
    ``position_distance, momentum_distance (n,)``, ``u_energy, u_mode, u_damping (n, 2)``,
    ``mode_power (n,)`` (= qd^T u_M, zero up to rounding), the mode energy ``energy_target`` and
    the summary ``metrics`` (finals are the maxima over the last simulated period)."""

    t: np.ndarray
    q: np.ndarray
    p: np.ndarray
    energy: np.ndarray
    position_distance: np.ndarray
    momentum_distance: np.ndarray
    u_energy: np.ndarray
    u_mode: np.ndarray
    u_damping: np.ndarray
    mode_power: np.ndarray
    energy_target: float
    metrics: dict = field(default_factory=dict)
    cycle: dict = field(default_factory=dict)


def simulate_stabilised(controller: StabilisingController, x0: torch.Tensor | None = None,
                        ctx: JobContext | None = None, period: float | None = None) -> StabiliseResult:
    """Integrate the stabilised closed loop (RK4, step ``config.dt``) for ``config.periods`` periods.

    ``x0``: start state ``(4,)``; default: the mode's start ``(q_d(0), 0)`` shifted by
    ``config.perturb_q`` and ``config.perturb_p``.
    """
    ctx = ctx or NullJobContext()
    cfg = controller.config
    period = period or controller.orbit.period
    if x0 is None:
        with torch.no_grad():
            start = controller.orbit.state_at(torch.tensor(0.0, dtype=torch.float64))
        x0 = start + torch.tensor([*cfg.perturb_q, *cfg.perturb_p], dtype=torch.float64)
    x = torch.as_tensor(x0, dtype=torch.float64).detach()
    steps = max(1, int(round(cfg.periods * period / cfg.dt)))
    dt = cfg.periods * period / steps
    xs = [x]
    with torch.no_grad():
        for i in range(steps):
            x = rk4_step(controller.field, x, dt)
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"stabilised simulation diverged at t = {(i + 1) * dt:.3f} s: "
                                 "lower the step dt or the gains k_energy / k_mode")
            xs.append(x)
            if i % 100 == 99:
                ctx.check_cancelled()
                ctx.progress((i + 1) / steps, f"simulating {(i + 1) * dt:.2f} / {steps * dt:.2f} s")
        X = torch.stack(xs)
        q, p = X[:, :2], X[:, 2:]
        energy = closed_loop_energy(X, controller.potential, controller.plant)
        dq, dp = controller.orbit.distances(q, p)
        u_e, u_m, u_d = controller.inputs(X)
        power = (velocity(q, p, controller.plant) * u_m).sum(-1)
    t = np.linspace(0.0, steps * dt, steps + 1)
    last = t >= t[-1] - period - 1e-12
    e_err = np.abs(energy.numpy() - controller.energy)
    metrics = {"energy_error_final": float(e_err[last].max()),
               "position_distance_final": float(dq.numpy()[last].max()),
               "momentum_distance_final": float(dp.numpy()[last].max()),
               "position_distance_final_mean": float(dq.numpy()[last].mean()),
               "momentum_distance_final_mean": float(dp.numpy()[last].mean()),
               "energy_error_initial": float(e_err[0]),
               "position_distance_initial": float(dq[0]), "momentum_distance_initial": float(dp[0]),
               "energy_target": controller.energy, "max_mode_power": float(power.abs().max())}
    ctx.progress(1.0, "simulated")
    return StabiliseResult(t=t, q=q.numpy(), p=p.numpy(), energy=energy.numpy(), position_distance=dq.numpy(),
                           momentum_distance=dp.numpy(), u_energy=u_e.numpy(), u_mode=u_m.numpy(),
                           u_damping=u_d.numpy(), mode_power=power.numpy(), energy_target=controller.energy,
                           metrics=metrics)
