"""The interface every learned dynamics model implements, and its hyperparameters.

A model is an ``nn.Module`` with:

- ``kind``: ``"state"`` (one-step models on ``x = (q, qd)``: NODE, L-NODE, MLP) or ``"del"``
  (three-point models on ``q_{k-1}, q_k``: SyMo, E2E-SyMo);
- :meth:`loss` (a scalar on a :class:`~engine.data.windows.Windows` batch, for training);
- :meth:`predict` (one-step prediction ``(q_{k+1}, qd_{k+1})`` (W, n) for each window);
- :meth:`rollout` (long-term prediction from the start of trajectories);
- :meth:`mass_matrix` (the learned inertia ``H(q)`` (B, n, n), or None without one).

Computations are pure functions of (parameters, inputs): nothing is stored per call.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from engine.data.windows import Windows
from engine.io import dataclass_from_dict
from engine.models.nets import INITS
from engine.validation import InputError, check_allocation, check_int, check_range

__all__ = ["ROBOT_KINDS", "LearnedDynamics", "ModelSpec"]

# parameter kinds the robot model (engine/models/robot.py) can learn: inertial ones on each moving
# link, and per joint the friction and actuation of engine/models/joint_friction.py
ROBOT_KINDS = ("mass", "com", "inertia", "damping", "coulomb", "armature", "offset")


@dataclass
class ModelSpec:
    """Hyperparameters of a learned model (the paper's defaults).

    ``system``: the analytic system (an ``engine.systems`` name) the spec was made for, filled by
    :meth:`for_system`; None for hand-made specs and hardware logs. The robot model
    (``robot-rk4``, ``robot-midpoint``) loads that system's URDF from it, so a checkpoint
    rebuilds the same robot. ``robot``: the robot the robot model learns instead (it takes
    precedence over ``system``), a library name or a URDF, xacro or MJCF path, for a hardware
    log; its movable joints, in its order, are the spec's coordinates (a log is put in that order
    before training: :func:`engine.logs.robot_order.order_for_robot`).

    Robot model only (the other models ignore them): ``robot_learn``, the kinds learned, from
    ``ROBOT_KINDS``: on every moving link mass kg, com m in the link frame, inertia kg m^2 about
    the CoM; on every joint damping N m s/rad, coulomb N m, armature kg m^2, offset N m (see
    :mod:`engine.models.joint_friction`); ``robot_perturb``, the
    initial guess: each learned URDF value scaled by a seeded factor ``U[1 - p, 1 + p]`` (one per
    link for the mass, the inertia as a whole and the damping, one per component for the
    CoM), drawn from torch's global RNG (the trainer seeds it), so training starts from a
    wrong model as when identifying a real robot from a CAD guess; 0 starts at the URDF values.
    ``dissipation``: the non-conservative force of the Lagrangian models (L-NODE, SyMo,
    E2E-SyMo): ``"none"`` (the papers') or ``"joint"``, learned per-joint viscous and Coulomb
    friction and an offset (:mod:`engine.models.dissipation`); the other models ignore it.
    ``potential_scale`` (J): the Lagrangian models' potential is ``V = potential_scale x`` its
    network's output, so ``dV/dq`` starts at the order of ``potential_scale`` N m and Adam's steps
    (about the learning rate on each weight, whatever the gradient) move it in proportion: 1 for the
    papers' systems; a robot comparison sets the RMS of the log's training torques (a Panda's
    gravity torques are tens of N m, which an unscaled network reaches only after hundreds of steps).
    ``lagrangian_prior``: ``"robot"`` makes the Lagrangian models' (L-NODE, SyMo, E2E-SyMo) learned
    Lagrangian a residual on top of the frozen rigid body of ``robot``
    (:mod:`engine.models.lagrangian_prior`), ``"none"`` (default) the papers' models; the other
    models ignore it.
    ``robot_substeps``: explicit integrator steps per ``h`` (a stiff Coulomb friction, slope
    ``Fc / v_s`` near rest, may need more than one at a log's step).
    """

    dof: int = 1
    angle_mask: tuple = (True,)
    control_dim: int = 1
    input_matrix: tuple = ((1.0,),)     # B (n, m): generalised force F = B u (known actuation)
    h: float = 0.1                      # s, time step
    hidden: int = 128
    layers: int = 2
    inertia_eps: float = 1e-3  # H = L L^T + eps I
    init: str = "xavier"  # network init (engine/models/nets.py): "xavier" (the paper's) or "torch"
    newton_tol: float = 1e-4            # prediction / integration
    newton_max_iter: int = 10
    train_newton_tol: float = 1e-5      # E2E-SyMo training
    train_newton_max_iter: int = 10
    system: str | None = None           # analytic system name (for_system); the robot model's URDF
    robot_learn: tuple = ("mass", "com", "inertia")  # robot model: learned kinds (ROBOT_KINDS)
    robot_perturb: float = 0.5          # robot model: initial guess = URDF x U[1 - p, 1 + p]; 0: URDF
    robot: str | None = None            # robot model: library name or robot file (over ``system``)
    robot_substeps: int = 1             # robot model: explicit steps per h (stiff Coulomb friction)
    dissipation: str = "none"           # Lagrangian models: "none" or "joint" (engine/models/dissipation.py)
    potential_scale: float = 1.0        # Lagrangian models: V = potential_scale x network (J; dV/dq in N m)
    lagrangian_prior: str = "none"      # Lagrangian models: "none" or "robot" (engine/models/lagrangian_prior.py)

    def __post_init__(self):
        self.angle_mask = tuple(bool(a) for a in self.angle_mask)
        if isinstance(self.robot_learn, str):   # "mass,com" as typed on a command line
            self.robot_learn = tuple(k.strip() for k in self.robot_learn.split(",") if k.strip())
        self.robot_learn = tuple(str(k) for k in self.robot_learn)
        self.robot_perturb = float(self.robot_perturb)
        self.input_matrix = tuple(tuple(float(v) for v in row) for row in self.input_matrix)
        if len(self.angle_mask) != self.dof:
            raise InputError(f"expected {self.dof} entries, got {len(self.angle_mask)}", owner="ModelSpec",
                             field="angle_mask")
        if len(self.input_matrix) != self.dof or any(len(r) != self.control_dim for r in self.input_matrix):
            raise InputError(f"expected shape ({self.dof}, {self.control_dim})", owner="ModelSpec",
                             field="input_matrix")
        for name in ("hidden", "layers", "newton_max_iter", "train_newton_max_iter", "robot_substeps"):
            if int(getattr(self, name)) < 1:
                raise InputError(
                    f"must be at least 1, got {getattr(self, name)}", owner="ModelSpec", field=name
                )
        if not self.h > 0:
            raise InputError(
                f"the time step must be greater than zero, got {self.h}", owner="ModelSpec", field="h"
            )
        if self.init not in INITS:
            raise InputError(
                f"expected one of {', '.join(INITS)}, got {self.init!r}", owner="ModelSpec", field="init"
            )
        bad = [k for k in self.robot_learn if k not in ROBOT_KINDS]
        if bad or not self.robot_learn or len(set(self.robot_learn)) != len(self.robot_learn):
            raise InputError(
                f"expected distinct kinds from {', '.join(ROBOT_KINDS)}, got {list(self.robot_learn)}",
                owner="ModelSpec",
                field="robot_learn",
            )
        if not 0.0 <= self.robot_perturb < 1.0:
            raise InputError(
                f"expected a relative size in [0, 1), got {self.robot_perturb!r}",
                owner="ModelSpec",
                field="robot_perturb",
            )
        if self.system is not None and not isinstance(self.system, str):
            raise InputError(f"expected a system name or None, got {self.system!r}", owner="ModelSpec",
                             field="system")
        if self.dissipation not in ("none", "joint"):
            raise InputError(f"expected 'none' or 'joint', got {self.dissipation!r}", owner="ModelSpec",
                             field="dissipation")
        if self.lagrangian_prior not in ("none", "robot"):
            raise InputError(f"expected 'none' or 'robot', got {self.lagrangian_prior!r}", owner="ModelSpec",
                             field="lagrangian_prior")
        self.potential_scale = float(self.potential_scale)
        if not (math.isfinite(self.potential_scale) and self.potential_scale > 0):
            raise InputError(f"expected a scale > 0 (J), got {self.potential_scale!r}", owner="ModelSpec",
                             field="potential_scale")
        if self.robot is not None and (not isinstance(self.robot, str) or not self.robot.strip()):
            raise InputError(f"expected a robot name or file path, or None, got {self.robot!r}",
                             owner="ModelSpec", field="robot", flag="--robot")
        self._check_sizes()

    def _check_sizes(self) -> None:
        """Sizes estimated before any network is built (engine/validation.py): a model JSON
        that declares an absurd width is refused, not allocated."""
        who = "model setting"
        check_int(who, "hidden (--hidden)", self.hidden, 1, 1_000_000)
        check_int(who, "layers", self.layers, 1, 64)
        check_int(who, "dof", self.dof, 1, 10_000)
        check_range(who, "h", self.h, 0.0, 10.0, lo_open=True, unit="s")
        h, n = int(self.hidden), int(self.dof)
        # weights, gradients and Adam's moments of the widest net (a mass-matrix head of n^2 outputs)
        elements = 4 * (int(self.layers) * h * h + h * (n * n + 4 * n + int(self.control_dim) + 8))
        check_allocation(f"a model of {self.layers} x {h} neurons for {n} coordinates", elements, 8,
                         hint="lower --hidden")

    @classmethod
    def for_system(cls, mechanical_system, h: float, /, **overrides) -> ModelSpec:
        """The spec for a system (sizes, angles, input matrix, ``system`` = its name unless an
        override says otherwise, e.g. ``system=None`` for one with no URDF behind it)."""
        s = mechanical_system
        B = s.input_matrix(torch.float64)
        overrides.setdefault("system", getattr(s, "name", None) or None)
        return cls(dof=s.dof, angle_mask=tuple(s.angle_mask), control_dim=s.control_dim,
                   input_matrix=tuple(tuple(r) for r in B.tolist()), h=float(h), **overrides)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["angle_mask"] = list(self.angle_mask)
        d["input_matrix"] = [list(r) for r in self.input_matrix]
        d["robot_learn"] = list(self.robot_learn)
        return d

    @classmethod
    def from_dict(cls, data: dict) -> ModelSpec:
        """The inverse of :meth:`to_dict`; fields missing from older checkpoints take their defaults."""
        return dataclass_from_dict(cls, data, "model settings")


class LearnedDynamics(nn.Module):
    """Base class; subclasses set ``kind`` and implement :meth:`loss` and a step."""

    kind = "state"
    name = ""
    B: torch.Tensor   # the input matrix (n, m), a buffer

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        self.n = spec.dof
        self.h = float(spec.h)
        self.register_buffer("B", torch.tensor(spec.input_matrix, dtype=torch.float32), persistent=False)

    def force(self, u: torch.Tensor) -> torch.Tensor:
        """Generalised force ``B u`` (..., n) for controls (..., m)."""
        return u @ self.B.to(u.dtype).T

    def loss(self, w: Windows) -> torch.Tensor:
        raise NotImplementedError

    def mass_matrix(self, q: torch.Tensor) -> torch.Tensor | None:
        return None

    # -- state models --------------------------------------------------------------------
    def step(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """One step ``x_k`` (B, 2n), ``u_k`` (B, m) -> ``x_{k+1}`` (state models)."""
        raise NotImplementedError

    # -- DEL models ----------------------------------------------------------------------
    def solve_next(self, q_prev, q, u_prev, u, u_next) -> torch.Tensor:
        """``q_{k+1}`` (B, n) from two configurations and three controls (DEL models)."""
        raise NotImplementedError

    def velocity(self, q, q_next, u, u_next) -> torch.Tensor:
        """Velocity at ``q_{k+1}`` for DEL models (default: ``(q_{k+1} - q_k) / h``)."""
        return (q_next - q) / self.h

    @torch.no_grad()
    def predict(self, w: Windows) -> tuple[torch.Tensor, torch.Tensor]:
        """One-step predictions ``(q_{k+1}, qd_{k+1})`` for every window (W, n) each."""
        if self.kind == "state":
            x = self.step(w.x, w.u)
            return x[..., : self.n], x[..., self.n:]
        q_next = self.solve_next(w.q_prev, w.q, w.u_prev, w.u, w.u_next)
        return q_next, self.velocity(w.q, q_next, w.u, w.u_next)

    @torch.no_grad()
    def rollout(self, x: torch.Tensor, u: torch.Tensor, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Predict trajectory points ``2 .. steps + 1`` from its first points.

        x: (B, T >= 2, 2n) true trajectories (state models start from ``x[:, 1]``; DEL models
        from ``q[:, 0], q[:, 1]``); u: (B, steps + 2, m) controls per point. Returns ``q``, ``qd``,
        (B, steps, n) each; DEL velocities come from :meth:`velocity`.
        """
        n = self.n
        qs, qds = [], []
        if self.kind == "state":
            xk = x[:, 1]
            for k in range(1, steps + 1):
                xk = self.step(xk, u[:, k])
                qs.append(xk[:, :n])
                qds.append(xk[:, n:])
        else:
            q_prev, q = x[:, 0, :n], x[:, 1, :n]
            for k in range(1, steps + 1):
                q_next = self.solve_next(q_prev, q, u[:, k - 1], u[:, k], u[:, k + 1])
                qs.append(q_next)
                qds.append(self.velocity(q, q_next, u[:, k], u[:, k + 1]))
                q_prev, q = q, q_next
        return torch.stack(qs, 1), torch.stack(qds, 1)
