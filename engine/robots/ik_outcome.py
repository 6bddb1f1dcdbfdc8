"""Solving a set of IK targets from a start pose and measuring how well each is reached: what the
Robot workspace's Optimise and Follow do, callable from a script or the CLI.

``solve_targets(model, IKRequest(...))`` runs :func:`~engine.robots.ik.solve_ik` (skipping it
when the start already reaches every target) and returns an :class:`IKOutcome` whose errors are
measured with the model's own forward kinematics at the returned pose, independently of the
solver's bookkeeping. Poses are (4, 4) world transforms in metres; angles in radians.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import torch

if TYPE_CHECKING:
    from engine.robots.ik import IKOptions

__all__ = ["IKOutcome", "IKRequest", "ik_outcome", "rotation_angle", "solve_targets", "target_errors",
           "targets_reached"]


@dataclass
class IKRequest:
    """Targets {link: (4, 4) world pose (m)}; ``position_only`` links ignore orientation.

    ``options``: an IKOptions (None: its defaults); ``overrides``: fields replaced on top of it
    (short solves while dragging). ``serial``: the caller's tag, returned in the outcome. A
    floating robot: ``hold``, links kept at their poses of ``q0``, and its ``base`` "free" or
    "fixed" (whole-body IK)."""

    targets: dict
    q0: np.ndarray
    position_only: frozenset = frozenset()
    options: IKOptions | None = None
    overrides: Mapping = field(default_factory=dict)
    serial: int = 0
    hold: tuple = ()
    base: str = "free"


@dataclass
class IKOutcome:
    """A solve's result: q (nq,) within the limits, errors per target and overall."""

    q: np.ndarray
    converged: bool
    position_error: float       # m, the largest over the targets
    rotation_error: float       # rad, the largest over the pose targets
    residual: float             # sqrt(sum over targets of e_pos^2 + (w_rot e_rot)^2), m
    per_target: dict            # link -> (position error m, rotation error rad or None)
    serial: int = 0


def rotation_angle(R: np.ndarray) -> float:
    """The angle (rad, in [0, pi]) of the rotation matrix ``R`` (3, 3)."""
    return float(np.arccos(np.clip((np.trace(R) - 1) / 2, -1.0, 1.0)))


def target_errors(model, q, targets: Mapping[str, np.ndarray], position_only=frozenset()) -> dict:
    """{link: (position error m, rotation error rad or None)} of ``targets`` ({link: (4, 4)})
    at ``q`` (nq,); None for the links in ``position_only``."""
    with torch.no_grad():
        poses = model.forward_kinematics(torch.as_tensor(np.asarray(q, float))).cpu().numpy()
    index = {l: i for i, l in enumerate(model.link_names)}
    errors = {}
    for link, T in targets.items():
        T = np.asarray(T, dtype=float)
        P = poses[index[link]]
        perr = float(np.linalg.norm(P[:3, 3] - T[:3, 3]))
        rerr = None if link in position_only else rotation_angle(P[:3, :3].T @ T[:3, :3])
        errors[link] = (perr, rerr)
    return errors


def targets_reached(errors: dict, options) -> bool:
    """Whether every target's errors are within ``options.tol_pos`` / ``tol_rot`` (IKOptions)."""
    return all(p <= options.tol_pos and (r is None or options.position_only or r <= options.tol_rot)
               for p, r in errors.values())


def ik_outcome(q, converged: bool, errors: dict, options, serial: int = 0) -> IKOutcome:
    """The :class:`IKOutcome` of pose ``q`` with measured ``errors`` (see :func:`target_errors`)."""
    perr = max(p for p, _ in errors.values())
    rots = [r for _, r in errors.values() if r is not None]
    rerr = max(rots) if rots else 0.0
    w = options.rotation_weight
    residual = float(np.sqrt(sum(p * p + (w * (r or 0.0)) ** 2 for p, r in errors.values())))
    return IKOutcome(q=np.asarray(q, float), converged=converged, position_error=perr, rotation_error=rerr,
                     residual=residual, per_target=errors, serial=serial)


class _WholeBody(TypedDict, total=False):
    hold: tuple
    base: str


def solve_targets(model, request: IKRequest, ctx=None) -> IKOutcome:
    """Solve every target of ``request`` at once from ``request.q0`` and measure each target's
    error at the result (``ctx``: a job context for progress and cancellation, optional)."""
    from engine.robots.ik import IKOptions, solve_ik

    opts = replace(request.options or IKOptions(), **dict(request.overrides))
    q0 = np.asarray(request.q0, dtype=float)
    before = target_errors(model, q0, request.targets, request.position_only)
    if targets_reached(before, opts):      # already there: nothing to solve
        return ik_outcome(q0, True, before, opts, request.serial)
    targets = {}
    for link, T in request.targets.items():
        T = torch.as_tensor(np.asarray(T, dtype=float))
        targets[link] = T[:3, 3] if link in request.position_only else T
    whole_body: _WholeBody = (
        {"hold": tuple(request.hold), "base": request.base} if getattr(model, "floating", False) else {}
    )
    result = solve_ik(model, targets, q0=torch.tensor(q0), ctx=ctx, options=opts, **whole_body)
    q = result.q.detach().cpu().numpy().reshape(-1).astype(float)
    after = target_errors(model, q, request.targets, request.position_only)
    return ik_outcome(q, bool(result.converged.reshape(-1)[0]), after, opts, request.serial)
