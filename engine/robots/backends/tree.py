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
from typing import TYPE_CHECKING

import numpy as np
import torch

from engine.robots import dynamics_body_major as dyn
from engine.robots import kinematics as kin
from engine.robots.ball import BallMap, ball_arrays, compiled_joints

if TYPE_CHECKING:
    from engine.robots.topology import Topology

__all__ = ["DenseTreeMasks", "Inertials", "ModelBuffers", "Tree", "coupling_matrix", "dense_tree_masks",
           "tree_constants"]


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
    ball: BallMap | None = None       # ball joints (:mod:`engine.robots.ball`), None without
    joints: np.ndarray | None = None  # (n, 2) the compiled kernels' configuration column and kind per body

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

    def joint_config(self, qj: torch.Tensor):
        """Joint configurations ``(B, nq_joints)`` (the base's excluded) -> ``(angles (n, B)``
        internal order, ball rotations ``(first (k,), R (k, B, 3, 3))`` or None without ball joints)."""
        if self.ball is None:
            return self.to_internal(qj), None
        return self.ball.joint_config(qj)

    @property
    def bias_src(self) -> torch.Tensor | None:
        """``(n,)`` the body whose velocity enters each body's velocity product ``v x S qd`` (a
        ball's three bodies: its child's), or None (every body its own: no ball joint)."""
        return None if self.ball is None else self.ball.bias_src

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
    def root(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The root body's ``(m (), c (3,), Ic (3, 3))`` in its frame."""
        m, c, Ic = self.parts
        return m[0], c[0], Ic[0]


def coupling_matrix(joints, joint_names, robot: str, q_columns=None):
    """``(G (n, dof), Gq (nq_all, nq), offset (nq_all,))``: every movable joint's velocity from the
    independent ones (``v_all = G v``) and its configuration (``q_all = Gq q + offset``), following
    chains of mimic joints. ``joints``: one per dof (a ball joint three times, topology order);
    ``joint_names``: the independent ones (a ball joint once); ``q_columns (n,)``: each dof's
    configuration column among every joint's (:meth:`Topology.q_columns`; default one per dof).
    A ball joint (:mod:`engine.robots.ball`) is never coupled: its three velocity rows and four
    quaternion rows pass through (identity blocks); a coupling is scalar (revolute, prismatic)."""
    by_name = {j.name: j for j in joints}
    vcol, qcol, nv, nq = {}, {}, 0, 0
    for name in joint_names:
        ball = by_name[name].type == "ball"
        vcol[name], qcol[name] = nv, nq
        nv, nq = nv + (3 if ball else 1), nq + (4 if ball else 1)
    cols = np.arange(len(joints)) if q_columns is None else np.asarray(q_columns)
    nq_all = len(joints) + len({j.name for j in joints if j.type == "ball"})     # a ball: 3 dofs, 4 columns
    G, Gq, off = np.zeros((len(joints), nv)), np.zeros((nq_all, nq)), np.zeros(nq_all)
    first: dict[str, int] = {}
    for k, j in enumerate(joints):
        if j.type == "ball":
            if j.mimic is not None:
                raise ValueError(f"ball joint {j.name!r} of {robot!r} mimics {j.mimic.joint!r}: couplings (mimic "
                                 "joints, <equality joint>) take scalar joints only; load with mimic='independent'")
            sub = k - first.setdefault(j.name, k)
            G[k, vcol[j.name] + sub] = 1.0
            if sub == 0:
                Gq[cols[k]:cols[k] + 4, qcol[j.name]:qcol[j.name] + 4] = np.eye(4)
            continue
        a, b, name, seen = 1.0, 0.0, j.name, set()
        while by_name[name].mimic is not None:
            m = by_name[name].mimic
            if m.joint not in by_name:
                raise ValueError(f"joint {name!r} mimics {m.joint!r}, which is not a movable joint of "
                                 f"{robot!r}; load with mimic='independent'")
            if by_name[m.joint].type == "ball":
                raise ValueError(f"joint {name!r} of {robot!r} mimics ball joint {m.joint!r}: couplings (mimic "
                                 "joints, <equality joint>) take scalar joints only; load with mimic='independent'")
            if name in seen:
                raise ValueError(f"mimic joints of {robot!r} form a loop at {name!r}")
            seen.add(name)
            a, b, name = a * m.multiplier, b + a * m.offset, m.joint
        G[k, vcol[name]], Gq[cols[k], qcol[name]], off[cols[k]] = a, a, b
    return G, Gq, off


def dense_tree_masks(topo, dtype, device) -> dict[str, torch.Tensor]:
    """The dense tree constants: ``anc`` (n, n), 1 where internal body j is body i or an ancestor
    of it; ``anc_strict`` = anc - I; ``link_rev_mask`` / ``link_pri_mask`` (L, n), the revolute /
    prismatic joints that move each link (link_names order). Quadratic in size, so the model
    builds them on first use, not at load."""
    n = topo.n_bodies
    anc = topo.ancestors.astype(float)
    link_anc = np.zeros((len(topo.link_names), n))
    moved = topo.link_body > 0
    link_anc[moved] = topo.ancestors[topo.link_body[moved] - 1]
    rev = topo.revolute.astype(float)
    return {name: torch.as_tensor(value, dtype=dtype, device=device) for name, value in (
        ("anc", anc), ("anc_strict", anc - np.eye(n)), ("link_rev_mask", link_anc * rev),
        ("link_pri_mask", link_anc * (1.0 - rev)))}


class ModelBuffers:
    """Declarations (types only, no values) of what ``RobotModel`` keeps as buffers (served by
    ``nn.Module.__getattr__``) and plain attributes: :func:`tree_constants`' tensors and values,
    and the model's own (mimic coupling, armature, link inertials, damping, base acceleration)."""

    topology: Topology
    _axis4: torch.Tensor
    _rev: torch.Tensor
    _pri: torch.Tensor
    _C0: torch.Tensor
    _C: torch.Tensor
    _Ct4: torch.Tensor
    _axis3: torch.Tensor
    _link_body: torch.Tensor
    _link_offset: torch.Tensor
    _body_dof: torch.Tensor
    _dof_body: torch.Tensor
    _offset_links: torch.Tensor
    _offset_bodies: torch.Tensor
    _offset_T: torch.Tensor
    _link_src: torch.Tensor
    _all_rev: bool
    _jump_names: list[str]
    _link_body_int: list[int]
    _permuted: bool
    _levels: list[tuple[int, int]]
    _level_parent_names: list[str | None]
    _chain: bool
    _link_src_identity: bool
    _G: torch.Tensor | None  # None without mimic joints
    _Gq: torch.Tensor | None  # (nq_all, nq) joint parts: configurations (ball quaternions pass through)
    _mimic_offset: torch.Tensor | None  # (nq_all,)
    _P: torch.Tensor | None
    _armature_v: torch.Tensor | None  # None without armature
    _armature_int: torch.Tensor | None
    _link_mass: torch.Tensor
    _link_com: torch.Tensor
    _link_inertia: torch.Tensor
    _body_m: torch.Tensor
    _body_c: torch.Tensor
    _body_Ic: torch.Tensor
    _bc_m: torch.Tensor
    _bc_c1: torch.Tensor
    _bc_Ic4: torch.Tensor
    _damping: torch.Tensor
    _a0: torch.Tensor
    _limits: np.ndarray  # (dof, 4): lower, upper, velocity, effort
    _balls: tuple[tuple[int, ...], tuple[int, ...]]  # the balls' first q and v columns (independent joints)
    _ball_names: list[str]  # buffers of the BallMap (empty without ball joints)
    _compiled_joints: np.ndarray  # (n, 2): engine.robots.ball.compiled_joints
    _backend_cache: tuple[torch.Tensor | None, dict[str, object]] | None


class DenseTreeMasks(ModelBuffers):
    """The model's ``_anc``, ``_anc_strict``, ``_link_rev_mask`` and ``_link_pri_mask``
    (:func:`dense_tree_masks`) in its dtype and device (those of its ``_rev`` buffer), built on
    first use and kept in ``__dict__`` (not as buffers: rebuilt when ``.to()`` changed the dtype
    or device). A constant of the tree: two threads building it at once build the same thing."""

    def _tree_masks(self) -> dict[str, torch.Tensor]:
        key = (self._rev.dtype, self._rev.device)
        cached = self.__dict__.get("_tree_mask_cache")
        if cached is None or cached[0] != key:
            cached = (key, dense_tree_masks(self.topology, *key))
            self.__dict__["_tree_mask_cache"] = cached
        return cached[1]

    _anc = property(lambda self: self._tree_masks()["anc"])
    _anc_strict = property(lambda self: self._tree_masks()["anc_strict"])
    _link_rev_mask = property(lambda self: self._tree_masks()["link_rev_mask"])
    _link_pri_mask = property(lambda self: self._tree_masks()["link_pri_mask"])


def tree_constants(topo, dtype, device) -> tuple[dict, dict]:
    """The tree's constants from its topology (:func:`engine.robots.topology.build_topology`):
    ``(tensors {name: tensor}, values {name: python value})``, which the model keeps as
    buffers (so a move to another device or dtype moves them) and attributes, and from which
    it builds its :class:`Tree`."""
    n = topo.n_bodies
    kw = {"dtype": dtype, "device": device}
    arrays: dict = {}
    values: dict = {}

    def buf(name, value, dtype_=None):
        arrays[name] = torch.as_tensor(np.asarray(value), dtype=dtype_ or dtype, device=device)

    rev = topo.revolute.astype(float)
    buf("_axis4", np.concatenate([topo.axis.reshape(n, 3), np.zeros((n, 1))], -1).reshape(n, 4, 1))
    buf("_rev", rev)
    buf("_pri", 1.0 - rev)
    C0, C = kin.joint_transform_basis(torch.as_tensor(topo.tree_transform, **kw).reshape(n, 4, 4),
                                      torch.as_tensor(topo.axis, **kw).reshape(n, 3),
                                      torch.as_tensor(topo.revolute, device=device))
    arrays["_C0"] = C0
    arrays["_C"] = C
    arrays["_Ct4"] = torch.cat(
        [C[:, :, :12].transpose(1, 2), C0.reshape(n, 16)[:, :12, None]], dim=2
    ).contiguous()
    buf("_axis3", topo.axis.reshape(n, 3))
    values["_all_rev"] = bool(topo.revolute.all())
    values["_jump_names"] = []
    for k, table in enumerate(topo.jumps):
        buf(f"_jump{k}", table, torch.long)
        values["_jump_names"].append(f"_jump{k}")
    buf("_link_body", topo.link_body, torch.long)
    values["_link_body_int"] = [int(b) for b in topo.link_body]
    buf("_link_offset", topo.link_offset)
    # the dense _anc, _anc_strict (n, n) and _link_rev_mask, _link_pri_mask (L, n) are not built
    # here: dense_tree_masks builds them on first use (4 x 800 MB at n = 10,000)
    buf("_body_dof", topo.body_dof, torch.long)        # internal body i+1 -> dof index
    buf("_dof_body", topo.dof_body - 1, torch.long)    # dof index -> internal position
    values["_permuted"] = not np.array_equal(topo.body_dof, np.arange(n))
    values["_levels"] = [(s - 1, e - 1) for s, e in topo.levels]
    values["_level_parent_names"] = [None]
    for d in range(1, len(values["_levels"])):
        s, e = topo.levels[d]
        ps, pe = topo.levels[d - 1]
        local = topo.body_parent[s:e] - ps
        if e - s == pe - ps and np.array_equal(local, np.arange(e - s)):
            values["_level_parent_names"].append(None)
        else:
            buf(f"_level_parent{d}", local, torch.long)
            values["_level_parent_names"].append(f"_level_parent{d}")
    # a serial chain (each body the child of the previous one): tree sums are cumsums
    values["_chain"] = bool(np.array_equal(topo.body_parent, np.maximum(np.arange(n + 1) - 1, 0)))
    # links whose frame is not their body's frame need one more product in FK
    offset_links = [
        l
        for l in range(len(topo.link_names))
        if not np.allclose(topo.link_offset[l], np.eye(4), atol=0, rtol=0)
    ]
    buf("_offset_links", offset_links, torch.long)
    buf("_offset_bodies", topo.link_body[offset_links] if offset_links else [], torch.long)
    buf("_offset_T", topo.link_offset[offset_links] if offset_links else np.zeros((0, 4, 4)))
    link_src = [int(b) for b in topo.link_body]
    for j, l in enumerate(offset_links):
        link_src[l] = n + 1 + j
    buf("_link_src", link_src, torch.long)
    values["_link_src_identity"] = link_src == list(range(len(link_src)))
    values["_ball_names"] = []
    values["_compiled_joints"] = compiled_joints(topo)
    for name, value in (ball_arrays(topo) or {}).items():
        buf(f"_ball_{name}", value.reshape(-1, 1) if name == "angle_mask" else value,
            None if name == "angle_mask" else torch.long)
        values["_ball_names"].append(f"_ball_{name}")
    return arrays, values
