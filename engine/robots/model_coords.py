"""Coordinates of :class:`engine.robots.model.RobotModel`: one flat batch from the user's inputs,
and the configuration space of a fixed or floating base (neutral, integrate, difference).

Plain functions of their arguments. ``q (..., nq)`` configurations, ``v (..., nv)`` velocities;
a floating base leads both (``q = [xyz, quaternion x y z w, joints]``, ``nq = dof + 7``; ``v =
[linear, angular in the base frame, joints]``, ``nv = dof + 6``; :mod:`engine.robots.floating`).
"""

from __future__ import annotations

import math

import torch

from engine.robots import floating as fl
from engine.robots.ball import difference_balls, integrate_balls, neutral_balls
from engine.spatial import se3_exp, se3_log

__all__ = ["difference_configuration", "flat_batch", "integrate_configuration", "joint_configuration",
           "joint_positions", "limited_coordinates", "neutral_configuration"]


def flat_batch(xs, kinds: str, nq: int, nv: int, dtype: torch.dtype, device: torch.device):
    """Broadcast inputs to one batch shape and flatten it: -> (batch_shape, [(B, size), ...]).

    kinds: per input "q" (a configuration, ``nq``) or "v" (a velocity, acceleration or
    force, ``nv``); inputs are converted to ``dtype`` and ``device``."""
    ts = [x if isinstance(x, torch.Tensor) and x.dtype == dtype and x.device == device
          else torch.as_tensor(x, dtype=dtype, device=device) for x in xs]
    for t, k in zip(ts, kinds):
        size = nq if k == "q" else nv
        if t.shape[-1:] != (size,):
            what = "configurations" if k == "q" and nq != nv else "joint vectors"
            raise ValueError(f"expected {what} of shape (..., {size}), got {tuple(t.shape)}")
    shape = ts[0].shape[:-1]
    if len(ts) > 1 and any(t.shape[:-1] != shape for t in ts[1:]):
        shape = torch.broadcast_shapes(*(t.shape[:-1] for t in ts))
        ts = [t.expand(shape + t.shape[-1:]) for t in ts]
    B = math.prod(shape)
    return shape, [t if t.dim() == 2 else t.reshape(B, t.shape[-1]) for t in ts]


def neutral_configuration(nq: int, floating: bool, dtype: torch.dtype, device: torch.device,
                          balls=((), ())) -> torch.Tensor:
    """``(nq,)``: joints at zero (ball joints: the identity quaternion), a floating base at the
    origin, unrotated. balls: ``(q_starts, v_starts)``, each ball joint's first configuration and
    velocity column in the joint part (:mod:`engine.robots.ball`)."""
    q = torch.zeros(nq, dtype=dtype, device=device)
    f = 7 if floating else 0
    if floating:
        q[6] = 1.0
    neutral_balls(q[f:], balls[0])
    return q


def integrate_configuration(q: torch.Tensor, v: torch.Tensor, floating: bool, balls=((), ())) -> torch.Tensor:
    """Flat ``q (B, nq)`` moved by ``v (B, nv)`` (``pinocchio.integrate``: the base by ``exp`` of its
    twist, a ball joint by ``exp`` of its angular velocity) -> ``(B, nq)``."""
    if not floating:
        return integrate_balls(q, v, *balls)
    return torch.cat([fl.integrate(q[:, :7], v[:, :6]), integrate_balls(q[:, 7:], v[:, 6:], *balls)], dim=-1)


def difference_configuration(q0: torch.Tensor, q1: torch.Tensor, floating: bool, balls=((), ())) -> torch.Tensor:
    """The velocity ``(B, nv)`` that takes flat ``q0`` to ``q1 (B, nq)`` in unit time
    (``pinocchio.difference``)."""
    if not floating:
        return difference_balls(q0, q1, *balls)
    return torch.cat([fl.difference(q0[:, :7], q1[:, :7]), difference_balls(q0[:, 7:], q1[:, 7:], *balls)],
                     dim=-1)


def limited_coordinates(model) -> tuple[list[int], list[int], list[int]]:
    """``(q columns, v columns, joint_limits rows)`` of the scalar joints (revolute, prismatic: the
    ones joint limits hold) of a model; a floating base's and ball joints' coordinates are not
    among them (a ball's cone is not modelled). Duck-typed: a model without ``ball_joint_names``
    has every joint scalar (``q[nq - dof:]``, ``v[nv - dof:]``)."""
    nq, nv, dof = int(model.nq), int(model.nv), int(model.dof)
    balls = set(getattr(model, "ball_joint_names", ()))
    if not balls:
        return list(range(nq - dof, nq)), list(range(nv - dof, nv)), list(range(dof))
    f = nv - dof
    qs, vs = [], []
    for name in model.joint_names:
        if name not in balls:
            sq, sv = model.joint_coordinates(name)
            qs.append(sq.start)
            vs.append(sv.start)
    return qs, vs, [v - f for v in vs]


def _ball_slices(model) -> list[tuple[slice, slice]]:
    """Each ball joint's (q slice, v slice) in the joint part of q and v (the base's excluded)."""
    b, f = int(model.nq) - int(model.dof) - len(getattr(model, "ball_joint_names", ())), int(model.nv) - int(model.dof)
    out = []
    for name in getattr(model, "ball_joint_names", ()):
        sq, sv = model.joint_coordinates(name)
        out.append((slice(sq.start - b, sq.stop - b), slice(sv.start - f, sv.stop - f)))
    return out


def joint_positions(model, qj: torch.Tensor) -> torch.Tensor:
    """The joints' configurations ``qj (..., nq - base)`` as one number per joint velocity
    coordinate ``(..., dof)`` (what a joint slider shows): a scalar joint's position, a ball
    joint's rotation vector (rad, ``log`` of its quaternion, in the joint frame)."""
    balls = _ball_slices(model)
    if not balls:
        return qj
    parts, qc = [], 0
    for sq, _ in balls:
        parts.append(qj[..., qc:sq.start])
        quat = qj[..., sq]
        parts.append(se3_log(quat / quat.norm(dim=-1, keepdim=True), torch.zeros_like(quat[..., :3]))[1])
        qc = sq.stop
    parts.append(qj[..., qc:])
    return torch.cat(parts, dim=-1)


def joint_configuration(model, x: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`joint_positions`: ``(..., dof)`` -> ``(..., nq - base)`` (a ball's
    rotation vector to its unit quaternion x, y, z, w)."""
    balls = _ball_slices(model)
    if not balls:
        return x
    parts, vc = [], 0
    for _, sv in balls:
        parts.append(x[..., vc:sv.start])
        w = x[..., sv]
        parts.append(se3_exp(torch.zeros_like(w), w)[0])
        vc = sv.stop
    parts.append(x[..., vc:])
    return torch.cat(parts, dim=-1)
