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
from engine.runs import LAST_FINITE, Run, restore_training_state, training_state
from engine.systems.double_pendulum import elbow_position, tip_position

__all__ = ["MODE_FORMAT", "DesignedMode", "DivergedError", "learn_mode", "loss_names", "mode_meta", "simulate_mode",
           "steps_for"]

loss_names = ("total", "task", "constraint", "effort")


class DivergedError(ValueError):
    """Training produced a non-finite loss; the message names the epoch and what to change."""


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
    run_dir: Path | None = None    # the run folder, when learnt as a run (engine.eigenmodes.storage.learn_into)

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
    if not (all(bool(torch.isfinite(p).all()) for p in potential.parameters()) and torch.isfinite(log_period)):
        return None
    return ({k: v.detach().clone() for k, v in potential.state_dict().items()}, log_period.detach().clone())


def evaluate_checks(potential: PotentialMLP, design: DesignConfig, period: float) -> tuple[dict, dict]:
    traj = simulate_mode(potential, design, period)
    xs = np.concatenate([traj["q"], traj["p"]], -1)
    half = (len(xs) - 1) // 2
    checks = mode_checks(xs, traj["u"], traj["tip"][half], np.asarray(design.task.target), period)
    return checks, traj


MODE_FORMAT = "lagrange-studio/eigenmode/1"


def mode_meta(design: DesignConfig, period: float, checks: dict, history: dict, seconds: float, **extra) -> dict:
    """The ``mode.json`` of a mode folder (see :mod:`engine.eigenmodes.storage`)."""
    return {"format": MODE_FORMAT, "design": design.to_dict(), "period": period, "checks": checks,
            "history": history, "seconds": seconds, **extra}


def _write_mode(folder: Path, state: dict, meta: dict) -> None:
    save_tensors(folder / "mode.safetensors", state)
    write_json(folder / "mode.json", meta)


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
    the result is the uninterrupted run's. A non-finite loss raises :class:`DivergedError`
    naming the epoch; with a run the last finite potential is kept in ``checkpoints/last-finite``.
    The caller writes the final mode (:func:`engine.eigenmodes.storage.learn_into`).
    """
    ctx = ctx or NullJobContext()
    design.validate()
    cfg, w, task, plant = design.train, design.weights, design.task, design.plant
    dtype = _dtype(cfg.dtype)
    device = resolve_device(cfg.device)  # --device; the mode comes back on the CPU in float64
    torch.manual_seed(cfg.seed)
    potential = initial.to(dtype) if initial is not None else PotentialMLP(design.potential, dtype=dtype, seed=cfg.seed)
    potential = potential.to(device)
    x0 = torch.tensor([*task.q0, 0.0, 0.0], dtype=dtype, device=device)
    target = torch.tensor(task.target, dtype=dtype, device=device)
    steps = steps_for(task.period, cfg.dt)
    log_period = torch.tensor(math.log(task.period), dtype=dtype, device=device, requires_grad=task.learn_period)
    groups = [{"params": list(potential.parameters()), "lr": cfg.lr}]
    if task.learn_period:
        groups.append({"params": [log_period], "lr": cfg.period_lr})
    opt = torch.optim.Adam(groups)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=cfg.lr_decay)
    field_fn = closed_loop_field(potential, plant)
    history = {k: [] for k in (*loss_names, "period")}
    first, wall0 = 0, 0.0
    if resume:
        state, meta = run.load_state()
        restore_training_state(state, potential, opt, sched)
        with torch.no_grad():
            log_period.copy_(state["log_period"].to(dtype))
        history = {k: [float(v) for v in state["history"][k]] for k in history}
        first, wall0 = int(meta["epoch"]), float(meta.get("wall_time", 0.0))
    start = time.perf_counter()
    last_preview = -float("inf")
    params = [p for g in groups for p in g["params"]]
    good = _finite_copy(potential, log_period)
    good_epoch = first

    def checkpoint(epoch):
        extra = {"log_period": log_period.detach().clone(),
                 "history": {k: torch.tensor(v, dtype=torch.float64) for k, v in history.items()}}
        run.save_state(epoch, training_state(potential, opt, sched, **extra),
                       {"step": epoch, "wall_time": wall0 + time.perf_counter() - start})

    for epoch in range(first, cfg.epochs):
        ctx.check_cancelled()
        if w.constraint_mode == "hard" and cfg.epochs > 1:
            ratio = w.constraint_weight_max / max(w.constraint_weight, 1e-12)
            gamma = w.constraint_weight * ratio ** (epoch / (cfg.epochs - 1))
        else:
            gamma = w.constraint_weight
        period = torch.exp(log_period)
        xs = rk4_trajectory(field_fn, x0, period, steps)
        parts = design_losses(xs, period, potential, target, plant)
        total = w.task_weight * parts["task"] + gamma * parts["constraint"] + w.effort_weight * parts["effort"]
        if not torch.isfinite(total):
            kept = ""
            if run is not None:
                meta = mode_meta(design, float(torch.exp(good[1])), {}, history, wall0 + time.perf_counter() - start,
                                 status=f"last finite (epoch {good_epoch})")
                path = run.save_files(LAST_FINITE, lambda tmp, meta=meta, st=good[0]: _write_mode(tmp, st, meta))
                run.end("diverged", f"the loss is not finite at epoch {epoch + 1}", epoch_diverged=epoch + 1,
                        last_finite_epoch=good_epoch)
                kept = (f"; the last finite potential (epoch {good_epoch}) is kept in {path}; no mode was "
                        f"written ({run.destination} holds what it held before)")
            raise DivergedError(f"eigenmode training diverged at epoch {epoch + 1} (loss is not finite){kept}: "
                                f"lower TrainConfig.lr or TrainConfig.dt, or change the period")
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        sched.step()
        values = {"total": float(total.detach()), "task": float(parts["task"].detach()), "constraint": float(parts["constraint"].detach()),
                  "effort": float(parts["effort"].detach()), "period": float(period.detach())}
        for k, v in values.items():
            history[k].append(v)
        snap = _finite_copy(potential, log_period)
        if snap is not None:
            good, good_epoch = snap, epoch + 1
        if run is not None:
            run.log(epoch + 1, epoch + 1, wall0 + time.perf_counter() - start, **values,
                    lr=opt.param_groups[0]["lr"])
            if (epoch + 1) % checkpoint_every == 0 or epoch + 1 == cfg.epochs:
                checkpoint(epoch + 1)
        metrics = {"epoch": epoch + 1, **values, "tip_error": math.sqrt(values["task"])}
        ctx.progress((epoch + 1) / max(cfg.epochs, 1), f"epoch {epoch + 1}/{cfg.epochs}", metrics)
        now = time.perf_counter()
        if preview is not None and (now - last_preview >= preview_interval or epoch == cfg.epochs - 1):
            last_preview = now
            with torch.no_grad():
                q = xs[:, :2].detach().to("cpu", torch.float64)
                preview({"epoch": epoch + 1, "q": q.numpy().copy(), "tip": tip_position(q, plant).numpy().copy()})

    final_period = float(torch.exp(log_period.detach()))
    seconds = wall0 + time.perf_counter() - start
    potential = potential.to("cpu", torch.float64)
    for p in potential.parameters():
        p.requires_grad_(False)
    checks, traj = evaluate_checks(potential, design, final_period)
    checks["seconds"] = seconds
    return DesignedMode(design=design, potential=potential, period=final_period, history=history,
                        checks=checks, trajectory=traj, seconds=seconds)
