"""Learnable link parameters and baked descriptions: plain functions behind
:class:`engine.robots.model.RobotModel`'s ``make_learnable``, ``current_description`` and
``with_link_params`` (see the model's docstring for the API). They take what they need as
arguments; nothing here reads a model's private state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

import torch
from torch import nn

from engine.robots import dynamics_body_major as dyn
from engine.robots.description import Inertial, Origin, RobotDescription
from engine.robots.parametrizations import KINDS, PositiveScalar, default_parametrization
from engine.robots.urdf import check_inertial

__all__ = ["body_inertials", "joint_damping_values", "new_parametrization", "requested_values", "with_values"]

_SHAPES = {"mass": (), "com": (3,), "inertia": (3, 3), "damping": ()}


def new_parametrization(kind: str, link: str, current: torch.Tensor | None, parametrization, has_inertial: bool,
                        moved_by_joint: bool) -> nn.Module:
    """The module that will hand out ``kind`` of ``link`` (see ``RobotModel.make_learnable``),
    checked: ``current`` its present value, ``has_inertial`` whether the link has one,
    ``moved_by_joint`` whether it is the child of a movable joint (damping); ``current`` is None
    only where a module is given (the checks below)."""
    if kind not in KINDS:
        raise ValueError(f"unknown parameter kind {kind!r}; expected one of {KINDS}")
    if kind == "damping" and not moved_by_joint:
        raise ValueError(f"link {link!r} is not the child of a movable joint; it has no joint damping")
    if kind != "damping" and not has_inertial and not isinstance(parametrization, nn.Module):
        raise ValueError(
            f"link {link!r} has no <inertial>; pass a parametrization module with an initial value"
        )
    if parametrization is None:
        module = default_parametrization(kind, cast(torch.Tensor, current))
    elif isinstance(parametrization, str):
        if kind not in ("mass", "damping"):
            raise ValueError(f"parametrization {parametrization!r} applies to mass and damping only")
        value = cast(torch.Tensor, current)
        module = PositiveScalar(float(value), kind=parametrization, dtype=value.dtype, device=value.device)
    elif isinstance(parametrization, nn.Module):
        module = parametrization
    else:
        raise TypeError("parametrization must be None, 'softplus', 'exp' or an nn.Module")
    shape = _SHAPES[kind]
    try:
        out = module()
    except TypeError as exc:
        raise ValueError(f"the {kind} parametrization must be callable without arguments "
                         f"and return a tensor of shape {shape}: {exc}") from None
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != shape:
        raise ValueError(f"the {kind} parametrization must return a tensor of shape {shape}, "
                         f"got {getattr(out, 'shape', type(out))}")
    return module


def body_inertials(link_values: dict, learned: dict, link_body, link_offset, n: int):
    """Every body's ``(m (n+1,), c (n+1, 3), Ic (n+1, 3, 3))`` in its frame (root first).

    link_values: ``{"mass": (L,), "com": (L, 3), "inertia": (L, 3, 3)}`` per link (its frame);
    learned: ``{kind: [(link index, value), ...]}`` replacing some of them (differentiably).
    """
    tensors = dict(link_values)
    for kind, pairs in learned.items():
        if pairs:
            idx = torch.tensor([i for i, _ in pairs], device=tensors[kind].device)
            tensors[kind] = tensors[kind].index_put((idx,), torch.stack([v for _, v in pairs]))
    return dyn.link_inertia_to_bodies(
        tensors["mass"], tensors["com"], tensors["inertia"], link_body, link_offset, n
    )


def joint_damping_values(damping: torch.Tensor, learned: list) -> torch.Tensor:
    """``damping (n,)`` with the learned ``[(joint index, value), ...]`` put in (differentiably)."""
    if not learned:
        return damping
    idx = torch.tensor([k for k, _ in learned], device=damping.device)
    return damping.index_put((idx,), torch.stack([v for _, v in learned]))


def with_values(description: RobotDescription, inertials: Mapping[str, tuple],
                damping: Mapping[str, float | torch.Tensor], check: bool = False) -> RobotDescription:
    """``description`` with link inertials ``{link: (mass, com (3,), inertia (3, 3) about the CoM,
    link axes)}`` (tensors or arrays) and joint damping ``{joint: N m s/rad}`` replaced;
    ``check`` validates physical consistency (raises ``URDFError``)."""
    for joint, d in damping.items():
        description = description.with_joint_dynamics(joint, damping=float(d))
    for link, (m, c, I) in inertials.items():
        new = _inertial(m, c, I)
        if check:
            check_inertial(new, link)
        description = description.with_link_inertial(link, new)
    return description


def requested_values(current: Callable[[str], tuple], mass: Mapping | None, com: Mapping | None,
                     inertia: Mapping | None) -> dict:
    """``{link: (mass, com, inertia)}`` for every link named in the requests, the values not
    requested taken from ``current(link) -> (mass, com, inertia)``."""
    out = {}
    for link in set(mass or {}) | set(com or {}) | set(inertia or {}):
        m, c, I = current(link)
        out[link] = ((mass or {}).get(link, m), (com or {}).get(link, c), (inertia or {}).get(link, I))
    return out


def _inertial(mass, com, inertia) -> Inertial:
    """An :class:`Inertial` (CoM frame axes = link axes) from tensors or arrays."""
    m = float(torch.as_tensor(mass).detach())
    c = torch.as_tensor(com).detach().cpu().double().numpy().reshape(3)
    I = torch.as_tensor(inertia).detach().cpu().double().numpy().reshape(3, 3)
    I = 0.5 * (I + I.T)
    return Inertial(mass=m, origin=Origin(xyz=cast("tuple[float, float, float]", tuple(float(x) for x in c))),
                    inertia=(float(I[0, 0]), float(I[0, 1]), float(I[0, 2]), float(I[1, 1]), float(I[1, 2]),
                             float(I[2, 2])))
