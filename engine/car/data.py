"""Driving data for the learned car model: human-like driving, motion capture, preprocessing.

Pipeline (Köhler et al., Sec. III-A): drive the simulated car "like a human" (smooth random
speed and steering, occasional aggressive manoeuvres that make it slide), record its pose
like a motion-capture system (240 Hz as in the paper, with noise), then :func:`prepare_car_log`:
Savitzky-Golay smoothing of x, y and the unwrapped yaw (a window in seconds: 0.3 s, 73 frames
at 240 Hz; at 0.1 s the yaw-rate noise left in the targets is ~2.5x larger), resampling at the
model step ``h`` and finite differences into local velocities

    v_k = R(yaw_{k-1})^T (p_k - p_{k-1}) / h,   r_k = (yaw_k - yaw_{k-1}) / h,

the convention under which the planner's pose update ``p_{k+1} = p_k + h R(yaw_k) v_{k+1}``
reproduces the recorded poses. Training pairs are ``(v_k, u_k) -> v_{k+1}``. Real logs
(CSV with columns t, x, y, yaw, throttle, steering) go through the same :func:`prepare_car_log`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from scipy.signal import savgol_filter

from engine.systems.rc_car import CarParams, car_step, clamp_controls
from engine.validation import InputError, check_allocation, check_int, check_range

__all__ = [
    "LOG_COLUMNS",
    "CarDataError",
    "DrivingConfig",
    "human_driving",
    "make_dataset",
    "prepare_car_log",
    "validation_trajectories",
]

LOG_COLUMNS = ("t", "x", "y", "yaw", "throttle", "steering")
MIN_SEGMENT_SECONDS = 0.2   # s, the shortest simulated drive that yields training pairs (4 model steps)


class CarDataError(ValueError):
    """A car log that cannot be used; the message names the file / field."""


@dataclass(frozen=True)
class DrivingConfig:
    """How the synthetic driver drives and how the motion capture records it."""

    minutes: float = 15.0            # total driving time (the paper's 15 minutes)
    segments: int = 30               # independent drives simulated as one batch
    speed_min: float = -3.0          # m/s, reference speeds the driver picks from (reverse too)
    speed_max: float = 4.5
    speed_gain: float = 3.0          # throttle per m/s of speed error
    steer_time: float = 0.6          # s, correlation time of the steering
    aggressive_rate: float = 0.3     # aggressive manoeuvres per second
    aggressive_seconds: tuple[float, float] = (0.4, 1.4)
    mocap_rate: float = 240.0        # Hz, motion-capture frame rate (the paper's 240 Hz; 0 = every sub-step)
    pos_noise: float = 0.003         # m, motion-capture position noise (std)
    yaw_noise: float = 0.015         # rad, motion-capture heading noise (std)
    savgol_window: float = 0.3       # s, Savitzky-Golay window (73 frames at 240 Hz)
    savgol_order: int = 3
    seed: int = 0

    def __post_init__(self):
        who = "driving data setting"   # plain-language messages naming the flag (engine/validation.py)
        check_range(who, "minutes (--minutes)", self.minutes, 0.0, 600.0, lo_open=True, unit="min",
                    hint="the paper drives 15 minutes")
        check_int(who, "segments", self.segments, 1, 10_000)
        least = self.segments * MIN_SEGMENT_SECONDS / 60.0
        if self.minutes < least * (1 - 1e-9):
            raise InputError(
                f"{self.minutes:g} min is too little driving for {self.segments} drives of at least "
                f"{MIN_SEGMENT_SECONDS:g} s each; use at least {least:.3g} minutes",
                owner=who,
                field="minutes (--minutes)",
            )
        check_range(who, "speed_min", self.speed_min, -20.0, 20.0, unit="m/s")
        check_range(who, "speed_max", self.speed_max, self.speed_min, 20.0, lo_open=True, unit="m/s",
                    hint="the fastest reference speed must exceed speed_min")
        check_range(who, "speed_gain", self.speed_gain, 0.0, 100.0, lo_open=True)
        check_range(who, "steer_time", self.steer_time, 0.0, 60.0, lo_open=True, unit="s")
        check_range(who, "aggressive_rate", self.aggressive_rate, 0.0, 100.0, unit="1/s")
        if len(tuple(self.aggressive_seconds)) != 2:
            raise InputError(
                "expected two durations (shortest, longest)", owner=who, field="aggressive_seconds"
            )
        lo, hi = tuple(self.aggressive_seconds)
        check_range(who, "aggressive_seconds", lo, 0.0, 60.0, lo_open=True, unit="s")
        check_range(who, "aggressive_seconds", hi, lo, 60.0, unit="s")
        check_range(
            who, "mocap_rate", self.mocap_rate, 0.0, 10_000.0, unit="Hz", hint="0 records every sub-step"
        )
        check_range(who, "pos_noise", self.pos_noise, 0.0, 1.0, unit="m")
        check_range(who, "yaw_noise", self.yaw_noise, 0.0, 1.0, unit="rad")
        check_range(who, "savgol_window", self.savgol_window, 0.0, 10.0, lo_open=True, unit="s")
        check_int(who, "savgol_order", self.savgol_order, 0, 10)
        check_int(who, "seed", self.seed, 0, 2**32 - 1)
        # the motion-capture record of every segment, float64 (x, y, yaw, throttle, steering, t,
        # and the smoothed copies): estimated before anything is simulated
        rate = self.mocap_rate if self.mocap_rate > 0 else 1000.0
        check_allocation(
            f"{self.minutes:g} minutes of driving recorded at {rate:g} Hz",
            self.minutes * 60.0 * rate * 16,
            8,
            field="minutes (--minutes)",
            hint="lower --minutes",
        )

    def to_dict(self) -> dict:
        return asdict(self)


def human_driving(params: CarParams = CarParams(), config: DrivingConfig = DrivingConfig(),
                  steps: int | None = None, segments: int | None = None, seed: int | None = None,
                  start_speed: float = 0.0) -> dict:
    """Simulate human-like driving: ``segments`` cars in a batch for ``steps`` control steps.

    Returns numpy arrays: ``controls`` (S, N, 2), ``pose`` (S, N+1, 3) and ``v`` (S, N+1, 3) at
    the control rate, ``fine_pose`` (S, N*substeps+1, 3) at the motion-capture rate (noise
    free), ``slip`` (S, N, 4).
    """
    S = int(segments if segments is not None else config.segments)
    if steps is None:
        steps = int(round(config.minutes * 60.0 / params.dt / S))
    rng = np.random.default_rng(config.seed if seed is None else seed)
    dt = params.dt
    a_st = np.exp(-dt / config.steer_time)
    a_sp = np.exp(-dt / 2.0)
    steer = np.zeros(S)
    steer_drive = np.zeros(S)
    last_throttle = None
    v_ref = rng.uniform(0.5, config.speed_max, S)
    target_ref = v_ref.copy()
    aggressive_left = np.zeros(S)
    aggressive_u = np.zeros((S, 2))
    pose = torch.zeros(S, 3, dtype=torch.float64)
    pose[:, 2] = torch.from_numpy(rng.uniform(-np.pi, np.pi, S))
    v = torch.zeros(S, 3, dtype=torch.float64)
    v[:, 0] = start_speed
    fine = [pose.clone()]
    poses, vels, ctrls, slips = [pose.clone()], [v.clone()], [], []
    sub = params.with_(substeps=1, dt=params.dt / params.substeps)
    for _ in range(steps):
        # smooth reference speed (re-drawn now and then) and smooth steering
        redraw = rng.random(S) < dt / 3.0
        target_ref = np.where(redraw, rng.uniform(config.speed_min, config.speed_max, S), target_ref)
        v_ref = a_sp * v_ref + (1 - a_sp) * target_ref
        # twice-filtered noise: a smooth steering signal (no jumps from step to step)
        steer_drive = a_st * steer_drive + np.sqrt(1 - a_st**2) * rng.normal(0, 0.6 * params.max_steering, S)
        steer = a_st * steer + (1 - a_st) * steer_drive * 1.3
        vx = v[:, 0].numpy()
        throttle = np.clip(config.speed_gain * (v_ref - vx), -params.max_throttle, params.max_throttle)
        throttle = a_st * last_throttle + (1 - a_st) * throttle if last_throttle is not None else throttle
        last_throttle = throttle
        u = np.stack([throttle, steer], -1)
        # occasional aggressive manoeuvres: full steering with hard throttle or braking
        start = (aggressive_left <= 0) & (rng.random(S) < config.aggressive_rate * dt)
        if start.any():
            k = int(start.sum())
            aggressive_left[start] = rng.uniform(*config.aggressive_seconds, k)
            # hard acceleration, braking or reverse; steering from straight to full lock
            aggressive_u[start, 0] = rng.choice([1.0, 0.8, 0.5, -0.5, -0.8, -1.0], k) * params.max_throttle
            aggressive_u[start, 1] = (rng.choice([-1.0, 1.0], k) * rng.choice([1.0, 1.0, 0.7, 0.4, 0.0], k)
                                      * params.max_steering)
        active = aggressive_left > 0
        u[active] = aggressive_u[active]
        aggressive_left -= dt
        u_t = clamp_controls(torch.from_numpy(u), params)
        slip = torch.zeros(S, 4, dtype=torch.float64)
        for _ in range(params.substeps):
            out = car_step(pose, v, u_t, sub)
            pose, v = out.pose, out.v
            slip += out.slip / params.substeps
            fine.append(pose.clone())
        poses.append(pose.clone())
        vels.append(v.clone())
        ctrls.append(u_t.clone())
        slips.append(slip)
    return {"controls": torch.stack(ctrls, 1).numpy(), "pose": torch.stack(poses, 1).numpy(),
            "v": torch.stack(vels, 1).numpy(), "fine_pose": torch.stack(fine, 1).numpy(),
            "slip": torch.stack(slips, 1).numpy()}


def mocap_log(drive: dict, params: CarParams, config: DrivingConfig = DrivingConfig(),
              seed: int | None = None) -> list[dict]:
    """Turn :func:`human_driving` output into noisy motion-capture logs, one dict per segment
    with the columns of :data:`LOG_COLUMNS` (1-D numpy arrays at ``config.mocap_rate`` Hz).

    Within a simulator sub-step the car moves on a straight line at constant yaw rate (the
    sub-step's pose update is linear in time), so sampling the sub-step poses by linear
    interpolation is exact at any rate.
    """
    rng = np.random.default_rng((config.seed if seed is None else seed) + 1)
    fine = drive["fine_pose"]
    S, M = fine.shape[:2]
    h_fine = params.dt / params.substeps
    t_fine = np.arange(M) * h_fine
    rate = float(config.mocap_rate) if config.mocap_rate > 0 else 1.0 / h_fine
    t = np.arange(int(np.floor(t_fine[-1] * rate + 1e-6)) + 1) / rate
    n = len(t)
    # the control held during [t_k, t_k + dt) is logged on every sample of that interval
    k = np.minimum((t / params.dt + 1e-9).astype(int), drive["controls"].shape[1] - 1)
    logs = []
    for s in range(S):
        u = drive["controls"][s][k]
        pose = np.stack([np.interp(t, t_fine, fine[s, :, j]) for j in range(3)], -1)
        yaw = np.angle(np.exp(1j * (pose[:, 2] + rng.normal(0, config.yaw_noise, n))))
        logs.append({"t": t, "x": pose[:, 0] + rng.normal(0, config.pos_noise, n),
                     "y": pose[:, 1] + rng.normal(0, config.pos_noise, n), "yaw": yaw,
                     "throttle": u[:, 0], "steering": u[:, 1]})
    return logs


def prepare_car_log(log: dict, h: float = 0.05, savgol_window: float = DrivingConfig.savgol_window,
                savgol_order: int = DrivingConfig.savgol_order, source: str = "log") -> dict:
    """Smooth a pose log and turn it into local velocities at the model step ``h`` (s).

    ``log`` maps :data:`LOG_COLUMNS` to 1-D arrays (t in s, increasing). Returns numpy arrays
    ``pose`` (K, 3), ``v`` (K, 3) (``v[0]`` is NaN), ``u`` (K, 2) and the training pairs
    ``inputs`` (K-2, 5) = (v_k, u_k) and ``targets`` (K-2, 3) = v_{k+1}.
    """
    for name in LOG_COLUMNS:
        if name not in log:
            raise CarDataError(f"{source}: missing column {name!r} (need {', '.join(LOG_COLUMNS)})")
    cols = {k: np.asarray(log[k], dtype=float).ravel() for k in LOG_COLUMNS}
    n = len(cols["t"])
    for k, c in cols.items():
        if len(c) != n:
            raise CarDataError(f"{source}: column {k!r} has {len(c)} rows, 't' has {n}")
        if not np.isfinite(c).all():
            raise CarDataError(
                f"{source}: column {k!r} has NaN or inf (row {int(np.argmin(np.isfinite(c)))})"
            )
    t = cols["t"]
    if n < 4 or np.any(np.diff(t) <= 0):
        raise CarDataError(f"{source}: column 't' must be strictly increasing with at least 4 rows")
    rate_dt = float(np.median(np.diff(t)))
    grid = np.arange(t[0], t[-1] + 1e-9, rate_dt)
    yaw = np.unwrap(cols["yaw"])
    fine = np.stack([np.interp(grid, t, cols["x"]), np.interp(grid, t, cols["y"]),
                     np.interp(grid, t, yaw)], -1)
    window = int(round(savgol_window / rate_dt)) | 1
    if window > savgol_order + 1 and window <= len(grid):
        fine = savgol_filter(fine, window, savgol_order, axis=0)
    k_grid = np.arange(grid[0], grid[-1] + 1e-9, h)
    if len(k_grid) < 4:
        raise CarDataError(f"{source}: shorter than 4 model steps of {h} s")
    pose = np.stack([np.interp(k_grid, grid, fine[:, j]) for j in range(3)], -1)
    # the control applied during [t_k, t_k + h): the last sample at or before t_k (+ tiny)
    idx = np.clip(np.searchsorted(t, k_grid + 1e-9, side="right") - 1, 0, n - 1)
    u = np.stack([cols["throttle"][idx], cols["steering"][idx]], -1)
    d = np.diff(pose, axis=0) / h
    c, s = np.cos(pose[:-1, 2]), np.sin(pose[:-1, 2])
    v = np.full_like(pose, np.nan)
    v[1:, 0] = c * d[:, 0] + s * d[:, 1]
    v[1:, 1] = -s * d[:, 0] + c * d[:, 1]
    v[1:, 2] = d[:, 2]
    inputs = np.concatenate([v[1:-1], u[1:-1]], -1)
    targets = v[2:]
    return {"pose": pose, "v": v, "u": u, "inputs": inputs, "targets": targets, "h": h}


def make_dataset(params: CarParams = CarParams(), config: DrivingConfig = DrivingConfig(),
                 ctx=None) -> dict:
    """Simulated driving -> motion capture -> :func:`prepare_car_log` for every segment.

    Returns torch float32 ``inputs`` (N, 5), ``targets`` (N, 3) and ``slip_fraction``.
    """
    if ctx is not None:
        ctx.progress(0.0, "simulating human-like driving")
    drive = human_driving(params, config)
    logs = mocap_log(drive, params, config)
    ins, outs = [], []
    for i, log in enumerate(logs):
        prep = prepare_car_log(
            log, params.dt, config.savgol_window, config.savgol_order, source=f"segment {i}"
        )
        ins.append(prep["inputs"])
        outs.append(prep["targets"])
    inputs = torch.from_numpy(np.concatenate(ins)).float()
    targets = torch.from_numpy(np.concatenate(outs)).float()
    return {"inputs": inputs, "targets": targets,
            "slip_fraction": float((drive["slip"].max(-1) > 0.5).mean()),
            "minutes": inputs.shape[0] * params.dt / 60.0}


def validation_trajectories(params: CarParams = CarParams(), count: int = 40, seconds: float = 3.0,
                            warmup_seconds: float = 2.0, seed: int = 1234,
                            config: DrivingConfig = DrivingConfig()) -> dict:
    """The paper's validation set: ``count`` trajectories of ``seconds`` (half of them with a
    higher rate of aggressive, sliding manoeuvres), after a warm-up drive from rest.

    Returns torch float64 ``pose0`` (J, 3), ``v0`` (J, 3) (chord velocity of the step before,
    the learned model's convention), ``controls`` (J, n, 2), ``pose`` (J, n+1, 3) ground truth.
    """
    n = int(round(seconds / params.dt))
    w = int(round(warmup_seconds / params.dt))
    half = count // 2
    runs = []
    for j, (cnt, rate) in enumerate(((half, config.aggressive_rate), (count - half, 1.0))):
        if cnt == 0:
            continue
        cfg = DrivingConfig(**{**config.to_dict(), "aggressive_rate": rate})
        runs.append(human_driving(params, cfg, steps=w + n, segments=cnt, seed=seed + j))
    pose = np.concatenate([r["pose"] for r in runs])
    controls = np.concatenate([r["controls"] for r in runs])
    p_prev, p0 = pose[:, w - 1], pose[:, w]
    d = (p0 - p_prev) / params.dt
    c, s = np.cos(p_prev[:, 2]), np.sin(p_prev[:, 2])
    v0 = np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1], d[:, 2]], -1)
    return {
        "pose0": torch.from_numpy(p0),
        "v0": torch.from_numpy(v0),
        "controls": torch.from_numpy(controls[:, w : w + n]),
        "pose": torch.from_numpy(pose[:, w : w + n + 1]),
    }
