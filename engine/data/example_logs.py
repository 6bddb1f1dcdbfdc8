"""Example hardware logs, simulated by the project's own models with realistic sensor noise.

One function per log returns an :class:`ExampleLog` (columns, mapping, README text); the
parameters live in a frozen dataclass per log and the README is written from them, so the
shipped description always matches the generator. :func:`make_examples` writes
``<name>.csv``, ``<name>.mapping.json`` and ``<name>.README.md`` for each into a folder
(``python -m engine logs make-examples --out resources/logs``).

Logs:

- ``pendulum_friction``: the SyMo pendulum (``engine.systems.pendulum``, uniform rod m = l = 1,
  g = 9.81, angle from the upright) with viscous and Coulomb friction under a random smooth
  torque; 100 Hz with timestamp jitter, encoder quantisation, torque sensor noise.
- ``cartpole``: the SyMo cart-pole (``engine.systems.cartpole``) with cart and pole friction,
  driven by a random force plus an operator's centring feedback; logged in ms, mm, deg, N.
- ``rc_car_mocap``: the RC car (``engine.systems.rc_car``) driven around a motion-capture
  arena; t, x, y, yaw (wrapped), throttle, steering at the 120 Hz motion-capture rate.
- ``panda_joints``: the Panda arm (``urdf/panda.urdf``) under sine motions, with torque
  noise (needs ``engine.robots``' dynamics).
- ``panda_friction``: the Panda simulated by MuJoCo with joint friction, armature and masses off
  (``engine/data/mujoco_logs.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from engine.data.example_log_types import ExampleLog, params_table
from engine.logs.mapping import LogMapping
from engine.logs.writers import write_csv

__all__ = [
    "EXAMPLES",
    "CartPoleLogConfig",
    "ExampleLog",
    "PandaLogConfig",
    "PendulumLogConfig",
    "RCCarLogConfig",
    "cartpole_log",
    "make_examples",
    "panda_log",
    "panda_parameters",
    "pendulum_log",
    "rc_car_log",
    "smooth_random_signal",
    "write_example",
]


def smooth_random_signal(rng: np.random.Generator, amplitude: float, components: int,
                         band: tuple[float, float], duration: float) -> Callable[[np.ndarray | float], np.ndarray]:
    """A random smooth signal ``f(t)``: a sum of ``components`` sines with frequencies uniform
    in ``band`` (Hz), random phases and weights, scaled so ``max |f| = amplitude`` on
    ``[0, duration]``. Returns a function of ``t`` (s, any shape)."""
    freqs = rng.uniform(band[0], band[1], components)
    phases = rng.uniform(0, 2 * np.pi, components)
    weights = rng.uniform(0.5, 1.0, components)

    def raw(t):
        t = np.asarray(t, dtype=np.float64)
        return np.sum(weights * np.sin(2 * np.pi * freqs * t[..., None] + phases), axis=-1)

    grid = np.linspace(0.0, duration, max(2, int(duration * band[1] * 50) + 1))
    scale = amplitude / np.max(np.abs(raw(grid)))
    return lambda t: scale * raw(t)


def _jittered_times(rng, duration: float, rate: float, jitter: float) -> np.ndarray:
    n = round(duration * rate) + 1
    t = np.arange(n) / rate
    t[1:] += rng.uniform(-jitter, jitter, n - 1)
    return np.sort(t)


def _quantise(x: np.ndarray, step: float) -> np.ndarray:
    return np.round(x / step) * step


# -- pendulum ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PendulumLogConfig:
    """Pendulum with friction (SI units)."""

    duration: float = 60.0          # s
    rate: float = 100.0             # Hz, nominal sample rate
    jitter: float = 0.5e-3          # s, uniform timestamp jitter (+-)
    seed: int = 0
    viscous: float = 0.1            # N m s / rad
    coulomb: float = 0.15           # N m
    coulomb_velocity: float = 0.01  # rad/s, tanh smoothing of the Coulomb term
    torque_amplitude: float = 2.5   # N m, max |torque|
    torque_components: int = 5
    torque_band: tuple[float, float] = (0.05, 0.8)  # Hz
    theta0: float = math.pi - 0.3   # rad from the upright (pi hangs down)
    omega0: float = 0.0             # rad/s
    encoder_counts: int = 4096      # per revolution
    angle_noise: float = 5e-4       # rad, Gaussian
    torque_noise: float = 0.02      # N m, Gaussian


def pendulum_log(cfg: PendulumLogConfig = PendulumLogConfig()) -> ExampleLog:
    """Simulate the friction pendulum with ``solve_ivp`` and add sensor noise."""
    import torch
    from scipy.integrate import solve_ivp

    from engine.systems.pendulum import Pendulum

    rng = np.random.default_rng(cfg.seed)
    system = Pendulum()
    torque = smooth_random_signal(rng, cfg.torque_amplitude, cfg.torque_components, cfg.torque_band,
                                  cfg.duration)
    times = _jittered_times(rng, cfg.duration, cfg.rate, cfg.jitter)

    def friction(omega):
        return -cfg.viscous * omega - cfg.coulomb * np.tanh(omega / cfg.coulomb_velocity)

    def rhs(t, x):
        q = torch.tensor([[x[0]]], dtype=torch.float64)
        qd = torch.tensor([[x[1]]], dtype=torch.float64)
        u = torch.tensor([[float(torque(t)) + friction(x[1])]], dtype=torch.float64)
        with torch.no_grad():
            qdd = system.forward_dynamics(q, qd, u)
        return [x[1], float(qdd[0, 0])]

    sol = solve_ivp(rhs, (0.0, times[-1]), [cfg.theta0, cfg.omega0], t_eval=times, rtol=1e-9, atol=1e-9,
                    method="RK45")
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"pendulum simulation failed: {sol.message}")
    theta_true = sol.y[0]
    theta = _quantise(theta_true, 2 * np.pi / cfg.encoder_counts) + rng.normal(0, cfg.angle_noise, len(times))
    tau = torque(times) + rng.normal(0, cfg.torque_noise, len(times))
    columns = {"t": times, "theta": theta, "torque": tau}
    mapping = LogMapping(
        time="t",
        q=["theta"],
        u=["torque"],
        units={"t": "s", "theta": "rad", "torque": "N m"},
        name="pendulum_friction",
    )
    readme = f"""# pendulum_friction.csv

A pendulum with friction, as a hardware log would record it. Columns:

| column | unit | meaning |
|---|---|---|
| `t` | s | timestamp (nominal {cfg.rate:g} Hz, jittered by +-{cfg.jitter * 1e3:g} ms, so not uniform) |
| `theta` | rad | pole angle **from the upright** (pi hangs down), continuous (not wrapped) |
| `torque` | N m | motor torque at the pivot, as measured |

## How it was made

`engine/data/example_logs.py::pendulum_log` (`python -m engine logs make-examples --out DIR`).

- Model: `engine.systems.pendulum.Pendulum`, the SyMo paper's pendulum: a uniform rod,
  m = l = 1, g = 9.81, `thdd = 3 g / (2 l) sin(th) + 3 / (m l^2) (u + tau_f)`, with
  friction `tau_f = -b thd - c tanh(thd / v_c)` (viscous b = {cfg.viscous} N m s/rad,
  Coulomb c = {cfg.coulomb} N m, smoothed over v_c = {cfg.coulomb_velocity} rad/s).
- Torque: a random smooth signal, {cfg.torque_components} sines with frequencies uniform in
  {cfg.torque_band[0]}-{cfg.torque_band[1]} Hz, random phases, scaled to max |u| = {cfg.torque_amplitude} N m.
- Integration: scipy `solve_ivp` (RK45, rtol = atol = 1e-9) from theta = {cfg.theta0:.4f} rad,
  thd = {cfg.omega0} rad/s, evaluated at the jittered timestamps.
- Noise: angle quantised by a {cfg.encoder_counts}-count encoder, plus Gaussian noise
  sigma = {cfg.angle_noise} rad; torque plus Gaussian noise sigma = {cfg.torque_noise} N m.
- Duration {cfg.duration:g} s, {len(times)} rows, seed {cfg.seed}.

Mapping: `pendulum_friction.mapping.json` (time `t`, q = `theta`, u = `torque`). Friction is
not in the frictionless model: a learned model that fits this log well must absorb it.

## All parameters

| parameter | value |
|---|---|
{params_table(cfg)}
"""
    comments = [
        "pendulum with friction (simulated by engine/data/example_logs.py, see pendulum_friction.README.md)",
        "t [s], theta [rad from upright], torque [N m]",
    ]
    return ExampleLog("pendulum_friction", columns, {"t": "%.6f", "theta": "%.6f", "torque": "%.4f"},
                      mapping, readme, comments, truth={"theta": theta_true, "omega": sol.y[1]})


# -- cart-pole ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CartPoleLogConfig:
    """Cart-pole with friction; logged in ms, mm, deg and N like a typical lab rig."""

    duration: float = 40.0          # s
    rate: float = 100.0             # Hz
    seed: int = 1
    dropped_samples: int = 5        # rows lost by the logger (non-uniform time)
    cart_viscous: float = 0.5       # N s / m
    cart_coulomb: float = 0.3       # N
    coulomb_velocity: float = 0.01  # m/s
    pole_viscous: float = 0.002     # N m s / rad
    force_amplitude: float = 6.0    # N, max |random part|
    force_components: int = 6
    force_band: tuple[float, float] = (0.1, 1.5)  # Hz
    centring_kp: float = 8.0        # N / m, the operator's feedback keeping the cart on the track
    centring_kd: float = 3.0        # N s / m
    theta0: float = math.pi - 0.2   # rad from the upright
    position_step: float = 0.1e-3   # m, linear encoder resolution
    position_noise: float = 0.2e-3  # m
    encoder_counts: int = 2048      # pole encoder, per revolution
    angle_noise: float = 1e-3       # rad
    force_noise: float = 0.05       # N


def cartpole_log(cfg: CartPoleLogConfig = CartPoleLogConfig()) -> ExampleLog:
    """Simulate the cart-pole with friction under a random force and add sensor noise."""
    import torch
    from scipy.integrate import solve_ivp

    from engine.systems.cartpole import CartPole

    rng = np.random.default_rng(cfg.seed)
    system = CartPole()
    random_force = smooth_random_signal(rng, cfg.force_amplitude, cfg.force_components, cfg.force_band,
                                        cfg.duration)
    n = round(cfg.duration * cfg.rate) + 1
    keep = np.ones(n, dtype=bool)
    keep[rng.choice(np.arange(1, n - 1), cfg.dropped_samples, replace=False)] = False
    times = (np.arange(n) / cfg.rate)[keep]

    def applied_force(t, x, xd):
        return float(random_force(t)) - cfg.centring_kp * x - cfg.centring_kd * xd

    def rhs(t, s):
        x, th, xd, thd = s
        q = torch.tensor([[x, th]], dtype=torch.float64)
        qd = torch.tensor([[xd, thd]], dtype=torch.float64)
        cart_friction = -cfg.cart_viscous * xd - cfg.cart_coulomb * math.tanh(xd / cfg.coulomb_velocity)
        u = torch.tensor([[applied_force(t, x, xd) + cart_friction]], dtype=torch.float64)
        with torch.no_grad():
            qdd = system.forward_dynamics(q, qd, u)[0]
            # the pole's joint friction enters as a generalised force on theta: H^-1 (0, tau)
            H = system.mass_matrix(q)[0]
            qdd = qdd + torch.linalg.solve(
                H, torch.tensor([0.0, -cfg.pole_viscous * thd], dtype=torch.float64)
            )
        return [xd, thd, float(qdd[0]), float(qdd[1])]

    sol = solve_ivp(rhs, (0.0, times[-1]), [0.0, cfg.theta0, 0.0, 0.0], t_eval=times, rtol=1e-9, atol=1e-9)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"cart-pole simulation failed: {sol.message}")
    x, th, xd = sol.y[0], sol.y[1], sol.y[2]
    force = np.array([applied_force(t, a, b) for t, a, b in zip(times, x, xd)])
    x_meas = _quantise(x, cfg.position_step) + rng.normal(0, cfg.position_noise, len(times))
    th_meas = _quantise(th, 2 * np.pi / cfg.encoder_counts) + rng.normal(0, cfg.angle_noise, len(times))
    f_meas = force + rng.normal(0, cfg.force_noise, len(times))
    columns = {
        "time_ms": np.round(times * 1e3),
        "cart_x_mm": x_meas * 1e3,
        "pole_angle_deg": np.degrees(th_meas),
        "force_N": f_meas,
    }
    mapping = LogMapping(time="time_ms", q=["cart_x_mm", "pole_angle_deg"], u=["force_N"],
                         units={"time_ms": "ms", "cart_x_mm": "mm", "pole_angle_deg": "deg", "force_N": "N"},
                         name="cartpole")
    p = system.params
    readme = f"""# cartpole.csv

A cart-pole rig's log, in the units such rigs often log in. Columns:

| column | unit | meaning |
|---|---|---|
| `time_ms` | ms | timestamp, {cfg.rate:g} Hz; {cfg.dropped_samples} samples were dropped by the logger |
| `cart_x_mm` | mm | cart position |
| `pole_angle_deg` | deg | pole angle **from the upright** (180 hangs down), continuous |
| `force_N` | N | motor force on the cart, as measured |

The mapping `cartpole.mapping.json` converts ms -> s, mm -> m, deg -> rad.

## How it was made

`engine/data/example_logs.py::cartpole_log`.

- Model: `engine.systems.cartpole.CartPole`, the SyMo paper's cart-pole (cart {p.mc} kg, pole
  {p.mp} kg, half-length {p.l} m, g = {p.g}), plus friction: on the cart viscous
  {cfg.cart_viscous} N s/m and Coulomb {cfg.cart_coulomb} N (tanh over {cfg.coulomb_velocity} m/s);
  at the pole's joint viscous {cfg.pole_viscous} N m s/rad (a generalised force on theta).
- Force: a random smooth signal ({cfg.force_components} sines, {cfg.force_band[0]}-{cfg.force_band[1]} Hz,
  max {cfg.force_amplitude} N) plus an operator's centring feedback
  `-{cfg.centring_kp} x - {cfg.centring_kd} xd` that keeps the cart on the track; the logged
  force is their sum (friction is not logged).
- Integration: scipy `solve_ivp` (RK45, rtol = atol = 1e-9) from x = 0, theta = {cfg.theta0:.4f} rad, at rest.
- Noise: cart position quantised to {cfg.position_step * 1e3:g} mm plus Gaussian {cfg.position_noise * 1e3:g} mm;
  pole angle quantised by a {cfg.encoder_counts}-count encoder plus Gaussian {cfg.angle_noise} rad;
  force plus Gaussian {cfg.force_noise} N.
- Duration {cfg.duration:g} s, {len(times)} rows, seed {cfg.seed}.

## All parameters

| parameter | value |
|---|---|
{params_table(cfg)}
"""
    comments = ["cart-pole with friction (simulated by engine/data/example_logs.py, see cartpole.README.md)",
                "time [ms], cart position [mm], pole angle [deg from upright], force [N]"]
    return ExampleLog("cartpole", columns, {"time_ms": "%.0f", "cart_x_mm": "%.2f", "pole_angle_deg": "%.3f",
                                            "force_N": "%.3f"}, mapping, readme, comments,
                      truth={"x": x, "theta": th, "force": force})


# -- RC car ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RCCarLogConfig:
    """RC car in a motion-capture arena (SI units); the car model's own parameters are
    ``engine.systems.rc_car.CarParams()`` (control step 0.05 s, 6 sub-steps)."""

    duration: float = 60.0          # s
    seed: int = 2
    arena_radius: float = 2.5       # m, the driver steers back towards the centre beyond it
    throttle_mean: float = 1.2      # m/s^2
    throttle_amplitude: float = 1.5  # m/s^2, random smooth part
    steering_amplitude: float = 0.3  # rad, random smooth part
    control_band: tuple[float, float] = (0.05, 0.5)  # Hz
    centring_gain: float = 0.8      # rad of steering per rad of heading error when outside the arena
    speed_limit: float = 3.0        # m/s, the driver eases off the throttle above it
    position_noise: float = 0.5e-3  # m, motion-capture noise (Gaussian)
    yaw_noise: float = 0.005        # rad
    throttle_noise: float = 0.02    # m/s^2, the logged command vs the applied one
    steering_noise: float = 0.002   # rad


def rc_car_log(cfg: RCCarLogConfig = RCCarLogConfig()) -> ExampleLog:
    """Drive the RC car model around a motion-capture arena and record it at the sub-step rate."""
    import torch

    from engine.systems.rc_car import CarParams, car_step, clamp_controls

    params = CarParams()
    rng = np.random.default_rng(cfg.seed)
    throttle_rand = smooth_random_signal(rng, cfg.throttle_amplitude, 4, cfg.control_band, cfg.duration)
    steer_rand = smooth_random_signal(rng, cfg.steering_amplitude, 4, cfg.control_band, cfg.duration)
    steps = round(cfg.duration / params.dt)
    h = params.dt / params.substeps
    pose = torch.zeros(3, dtype=torch.float64)
    v = torch.zeros(3, dtype=torch.float64)
    fine_params = CarParams(**{**asdict(params), "dt": h, "substeps": 1})
    rows_pose, rows_u = [pose.numpy().copy()], []
    for k in range(steps):
        t = k * params.dt
        x, y, yaw = pose.tolist()
        steer = float(steer_rand(t))
        if math.hypot(x, y) > cfg.arena_radius:  # the driver turns back towards the centre
            heading_error = math.atan2(-y, -x) - yaw
            heading_error = (heading_error + math.pi) % (2 * math.pi) - math.pi
            steer += cfg.centring_gain * heading_error
        throttle = cfg.throttle_mean + float(throttle_rand(t))
        if v[0].item() > cfg.speed_limit:
            throttle = min(throttle, 0.0)
        u = clamp_controls(torch.tensor([throttle, steer], dtype=torch.float64), params)
        for _ in range(params.substeps):  # one sub-step at a time, to record at mocap rate
            step = car_step(pose, v, u, fine_params)
            pose, v = step.pose, step.v
            rows_pose.append(pose.numpy().copy())
            rows_u.append(u.numpy().copy())
    poses = np.array(rows_pose[1:])
    controls = np.array(rows_u)
    # the first frame is recorded at t = 0 with the first step's controls
    poses = np.concatenate([np.zeros((1, 3)), poses])
    controls = np.concatenate([controls[:1], controls])
    times = h * np.arange(len(poses))
    n = len(times)
    x = poses[:, 0] + rng.normal(0, cfg.position_noise, n)
    y = poses[:, 1] + rng.normal(0, cfg.position_noise, n)
    yaw = poses[:, 2] + rng.normal(0, cfg.yaw_noise, n)
    yaw = (yaw + np.pi) % (2 * np.pi) - np.pi
    throttle_logged = controls[:, 0] + rng.normal(0, cfg.throttle_noise, n)
    steering = controls[:, 1] + rng.normal(0, cfg.steering_noise, n)
    columns = {"t": times, "x": x, "y": y, "yaw": yaw, "throttle": throttle_logged, "steering": steering}
    mapping = LogMapping(
        time="t",
        q=["x", "y", "yaw"],
        u=["throttle", "steering"],
        units={"t": "s", "x": "m", "y": "m", "yaw": "rad", "throttle": "1", "steering": "rad"},
        name="rc_car_mocap",
    )
    readme = f"""# rc_car_mocap.csv

An RC car driven around a motion-capture arena. Columns:

| column | unit | meaning |
|---|---|---|
| `t` | s | timestamp, {1 / h:g} Hz (the motion-capture rate) |
| `x`, `y` | m | position of the centre of mass in the arena frame |
| `yaw` | rad | heading, **wrapped** to [-pi, pi) as motion capture reports it (unwrap before differencing) |
| `throttle` | m/s^2 | commanded rear-wheel acceleration (held for each {params.dt:g} s control step) |
| `steering` | rad | commanded front-wheel angle (held likewise) |

## How it was made

`engine/data/example_logs.py::rc_car_log`.

- Model: `engine.systems.rc_car` with `CarParams()` (mass {params.mass} kg, wheelbase {params.wheelbase} m,
  track {params.track_width} m, mu static/dynamic {params.mu_static}/{params.mu_dynamic}, tyre relaxation
  {params.tyre_relaxation} s, drag {params.drag}, rolling resistance {params.rolling_resistance}); controls are
  held for {params.dt:g} s and the car is stepped in {params.substeps} sub-steps of {h:.6g} s, each recorded.
  Fast turns exceed the friction limit, so the log contains drifts.
- Driver: throttle {cfg.throttle_mean} m/s^2 plus a random smooth part (max {cfg.throttle_amplitude}),
  cut to 0 above {cfg.speed_limit} m/s; steering a random smooth part (max {cfg.steering_amplitude} rad)
  plus, outside a {cfg.arena_radius} m radius, {cfg.centring_gain} x the heading error towards the centre;
  random parts are sums of 4 sines in {cfg.control_band[0]}-{cfg.control_band[1]} Hz. Controls are clamped
  to the car's limits.
- Noise: positions Gaussian {cfg.position_noise * 1e3:g} mm, yaw Gaussian {cfg.yaw_noise} rad, logged throttle
  Gaussian {cfg.throttle_noise} m/s^2 and steering {cfg.steering_noise} rad about the applied commands.
- Duration {cfg.duration:g} s, {n} rows, seed {cfg.seed}.

Mapping: `rc_car_mocap.mapping.json` (q = x, y, yaw; u = throttle, steering). Prepare it with
`unwrap_angles` on, since yaw is wrapped.

## All parameters

| parameter | value |
|---|---|
{params_table(cfg)}
"""
    comments = [
        "RC car, motion capture (simulated by engine/data/example_logs.py, see rc_car_mocap.README.md)",
        "t [s], x [m], y [m], yaw [rad, wrapped], throttle [m/s^2], steering [rad]",
    ]
    return ExampleLog("rc_car_mocap", columns, {"t": "%.6f", "x": "%.5f", "y": "%.5f", "yaw": "%.5f",
                                                "throttle": "%.4f", "steering": "%.4f"}, mapping, readme,
                      comments, truth={"pose": poses, "controls": controls})


# -- Panda -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PandaLogConfig:
    """Panda joint log: sine motions through the rigid-body engine, torque sensor noise.

    The "real" robot differs from the shipped URDF: the mass of each of ``panda_link1`` ...
    ``panda_link7`` is scaled by a seeded factor uniform in ``mass_scale_range`` (centres of
    mass and rotational inertias stay the URDF's), so identification has something to find.
    """

    duration: float = 30.0           # s
    rate: float = 100.0              # Hz
    seed: int = 3
    sines_per_joint: int = 3
    frequency_band: tuple[float, float] = (0.05, 0.4)  # Hz
    amplitude_fraction: float = 0.35  # of each joint's half range (at most max_amplitude)
    max_amplitude: float = 1.0       # rad
    velocity_fraction: float = 0.8   # of each joint's velocity limit, at most
    mass_scale_range: tuple[float, float] = (0.85, 1.15)
    position_noise: float = 2e-5     # rad, Gaussian (high-resolution joint encoders)
    velocity_noise: float = 5e-3     # rad/s, Gaussian
    torque_noise: tuple[float, ...] = (0.05, 0.05, 0.05, 0.05, 0.02, 0.02, 0.02)  # N m per joint, Gaussian


def panda_parameters(cfg: PandaLogConfig = PandaLogConfig()) -> dict:
    """The link masses used for the log (``{link: kg}``) with the URDF's nominal ones and the scales."""
    from engine.paths import urdf_dir
    from engine.robots import RobotModel

    nominal = RobotModel.from_urdf(urdf_dir() / "panda.urdf")
    rng = np.random.default_rng(cfg.seed + 1000)
    links = [f"panda_link{i}" for i in range(1, 8)]
    scales = rng.uniform(*cfg.mass_scale_range, len(links))
    return {"links": links, "scale": scales.tolist(),
            "nominal_mass": [float(nominal.link_mass(l)) for l in links],
            "mass": [float(nominal.link_mass(l)) * float(k) for l, k in zip(links, scales)]}


def panda_log(cfg: PandaLogConfig = PandaLogConfig()) -> ExampleLog:
    """Sine motions of the Panda's 7 joints; torques by the engine's RNEA plus noise."""
    import json

    import torch

    from engine.paths import urdf_dir
    from engine.robots import RobotModel

    nominal = RobotModel.from_urdf(urdf_dir() / "panda.urdf")
    truth = panda_parameters(cfg)
    robot = nominal.with_link_params(mass=dict(zip(truth["links"], truth["mass"])))
    rng = np.random.default_rng(cfg.seed)
    limits = nominal.joint_limits
    lower = np.asarray(limits.lower, dtype=float)[:7]
    upper = np.asarray(limits.upper, dtype=float)[:7]
    vmax = np.asarray(limits.velocity, dtype=float)[:7]
    n = round(cfg.duration * cfg.rate) + 1
    t = np.arange(n) / cfg.rate
    q = np.empty((n, 7))
    qd = np.empty((n, 7))
    qdd = np.empty((n, 7))
    for j in range(7):
        f = rng.uniform(*cfg.frequency_band, cfg.sines_per_joint)
        phase = rng.uniform(0, 2 * np.pi, cfg.sines_per_joint)
        w = rng.uniform(0.5, 1.0, cfg.sines_per_joint)
        w /= w.sum()
        amp = min(cfg.amplitude_fraction * (upper[j] - lower[j]) / 2, cfg.max_amplitude)
        omega = 2 * np.pi * f
        peak_velocity = amp * np.sum(w * omega)
        amp *= min(1.0, cfg.velocity_fraction * vmax[j] / peak_velocity)
        arg = omega * t[:, None] + phase
        # start at rest in the middle of the range: subtract the value and slope at t = 0
        centre = (upper[j] + lower[j]) / 2
        q[:, j] = centre + amp * np.sum(w * (np.sin(arg) - np.sin(phase) - omega * np.cos(phase) * t[:, None]
                                             * np.exp(-t[:, None])), axis=1)
        qd[:, j] = amp * np.sum(w * (omega * np.cos(arg) - omega * np.cos(phase) * np.exp(-t[:, None])
                                     * (1 - t[:, None])), axis=1)
        qdd[:, j] = amp * np.sum(w * (-omega**2 * np.sin(arg) - omega * np.cos(phase) * np.exp(-t[:, None])
                                      * (t[:, None] - 2)), axis=1)
    with torch.no_grad():
        tau = robot.inverse_dynamics(torch.from_numpy(q), torch.from_numpy(qd), torch.from_numpy(qdd)).numpy()
    sigma = np.asarray(cfg.torque_noise)
    columns = {"t": t}
    for j in range(7):
        columns[f"q{j + 1}"] = q[:, j] + rng.normal(0, cfg.position_noise, n)
    for j in range(7):
        columns[f"qd{j + 1}"] = qd[:, j] + rng.normal(0, cfg.velocity_noise, n)
    for j in range(7):
        columns[f"tau{j + 1}"] = tau[:, j] + rng.normal(0, sigma[j], n)
    mapping = LogMapping(
        time="t",
        q=[f"q{j}" for j in range(1, 8)],
        qd=[f"qd{j}" for j in range(1, 8)],
        u=[f"tau{j}" for j in range(1, 8)],
        units={
            "t": "s",
            **{f"q{j}": "rad" for j in range(1, 8)},
            **{f"qd{j}": "rad/s" for j in range(1, 8)},
            **{f"tau{j}": "N m" for j in range(1, 8)},
        },
        name="panda_joints",
    )
    mass_rows = "\n".join(f"| `{l}` | {m0:.6f} | {k:.4f} | {m:.6f} |" for l, m0, k, m in
                          zip(truth["links"], truth["nominal_mass"], truth["scale"], truth["mass"]))
    readme = f"""# panda_joints.csv

A Franka Emika Panda joint log: positions, velocities and measured torques of its 7 joints.

| column | unit | meaning |
|---|---|---|
| `t` | s | timestamp, {cfg.rate:g} Hz |
| `q1` ... `q7` | rad | joint positions |
| `qd1` ... `qd7` | rad/s | joint velocities (as the robot reports them) |
| `tau1` ... `tau7` | N m | measured joint torques |

## How it was made

`engine/data/example_logs.py::panda_log`.

- Model: `engine.robots.RobotModel` from `urdf/panda.urdf` (with the hand fixed), gravity
  9.81 m/s^2 along -z, no joint friction or damping. The simulated robot differs from the
  URDF: the mass of each of links 1-7 is scaled by a factor uniform in
  {cfg.mass_scale_range[0]}-{cfg.mass_scale_range[1]} (seed {cfg.seed + 1000}); centres of mass and
  rotational inertias about them are the URDF's. The masses used (kg) are below and in
  `panda_joints.params.json`.
- Motion: per joint, {cfg.sines_per_joint} sines with frequencies uniform in
  {cfg.frequency_band[0]}-{cfg.frequency_band[1]} Hz, random phases and weights, about the middle of
  the joint's range with amplitude {cfg.amplitude_fraction} x half the range (at most
  {cfg.max_amplitude} rad), scaled to stay under {cfg.velocity_fraction} x the velocity limit; a
  decaying correction term starts each joint at rest. q, qd, qdd are analytic.
- Torques: inverse dynamics (RNEA) of the scaled model, `tau = M(q) qdd + C(q, qd) qd + g(q)`.
- Noise (Gaussian): positions {cfg.position_noise} rad, velocities {cfg.velocity_noise} rad/s, torques
  sigma = {list(cfg.torque_noise)} N m for joints 1-7.
- Duration {cfg.duration:g} s, {n} rows, seed {cfg.seed}.

Identifiability: the masses of links 2-7 are identifiable from this log (a weighted
least-squares fit of the torques, with accelerations from a Savitzky-Golay filter of q,
window 31, polyorder 5, recovers them within about 2 %, checked with Pinocchio in
`tests/engine/data/test_example_logs.py`). Link 2's is the weakest (its centre of mass is
3 cm from the joint-2 axis), so low-bias accelerations matter. The mass of link 1 does not
change any joint torque (its centre of mass lies on the joint-1 axis) and cannot be identified.

| link | URDF mass | scale | mass used |
|---|---|---|---|
{mass_rows}

## All parameters

| parameter | value |
|---|---|
{params_table(cfg)}
"""
    comments = [
        "Franka Panda joint log (simulated by engine/data/example_logs.py, see panda_joints.README.md)",
        "t [s], q [rad], qd [rad/s], tau [N m]",
    ]
    formats = {
        "t": "%.3f",
        **{f"q{j}": "%.6f" for j in range(1, 8)},
        **{f"qd{j}": "%.5f" for j in range(1, 8)},
        **{f"tau{j}": "%.4f" for j in range(1, 8)},
    }
    params = {**truth, "torque_noise": list(cfg.torque_noise), "position_noise": cfg.position_noise,
              "velocity_noise": cfg.velocity_noise, "urdf": "urdf/panda.urdf", "seed": cfg.seed}
    return ExampleLog(
        "panda_joints",
        columns,
        formats,
        mapping,
        readme,
        comments,
        truth={
            "q": q,
            "qd": qd,
            "qdd": qdd,
            "tau": tau,
            "params": params,
            "extra_files": {"panda_joints.params.json": json.dumps(params, indent=2) + "\n"},
        },
    )


# -- writing -----------------------------------------------------------------------------------

EXAMPLES: dict[str, Callable[[], ExampleLog]] = {
    "pendulum_friction": pendulum_log,
    "cartpole": cartpole_log,
    "rc_car_mocap": rc_car_log,
    "panda_joints": panda_log,
    "panda_friction": lambda: _panda_friction_log(),
}


def _panda_friction_log() -> ExampleLog:
    from engine.data.mujoco_logs import panda_friction_log  # it imports this module

    return panda_friction_log()


def write_example(example: ExampleLog, out_dir: str | os.PathLike) -> list[Path]:
    """Write ``<name>.csv``, ``<name>.mapping.json`` and ``<name>.README.md`` into ``out_dir``."""
    from engine.io import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [
        write_csv(
            out / f"{example.name}.csv", example.columns, comments=example.comments, fmt=example.formats
        ),
        example.mapping.save(out / f"{example.name}.mapping.json"),
        atomic_write_text(out / f"{example.name}.README.md", example.readme),
    ]
    for name, text in example.truth.get("extra_files", {}).items():
        paths.append(atomic_write_text(out / name, text))
    for path in paths:  # shipped data: readable by everyone (atomic writes create 0600 files)
        os.chmod(path, 0o644)
    return paths


def make_examples(out_dir: str | os.PathLike, names: list[str] | None = None, ctx=None) -> list[Path]:
    """Generate and write the example logs (all, or ``names``); returns the written paths."""
    names = list(EXAMPLES) if names is None else names
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        raise ValueError(f"unknown example log(s) {unknown}; choose from {sorted(EXAMPLES)}")
    written: list[Path] = []
    for i, name in enumerate(names):
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress(i / len(names), f"simulating {name}")
        written += write_example(EXAMPLES[name](), out_dir)
    if ctx is not None:
        ctx.progress(1.0, f"wrote {len(names)} example logs")
    return written
