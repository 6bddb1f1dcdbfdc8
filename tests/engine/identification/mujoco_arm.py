"""A joint log of the shipped 3-DOF arm (urdf/arm3.urdf) simulated by MuJoCo, the truth that
identification and learned models are judged against (a simulator nobody here wrote).

MuJoCo loads the URDF itself (its own parser and inertia handling); then the truth departs from
the URDF: joint viscous damping (``dof_damping``), dry friction (``dof_frictionloss``, a
friction constraint: ``-Fc sign(qd)`` while a joint slides, anything within ``[-Fc, Fc]`` while
it sticks), motor inertia (``dof_armature``) and link masses 20 % off (inertias about the CoM
and CoM positions as in the URDF). The arm follows a sum of sines per joint under a PD
controller (RK4, 1 ms); every 5 ms (200 Hz) the log records ``q``, ``qd`` and the commanded
torque, with white noise on the torques (and a little on ``q``). The sines' frequencies and
amplitudes keep the joint speeds mostly well above the smooth Coulomb model's ``v_s``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engine.paths import urdf_dir

URDF = urdf_dir() / "arm3.urdf"
JOINTS = ("joint1", "joint2", "joint3")
LINKS = ("link1", "link2", "link3")
TRUTH = {
    "damping": [0.30, 0.25, 0.08],      # N m s/rad
    "coulomb": [0.40, 0.30, 0.12],      # N m (MuJoCo frictionloss)
    "armature": [0.050, 0.040, 0.010],  # kg m^2
    "mass_factor": [1.2, 0.8, 1.2],     # truth = URDF x factor
}
TAU_NOISE = 0.03   # N m, standard deviation
Q_NOISE = 2e-5     # rad


def simulate(seconds: float = 12.0, seed: int = 0, rate: float = 200.0) -> dict:
    """``{"t" (N,), "q", "qd", "tau" (N, 3), "masses" {link: kg}}`` of the arm (module doc)."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(URDF))
    m.opt.timestep = 1e-3
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    dofs = [m.joint(j).dofadr[0] for j in JOINTS]
    for i, d in enumerate(dofs):
        m.dof_damping[d] = TRUTH["damping"][i]
        m.dof_frictionloss[d] = TRUTH["coulomb"][i]
        m.dof_armature[d] = TRUTH["armature"][i]
    masses = {}
    for i, link in enumerate(LINKS):
        b = m.body(link).id
        m.body_mass[b] *= TRUTH["mass_factor"][i]
        masses[link] = float(m.body_mass[b])
    data = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    # three sines per joint, incommensurate frequencies (Hz), amplitudes (rad)
    freq = np.array([[0.23, 0.41, 0.67], [0.31, 0.53, 0.79], [0.37, 0.59, 0.93]])
    amp = np.array([[0.9, 0.45, 0.25], [0.6, 0.35, 0.2], [0.9, 0.5, 0.3]])
    phase = rng.uniform(0, 2 * np.pi, size=freq.shape)
    centre = np.array([0.0, -0.3, 0.6])

    def reference(t):
        w = 2 * np.pi * freq
        q = centre + (amp * np.sin(w * t + phase)).sum(1)
        qd = (amp * w * np.cos(w * t + phase)).sum(1)
        return q, qd

    data.qpos[dofs], data.qvel[dofs] = reference(0.0)
    kp, kd = np.array([60.0, 80.0, 30.0]), np.array([6.0, 8.0, 3.0])
    every = int(round(1.0 / (rate * m.opt.timestep)))
    n = int(seconds * rate)
    out = {k: np.zeros((n, 3)) for k in ("q", "qd", "tau")}
    for k in range(n):
        qr, qdr = reference(data.time)
        tau = kp * (qr - data.qpos[dofs]) + kd * (qdr - data.qvel[dofs])
        out["q"][k], out["qd"][k], out["tau"][k] = data.qpos[dofs], data.qvel[dofs], tau
        data.qfrc_applied[dofs] = tau   # held over the log period (zero-order hold)
        for _ in range(every):
            mujoco.mj_step(m, data)
    out["t"] = np.arange(n) / rate
    out["tau_clean"] = out["tau"].copy()
    out["tau"] = out["tau"] + rng.normal(0, TAU_NOISE, size=out["tau"].shape)
    out["q"] = out["q"] + rng.normal(0, Q_NOISE, size=out["q"].shape)
    out["masses"] = masses
    return out


def write_log(folder: Path, seconds: float = 12.0, seed: int = 0, shuffle: bool = True) -> tuple[Path, Path]:
    """The simulated log as CSV (columns named after the joints, in a shuffled order when
    ``shuffle``) and its mapping JSON; returns ``(csv, mapping)``."""
    sim = simulate(seconds, seed)
    order = [1, 2, 0] if shuffle else [0, 1, 2]
    cols = ["t"] + [f"{JOINTS[i]}_pos" for i in order] + [f"{JOINTS[i]}_vel" for i in order] \
        + [f"{JOINTS[i]}_effort" for i in order]
    rows = np.column_stack([sim["t"]] + [sim["q"][:, i] for i in order] + [sim["qd"][:, i] for i in order]
                           + [sim["tau"][:, i] for i in order])
    csv = folder / "arm3_mujoco.csv"
    np.savetxt(csv, rows, delimiter=",", header=",".join(cols), comments="", fmt="%.9g")
    mapping = {"time": "t", "q": cols[1:4], "qd": cols[4:7], "u": cols[7:10],
               "units": {c: "rad" for c in cols[1:4]} | {c: "rad/s" for c in cols[4:7]}
               | {c: "N m" for c in cols[7:10]}, "name": "arm3 mujoco"}
    mp = folder / "arm3_mujoco.mapping.json"
    mp.write_text(json.dumps(mapping))
    return csv, mp
