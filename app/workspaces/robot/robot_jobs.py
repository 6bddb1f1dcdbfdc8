"""The Robot workspace's jobs: job glue around the engine, no Qt (they run in workers).

- :func:`load_robot_job`: URDF -> engine RobotModel (validated) + the view's geometry.
- :func:`ik_job`: one IK solve, the engine's :func:`~engine.robots.ik_outcome.solve_targets`.
- :func:`dynamics_readouts`: the engine's :func:`~engine.robots.simulate.readouts` as a job.
- :func:`simulate_job`: the engine's :func:`~engine.robots.simulate.simulate` as a job.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from app.viewer.geometry import (
    GeometryOptions,
    RobotGeometry,
    description_geometry,
    inertia_box,
    load_robot_geometry,
)
from engine.robots.ik_outcome import IKOutcome, IKRequest, solve_targets
from engine.robots.reference_poses import standing_joint_positions
from engine.robots.simulate import (
    Readouts,
    SimulationOptions,
    SimulationResult,
    interpolate_keyframes,
    manipulability,
    readouts,
    simulate,
)

__all__ = [
    "IKOutcome",
    "IKRequest",
    "LoadedRobot",
    "Readouts",
    "SimulationOptions",
    "SimulationResult",
    "dynamics_readouts",
    "ik_job",
    "inertia_boxes",
    "interpolate_keyframes",
    "load_robot_job",
    "manipulability",
    "simulate_job",
    "slider_limits",
    "xacro_file_of",
]

log = logging.getLogger(__name__)

UNBOUNDED_RANGE = np.pi   # a continuous joint's slider spans [-pi, pi]


@dataclass
class LoadedRobot:
    """A robot ready to show: the engine model, its geometry and where it came from."""

    source: str                  # what the user asked for (library name or path)
    path: str                    # the robot file (URDF, xacro or MJCF)
    model: object                # engine.robots.RobotModel
    geometry: RobotGeometry
    joint_axes: dict             # child link -> (3,) axis in the child frame
    coms: dict                   # link -> (3,) centre of mass in the link frame (m)
    damping: np.ndarray          # (dof,) URDF joint damping (N m s/rad or N s/m)
    notes: list = field(default_factory=list)   # what the viewer accepted leniently, for the user
    xacro_args: dict = field(default_factory=dict)  # the arguments a xacro file was expanded with
    inertia_boxes: dict = field(
        default_factory=dict
    )  # link -> (T in the link frame, extents): equivalent boxes
    standing: np.ndarray | None = None  # (dof,) a floating robot's published standing pose (SRDF), if any
    joint_terms: object | None = None   # engine.robots.simulate.JointTerms of an actuation file beside it, if any
    tree: str | None = None             # the kinematic tree asked for (MJCF), None: the loader's choice
    trees: tuple = ()                   # an MJCF file's trees when it has several: ((name, summary), ...)

    @property
    def name(self) -> str:
        return self.model.name


def slider_limits(model) -> tuple[np.ndarray, np.ndarray]:
    """(dof,) lower and upper bounds for joint controls: the URDF limits, +-pi when unbounded."""
    lo = model.joint_limits.lower.detach().cpu().numpy().astype(float).copy()
    hi = model.joint_limits.upper.detach().cpu().numpy().astype(float).copy()
    lo[~np.isfinite(lo)] = -UNBOUNDED_RANGE
    hi[~np.isfinite(hi)] = UNBOUNDED_RANGE
    return lo, hi


def _load_model(path: Path, xacro_args=None, options=None, tree: str | None = None):
    """The engine model of a robot file (URDF, xacro or MJCF), validated by the default loader,
    whose warnings (inconsistent inertials kept as written, joints that move no mass, mimic joints
    without a master) become notes; a viewer is lenient where the engine offers it and the physics
    allows: inertials the default loader refuses but strict=False accepts (mass 0 with an inertia
    on a moving link; a negative mass or a non-finite inertia never; the loader's warning line is
    the note) and mimic joints the coupling cannot take (mimic='independent'), with a note. Every
    other error propagates."""
    from engine.robots import RobotModel
    from engine.robots.mjcf_inventory import line_kind
    from engine.robots.urdf import URDFError

    kwargs: dict = dict(options or {})  # a library entry's own options (floating_base...); mimic coupled
    if xacro_args:
        kwargs["xacro_args"] = dict(xacro_args)
    if tree:
        kwargs["tree"] = tree
    notes: list[str] = []
    for _ in range(3):
        try:
            model = RobotModel.from_file(str(path), dtype=torch.float64, **kwargs)
            missing = model.description.not_modelled     # each line is in the log (the loader's warning)
            cons = model.description.constraints          # loop closures the simulation keeps closed
            closed = [f"constraints: {', '.join(f'{c.kind} {c.name!r}' for c in cons)}"] if cons else []
            warned = [f"warning: {w}" for w in model.description.warnings]   # also in the log, once
            return model, notes + warned + closed + (
                [f"not modelled: {', '.join(line_kind(l) for l in missing)}"] if missing else [])
        except URDFError as exc:
            remedy = exc.remedy or {}
            if remedy.get("strict", True) is False and "strict" not in kwargs:
                reason = exc.reason.split("; load with strict=False")[0]
                if exc.impossible:  # the same rule as the API: no silent leniency
                    raise URDFError(f"{reason}: physically impossible; fix the URDF", exc.file, exc.element,
                                    exc.line, impossible=True) from None
                kwargs["strict"] = False       # the loader's warning line (a note) names what it kept
            elif remedy.get("mimic") == "independent" and kwargs.get("mimic") != "independent":
                kwargs["mimic"] = "independent"
                notes.append("mimic joints are shown as independent joints")
            else:
                raise
    return RobotModel.from_file(str(path), dtype=torch.float64, **kwargs), notes


def inertia_boxes(model) -> dict:
    """{link: (T (4, 4) in the link frame, extents (3,) m)}: each massive link's equivalent
    inertia box from the model's current (e.g. identified) mass, CoM and inertia."""
    boxes = {}
    with torch.no_grad():
        for link in model.link_names:
            mass = float(model.link_mass(link))
            box = inertia_box(
                mass, model.link_com(link).cpu().numpy(), model.link_inertia(link).cpu().numpy()
            )
            if box is not None:
                boxes[link] = box
    return boxes


def _warm_up_ik(model) -> None:
    """One tiny solve, so that the solver's first-call set-up is paid while loading and not
    by the first drag of a target."""
    from engine.robots.ik import neutral_configuration, solve_ik

    try:
        q = neutral_configuration(model)
        link = model.link_names[-1]
        goal = model.link_pose(q, link).detach().clone()
        goal[:3, 3] += 1e-2
        solve_ik(model, {link: goal[:3, 3]}, q0=q.clone(), n_starts=1, max_iters=2)
    except Exception as exc:  # noqa: BLE001 - only an optimisation; a real solve reports errors
        log.debug("IK warm-up skipped: %s", exc)


def xacro_file_of(source: str) -> Path | None:
    """The xacro file that robot ``source`` (a library name or a path) would expand, or None when
    it is no xacro file (or cannot be resolved: loading it then says why)."""
    from engine.robots.files import file_format
    from engine.robots.library import resolve_robot

    try:
        path = Path(resolve_robot(source))
        return path if file_format(path) == "xacro" else None
    except (OSError, ValueError, LookupError):
        return None


def load_robot_job(source: str, geometry_options: GeometryOptions | None = None, xacro_args=None,
                   xacro_allowed: bool = False, tree: str | None = None):
    """A job (``job(ctx) -> LoadedRobot``) that resolves, validates and loads a robot (a library
    name, or a URDF, xacro or MJCF file; ``xacro_args``: {name: value} for a xacro file; ``tree``:
    which kinematic tree of an MJCF file with several, None: the loader's choice, the robot and
    the free objects beside it where it can).

    A xacro file is a program: it is expanded (in the engine's sandbox) only with
    ``xacro_allowed=True``, which the caller passes when the user opened the file or said yes;
    otherwise the job fails with a message saying so. The engine parses and validates the file
    first, so a bad file fails with the engine's error (which names the file, the element and
    the line) before any mesh is read.
    """

    def job(ctx) -> LoadedRobot:
        from engine.robots.files import file_format
        from engine.robots.library import resolve_robot, robot_entry
        from engine.robots.urdf import URDFError
        from engine.robots.xacro_loader import xacro_cancellation

        ctx.progress(0.0, f"resolving {source}")
        path = Path(resolve_robot(source))
        ctx.check_cancelled()
        if file_format(path) == "xacro" and not xacro_allowed:
            raise URDFError("a xacro file is a program, and it is expanded only when you open it yourself "
                            "or say yes to expanding it", file=str(path))
        ctx.progress(0.05, f"parsing {path.name}")
        entry = robot_entry(source)
        with xacro_cancellation(ctx.check_cancelled):       # a cancelled load ends the xacro child at once
            model, notes = _load_model(path, xacro_args, entry.options if entry is not None else None, tree)
        trees = tuple(model.description.trees)        # an MJCF scene's trees, read at its load
        ctx.check_cancelled()

        def progress(fraction, message):
            ctx.progress(0.1 + 0.85 * fraction, message)

        if file_format(path) == "urdf":
            geometry = load_robot_geometry(path, geometry_options, progress=progress,
                                           check_cancelled=ctx.check_cancelled)
        else:   # xacro, MJCF: the engine's description holds the visuals
            geometry = description_geometry(model.description, geometry_options, progress=progress,
                                            check_cancelled=ctx.check_cancelled)
        desc = model.description
        axes = {j.child: np.asarray(j.axis, dtype=float) for j in desc.joints
                if j.type in ("revolute", "continuous", "prismatic")}
        coms = {l.name: np.asarray(l.inertial.origin.xyz, dtype=float) for l in desc.links
                if l.inertial is not None and l.inertial.mass > 0}
        by_name = {j.name: j for j in desc.joints}
        damping = np.array([float(getattr(by_name.get(n), "damping", 0.0) or 0.0) for n in model.joint_names
                            for _ in range(3 if by_name[n].type == "ball" else 1)])    # per slider (dof,)
        _warm_up_ik(model)
        terms = actuation_terms(model, path, notes)
        ctx.progress(1.0, f"loaded {model.name}: {model.dof} joints, {geometry.triangles} triangles")
        return LoadedRobot(
            source,
            str(path),
            model,
            geometry,
            axes,
            coms,
            damping,
            notes,
            dict(xacro_args or {}),
            inertia_boxes(model),
            standing_joint_positions(path, model.joint_names) if model.floating else None,
            terms,
            tree,
            trees,
        )

    return job


def actuation_terms(model, path: str | Path, notes: list[str]):
    """The joint friction and actuation of the actuation file beside the robot file, or None
    (:func:`engine.models.robot_source.actuation_terms`)."""
    from engine.models.robot_source import actuation_terms as terms_beside

    return terms_beside(model, path, notes)


# --------------------------------------------------------------------------- IK
def ik_job(model, request: IKRequest):
    """A job running the engine's :func:`~engine.robots.ik_outcome.solve_targets`: all targets
    solved at once, each target's error measured at the result."""

    def job(ctx) -> IKOutcome:
        return solve_targets(model, request, ctx=ctx)

    return job


# --------------------------------------------------------------------------- dynamics
def dynamics_readouts(model, q: np.ndarray, link: str, serial: int = 0):
    """A job computing the engine's :class:`~engine.robots.simulate.Readouts` for joint
    positions ``q`` (dof,)."""

    def job(ctx) -> Readouts:
        return readouts(model, q, link, serial=serial, check_cancelled=ctx.check_cancelled)

    return job


# --------------------------------------------------------------------------- motion
def simulate_job(model, q0: np.ndarray, qd0: np.ndarray, options: SimulationOptions,
                 keyframe_times: Sequence[float] = (), keyframe_poses: Sequence[np.ndarray] = (),
                 joint_terms=None):
    """A job running the engine's :func:`~engine.robots.simulate.simulate` (RK4 on ABA, joints
    clamped at their limits; ``joint_terms``: the joints' friction and actuation, default the
    robot file's). Bad options raise here, before the job is submitted."""
    options.validate()
    if options.mode == "pd_keyframes" and len(keyframe_times) == 0:
        raise ValueError("PD to keyframes needs at least one keyframe")

    def job(ctx) -> SimulationResult:
        return simulate(model, q0, qd0, options, keyframe_times, keyframe_poses,
                        progress=ctx.progress, check_cancelled=ctx.check_cancelled, joint_terms=joint_terms)

    return job
