"""MJCF ``<equality joint>`` couplings as mimic joints.

MuJoCo's joint equality holds ``y - y0 = c0 + c1 (x - x0) + c2 (x - x0)^2 + ...`` between joint
``joint1`` (``y``) and ``joint2`` (``x``), ``y0, x0`` their reference positions (``qpos0``).
When the polynomial is linear (``c2 = c3 = c4 = 0``) this is a URDF mimic joint::

    y = c1 x + (y0 + c0 - c1 x0)      ->  Mimic(joint=joint2, multiplier=c1, offset=y0 + c0 - c1 x0)

and the model couples it exactly as it couples mimic joints: ``joint1`` has no coordinate of its
own, forces are ``G^T tau`` and the mass matrix ``G^T M G`` (MuJoCo enforces the same equality
softly, through its constraint solver, so its trajectories differ by the constraint's
compliance). Couplings are between hinge and slide joints (MuJoCo refuses a joint equality on a
ball joint) and combine with the tree's ball joints and free objects: the coupling maps
(:func:`engine.robots.backends.tree.coupling_matrix`) pass the quaternions through. Left as
constraints, and so listed as not modelled: inactive equalities, one without ``joint2`` (it
locks ``joint1``), non-linear polynomials, couplings across trees or that would close a loop of
couplings, and a second coupling of the same joint.
"""

from __future__ import annotations

from engine.robots.description import Mimic

__all__ = ["joint_couplings"]


def _master_of(couplings: dict[int, tuple[int, Mimic]], j: int) -> int:
    """The independent joint at the end of ``j``'s chain of couplings (``j`` itself when free)."""
    seen = set()
    while j in couplings and j not in seen:
        seen.add(j)
        j = couplings[j][0]
    return j


def joint_couplings(m, joint_names: list[str], kept_joints: set[int]) -> tuple[dict[int, Mimic], set[int]]:
    """``({dependent joint id: Mimic}, {equality ids coupled})`` of the compiled model ``m``
    (``joint_names``: each MuJoCo joint's name in the description; ``kept_joints``: the joints
    of the tree being described)."""
    import mujoco

    couplings: dict[int, tuple[int, Mimic]] = {}
    used: set[int] = set()
    movable = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    for e in range(m.neq):
        if int(m.eq_type[e]) != int(mujoco.mjtEq.mjEQ_JOINT) or not m.eq_active0[e]:
            continue
        y, x = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        c = [float(v) for v in m.eq_data[e][:5]]
        if x < 0 or any(c[2:]) or y not in kept_joints or x not in kept_joints or y in couplings:
            continue
        if int(m.jnt_type[y]) not in movable or int(m.jnt_type[x]) not in movable:
            continue
        if _master_of(couplings, x) == y:                     # would close a loop of couplings
            continue
        y0, x0 = float(m.qpos0[m.jnt_qposadr[y]]), float(m.qpos0[m.jnt_qposadr[x]])
        couplings[y] = (x, Mimic(joint=joint_names[x], multiplier=c[1], offset=y0 + c[0] - c[1] * x0))
        used.add(e)
    return {y: mimic for y, (_, mimic) in couplings.items()}, used
