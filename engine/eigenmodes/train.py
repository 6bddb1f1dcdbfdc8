"""Learning the control potential so that the closed loop oscillates through the task (a job).

``learn_mode(design, ctx)`` runs Adam on ``task_weight * task + gamma * constraint +
effort_weight * effort`` with sensitivities by back-propagation through the RK4 steps, the
period fixed or learned (appendix D: ``log T`` is a parameter; the step count is fixed and
the step size is ``T / N``). It reports per-epoch metrics through ``ctx.progress`` and
returns a :class:`DesignedMode`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engine.devices import resolve_device
from engine.eigenmodes.checks import mode_checks
from engine.eigenmodes.config import DesignConfig
from engine.eigenmodes.dynamics import closed_loop_energy, closed_loop_field, rk4_trajectory
from engine.eigenmodes.losses import design_losses
from engine.eigenmodes.potential import PotentialMLP
from engine.io import save_tensors, write_json
from engine.jobs import JobContext, NullJobContext
from engine.runs import Run, restore_training_state, training_state
from engine.systems.double_pendulum import elbow_position, tip_position
from engine.training_loop import EpochOutcome, train_epochs

__all__ = ["MODE_FORMAT", "DesignedMode", "learn_mode", "loss_names", "mode_meta", "simulate_mode",
           "steps_for"]

loss_names = ("total", "task", "constraint", "effort")


def steps_for(period: float, dt: float) -> int:
    """Even number of RK4 steps closest to ``period / dt`` (at least 2)."""
    return max(2, 2 * int(round(period / dt / 2)))


@dataclass
class DesignedMode:
    """A designed eigenmode: the design, the learned potential and period, the history and checks.

    ``trajectory``: dict of numpy arrays over one period on a fine grid: ``t (n,)``,
    ``q (n, 2)``, ``p (n, 2)``, ``u (n, 2)``, ``energy (n,)``, ``elbow (n, 2)``, ``tip (n, 2)``.
    ``history``: loss name -> list over epochs (``total``, ``task``, ``constraint``, ``effort``,
    and ``period``).
    """

    design: DesignConfig
    potential: PotentialMLP
    period: float
    history: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    trajectory: dict = field(default_factory=dict)
    seconds: float = 0.0
    run_dir: Path | None = None  # the run folder, when learnt as a run (engine.eigenmodes.storage.learn_into)

    @property
    def q0(self) -> np.ndarray:
        return np.asarray(self.design.task.q0, dtype=float)

    @property
    def energy(self) -> float:
        """The mode's closed-loop energy H_cl(q0, 0) (J)."""
        return float(self.trajectory["energy"][0])


def _dtype(name: str):
    return torch.float64 if name == "float64" else torch.float32


def simulate_mode(potential: PotentialMLP, design: DesignConfig, period: float,
                  steps: int | None = None) -> dict:
    """Closed-loop trajectory from ``(q0, 0)`` over ``[0, period]`` in float64 on a fine grid."""
    plant = design.plant
    steps = steps or steps_for(period, design.train.dt / 4)
    pot = potential.to(torch.float64)
    with torch.no_grad():
        x0 = torch.tensor([*design.task.q0, 0.0, 0.0], dtype=torch.float64)
        xs = rk4_trajectory(closed_loop_field(pot, plant), x0, float(period), steps)
        q = xs[:, :2]
        u = -pot.gradient(q)
        out = {"t": np.linspace(0.0, period, steps + 1), "q": q.numpy().copy(), "p": xs[:, 2:].numpy().copy(),
               "u": u.numpy().copy(), "energy": closed_loop_energy(xs, pot, plant).numpy().copy(),
               "elbow": elbow_position(q, plant).numpy().copy(), "tip": tip_position(q, plant).numpy().copy()}
    return out


def _finite_copy(potential: PotentialMLP, log_period: torch.Tensor):
    """``(weights, log_period)`` copies when all are finite (the divergence guard's last good state), else None."""
    if not (
        all(bool(torch.isfinite(p).all()) for p in potential.parameters()) and torch.isfinite(log_period)
    ):
        return None
    return ({k: v.detach().clone() for k, v in potential.state_dict().items()}, log_period.detach().clone())


def evaluate_checks(potential: PotentialMLP, design: DesignConfig, period: float) -> tuple[dict, dict]:
    traj = simulate_mode(potential, design, period)
    xs = np.concatenate([traj["q"], traj["p"]], -1)
    half = (len(xs) - 1) // 2
    checks = mode_checks(xs, traj["u"], traj["tip"][half], np.asarray(design.task.target), period)
    return checks, traj


MODE_FORMAT = "lagrange-studio/eigenmode/1"


def mode_meta(
    design: DesignConfig, period: float, checks: dict, history: dict, seconds: float, **extra
) -> dict:
    """The ``mode.json`` of a mode folder (see :mod:`engine.eigenmodes.storage`)."""
    return {"format": MODE_FORMAT, "design": design.to_dict(), "period": period, "checks": checks,
            "history": history, "seconds": seconds, **extra}


def _write_mode(folder: Path, state: dict, meta: dict) -> None:
    save_tensors(folder / "mode.safetensors", state)
    write_json(folder / "mode.json", meta)


class _ModeTrainee:
    """An eigenmode design's side of :func:`engine.training_loop.train_epochs`: one epoch is one
    step of Adam on the weighted losses of one closed-loop period (back-propagated through the
    RK4 steps), the gradient clipped, the learning rate decayed."""

    def __init__(self, design: DesignConfig, potential: PotentialMLP, log_period: torch.Tensor, opt, sched,
                 x0: torch.Tensor, target: torch.Tensor, steps: int, run: Run | None,
                 preview: Callable[[dict], None] | None, preview_interval: float):
        self.design, self.potential, self.log_period, self.opt, self.sched = (
            design,
            potential,
            log_period,
            opt,
            sched,
        )
        self.x0, self.target, self.steps, self.run = x0, target, steps, run
        self.preview, self.preview_interval, self.last_preview = preview, preview_interval, -float("inf")
        self.field = closed_loop_field(potential, design.plant)
        self.params = [p for g in opt.param_groups for p in g["params"]]
        self.history: dict[str, list[float]] = {k: [] for k in (*loss_names, "period")}

    def epoch(self, epoch: int, ctx: JobContext) -> EpochOutcome:
        cfg, w = self.design.train, self.design.weights
        i = epoch - 1   # the constraint weight's schedule counts from 0
        if w.constraint_mode == "hard" and cfg.epochs > 1:
            ratio = w.constraint_weight_max / max(w.constraint_weight, 1e-12)
            gamma = w.constraint_weight * ratio ** (i / (cfg.epochs - 1))
        else:
            gamma = w.constraint_weight
        period = torch.exp(self.log_period)
        xs = rk4_trajectory(self.field, self.x0, period, self.steps)
        parts = design_losses(xs, period, self.potential, self.target, self.design.plant)
        total = (
            w.task_weight * parts["task"] + gamma * parts["constraint"] + w.effort_weight * parts["effort"]
        )
        if not torch.isfinite(total):
            return EpochOutcome(math.nan, diverged="the loss is not finite")
        self.opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
        self.opt.step()
        self.sched.step()
        values = {
            "total": float(total.detach()),
            "task": float(parts["task"].detach()),
            "constraint": float(parts["constraint"].detach()),
            "effort": float(parts["effort"].detach()),
            "period": float(period.detach()),
        }
        for k, v in values.items():
            self.history[k].append(v)
        now = time.perf_counter()
        if self.preview is not None and (
            now - self.last_preview >= self.preview_interval or epoch == cfg.epochs
        ):
            self.last_preview = now
            with torch.no_grad():
                q = xs[:, :2].detach().to("cpu", torch.float64)
                self.preview({"epoch": epoch, "q": q.numpy().copy(),
                              "tip": tip_position(q, self.design.plant).numpy().copy()})
        return EpochOutcome(values["total"], {**values, "lr": self.opt.param_groups[0]["lr"]})

    def training_state(self) -> dict:
        history = {k: torch.tensor(v, dtype=torch.float64) for k, v in self.history.items()}
        return training_state(
            self.potential, self.opt, self.sched, log_period=self.log_period.detach().clone(), history=history
        )

    def checkpoint_meta(self) -> dict:
        return {}

    def restore(self, state, meta) -> None:
        restore_training_state(state, self.potential, self.opt, self.sched)
        with torch.no_grad():
            self.log_period.copy_(state["log_period"].to(self.log_period.dtype))
        self.history = {k: [float(v) for v in state["history"][k]] for k in self.history}

    def finite_copy(self):
        return _finite_copy(self.potential, self.log_period)

    def restore_copy(self, copy) -> None:
        self.potential.load_state_dict(copy[0])
        with torch.no_grad():
            self.log_period.copy_(copy[1])

    def write_last_finite(self, folder: Path, copy, epoch: int, wall_time: float) -> None:
        meta = mode_meta(self.design, float(torch.exp(copy[1])), {}, self.history, wall_time,
                         status=f"last finite (epoch {epoch})")
        _write_mode(folder, copy[0], meta)

    def diverged_message(self, epoch: int, what: str, good_epoch: int, kept: Path | None) -> str:
        where = ""
        if kept is not None and self.run is not None:
            where = (f"; the last finite potential (epoch {good_epoch}) is kept in {kept}; no mode was "
                     f"written ({self.run.destination} holds what it held before)")
        return (f"eigenmode training diverged at epoch {epoch} (loss is not finite){where}: "
                f"lower the learning rate lr or the step dt, or change the period")

    def report(self, epoch: int, epochs: int, outcome: EpochOutcome, step: int, wall_time: float):
        values = {k: v for k, v in outcome.logged.items() if k != "lr"}
        return f"epoch {epoch}/{epochs}", {"epoch": epoch, **values, "tip_error": math.sqrt(values["task"])}


def learn_mode(design: DesignConfig, ctx: JobContext | None = None,
               preview: Callable[[dict], None] | None = None, preview_interval: float = 0.25,
               initial: PotentialMLP | None = None, run: Run | None = None, resume: bool = False,
               checkpoint_every: int = 50) -> DesignedMode:
    """Learn V_theta for ``design``; a job body (``ctx`` may be None for a plain call).

    ``preview(orbit)`` (optional side channel, called from this thread at most every
    ``preview_interval`` s) receives ``{"epoch", "q" (n, 2), "tip" (n, 2)}`` of the current orbit.
    ``run``: a run folder (:class:`engine.runs.Run`) that gets every epoch's losses and the whole
    training state every ``checkpoint_every`` epochs and at the end; ``resume``: continue from
    its last checkpoint (potential, period, Adam and its schedule, random stream, history), so
    the result is the uninterrupted run's. A non-finite loss raises :class:`~engine.training_loop.TrainingDiverged`
    naming the epoch; with a run the last finite potential is kept in ``checkpoints/last-finite``.
    The caller writes the final mode (:func:`engine.eigenmodes.storage.learn_into`).
    """
    ctx = ctx or NullJobContext()
    design.validate()
    cfg, task = design.train, design.task
    dtype = _dtype(cfg.dtype)
    device = resolve_device(cfg.device)  # --device; the mode comes back on the CPU in float64
    torch.manual_seed(cfg.seed)
    potential = (
        initial.to(dtype)
        if initial is not None
        else PotentialMLP(design.potential, dtype=dtype, seed=cfg.seed)
    )
    potential = potential.to(device)
    x0 = torch.tensor([*task.q0, 0.0, 0.0], dtype=dtype, device=device)
    target = torch.tensor(task.target, dtype=dtype, device=device)
    steps = steps_for(task.period, cfg.dt)
    log_period = torch.tensor(
        math.log(task.period), dtype=dtype, device=device, requires_grad=task.learn_period
    )
    groups = [{"params": list(potential.parameters()), "lr": cfg.lr}]
    if task.learn_period:
        groups.append({"params": [log_period], "lr": cfg.period_lr})
    opt = torch.optim.Adam(groups)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=cfg.lr_decay)
    trainee = _ModeTrainee(design, potential, log_period, opt, sched, x0, target, steps, run, preview,
                           preview_interval)
    result = train_epochs(trainee, cfg.epochs, ctx, run, resume=resume, checkpoint_every=checkpoint_every)
    history = trainee.history
    final_period = float(torch.exp(log_period.detach()))
    seconds = result.wall_time
    potential = potential.to("cpu", torch.float64)
    for p in potential.parameters():
        p.requires_grad_(False)
    checks, traj = evaluate_checks(potential, design, final_period)
    checks["seconds"] = seconds
    return DesignedMode(design=design, potential=potential, period=final_period, history=history,
                        checks=checks, trajectory=traj, seconds=seconds)
