"""Example robot logs simulated by MuJoCo (a simulator nobody here wrote), with joint friction and
motor inertia the robot file does not have: the truth that identification and the learned models
are judged against.

- ``panda_friction``: the shipped Panda (``urdf/panda.urdf``, the library robot ``panda``: its
  primitives need no mesh files, so MuJoCo's own URDF parser loads it as it is) with viscous
  damping (``dof_damping``), dry friction (``dof_frictionloss``: ``-Fc sign(qd)`` while a joint
  slides, anything within ``[-Fc, Fc]`` while it sticks), armature (``dof_armature``, reflected
  motor inertia) and link masses off the URDF's. The arm tracks a sum of sines per joint within its
  limits under a PD controller with gravity and Coriolis compensation of the true model, updated at
  1 kHz (Franka's torque loop); MuJoCo steps at 1 ms (RK4, contacts off, so the links' primitives
  never touch) and every 5 ms (200 Hz) the log records q, qd and the torque commanded at that
  instant, with sensor noise. (Until the controller ran at 1 kHz it ran at the log's 200 Hz: each
  torque then held for 5 ms while the arm's acceleration changed under it, a timing error of about
  the noise level that no model of the joint torques can follow.)

:func:`panda_friction_log` returns an :class:`~engine.data.example_log_types.ExampleLog`; its README is
written from :class:`PandaFrictionLogConfig`, so the shipped description always matches the
generator (``python -m engine logs make-examples --out resources/logs --only panda_friction``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from engine.data.example_log_types import ExampleLog, params_table
from engine.logs.mapping import LogMapping

__all__ = ["PANDA_JOINTS", "PANDA_LINKS", "PandaFrictionLogConfig", "panda_friction_log", "panda_friction_truth",
           "simulate_panda"]

PANDA_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
PANDA_LINKS = tuple(f"panda_link{i}" for i in range(1, 8))


@dataclass(frozen=True)
class PandaFrictionLogConfig:
    """The Panda with friction and motor inertia (SI units; per-joint tuples for joints 1-7)."""

    duration: float = 20.0           # s (the shipped file stays under 1 MB)
    rate: float = 200.0              # Hz, logged
    control_rate: float = 1000.0     # Hz, the PD controller's torque updates (Franka's 1 kHz loop)
    timestep: float = 1e-3           # s, MuJoCo's step (RK4)
    seed: int = 7
    damping: tuple[float, ...] = (0.6, 0.6, 0.5, 0.5, 0.2, 0.2, 0.1)            # N m s/rad
    coulomb: tuple[float, ...] = (0.8, 0.8, 0.6, 0.6, 0.3, 0.3, 0.2)            # N m (frictionloss)
    armature: tuple[float, ...] = (0.15, 0.15, 0.12, 0.12, 0.05, 0.05, 0.03)    # kg m^2
    mass_factor: tuple[float, ...] = (1.0, 0.85, 1.15, 0.9, 1.1, 0.85, 1.0)     # truth = URDF x factor
    sines_per_joint: int = 4
    frequency_band: tuple[float, float] = (0.1, 0.6)   # Hz
    amplitude_fraction: float = 0.4  # of each joint's half range (at most max_amplitude)
    max_amplitude: float = 1.2       # rad, sum of the sines' amplitudes
    velocity_fraction: float = 0.8   # of each joint's velocity limit, at most
    kp: tuple[float, ...] = (400.0, 400.0, 300.0, 300.0, 100.0, 100.0, 50.0)    # N m / rad
    kd: tuple[float, ...] = (40.0, 40.0, 30.0, 30.0, 10.0, 10.0, 5.0)           # N m s / rad
    position_noise: float = 2e-5     # rad, Gaussian
    velocity_noise: float = 5e-3     # rad/s, Gaussian
    torque_noise: tuple[float, ...] = (0.05, 0.05, 0.05, 0.05, 0.02, 0.02, 0.02)  # N m, Gaussian


def panda_friction_truth(cfg: PandaFrictionLogConfig = PandaFrictionLogConfig()) -> dict:
    """The simulated robot's departures from ``urdf/panda.urdf``: per joint ``damping``,
    ``coulomb``, ``armature``; per link the URDF's and the true ``mass`` (links as the engine
    reads the URDF; MuJoCo merges the fixed hand and fingers into link 7, whose factor is therefore
    kept at 1 so that its truth is the URDF's in both readings)."""
    from engine.paths import urdf_dir
    from engine.robots import RobotModel

    robot = RobotModel.from_urdf(urdf_dir() / "panda.urdf")
    nominal = [float(robot.link_mass(link)) for link in PANDA_LINKS]
    return {"joints": list(PANDA_JOINTS), "damping": list(cfg.damping), "coulomb": list(cfg.coulomb),
            "armature": list(cfg.armature), "links": list(PANDA_LINKS), "nominal_mass": nominal,
            "mass_factor": list(cfg.mass_factor), "mass": [a * k for a, k in zip(nominal, cfg.mass_factor)]}


def _reference(cfg: PandaFrictionLogConfig, lower, upper, vmax, rng):
    """The sums of sines (q, qd as functions of t) within the joints' ranges and speeds."""
    n, k = len(PANDA_JOINTS), cfg.sines_per_joint
    freq = rng.uniform(*cfg.frequency_band, (n, k))
    phase = rng.uniform(0, 2 * np.pi, (n, k))
    w = rng.uniform(0.5, 1.0, (n, k))
    w /= w.sum(1, keepdims=True)
    amp = np.minimum(cfg.amplitude_fraction * (upper - lower) / 2, cfg.max_amplitude)
    omega = 2 * np.pi * freq
    amp = amp * np.minimum(1.0, cfg.velocity_fraction * vmax / (np.sum(w * omega, 1)))
    a = amp[:, None] * w
    centre = (upper + lower) / 2

    def reference(t: float):
        arg = omega * t + phase
        return centre + (a * np.sin(arg)).sum(1), (a * omega * np.cos(arg)).sum(1)

    return reference


def simulate_panda(cfg: PandaFrictionLogConfig = PandaFrictionLogConfig()) -> dict:
    """``{"t" (N,), "q", "qd", "tau" (N, 7) noisy; "q_true", "qd_true", "tau_true"}`` (module doc)."""
    import mujoco

    from engine.paths import urdf_dir

    m = mujoco.MjModel.from_xml_path(str(urdf_dir() / "panda.urdf"))
    m.opt.timestep = cfg.timestep
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    dofs = np.array([m.joint(j).dofadr[0] for j in PANDA_JOINTS])
    jids = [m.joint(j).id for j in PANDA_JOINTS]
    m.dof_damping[dofs] = cfg.damping
    m.dof_frictionloss[dofs] = cfg.coulomb
    m.dof_armature[dofs] = cfg.armature
    for link, k in zip(PANDA_LINKS, cfg.mass_factor):
        m.body_mass[m.body(link).id] *= k
    lower, upper = m.jnt_range[jids, 0].copy(), m.jnt_range[jids, 1].copy()
    from engine.robots import RobotModel

    vmax = np.asarray(RobotModel.from_urdf(urdf_dir() / "panda.urdf").joint_limits.velocity, dtype=float)[:7]
    rng = np.random.default_rng(cfg.seed)
    reference = _reference(cfg, lower, upper, vmax, rng)
    data = mujoco.MjData(m)
    data.qpos[dofs], data.qvel[dofs] = reference(0.0)
    kp, kd = np.asarray(cfg.kp), np.asarray(cfg.kd)
    every = int(round(1.0 / (cfg.rate * cfg.timestep)))            # MuJoCo steps per logged sample
    hold = int(round(1.0 / (cfg.control_rate * cfg.timestep)))     # MuJoCo steps per torque update
    if hold < 1 or every % hold:
        raise ValueError(f"PandaFrictionLogConfig: the log period 1/rate ({1 / cfg.rate:g} s) must be a multiple of "
                         f"the control period 1/control_rate ({1 / cfg.control_rate:g} s), itself >= timestep")
    n = int(round(cfg.duration * cfg.rate)) + 1
    out = {k: np.zeros((n, 7)) for k in ("q_true", "qd_true", "tau_true")}
    for i in range(n):
        for step in range(0, every, hold):
            mujoco.mj_forward(m, data)
            qr, qdr = reference(data.time)
            q, qd = data.qpos[dofs].copy(), data.qvel[dofs].copy()
            tau = data.qfrc_bias[dofs] + kp * (qr - q) + kd * (qdr - qd)
            if step == 0:   # logged: the state at the sample and the torque commanded from it
                out["q_true"][i], out["qd_true"][i], out["tau_true"][i] = q, qd, tau
            data.qfrc_applied[dofs] = tau   # held over the control period (zero-order hold)
            for _ in range(hold):
                mujoco.mj_step(m, data)
    out["t"] = np.arange(n) / cfg.rate
    out["q"] = out["q_true"] + rng.normal(0, cfg.position_noise, (n, 7))
    out["qd"] = out["qd_true"] + rng.normal(0, cfg.velocity_noise, (n, 7))
    out["tau"] = out["tau_true"] + rng.normal(0, 1, (n, 7)) * np.asarray(cfg.torque_noise)
    out["lower"], out["upper"] = lower, upper
    return out


def panda_friction_log(cfg: PandaFrictionLogConfig = PandaFrictionLogConfig()) -> ExampleLog:
    """The ``panda_friction`` example log (module doc)."""
    sim = simulate_panda(cfg)
    truth = panda_friction_truth(cfg)
    j = range(1, 8)
    columns = {"t": sim["t"]}
    columns.update({f"q{i}": sim["q"][:, i - 1] for i in j})
    columns.update({f"qd{i}": sim["qd"][:, i - 1] for i in j})
    columns.update({f"tau{i}": sim["tau"][:, i - 1] for i in j})
    mapping = LogMapping(time="t", q=[f"q{i}" for i in j], qd=[f"qd{i}" for i in j], u=[f"tau{i}" for i in j],
                         units={"t": "s", **{f"q{i}": "rad" for i in j}, **{f"qd{i}": "rad/s" for i in j},
                                **{f"tau{i}": "N m" for i in j}},
                         name="panda_friction")
    joint_rows = "\n".join(f"| `{name}` | {d} | {c} | {a} |" for name, d, c, a in
                           zip(PANDA_JOINTS, cfg.damping, cfg.coulomb, cfg.armature))
    mass_rows = "\n".join(f"| `{link}` | {m0:.6f} | {k} | {m:.6f} |" for link, m0, k, m in
                          zip(truth["links"], truth["nominal_mass"], truth["mass_factor"], truth["mass"]))
    n = len(sim["t"])
    readme = f"""# panda_friction.csv

A Franka Emika Panda joint log with joint friction and motor inertia, simulated by MuJoCo:
positions, velocities and commanded torques of its 7 joints. Joint columns are in the order of
`panda_joint1` ... `panda_joint7` (robot `panda`, `urdf/panda.urdf`).

| column | unit | meaning |
|---|---|---|
| `t` | s | timestamp, {cfg.rate:g} Hz |
| `q1` ... `q7` | rad | joint positions |
| `qd1` ... `qd7` | rad/s | joint velocities (as the robot reports them) |
| `tau1` ... `tau7` | N m | commanded joint torques |

## How it was made

`engine/data/mujoco_logs.py::panda_friction_log`
(`python -m engine logs make-examples --out resources/logs --only panda_friction`).

- Simulator: MuJoCo loads `urdf/panda.urdf` with its own URDF parser (the file's primitives need
  no meshes; MuJoCo merges the fixed hand and fingers into link 7). Then the truth departs from
  the URDF: per joint viscous damping (`dof_damping`), dry friction (`dof_frictionloss`, a
  friction constraint: `-Fc sign(qd)` while the joint slides, anything within [-Fc, Fc] while it
  sticks) and armature (`dof_armature`, reflected motor inertia, added to the diagonal of M), and
  each link's mass times a factor (centres of mass and rotational inertias as in the URDF; link
  7's factor is 1 because MuJoCo's link 7 carries the merged hand and fingers). The
  URDF's own `damping="0.003"` is replaced. Contacts are off; MuJoCo steps at
  {cfg.timestep * 1e3:g} ms with RK4.
- Motion: per joint a sum of {cfg.sines_per_joint} sines (frequencies uniform in
  {cfg.frequency_band[0]}-{cfg.frequency_band[1]} Hz, random phases and weights) about the middle of
  the joint's range, amplitude {cfg.amplitude_fraction} x half the range (at most {cfg.max_amplitude} rad),
  scaled to stay under {cfg.velocity_fraction} x the velocity limit. A PD controller tracks it with
  the true model's gravity and Coriolis torques added (MuJoCo's `qfrc_bias`), kp = {list(cfg.kp)},
  kd = {list(cfg.kd)}; friction and armature are not compensated. The controller runs at
  {cfg.control_rate:g} Hz (the torque is held for each {1e3 / cfg.control_rate:g} ms control period, as
  Franka's 1 kHz torque loop does).
- Logged at {cfg.rate:g} Hz (every {round(cfg.control_rate / cfg.rate)}th control period): the state at the
  start of the period and the torque commanded for it.
- Noise (Gaussian): positions {cfg.position_noise} rad, velocities {cfg.velocity_noise} rad/s,
  torques sigma = {list(cfg.torque_noise)} N m for joints 1-7.
- Duration {cfg.duration:g} s, {n} rows, seed {cfg.seed}.

## Truth

| joint | damping (N m s/rad) | Coulomb (N m) | armature (kg m^2) |
|---|---|---|---|
{joint_rows}

| link | URDF mass (kg) | factor | true mass (kg) |
|---|---|---|---|
{mass_rows}

The same values are in `panda_friction.params.json`. Link 1's mass changes no joint torque (its
centre of mass lies on the joint-1 axis) and cannot be identified from any motion. Link 2's mass
acts on joint 2 through its centre of mass 4.7 cm off the joint axis (about 0.25 N m of gravity
torque, next to tens of N m from the links beyond it) and is weakly excited by this motion: its
estimate varies from log to log by tens of per cent (identification reports its standard deviation).

## All parameters

| parameter | value |
|---|---|
{params_table(cfg)}
"""
    comments = ["Franka Panda with friction and motor inertia (simulated by MuJoCo, engine/data/mujoco_logs.py, "
                "see panda_friction.README.md)", "t [s], q [rad], qd [rad/s], tau [N m] (commanded)"]
    formats = {"t": "%.3f", **{f"q{i}": "%.6f" for i in j}, **{f"qd{i}": "%.4f" for i in j},
               **{f"tau{i}": "%.3f" for i in j}}
    params = {**truth, "torque_noise": list(cfg.torque_noise), "position_noise": cfg.position_noise,
              "velocity_noise": cfg.velocity_noise, "urdf": "urdf/panda.urdf", "robot": "panda", "seed": cfg.seed,
              "rate": cfg.rate, "duration": cfg.duration}
    return ExampleLog("panda_friction", columns, formats, mapping, readme, comments,
                      truth={**sim, "params": params,
                             "extra_files": {"panda_friction.params.json": json.dumps(params, indent=2) + "\n"}})
