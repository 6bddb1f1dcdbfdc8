"""Put a log's mapped columns in a robot's joint order, matched by name, before any work.

A mapping (:class:`~engine.logs.mapping.LogMapping`) lists the log's configuration columns
``q``, with velocity columns ``qd`` and torque columns ``u`` in the same order. A robot model
learns in its own joint order. :func:`order_for_robot` finds the robot joint of each ``q``
column by name (the rules of :mod:`engine.logs.joint_match`: ``panda_joint1``,
``q_panda_joint1``, ``joint_1_pos``, ``q1`` for ``joint1``...) and returns the mapping
reordered (``q``, ``qd`` and ``u`` moved together). When no column names a joint and there are
as many columns as joints, the mapping's order is taken as the joint order (the fallback, said
in a note). Anything else is refused with one plain message naming the joints without a
column and the columns without a joint. Torques are required: one column per joint.
"""

from __future__ import annotations

from dataclasses import replace

from engine.logs.errors import LogError
from engine.logs.joint_match import _assign, _role_and_key
from engine.logs.mapping import LogMapping

__all__ = ["order_for_robot"]


def _names(items) -> str:
    return ", ".join(repr(x) for x in items)


def order_for_robot(mapping: LogMapping, joint_names: list[str], robot: str = "the robot",
                    require_torques: bool = True) -> tuple[LogMapping, list[str]]:
    """``(mapping in the robot's joint order, notes)``; :class:`LogError` on a mismatch.

    ``joint_names``: the robot's movable joints in its order; ``robot``: its name for messages;
    ``require_torques``: refuse a mapping without one torque column per joint.
    """
    joints = list(joint_names)
    cols = list(mapping.q)
    src = mapping.name or "the mapping"
    if require_torques and not mapping.u:
        raise LogError(f"{src} maps no torque columns ('u'); learning or identifying {robot} needs the joint "
                       f"torques, one column per joint ({_names(joints)})", column="u")
    if mapping.u and len(mapping.u) != len(cols):
        raise LogError(f"{src} maps {len(mapping.u)} torque columns for {len(cols)} configuration columns; "
                       f"{robot} needs one torque per joint, in the order of 'q'", column="u")
    parsed = [_role_and_key(c) for c in cols]
    found = _assign(joints, cols, [p[1] for p in parsed], [p[3] for p in parsed])
    notes: list[str] = []
    if len(found) == len(joints) and len(cols) == len(joints):
        order = [cols.index(found[j]) for j in joints]
        if order != list(range(len(cols))):
            notes.append("log columns put in the robot's joint order by name: "
                         + ", ".join(f"{found[j]} -> {j}" for j in joints))
    elif not found and len(cols) == len(joints):
        order = list(range(len(cols)))
        notes.append(f"the log's columns do not name {robot}'s joints; the mapping's order is taken: "
                     + ", ".join(f"{c} -> {j}" for c, j in zip(cols, joints)))
    else:
        missing = [j for j in joints if j not in found]
        extra = [c for c in cols if c not in found.values()]
        parts = [f"the log's joints do not match {robot} ({len(cols)} configuration columns, "
                 f"{len(joints)} joints: {_names(joints)})"]
        if missing:
            parts.append(f"joints without a column: {_names(missing)}")
        if extra:
            parts.append(f"columns that name no joint: {_names(extra)}")
        parts.append("rename the columns after the joints, or list exactly one column per joint in the "
                     "mapping's 'q' (and 'qd', 'u'), in the robot's joint order")
        raise LogError("; ".join(parts), column="q")

    def pick(lst):
        return [lst[i] for i in order] if lst else lst

    return replace(mapping, q=pick(cols), qd=pick(list(mapping.qd)), u=pick(list(mapping.u))), notes
