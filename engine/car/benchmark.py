"""The car planner's speed benchmark (``python -m engine bench car``).

Measures, with the 8 x 64 GELU learned model: the MPC control cycle on the default track
(horizon 20, gradient + 512-candidate line search, ``iterations_per_cycle`` iterations,
closed loop on the simulator; the simulator step is not counted), the eager autograd
iteration for comparison, and the time for the Drifting Turn (60 steps) to converge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from engine.car.data import DrivingConfig
from engine.car.dynamics import LearnedCarModel
from engine.car.evaluators import AutogradEvaluator
from engine.car.model import CarMLPConfig, load_car_model
from engine.car.mpc import MPCConfig, TrackCost, run_mpc
from engine.car.optimiser import OptimiserConfig, line_search
from engine.car.scenarios import plan_trajectory, scenario
from engine.car.tracks import TrackField, default_track
from engine.devices import resolve_device
from engine.jobs import NullJobContext
from engine.systems.rc_car import CarParams
from engine.validation import check_int

__all__ = ["BenchConfig", "run_benchmark"]


@dataclass(frozen=True)
class BenchConfig:
    cycles: int = 60
    horizon: int = 20
    iterations: int = 2
    candidates: int = 512
    train_minutes: float = 5.0      # when no model is given, a small model is trained first
    train_epochs: int = 8
    device: str = "cpu"             # where the learned network runs (cpu, cuda, auto)

    def __post_init__(self):
        who = "benchmark setting"
        check_int(who, "cycles (--cycles)", self.cycles, 1, 100_000)
        MPCConfig(horizon=self.horizon, iterations=self.iterations, candidates=self.candidates)
        CarMLPConfig(epochs=self.train_epochs)
        DrivingConfig(minutes=self.train_minutes)


def run_benchmark(config: BenchConfig = BenchConfig(), model_dir=None) -> dict:
    params = CarParams()
    if model_dir is not None:
        model, meta = load_car_model(model_dir)
        h = float(meta.get("h", params.dt))
    else:
        from engine.car.training import CarTrainConfig, train_job
        from engine.jobs import run_job

        cfg = CarTrainConfig(model=CarMLPConfig(epochs=config.train_epochs),
                          driving=DrivingConfig(minutes=config.train_minutes), validation_count=4,
                          device=config.device)
        model, h = run_job(train_job(cfg))["model"], params.dt
    if model.config.hidden != 64 or model.config.layers != 8 or model.config.activation != "gelu":
        note = f"model is {model.config.layers}x{model.config.hidden} {model.config.activation}"
    else:
        note = "8x64 gelu"
    # the Drifting Turn's iteration count depends on the model's landscape: say which model it was
    note += (
        f" from {model_dir} ({model.config.epochs} epochs)"
        if model_dir is not None
        else f", trained here for {config.train_epochs} epochs on {config.train_minutes:g} min of driving"
    )
    dyn = LearnedCarModel(model.to(resolve_device(config.device)), h)
    track = default_track()
    field = TrackField(track)
    mpc_cfg = MPCConfig(horizon=config.horizon, iterations=config.iterations, candidates=config.candidates,
                        max_seconds=config.cycles * params.dt)
    run_mpc(
        track, dyn, params, MPCConfig(horizon=config.horizon, iterations=1, max_seconds=0.2), field=field
    )  # warm-up
    mpc = run_mpc(track, dyn, params, mpc_cfg, laps=1, field=field)
    # eager reference: autograd gradient + 512-candidate line search through the module
    cost = TrackCost(field, mpc_cfg, h, 0.0)
    x, y, yaw = track.start_pose()
    ev = AutogradEvaluator(dyn, torch.tensor([x, y, yaw]), torch.tensor([1.0, 0.0, 0.0]), cost,
                           mpc_cfg.weights(), torch.tensor([params.max_throttle, params.max_steering]))
    W = torch.zeros(config.horizon, 2)
    opt = OptimiserConfig(candidates=config.candidates)
    times = []
    for _ in range(4):
        t0 = time.perf_counter()
        c, g, _ = ev.cost_and_grad(W)
        W, c, _, _ = line_search(ev, W, g, c, opt)
        times.append(time.perf_counter() - t0)
    eager_ms = 1000 * sorted(times)[len(times) // 2]
    plan_cfg = OptimiserConfig()
    plan = plan_trajectory(scenario("drifting-turn"), dyn, params, plan_cfg, ctx=NullJobContext())
    return {"control_rate_hz": mpc["control_rate_hz"], "cycle_ms": mpc["cycle_ms"],
            "iterations_per_cycle": config.iterations, "candidates": config.candidates,
            "mpc_direction": mpc_cfg.direction,
            "horizon": config.horizon, "drifting_turn_seconds": plan.result.seconds,
            "drifting_turn_converged": plan.result.converged,
            "drifting_turn_iterations": plan.result.iterations,
            "drifting_turn_direction": plan_cfg.direction,
            "eager_iteration_ms": eager_ms, "threads": torch.get_num_threads(), "model": note,
            "mpc_cycles": mpc["steps"]}
