"""A log comparison with a robot named: the log matched to the robot, the rigid-body rows
(``urdf``: the robot file as it is; ``rigid-body``: identified from the log's torques), and the
torque metrics of every row.

:func:`engine.training.compare.compare_on_log` calls these when it is given ``robot``:

- :func:`robot_setup` loads the robot, puts the mapping in its joint order
  (:func:`engine.logs.robot_order.order_for_robot`; a mismatch is refused before any training)
  and gives the spec overrides of the robot models (``robot-rk4``...: the robot, learning the
  masses, centres of mass and inertias and every joint's damping, Coulomb friction, armature and
  offset from the robot file's values) and of the Lagrangian models (L-NODE, SyMo, E2E-SyMo:
  per-joint learned dissipation, :mod:`engine.models.dissipation`);
- :func:`torque_samples` prepares the same log for inverse dynamics (Savitzky-Golay derivatives
  of ``q``, torques not smoothed, the same grid and split) and gives its validation samples and
  noise level;
- :func:`identify_robot_file` identifies the rigid body with the ``identify`` function it is
  given (:func:`engine.identification.from_log.identify_from_log`, a package of this package's
  layer, so the caller hands it in: the CLI and the app do) and writes it as a robot file (URDF
  and actuation JSON); :func:`rigid_body_row` rolls a robot file out as a robot model, so the
  identified robot (``rigid-body``) and the robot file unchanged (``urdf``) get the same rollout
  metrics as the learned models; ``hybrid-rk4`` (:mod:`engine.models.hybrid`) trains a residual
  on top of the identified robot, and ``robot-rk4`` (:data:`REFINE_IDENTIFIED`) starts from the
  identified robot (when the comparison has an ``identify``) and refines every parameter by
  rollouts, both with smaller learning rates (:data:`ROBOT_LEARNING_RATES`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.logs.torques import sliding_rmse
from engine.training.evaluation import evaluate_model, metrics_row
from engine.training.torque_metrics import torque_residuals

if TYPE_CHECKING:
    from engine.logs import LogMapping
    from engine.robots.model import RobotModel

__all__ = ["ON_IDENTIFIED", "REFINE_IDENTIFIED", "RIGID_BODY_MODELS", "ROBOT_LEARNING_RATES", "ROBOT_LEARN",
           "RobotSetup", "check_models", "identify_robot_file",
           "rigid_body_row", "robot_setup",
           "rollout_rmse", "torque_columns", "torque_samples", "torque_scale_check"]

# rows a comparison computes without training (they need a robot)
RIGID_BODY_MODELS = ("rigid-body", "urdf")
# models trained on top of the identified robot (engine/models/hybrid.py)
ON_IDENTIFIED = ("hybrid-rk4",)
# robot models that start from the identified robot and refine every parameter by rollouts
# (identify, then refine: the field's practice; from the robot file's values they start far off)
REFINE_IDENTIFIED = ("robot-rk4", "robot-midpoint")
# learning rates on a robot's log relative to the comparison's (a residual on top of a good model
# and parameters that start identified take small steps)
ROBOT_LEARNING_RATES = {"hybrid-rk4": 0.3, "robot-rk4": 0.1, "robot-midpoint": 0.1}
# what the robot models learn on a robot's log
ROBOT_LEARN = ("mass", "com", "inertia", "damping", "coulomb", "armature", "offset")
# the identification behind the rigid-body row
IDENTIFY_KINDS = ("mass", "damping", "coulomb", "armature", "offset")
ROLLOUT_HORIZONS = (0.1, 0.5, 1.0)   # s


@dataclass
class RobotSetup:
    """A robot for a log comparison: ``source`` as named, ``model`` the full
    :class:`~engine.robots.model.RobotModel`, ``mapping`` the log mapping in its joint order,
    ``notes`` plain sentences, ``spec_overrides`` for the robot models."""

    source: str
    model: RobotModel
    mapping: LogMapping
    notes: list[str]
    spec_overrides: dict


def robot_setup(robot: str, mapping, robot_substeps: int = 4) -> RobotSetup:
    """Load ``robot`` and match ``mapping`` to it (module doc); ``ValueError`` / ``LogError``
    naming the robot or the joints, before any work."""
    from engine.logs.robot_order import order_for_robot
    from engine.models.robot_source import load_rigid_body
    from engine.robots.library import load_robot

    model = load_robot(robot)
    ordered, notes = order_for_robot(mapping, list(model.joint_names), repr(robot))
    start = load_rigid_body(robot)          # reads the actuation file: refused here if it is malformed
    notes.extend(start.notes)
    # the Lagrangian models get their place for friction (learned per-joint dissipation)
    overrides = {"robot": str(robot), "robot_learn": ROBOT_LEARN, "robot_perturb": 0.0,
                 "robot_substeps": int(robot_substeps), "dissipation": "joint"}
    return RobotSetup(source=str(robot), model=model, mapping=ordered, notes=notes, spec_overrides=overrides)


def torque_samples(table, mapping, prepare, trim: int = 20):
    """``(prepared, samples)``: the log prepared for inverse dynamics (module doc) and
    ``{"q", "qd", "qdd", "tau"}`` (M, n) of its validation part (``trim`` samples off each end of
    the log), plus ``noise`` (n,) the torque noise per joint (N m)."""
    from engine.logs import prepare_log
    from engine.logs.torques import robot_prepare_config, torque_noise_level

    config = robot_prepare_config(**{k: getattr(prepare, k) for k in (
        "dt", "t_start", "t_end", "interpolation", "train_ranges", "val_ranges", "val_fraction", "time_gaps",
        "gap_factor", "allow_large", "unwrap_angles")})
    prepared = prepare_log(table, mapping, config)
    n = prepared.n_samples
    inner = np.zeros(n, dtype=bool)
    inner[trim:n - trim] = True
    mask = prepared.val_mask & inner
    assert prepared.qdd is not None   # robot_prepare_config asks for accelerations
    samples = {"q": prepared.q[mask], "qd": prepared.qd[mask], "qdd": prepared.qdd[mask], "tau": prepared.u[mask],
               "noise": torque_noise_level(prepared.u, trim=trim)}
    return prepared, samples


def rollout_rmse(horizon_mse: list, h: float) -> dict[str, float]:
    """``{"0.1": rad, ...}``: the RMSE of q at the horizons of :data:`ROLLOUT_HORIZONS` the
    rollouts reach (``horizon_mse``: the MSE after each step of ``h`` seconds)."""
    out = {}
    for s in ROLLOUT_HORIZONS:
        k = int(round(s / h))
        if 1 <= k <= len(horizon_mse) and horizon_mse[k - 1] is not None:
            out[f"{s:g}"] = float(np.sqrt(horizon_mse[k - 1]))
    return out


def torque_scale_check(setup: RobotSetup, samples: dict) -> str | None:
    """The torque-unit warning (:func:`engine.logs.torques.torque_scale_warning`) of the log's
    validation samples against the robot file's torques for the same motion, or None."""
    import torch

    from engine.logs.torques import torque_scale_warning

    m = setup.model
    with torch.no_grad():
        args = [torch.as_tensor(samples[k], dtype=m.dtype, device=m.device) for k in ("q", "qd", "qdd")]
        modelled = m.inverse_dynamics(*args).cpu().numpy()
    return torque_scale_warning(samples["tau"], modelled, list(m.joint_names))


def torque_columns(model, samples: dict) -> dict:
    """The torque entries of a compare row for ``model``: the RMSE over every validation sample and
    over the sliding ones (:mod:`engine.training.torque_metrics`), each overall and per joint."""
    res, reason = torque_residuals(model, samples["q"], samples["qd"], samples["qdd"], samples["tau"])
    if res is None:
        return {"torque_rmse": None, "torque_rmse_per_joint": None, "torque_note": reason}
    sliding, sliding_joint = sliding_rmse(res, samples["qd"])
    return {"torque_rmse": float(np.sqrt(np.mean(res ** 2))),
            "torque_rmse_per_joint": [float(v) for v in np.sqrt(np.mean(res ** 2, axis=0))],
            "torque_rmse_sliding": sliding, "torque_rmse_sliding_per_joint": sliding_joint}


def identify_robot_file(setup: RobotSetup, prepared_id, folder: Path, identify, ctx=None) -> tuple[str, dict]:
    """Identify the robot from the log's torques and write it to ``folder`` as
    ``rigid_body.urdf`` + ``rigid_body.actuation.json``; returns ``(path, report)``.
    ``identify(prepared, model, learn, ctx) -> LogIdentificationResult`` (e.g. ``lambda p, m, k, c:
    identify_from_log(p, m, LogIdentificationConfig(learn=k, blackbox_steps=0), c)``)."""
    from engine.models.robot_source import actuation_path, write_actuation
    from engine.robots.urdf_export import save_urdf

    if identify is None:
        raise ValueError("the rigid-body and hybrid rows need an identification function (compare_on_log's "
                         "identify: engine.identification.identify_from_log)")
    result = identify(prepared_id, setup.model, IDENTIFY_KINDS, ctx)
    folder.mkdir(parents=True, exist_ok=True)
    path = save_urdf(result.model, folder / "rigid_body.urdf")
    write_actuation(actuation_path(path), list(setup.model.joint_names), result.joint_values, result.velocity_scale)
    names = list(setup.model.joint_names)
    report = {"identified": {"joints": {n: {k: result.joint_values[k][i] for k in result.joint_values}
                                        for i, n in enumerate(names)},
                             "masses": {p.link: p.identified for p in result.parameters if p.kind == "mass"},
                             "unidentifiable": result.unidentifiable,
                             "seconds": result.seconds}}
    return str(path), report


def rigid_body_row(name: str, setup: RobotSetup, source: str, dataset, samples: dict, seconds: float = 0.0,
                   keep: dict | None = None) -> dict:
    """The row of ``name`` (``"urdf"``, ``"rigid-body"``) for the robot file ``source`` rolled
    out as a robot model (nothing trained), with both metrics; ``seconds``: time already spent
    (the identification); ``keep``: a dict that receives ``{name: {"model", "curves"}}``."""
    from engine.models import ModelSpec, build_model

    t0 = time.perf_counter()
    spec = ModelSpec.for_system(dataset.system, dataset.h, **{
        **setup.spec_overrides, "robot": source, "robot_learn": ("mass",), "robot_perturb": 0.0})
    model = build_model("robot-rk4", spec)
    metrics, curves = evaluate_model(model, dataset)
    if keep is not None:
        keep[name] = {"model": model, "curves": curves}
    row = metrics_row(name, dataset, None, metrics, seconds + time.perf_counter() - t0)
    row.update(torque_columns(model, samples))
    return row


def check_models(models: list[str], robot: str | None) -> None:
    """Refuse, before any work, the models that need a robot when none is named."""
    need = [m for m in models if m in RIGID_BODY_MODELS + ON_IDENTIFIED or m.startswith("robot-")]
    if need and robot is None:
        raise ValueError(f"{', '.join(need)}: these models need the robot whose log this is; name it with "
                         "--robot (a library name, or a URDF, xacro or MJCF file)")
