"""The end-effector guess: which link of a robot is its tool, when nobody said.

One rule for every caller (the Robot workspace's default target link, ``bench ik`` and
``bench rbd``): the deepest link named like a tool (tcp, end_effector, ee_link, tool, grasp,
hand, flange, tip), else the deepest link of the tree. Depth counts the joints between a link
and the root; on a tie the link listed last wins.
"""

from __future__ import annotations

__all__ = ["END_EFFECTOR_HINTS", "default_end_effector", "link_depths"]

END_EFFECTOR_HINTS = ("tcp", "end_effector", "ee_link", "tool", "grasp", "hand", "flange", "tip")


def link_depths(description) -> dict[str, int]:
    """{link: number of joints (fixed ones too) between it and the root} of a RobotDescription."""
    parent = {j.child: j.parent for j in description.joints}
    depths: dict[str, int] = {}
    for link in (l.name for l in description.links):
        d, name = 0, link
        while name in parent:
            name = parent[name]
            d += 1
        depths[link] = d
    return depths


def default_end_effector(model) -> str:
    """The tool link of ``model`` (a RobotModel: its ``description`` and ``link_names``) by the
    rule of the module docstring; "" for a robot without links."""
    links = list(model.link_names)
    if not links:
        return ""
    depth = link_depths(model.description)
    for hint in END_EFFECTOR_HINTS:
        named = [l for l in links if hint in l.lower()]
        if named:
            return max(reversed(named), key=lambda l: depth.get(l, 0))
    return max(reversed(links), key=lambda l: depth.get(l, 0))
