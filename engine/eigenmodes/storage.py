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
from engine.eigenmodes.train import MODE_FORMAT, DesignedMode, learn_mode, mode_meta, simulate_mode
from engine.io import (
    CheckpointError,
    atomic_write_text,
    load_checkpoint,
    save_checkpoint,
    save_tensors,
    write_json,
)
from engine.jobs import JobContext
from engine.runs import Run, RunError, fingerprint
from engine.training_loop import TrainingDiverged

__all__ = [
    "FORMAT",
    "learn_into",
    "load_mode",
    "save_mode",
    "stabilised_csv",
    "trajectory_csv",
    "write_trajectory_csv",
]

FORMAT = MODE_FORMAT


def _mode_files(mode) -> tuple[dict, dict, dict]:
    meta = mode_meta(mode.design, mode.period, mode.checks, mode.history, mode.seconds)
    return mode.potential.state_dict(), meta, {"trajectory.csv": trajectory_csv(mode)}


def save_mode(mode, directory: str | Path) -> Path:
    """Write the mode into ``directory`` (created if needed): ``mode.safetensors``, ``mode.json``
    and ``trajectory.csv`` as one save (all three or none; the folder's other files untouched)."""
    state, meta, extra = _mode_files(mode)
    return save_checkpoint(directory, state, meta, name="mode", extra_files=extra)


def learn_into(design: DesignConfig | None, out_dir: str | Path | None = None, ctx: JobContext | None = None,
               preview=None, resume_dir: str | Path | None = None, epochs: int | None = None,
               checkpoint_every: int = 50, device: str | None = None):
    """Learn a mode as a run (:mod:`engine.runs`): in ``out_dir`` (a new run) or continuing the
    run in ``resume_dir`` (``epochs``: the new total, to extend a finished run). The mode files
    take their names only when the run ends well; a cancel, an interrupt or a divergence leaves
    the folder's earlier files as they were (the run's record says what was kept). The whole
    training state is saved every ``checkpoint_every`` epochs and at the end. Returns the
    :class:`~engine.eigenmodes.train.DesignedMode`; the run folder is ``mode.run_dir``. ``device``
    (a resume): where it goes on (default: the run's own)."""
    if resume_dir is not None:
        run = Run.open(resume_dir, "eigenmode", write=True)   # held until the run ends
        with run.released_on_error():   # a refused resume leaves the folder free
            design = DesignConfig.from_dict(run.section("design"))
            done = run.epoch
            target = int(epochs) if epochs is not None else design.train.epochs
            if target <= done:
                raise RunError(
                    f"{run.path}: the run has {done} epochs; pass --epochs N above {done} to extend it"
                )
            design.train.epochs = target
            design.train.device = device if device is not None else design.train.device
            run.config["design"] = design.to_dict()
            run.info["status"], run.info["message"] = "running", f"resumed at epoch {done}"
    else:
        if design is None or out_dir is None:
            raise ValueError("a new mode needs its design and the folder to learn it into")
        design.validate()
        run = Run.create(out_dir, "eigenmode", {"design": design.to_dict()},
                         {"system": fingerprint(design.to_dict()["plant"]),
                          "data": fingerprint(design.to_dict()["task"])})

    def cancelled() -> str:
        return (f"cancelled before the end; the checkpoint of epoch {run.epoch} is kept in {run.path} "
                "(continue with --resume); no mode was written")

    with run.recording(cancelled, passthrough=(TrainingDiverged,)):   # a divergence records itself
        mode = learn_mode(design, ctx, preview=preview, run=run, resume=resume_dir is not None,
                          checkpoint_every=checkpoint_every)
    state, meta, extra = _mode_files(mode)

    def write(tmp):
        save_tensors(tmp / "mode.safetensors", state)
        write_json(tmp / "mode.json", meta)
        for name, text in extra.items():
            atomic_write_text(tmp / name, text)

    mode.run_dir = run.finish(write, {k: v for k, v in mode.checks.items() if isinstance(v, (int, float))},
                              f"done: {design.train.epochs} epochs")
    return mode


def load_mode(directory: str | Path):
    """Read a mode written by :func:`save_mode`; re-simulates its trajectory. Errors name the file."""
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
    return DesignedMode(
        design=design,
        potential=potential,
        period=period,
        history=meta.get("history", {}),
        checks=meta.get("checks", {}),
        trajectory=traj,
        seconds=float(meta.get("seconds", 0.0)),
    )


def _csv(columns: dict[str, np.ndarray]) -> str:
    names = list(columns)
    data = np.column_stack([np.asarray(columns[n], dtype=float) for n in names])
    buf = io.StringIO()
    np.savetxt(buf, data, delimiter=",", header=",".join(names), comments="", fmt="%.10g")
    return buf.getvalue()


def trajectory_csv(mode) -> str:
    """The mode's closed-loop trajectory over one period as CSV text (SI units)."""
    tr = mode.trajectory
    return _csv(
        {
            "t": tr["t"],
            "q1": tr["q"][:, 0],
            "q2": tr["q"][:, 1],
            "p1": tr["p"][:, 0],
            "p2": tr["p"][:, 1],
            "u1": tr["u"][:, 0],
            "u2": tr["u"][:, 1],
            "energy": tr["energy"],
            "elbow_x": tr["elbow"][:, 0],
            "elbow_y": tr["elbow"][:, 1],
            "tip_x": tr["tip"][:, 0],
            "tip_y": tr["tip"][:, 1],
        }
    )


def stabilised_csv(result) -> str:
    """A stabilised run as CSV text."""
    return _csv({"t": result.t, "q1": result.q[:, 0], "q2": result.q[:, 1], "p1": result.p[:, 0],
                 "p2": result.p[:, 1], "energy": result.energy, "position_distance": result.position_distance,
                 "momentum_distance": result.momentum_distance, "uE1": result.u_energy[:, 0],
                 "uE2": result.u_energy[:, 1], "uM1": result.u_mode[:, 0], "uM2": result.u_mode[:, 1],
                 "uD1": result.u_damping[:, 0], "uD2": result.u_damping[:, 1]})


def write_trajectory_csv(text: str, path: str | Path) -> Path:
    return atomic_write_text(path, text)
