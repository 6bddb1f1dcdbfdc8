"""The kinematic tree of a :class:`RobotDescription`, flattened into index arrays.

Fixed joints are merged: a *body* is the root (index 0, the fixed base and every link
welded to it) or a movable joint's child link together with all links welded to it.
Internally bodies are numbered breadth first (by depth), so the bodies of one depth are a
contiguous range and the recursions of ABA run one vectorised step per depth. The user's
joint order (``joint_names``, the order of ``q``) is depth first from the root, the order
Pinocchio uses; ``dof_of_body``/``body_of_dof`` map between the two.

A ball (spherical) joint is three bodies, three dofs: revolute sub-joints about the x, y and z
axes of the child frame, the first two bodies massless with identity transforms to the next. Its
configuration is one unit quaternion (x, y, z, w): the first sub-body's joint rotation is the
whole rotation, the other two sub-joints' angles are zero (:mod:`engine.robots.ball`), so the
three motion subspaces are the child's axes and ``v`` is the child's angular velocity in its
frame (Pinocchio's JointModelSpherical, MuJoCo's ball joint). ``nq = n + 4 - 3`` per ball.

Everything here is numpy, computed once; :class:`RobotModel` turns it into buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from engine.robots.description import Joint, RobotDescription

__all__ = ["Topology", "build_topology"]


@dataclass(frozen=True)
class Topology:
    link_names: tuple[str, ...]           # depth-first from the root
    joint_names: tuple[str, ...]          # joint of each dof, depth-first (the order of v; a ball: 3 times)
    n_bodies: int                         # movable bodies (= dof); body 0 (root) not counted
    body_parent: np.ndarray               # (n+1,) internal parent index, root -> 0
    body_depth: np.ndarray                # (n+1,) root 0
    body_dof: np.ndarray                  # (n,) dof index of internal body i+1
    dof_body: np.ndarray                  # (n,) internal body index (1-based) of dof k
    tree_transform: np.ndarray            # (n, 4, 4) parent body frame -> joint frame at q = 0
    axis: np.ndarray                      # (n, 3) unit joint axis in the joint (= child) frame
    revolute: np.ndarray                  # (n,) bool (revolute or continuous)
    link_body: np.ndarray                 # (L,) internal body of each link (link_names order)
    link_offset: np.ndarray               # (L, 4, 4) link frame in its body frame
    levels: tuple[tuple[int, int], ...]   # per depth 1..D: [start, stop) of internal bodies (1-based)
    jumps: tuple[np.ndarray, ...]         # pointer-jumping ancestor tables for forward kinematics
    joint_of_dof: tuple[str, ...]         # = joint_names
    child_link_of_dof: tuple[str, ...]    # child link of each movable joint, dof order
    ball_dofs: tuple[int, ...] = ()       # first of the three dofs of each ball joint, dof order

    @property
    def nq(self) -> int:
        """Configuration coordinates of the joints: one per dof, four per ball joint (not three)."""
        return self.n_bodies + len(self.ball_dofs)

    def q_columns(self) -> np.ndarray:
        """(n,) the configuration column (joint part) of each dof: its angle or position, or for
        the three dofs of a ball joint the first of its quaternion's four columns."""
        cols = np.zeros(self.n_bodies, dtype=np.int64)
        balls = set(self.ball_dofs)
        c, k = 0, 0
        while k < self.n_bodies:
            if k in balls:
                cols[k:k + 3] = c
                c, k = c + 4, k + 3
            else:
                cols[k] = c
                c, k = c + 1, k + 1
        return cols

    @cached_property
    def ancestors(self) -> np.ndarray:
        """(n, n) bool: [i, j] = body j+1 is body i+1 or an ancestor of it.

        Dense, so n^2 bytes (100 MB at n = 10,000): built on first use, not at load. One row
        copy per depth level (bodies are numbered by depth, so a level's parents come before it).
        """
        n = self.n_bodies
        anc = np.zeros((n + 1, n + 1), dtype=bool)      # row/column 0: the root, dropped below
        for start, stop in self.levels:
            anc[start:stop] = anc[self.body_parent[start:stop]]
            anc[np.arange(start, stop), np.arange(start, stop)] = True
        return anc[1:, 1:]


def build_topology(desc: RobotDescription) -> Topology:
    children: dict[str, list] = {l.name: [] for l in desc.links}
    for j in desc.joints:
        children[j.parent].append(j)

    # depth-first order of links and movable joints (the user's order)
    link_order: list[str] = []
    dof_joints: list[Joint] = []
    stack = [(desc.root, None)]
    while stack:
        link, joint = stack.pop()
        link_order.append(link)
        if joint is not None and joint.movable:
            dof_joints.append(joint)
        for j in reversed(children[link]):
            stack.append((j.child, j))
    # a ball joint is three dofs (sub-bodies) of the same joint
    dof_joints = [j for j in dof_joints for _ in range(3 if j.type == "ball" else 1)]
    n = len(dof_joints)
    dof_index: dict[str, int] = {}
    for k, j in enumerate(dof_joints):
        dof_index.setdefault(j.name, k)
    ball_dofs = tuple(k for k, j in enumerate(dof_joints) if j.type == "ball" and dof_index[j.name] == k)

    # each link's body (the nearest movable joint above it) and its pose in that body
    link_dof: dict[str, int] = {}           # -1 = root body
    link_in_body: dict[str, np.ndarray] = {}
    depth_of_dof = np.zeros(n, dtype=np.int64)
    parent_dof = np.full(n, -1, dtype=np.int64)
    tree = np.zeros((n, 4, 4))
    link_dof[desc.root] = -1
    link_in_body[desc.root] = np.eye(4)
    for link in link_order:
        for j in children[link]:
            T = link_in_body[link] @ j.origin.matrix()
            if j.movable:
                k = dof_index[j.name]
                parent_dof[k] = link_dof[link]
                depth_of_dof[k] = 1 + (depth_of_dof[link_dof[link]] if link_dof[link] >= 0 else 0)
                tree[k] = T
                if j.type == "ball":        # sub-bodies 2 and 3 hang from 1 and 2, at identity
                    for sub in (1, 2):
                        parent_dof[k + sub] = k + sub - 1
                        depth_of_dof[k + sub] = depth_of_dof[k] + sub
                        tree[k + sub] = np.eye(4)
                    k += 2
                link_dof[j.child] = k
                link_in_body[j.child] = np.eye(4)
            else:
                link_dof[j.child] = link_dof[link]
                link_in_body[j.child] = T

    # breadth-first internal numbering: stable sort of dofs by depth
    dof_by_level = sorted(range(n), key=lambda k: (depth_of_dof[k], k))
    body_of_dof = np.zeros(n, dtype=np.int64)
    for b, k in enumerate(dof_by_level):
        body_of_dof[k] = b + 1
    body_dof = np.array(dof_by_level, dtype=np.int64)
    body_parent = np.zeros(n + 1, dtype=np.int64)
    body_depth = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        b = body_of_dof[k]
        body_parent[b] = body_of_dof[parent_dof[k]] if parent_dof[k] >= 0 else 0
        body_depth[b] = depth_of_dof[k]

    ball_axis = {k + sub: np.eye(3)[sub] for k in ball_dofs for sub in range(3)}
    axis = np.array([ball_axis.get(k, dof_joints[k].axis) for k in body_dof], dtype=float).reshape(n, 3)
    revolute = np.array([dof_joints[k].type in ("revolute", "continuous", "ball") for k in body_dof], dtype=bool)
    tree_body = tree[body_dof] if n else np.zeros((0, 4, 4))

    # bodies 1..n are sorted by depth, so each depth is one contiguous range
    max_depth = int(body_depth.max()) if n else 0
    bounds = np.searchsorted(body_depth[1:], np.arange(1, max_depth + 2)) + 1
    levels = [(int(bounds[d]), int(bounds[d + 1])) for d in range(max_depth)]

    # pointer jumping: step k composes each pose with its 2^k-th ancestor's; after
    # ceil(log2(depth)) steps every body's pose is relative to the root
    jumps: list[np.ndarray] = []
    anc = body_parent.copy()
    while (1 << len(jumps)) < max_depth:
        jumps.append(anc.copy())
        anc = anc[anc]

    link_body = np.array(
        [body_of_dof[link_dof[l]] if link_dof[l] >= 0 else 0 for l in link_order], dtype=np.int64
    )
    link_offset = np.stack([link_in_body[l] for l in link_order])
    return Topology(
        link_names=tuple(link_order), joint_names=tuple(j.name for j in dof_joints), n_bodies=n,
        body_parent=body_parent, body_depth=body_depth, body_dof=body_dof, dof_body=body_of_dof,
        tree_transform=tree_body, axis=axis, revolute=revolute, link_body=link_body, link_offset=link_offset,
        levels=tuple(levels), jumps=tuple(jumps),
        joint_of_dof=tuple(j.name for j in dof_joints), child_link_of_dof=tuple(j.child for j in dof_joints),
        ball_dofs=ball_dofs,
    )
