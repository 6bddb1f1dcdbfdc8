"""The constants every backend computes over, and the inertials of one call.

:class:`Tree` is built once per model from its topology (and again when the model moves to
another device or dtype): joint transform bases, axes, ancestor matrices, depth levels, the
links' bodies and offsets, the armature. Tensors are the model's buffers (not copies); a
backend never changes them. Internal order: bodies breadth first (parents first), ``perm``
maps internal body ``i`` to its joint in the tree's joint order (``body_dof``) and back
(``dof_body``).

:class:`Inertials` carries one call's body inertials: the model's constants, or values
computed from learnable parameters (so gradients reach them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.robots import dynamics_body_major as dyn

__all__ = ["Inertials", "Tree", "coupling_matrix"]


@dataclass(frozen=True, eq=False)
class Tree:
    """Constants of a kinematic tree (see the module docstring); ``n`` movable bodies.

    Shapes: C0 ``(n, 4, 4)``, C ``(n, 3, 16)``, Ct4 ``(n, 4, 3)`` joint transform bases (body
    major and batch-last layouts, :mod:`engine.robots.kinematics`); axis3 ``(n, 3)``, axis4
    ``(n, 4, 1)``; rev / pri ``(n,)`` 1.0 for revolute / prismatic joints; anc, anc_strict
    ``(n, n)`` ancestor matrices; jumps: pointer-jumping tables; levels ``[(start, stop)]`` per
    depth, level_parents per depth (None: aligned with the previous depth); link_body ``(L,)``
    (0 the root), link_offset ``(L, 4, 4)``, link_rev_mask / link_pri_mask ``(L, n)``;
    armature (rotor inertia), or None without any: armature_int ``(n,)`` internal order,
    armature_v ``(nv_all,)`` full coordinates (zero on a floating base), armature_diag
    ``(nv_all, nv_all)`` its diagonal matrix.
    """

    n: int
    floating: bool
    chain: bool
    all_rev: bool
    permuted: bool
    body_parent: np.ndarray
    body_dof: torch.Tensor
    dof_body: torch.Tensor
    C0: torch.Tensor
    C: torch.Tensor
    Ct4: torch.Tensor
    axis3: torch.Tensor
    axis4: torch.Tensor
    rev: torch.Tensor
    pri: torch.Tensor
    anc: torch.Tensor
    anc_strict: torch.Tensor
    jumps: list
    levels: list
    level_parents: list
    link_body: torch.Tensor
    link_body_int: list
    link_offset: torch.Tensor
    link_rev_mask: torch.Tensor
    link_pri_mask: torch.Tensor
    offset_links: torch.Tensor
    offset_bodies: torch.Tensor
    offset_T: torch.Tensor
    link_src: torch.Tensor | None
    armature_int: torch.Tensor | None
    armature_v: torch.Tensor | None
    armature_diag: torch.Tensor | None

    @property
    def base(self) -> tuple[int, int]:
        """``(7, 6)`` with a floating base (its configuration and velocity coordinates), else ``(0, 0)``."""
        return (7, 6) if self.floating else (0, 0)

    def level_sums(self):
        """``(levels, level_parents)`` for the batch-last tree sums of a wide tree (at least twice
        as many bodies as depths: one step per depth beats a product with the ancestor matrix,
        O(n) against O(n^2) work), else None."""
        if self.chain or 2 * len(self.levels) > self.n:
            return None
        return self.levels, self.level_parents

    def to_internal(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, n)`` tree joint order -> ``(n, B)`` internal (body-major) order."""
        return x.t().index_select(0, self.body_dof) if self.permuted else x.t().contiguous()

    def to_joint_order(self, x: torch.Tensor) -> torch.Tensor:
        """``(n, B, ...)`` internal order -> ``(n, B, ...)`` tree joint order."""
        return x.index_select(0, self.dof_body) if self.permuted else x


class Inertials:
    """The body inertials of one call: ``parts`` ``(m (n+1,), c (n+1, 3), Ic (n+1, 3, 3))`` every
    body's mass, centre of mass and rotational inertia about it in its own frame (root first);
    ``constants`` the movable bodies' ``(m, c1, Ic4)`` of
    :func:`engine.robots.dynamics_body_major.body_constants`. ``fixed``: the model's own
    constants (no learnable inertial), which a backend may convert once and keep."""

    __slots__ = ("parts", "fixed", "_constants")

    def __init__(self, parts, constants=None, fixed: bool = False):
        self.parts = parts
        self.fixed = fixed
        self._constants = constants

    @property
    def constants(self):
        if self._constants is None:
            self._constants = dyn.body_constants(*self.parts)
        return self._constants

    @property
    def root(self):
        """The root body's ``(m (), c (3,), Ic (3, 3))`` in its frame."""
        m, c, Ic = self.parts
        return m[0], c[0], Ic[0]


def coupling_matrix(joints, joint_names, robot: str):
    """``(G (n, dof), offset (n,))``: every movable joint's position from the independent ones
    (``q_all = G q + offset``), following chains of mimic joints."""
    by_name = {j.name: j for j in joints}
    user = {name: i for i, name in enumerate(joint_names)}
    G, off = np.zeros((len(joints), len(joint_names))), np.zeros(len(joints))
    for k, j in enumerate(joints):
        a, b, name, seen = 1.0, 0.0, j.name, set()
        while by_name[name].mimic is not None:
            m = by_name[name].mimic
            if m.joint not in by_name:
                raise ValueError(f"joint {name!r} mimics {m.joint!r}, which is not a movable joint of "
                                 f"{robot!r}; load with mimic='independent'")
            if name in seen:
                raise ValueError(f"mimic joints of {robot!r} form a loop at {name!r}")
            seen.add(name)
            a, b, name = a * m.multiplier, b + a * m.offset, m.joint
        G[k, user[name]], off[k] = a, b
    return G, off
