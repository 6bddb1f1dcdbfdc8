"""Comparing models on a hardware log of a named robot, without Qt: the robot models (the robot file
as it is, the rigid body identified from the log, the hybrid and the learnable robot) beside the
learned ones, in one job through :func:`engine.training.compare.compare_on_log`.

:func:`robot_compare_job` returns a :class:`RobotComparison`: the engine's rows (torque RMSE in
N m beside the noise level, rollout RMSE at 0.1, 0.5 and 1 s, the reason where a model has none)
and one :class:`~app.workspaces.model_lab.state.ModelResult`-like entry per model that ended
well, with its model (Show on robot plays it as the ghost) and its plot data. The identified
robot is kept as a URDF with its actuation JSON beside it ("Use identified robot").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.logs import LogMapping, PrepareConfig
from engine.models import model_names
from engine.training import compare as lc
from engine.training.compare import LogCompareConfig
from engine.training.robot_compare import ROLLOUT_HORIZONS

__all__ = ["DEFAULT_MODELS", "ROBOT_MODELS", "ROBOT_TITLES", "CompareEntry", "RobotComparison", "compare_model_names",
           "robot_choices", "robot_compare_job", "robot_named_like", "table_row"]

# the rows that need the robot, in the order the table lists them
ROBOT_MODELS = ("urdf", "rigid-body", "hybrid-rk4", "robot-rk4")
DEFAULT_MODELS = ("urdf", "rigid-body", "robot-rk4", "node-rk4")
ROBOT_TITLES = {"urdf": "the robot file as it is (nothing trained)",
                "rigid-body": "the rigid body identified from the log's torques (least squares, friction, armature)",
                "hybrid-rk4": "the identified rigid body plus a learned residual",
                "robot-rk4": "the robot's parameters learned by gradient from its rollouts"}


def compare_model_names() -> list[str]:
    """Every model a robot comparison can list: the robot models first, then the learned ones."""
    return list(ROBOT_MODELS) + [m for m in model_names() if m not in ROBOT_MODELS]


def robot_choices() -> list[tuple[str, str]]:
    """``(title, source)`` of the library's fixed-base robots worth offering (cheap: no URDF parsed)."""
    from engine.robots.library import list_robots

    return [(e.title or e.name, e.name) for e in list_robots()]


def robot_named_like(log_path: str | Path) -> str | None:
    """A library robot whose name starts the log's file name ("panda_joints.csv" -> "panda"), or None."""
    from engine.robots.library import list_robots

    stem = Path(log_path).stem.lower()
    names = sorted((e.name for e in list_robots()), key=len, reverse=True)
    return next((n for n in names if stem.startswith(n.lower())), None)


@dataclass(eq=False)
class CompareEntry:
    """One model of a robot comparison, shaped as the compare view's runs are."""

    name: str
    model_type: str
    index: int
    row: dict
    curves: dict
    model: object | None = None
    losses: list = field(default_factory=list)
    train_config: object | None = None


@dataclass
class RobotComparison:
    """A finished comparison: the ``robot`` as named, the engine's ``rows``, the ``entries`` the
    compare view shows, the ``identified`` robot file (None without the rigid-body row), the
    setup's ``notes`` and the wall time."""

    robot: str
    rows: list[dict]
    entries: list[CompareEntry]
    identified: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    joint_names: list[str] = field(default_factory=list)   # the order of the per-joint values
    mapping: dict | None = None     # the log's mapping in the robot's joint order (what the models saw)


def table_row(row: dict) -> dict:
    """The engine's row with the flat keys the metrics table reads: ``rollout_rmse_<s>`` (rad) per
    horizon, and ``note``: why a model failed or gives no torque."""
    out = dict(row)
    rollout = row.get("rollout_rmse") or {}
    for s in ROLLOUT_HORIZONS:
        out[f"rollout_rmse_{s:g}"] = rollout.get(f"{s:g}")
    out["note"] = row.get("error") or row.get("torque_note")
    out["type"] = row.get("model")
    return out


def robot_compare_job(source: dict, robot: str, models, folder: str | Path, epochs: int | None = None,
                      first_index: int = 0, lagrangian_prior: str | None = None):
    """A job ``job(ctx) -> RobotComparison`` comparing ``models`` on the log ``source`` describes
    (the Model lab's ``{"kind": "log", "path", "mapping", "prepare", "compare"}``) with ``robot``
    (a library name or a URDF, xacro or MJCF path). Each model's run folder and the identified
    robot go under ``folder``. ``lagrangian_prior``: ``"robot"`` (the Lagrangian models as residuals
    on the identified rigid body) or ``"none"`` (from scratch); None: the log's compare settings.
    Bad input (joints that do not match, no torques) fails before any training, with the engine's
    plain message."""
    if source.get("kind") != "log":
        raise ValueError("a robot comparison needs a hardware log: open one in the Hardware log tab")
    if not robot:
        raise ValueError("choose the robot whose log this is")
    models = [m for m in models]
    if not models:
        raise ValueError("choose at least one model to compare")
    mapping = LogMapping.from_dict(source["mapping"])
    prepare = PrepareConfig.from_dict(source["prepare"])
    config = LogCompareConfig(**{**source.get("compare", {}),
                                 **({"lagrangian_prior": lagrangian_prior} if lagrangian_prior else {})})
    folder = Path(folder)

    def identify(prepared, model, kinds, ctx):
        from engine.identification.from_log import LogIdentificationConfig, identify_from_log

        return identify_from_log(prepared, model, LogIdentificationConfig(learn=kinds, blackbox_steps=0), ctx)

    def job(ctx) -> RobotComparison:
        t0 = time.perf_counter()
        folder.mkdir(parents=True, exist_ok=True)
        mapping_path = mapping.save(folder / "mapping.json")
        keep: dict = {}
        rows = lc.compare_on_log(source["path"], mapping_path, models, epochs, prepare=prepare, config=config,
                                 ctx=ctx, runs_dir=folder / "runs", robot=robot, identify=identify, keep=keep)
        entries = []
        for i, row in enumerate(rows):
            kept = keep.get(row["model"]) or {}
            entries.append(CompareEntry(name=row["model"], model_type=row["model"], index=first_index + i,
                                        row=table_row(row), curves=kept.get("curves") or {},
                                        model=kept.get("model")))
        identified = next((r.get("saved_urdf") for r in rows if r.get("saved_urdf")), None)
        notes = list(rows[0].get("notes") or []) if rows else []
        from engine.logs.robot_order import order_for_robot
        from engine.robots.library import load_robot

        names = list(load_robot(robot).joint_names)
        ordered, _ = order_for_robot(mapping, names, repr(robot))
        return RobotComparison(robot=robot, rows=rows, entries=entries, identified=identified, notes=notes,
                               seconds=time.perf_counter() - t0, joint_names=names, mapping=ordered.to_dict())

    return job
