"""The Car planner's jobs: thin wrappers that call ``engine.car`` in a worker thread.

Each ``*_job(...)`` returns ``job(ctx)`` for ``ctx.jobs.submit``. Live values a job wants
drawn (the current trajectory, every MPC cycle) go through a :class:`Latest` slot or a
:class:`Feed` queue that the page reads when the (throttled) progress signal arrives; the
UI thread never touches the job's torch objects.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

from app.device_preference import preferred_device

__all__ = ["Feed", "Latest", "Pacer", "drive_job", "load_log_job", "optimise_job", "save_selection_job",
           "select_job", "train_job"]


class Latest:
    """A thread-safe slot for the newest value a job produced."""

    def __init__(self):
        self._lock = threading.Lock()
        self._value = None

    def set(self, value):
        with self._lock:
            self._value = value

    def take(self):
        with self._lock:
            value, self._value = self._value, None
        return value


class Feed:
    """A thread-safe queue of values: the job pushes every one, the UI takes them all."""

    def __init__(self):
        self._lock = threading.Lock()
        self._items: list = []

    def push(self, value):
        with self._lock:
            self._items.append(value)

    def take_all(self) -> list:
        with self._lock:
            items, self._items = self._items, []
        return items


# -- optimisation --------------------------------------------------------------------------
def optimise_job(plan, variants: list[tuple[str, str]], compare: str | None, params, cfg, live: Latest):
    """Plan on each ``(label, model spec)`` of ``variants`` (the first is the main plan), run
    every plan open loop on the simulator; ``compare`` is an optional extra model whose plan
    is only drawn. Returns the first variant's result with ``variants`` (all of them)."""
    device = preferred_device()  # View > Compute Device, as it was when the job was asked for

    def job(ctx):
        from engine.car.dynamics import load_dynamics
        from engine.car.scenarios import execute_open_loop, plan_trajectory
        from engine.jobs import ProgressSpan

        results = []
        parts = len(variants) + (1 if compare else 0)      # each plan its share of one bar
        for k, (label, spec) in enumerate(variants):
            dyn = load_dynamics(spec, params, device=device)
            costs: list[float] = []

            def on_iteration(i, cost, W, traj, k=k, label=label, costs=costs):
                costs.append(cost)
                live.set({"variant": k, "label": label, "iteration": i, "costs": list(costs),
                          "pose": None if traj is None or traj[0] is None else traj[0].numpy().copy()})

            span = ProgressSpan(ctx, k / parts, (k + 1) / parts, label if len(variants) > 1 else "", 0.99)
            out = plan_trajectory(plan, dyn, params, cfg, ctx=span, on_iteration=on_iteration)
            ex = execute_open_loop(plan, out.controls, params)
            results.append(
                {
                    "label": label,
                    "spec": spec,
                    "model": dyn.name,
                    "converged": out.result.converged,
                    "iterations": out.result.iterations,
                    "seconds": out.result.seconds,
                    "costs": list(out.result.costs),
                    "final_cost": float(out.result.costs[-1]) if len(out.result.costs) else float("nan"),
                    "pose": out.result.pose.numpy(),
                    "controls": out.controls.numpy(),
                    "target_errors": out.target_errors,
                    "executed_pose": ex["pose"].numpy(),
                    "slip": ex["slip"].numpy(),
                    "executed_position_error": ex["position_error"],
                    "executed_heading_error": ex["heading_error"],
                }
            )
        result = dict(results[0])
        result["variants"] = results
        result["compare"] = None
        if compare:
            other = load_dynamics(compare, params, device=device)
            o = plan_trajectory(plan, other, params, cfg,
                                ctx=ProgressSpan(ctx, (parts - 1) / parts, 1.0, other.name, 0.99))
            result["compare"] = {"model": other.name, "pose": o.result.pose.numpy(),
                                 "controls": o.controls.numpy()}
        return result
    return job


# -- MPC at real-time pace -------------------------------------------------------------------
class Pacer:
    """Holds a control loop to one cycle per ``dt`` of wall time (when ``real_time``) and
    measures it: ``compute_ms`` (work between cycles, the sleeping left out) and
    ``achieved_hz`` (cycles per wall-clock second over the last ``window`` cycles).

    When the work takes longer than ``dt`` the loop runs as fast as it can and the schedule
    restarts from now (no catching up in a burst). ``clock`` (seconds) and ``sleep`` are the
    wall clock's; tests pass a fake pair.
    """

    def __init__(self, dt: float, real_time: bool = True, ctx=None, window: int = 20,
                 clock=time.perf_counter, sleep=time.sleep):
        self.dt = float(dt)
        self._clock = clock
        self._sleep = sleep
        self.real_time = real_time
        self.ctx = ctx
        self._t0 = None
        self._last_end = None
        self._ends: deque = deque(maxlen=window + 1)
        self._busy: deque = deque(maxlen=window)
        self.first = None

    def _sleep_until(self, target: float) -> None:
        while True:
            left = target - self._clock()
            if left <= 0 or (self.ctx is not None and self.ctx.cancelled):
                return
            self._sleep(min(left, 0.02))

    def cycle(self, step: int) -> dict:
        """Call once per control cycle ``step`` (1, 2, ...) when its work is done."""
        now = self._clock()
        if self._t0 is None:
            self._t0 = now - step * self.dt
            self.first = now - self.dt
        if self._last_end is not None:
            self._busy.append(now - self._last_end)
        if self.real_time:
            target = self._t0 + step * self.dt
            if now < target:
                self._sleep_until(target)
            elif now > target + self.dt:
                self._t0 = now - step * self.dt
        end = self._clock()
        self._ends.append(end)
        self._last_end = end
        n = len(self._ends) - 1
        achieved = n / (self._ends[-1] - self._ends[0]) if n > 0 and self._ends[-1] > self._ends[0] else None
        busy = sum(self._busy) / len(self._busy) if self._busy else None
        return {"achieved_hz": achieved, "compute_ms": None if busy is None else 1000.0 * busy,
                "target_hz": 1.0 / self.dt, "wall": end - self.first}


def drive_job(track, spec: str, params, cfg, laps: int, feed: Feed, real_time: bool = True):
    """MPC laps on the simulator; each cycle (with its pacing numbers) is pushed to ``feed``.

    With ``real_time`` the loop is held to one cycle per ``params.dt`` of wall time, so the
    car laps at the simulated pace; the result adds ``achieved_hz`` and ``real_time``.
    """
    device = preferred_device()  # View > Compute Device

    def job(ctx):
        from engine.car.dynamics import load_dynamics
        from engine.car.mpc import run_mpc

        dyn = load_dynamics(spec, params, device=device)
        pacer = Pacer(params.dt, real_time, ctx)
        last: dict = {}

        def on_cycle(info):
            pace = pacer.cycle(int(info["step"]))
            last.update(pace)
            feed.push({"time": info["time"], "pose": info["pose"], "u": info["u"], "slip": info["slip"],
                       "plan": info["plan"], "speed": info["speed"], "deviation": info["deviation"],
                       "progress": info["progress"], **pace})

        res = run_mpc(track, dyn, params, cfg, laps=laps, ctx=ctx, on_cycle=on_cycle)
        res["achieved_hz"] = last.get("achieved_hz")
        res["real_time"] = real_time
        res["wall_seconds"] = last.get("wall")
        return res
    return job


# -- training -----------------------------------------------------------------------------
def train_job(config, out_dir: str, dataset: dict | None = None):
    """Train and save a car model as a run in ``out_dir`` (``engine.car.car_runs.train_job``: config,
    metrics, checkpoints, resumable with ``car train --resume``); the torch model stays in the
    worker, the UI gets numbers and the folder."""
    from engine.car.car_runs import train_job as engine_train_job

    inner = engine_train_job(config, out_dir, dataset=dataset)

    def job(ctx):
        res = inner(ctx)
        res.pop("model", None)
        return res
    return job


# -- model selection -------------------------------------------------------------------------
def select_job(config, params):
    """The paper's model selection (:func:`engine.car.training.select_models_job`): every
    (activation, loss, seed) of ``config`` trained on the same simulated driving and ranked by
    TVE (m) on 40 validation trajectories; nothing is written, the UI gets the table and runs."""
    from dataclasses import replace

    from engine.car.training import select_models_job

    return select_models_job(
        replace(config, device=preferred_device()), None, params
    )  # View > Compute Device


def save_selection_job(result: dict, folder: str):
    """Write a selection ``result`` into ``folder`` as ``selection.json`` and the box plot
    ``selection.png`` (matplotlib, as ``car select`` does), both atomically; returns both paths."""
    def job(ctx):
        from engine import io
        from engine.car.training import selection_plot

        out = Path(folder)
        try:
            json_path = io.write_json(out / "selection.json", result)
            ctx.check_cancelled()
            png_path = io.atomic_write_bytes(out / "selection.png", selection_plot(result["runs"]))
        except OSError as exc:
            raise OSError(f"{out}: could not write selection.json and selection.png "
                          f"({exc.strerror or exc}); choose a folder you can write to") from exc
        return {"json": str(json_path), "png": str(png_path)}
    return job


# -- driving logs ---------------------------------------------------------------------------
def load_log_job(path: str, params, driving):
    """Read, map and prepare a driving log (:func:`engine.car.driving_logs.load_car_log`)."""
    from engine.car.driving_logs import load_car_log

    def job(ctx):
        return load_car_log(path, params, driving, ctx)
    return job
