"""Saving and loading a designed mode (safetensors + JSON, never pickle) and CSV export.

A mode folder holds ``mode.safetensors`` (the potential's weights) and ``mode.json``
(format version, the design, the learned period, checks and loss history).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch

from engine.eigenmodes.config import ConfigError, DesignConfig
from engine.eigenmodes.potential import PotentialMLP
from engine.io import CheckpointError, atomic_write_text, load_checkpoint, save_checkpoint

__all__ = ["FORMAT", "load_mode", "save_mode", "stabilised_csv", "trajectory_csv", "write_trajectory_csv"]

FORMAT = "lagrange-studio/eigenmode/1"


def save_mode(mode, directory: str | Path) -> Path:
    """Write the mode into ``directory`` (created if needed); atomic per file."""
    meta = {"format": FORMAT, "design": mode.design.to_dict(), "period": mode.period,
            "checks": mode.checks, "history": mode.history, "seconds": mode.seconds}
    return save_checkpoint(directory, mode.potential.state_dict(), meta, name="mode")


def load_mode(directory: str | Path):
    """Read a mode written by :func:`save_mode`; re-simulates its trajectory. Errors name the file."""
    from engine.eigenmodes.train import DesignedMode, simulate_mode

    directory = Path(directory)
    state, meta = load_checkpoint(directory, name="mode")
    where = directory / "mode.json"
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{where}: field 'format' is {meta.get('format')!r}, expected {FORMAT!r}")
    try:
        design = DesignConfig.from_dict(meta["design"])
        design.validate()
        period = float(meta["period"])
    except KeyError as exc:
        raise CheckpointError(f"{where}: missing field {exc}") from exc
    except (ConfigError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{where}: {exc}") from exc
    potential = PotentialMLP(design.potential, dtype=torch.float64)
    try:
        potential.load_state_dict({k: v.to(torch.float64) for k, v in state.items()})
    except RuntimeError as exc:
        raise CheckpointError(f"{directory / 'mode.safetensors'}: weights do not match the potential "
                              f"described in mode.json ({exc})") from exc
    for p in potential.parameters():
        p.requires_grad_(False)
    traj = simulate_mode(potential, design, period)
    return DesignedMode(design=design, potential=potential, period=period, history=meta.get("history", {}),
                        checks=meta.get("checks", {}), trajectory=traj, seconds=float(meta.get("seconds", 0.0)))


def _csv(columns: dict[str, np.ndarray]) -> str:
    names = list(columns)
    data = np.column_stack([np.asarray(columns[n], dtype=float) for n in names])
    buf = io.StringIO()
    np.savetxt(buf, data, delimiter=",", header=",".join(names), comments="", fmt="%.10g")
    return buf.getvalue()


def trajectory_csv(mode) -> str:
    """The mode's closed-loop trajectory over one period as CSV text (SI units)."""
    tr = mode.trajectory
    return _csv({"t": tr["t"], "q1": tr["q"][:, 0], "q2": tr["q"][:, 1], "p1": tr["p"][:, 0], "p2": tr["p"][:, 1],
                 "u1": tr["u"][:, 0], "u2": tr["u"][:, 1], "energy": tr["energy"],
                 "elbow_x": tr["elbow"][:, 0], "elbow_y": tr["elbow"][:, 1],
                 "tip_x": tr["tip"][:, 0], "tip_y": tr["tip"][:, 1]})


def stabilised_csv(result) -> str:
    """A stabilised run as CSV text."""
    return _csv({"t": result.t, "q1": result.q[:, 0], "q2": result.q[:, 1], "p1": result.p[:, 0],
                 "p2": result.p[:, 1], "energy": result.energy, "position_distance": result.position_distance,
                 "momentum_distance": result.momentum_distance, "uE1": result.u_energy[:, 0],
                 "uE2": result.u_energy[:, 1], "uM1": result.u_mode[:, 0], "uM2": result.u_mode[:, 1],
                 "uD1": result.u_damping[:, 0], "uD2": result.u_damping[:, 1]})


def write_trajectory_csv(text: str, path: str | Path) -> Path:
    return atomic_write_text(path, text)
