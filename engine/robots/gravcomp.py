"""Body gravity compensation as MuJoCo applies it (MJCF body ``gravcomp``).

A link with ``gravcomp = c`` (``Link.gravcomp``) gets an upward force ``-c m g`` at its centre
of mass (``m``: its mass, ``g``: the model's gravity): ``c = 1`` cancels its weight. In joint
space this is MuJoCo's ``qfrc_gravcomp``::

    tau_gc(q) = sum over links  J_com(q)^T (-c m g)          (..., nv)

with ``J_com`` the linear rows of the link's Jacobian at its centre of mass. MuJoCo adds it to the
passive forces (``qfrc_passive``), except on joints with ``actuatorgravcomp="true"``
(``Joint.actuator_gravcomp``), where it counts as actuation (``qfrc_actuator``); the bias forces
(``qfrc_bias``: Coriolis and full gravity) are unchanged. The dynamics of the file's robot are
therefore ``M qdd = tau + tau_gc(q) - h(q, qd)``: :func:`engine.robots.simulate.simulate` adds it.

Pure functions of ``(model, q)``; differentiable in ``q`` and in the learnable masses and centres
of mass; any leading batch shape.
"""

from __future__ import annotations

import torch

__all__ = ["gravity_compensation", "has_gravity_compensation"]


def has_gravity_compensation(model) -> bool:
    """True when some link of ``model``'s description has a non-zero ``gravcomp``."""
    desc = getattr(model, "description", None)
    return desc is not None and any(l.gravcomp for l in desc.links)


def gravity_compensation(model, q, part: str = "all") -> torch.Tensor:
    """MuJoCo's ``qfrc_gravcomp`` ``(..., nv)`` (N m / N) at configurations ``q (..., nq)``.

    ``part``: ``"all"``; ``"passive"``: the entries MuJoCo puts in ``qfrc_passive`` (every joint
    but those with ``actuator_gravcomp``, a floating base's six included); ``"actuator"``: the
    entries it puts in ``qfrc_actuator``."""
    if part not in ("all", "passive", "actuator"):
        raise ValueError(f"unknown part {part!r}: use 'all', 'passive' or 'actuator'")
    q = torch.as_tensor(q, dtype=model.dtype, device=model.device)
    out = q.new_zeros(q.shape[:-1] + (model.nv,))
    g = model.gravity.to(q)
    for link in model.description.links:
        if not link.gravcomp:
            continue
        J = model.jacobian(q, link.name, point=model.link_com(link.name))        # (..., 6, nv)
        force = -link.gravcomp * model.link_mass(link.name) * g                  # (3,) N, world
        out = out + (J[..., :3, :] * force[:, None]).sum(-2)
    if part == "all":
        return out
    base = 6 if model.floating else 0
    actuated = [False] * base + [model.description.joint(name).actuator_gravcomp for name in model.joint_names]
    mask = torch.tensor(actuated, dtype=torch.bool, device=out.device)
    return torch.where(mask if part == "actuator" else ~mask, out, torch.zeros_like(out))
