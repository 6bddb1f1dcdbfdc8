"""The kinematic trees of a compiled MuJoCo model, and the choice of one.

A MuJoCo world can hold several trees: the bodies fixed to the world (with their joints: a
fixed-base robot, or two arms) form one tree, named ``"world"``; every body with a free joint
(a child of the world body) is the floating root of a tree of its own, named after the body
(a Panda scene with a free cube: ``"world"`` with the arm's 9 joints and ``"cube"`` with 6
DoF). A :class:`RobotDescription` holds one tree, so :func:`choose_tree` takes the one asked
for, or else the largest (the robot before the objects it handles: a user opening a Panda scene
sees the Panda). When that tree is fixed to the world and no tree is named, the free bodies are
kept beside it (:func:`free_objects`): each becomes three slides along the world axes and a ball
joint, MuJoCo's free joint exactly (position in the world, angular velocity in the body frame).
(the robot's joints coupled by ``<equality joint>`` stay coupled: a coupling is between its scalar
joints, the objects' ball quaternions pass through it). Trees left out (beside a floating robot,
or all but the named one) are named in the description's ``not_modelled``
lines and in the load warning, which say how to pick another (``tree="NAME"``, the CLI's
``--tree NAME``): a tree is never dropped silently.
:func:`mujoco_trees` lists them; :func:`engine.robots.mjcf.load_mjcf_trees` loads each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.robots.mjcf_error import MJCFError
from engine.robots.mjcf_inventory import named_list

__all__ = ["MujocoTree", "choose_tree", "free_objects", "mujoco_trees", "other_trees_line"]


@dataclass(frozen=True)
class MujocoTree:
    """One tree: ``name`` ("world" or the free body's), ``root`` (body id: 0 for the world),
    ``bodies`` (body ids, the root included), ``dof`` (velocity coordinates, a free root's 6
    included), ``mass`` (kg, the world body's own excluded)."""

    name: str
    root: int
    bodies: frozenset[int]
    dof: int
    mass: float

    @property
    def floating(self) -> bool:
        return self.root != 0

    def summary(self) -> str:
        kind = "free body" if self.floating else "fixed to the world"
        return f"{self.name!r} ({kind}, {self.dof} DoF, {self.mass:.3g} kg)"


def mujoco_trees(m, names: list[str], free_bodies: list[int]) -> list[MujocoTree]:
    """The trees of ``m`` (``names``: body names; ``free_bodies``: the children of the world body
    with a free joint), largest first: most joints besides a free root's (the robot before the
    objects it handles), then most mass. The world's tree is listed when it moves (has a joint)
    or when there is no other tree."""
    free = set(free_bodies)
    members: dict[int, set[int]] = {0: {0}} | {b: set() for b in free_bodies}
    for b in range(1, m.nbody):
        root = int(m.body_rootid[b])
        members[root if root in free else 0].add(b)
    trees = []
    for root, bodies in members.items():
        dof = sum(int(m.body_dofnum[b]) for b in bodies)
        mass = sum(float(m.body_mass[b]) for b in bodies if b != 0)
        trees.append(MujocoTree(names[root], root, frozenset(bodies), dof, mass))
    world = next(t for t in trees if t.root == 0)
    if world.dof == 0 and len(trees) > 1:
        trees.remove(world)
    return sorted(trees, key=lambda t: (-(t.dof - 6 * t.floating), -t.mass, t.root))


def choose_tree(trees: list[MujocoTree], tree: str | None, names: list[str], path) -> MujocoTree:
    """The tree named ``tree`` ("world", a free body's name, or any body of the tree), or the
    largest (``trees[0]``) when ``tree`` is None (:func:`other_trees_line` names the rest).
    Raises :class:`MJCFError` naming the trees when ``tree`` names none of them."""
    listed = ", ".join(t.summary() for t in trees)
    if tree is None:
        return trees[0]
    for t in trees:
        if tree == t.name or tree in {names[b] for b in t.bodies}:
            return t
    raise MJCFError(f"no tree named {tree!r}; the trees are {listed}", file=str(path), element="<worldbody>")


def free_objects(trees: list[MujocoTree], chosen: MujocoTree, tree: str | None) -> list[MujocoTree]:
    """The free bodies kept beside ``chosen`` when no ``tree`` was named and ``chosen`` is fixed to
    the world (a robot and the objects it handles); none beside a floating robot (one floating
    root per model)."""
    if tree is not None or chosen.floating:
        return []
    return [t for t in trees if t is not chosen and t.floating]


def other_trees_line(trees: list[MujocoTree], chosen: MujocoTree, kept: Sequence[MujocoTree] = ()) -> list[str]:
    """The not-modelled line naming the trees left out when ``chosen`` (and the free objects
    ``kept``) are loaded, or none."""
    others = [t.name for t in trees if t is not chosen and t not in kept]
    if not others:
        return []
    return [f"other kinematic trees of the file, not in this model (load one with tree='NAME', the CLI's "
            f"--tree NAME): {named_list(others)}"]
