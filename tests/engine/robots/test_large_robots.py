"""Large robots load in time and memory linear in their size (issue 34).

No timed assertions: the checks compare the linear algorithms with the plain ones they replace
(on random trees and on a 5000-link chain) and bound the memory a load allocates (the dense
(n, n) tree matrices are built on first use, not at load). The figures are in
results/large_robots/README.md (``python -m experiments.large_robots``).
"""

from __future__ import annotations

import random
import tracemalloc

import numpy as np
import pytest

from engine.robots.description import (
    Inertial,
    Joint,
    Link,
    RobotDescription,
    massless_moving_subtrees,
)
from engine.robots.topology import build_topology
from engine.robots.urdf import URDFError, parse_urdf_string

_INERTIA = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'


def chain_urdf(n: int, massless_tail: int = 0) -> str:
    """A serial chain of ``n`` links (``l0`` .. ``l{n-1}``), the last ``massless_tail`` without inertial."""
    out = ['<robot name="chain">']
    for i in range(n):
        inertial = "" if i >= n - massless_tail else f'<inertial><mass value="1"/>{_INERTIA}</inertial>'
        out.append(f'<link name="l{i}">{inertial}</link>')
        if i:
            out.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                       f'<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>'
                       f'<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>')
    out.append("</robot>")
    return "\n".join(out)


def random_tree(rng: random.Random, n: int) -> RobotDescription:
    """A random tree of ``n`` links in shuffled file order: some massless, some with inertia only,
    joints revolute, prismatic or fixed."""
    links, joints = [], []
    for i in range(n):
        kind = rng.random()
        inertial = (
            None
            if kind < 0.4
            else Inertial(mass=0.0, inertia=(0.1, 0, 0, 0.1, 0, 0.1))
            if kind < 0.55
            else Inertial(mass=1.0, inertia=(0.1, 0, 0, 0.1, 0, 0.1))
        )
        links.append(Link(name=f"l{i}", inertial=inertial))
        if i:
            jtype = rng.choice(["revolute", "prismatic", "fixed", "continuous"])
            joints.append(Joint(name=f"j{i}", type=jtype, parent=f"l{rng.randrange(i)}", child=f"l{i}",
                                axis=(0.0, 0.0, 1.0)))
    rng.shuffle(links)
    rng.shuffle(joints)
    return RobotDescription(name="tree", links=tuple(links), joints=tuple(joints), root="l0")


def massless_reference(desc: RobotDescription):
    """The plain algorithm: walk every movable joint's subtree (quadratic, used on small trees)."""
    children: dict[str, list[str]] = {}
    for j in desc.joints:
        children.setdefault(j.parent, []).append(j.child)
    inertial = {l.name: l.inertial for l in desc.links}

    def subtree(link):
        out, stack = [], [link]
        while stack:
            name = stack.pop()
            out.append(name)
            stack.extend(reversed(children.get(name, [])))
        return out

    bad = []
    for j in desc.joints:
        if j.movable:
            links = subtree(j.child)
            mass = sum(inertial[n].mass for n in links if inertial[n] is not None)
            rot = sum(
                float(np.abs(inertial[n].inertia_matrix()).sum()) for n in links if inertial[n] is not None
            )
            if mass <= 0.0 and (j.type == "prismatic" or rot <= 0.0):
                bad.append((j.name, tuple(links)))
    return bad


def ancestors_reference(topo) -> np.ndarray:
    n = topo.n_bodies
    anc = np.zeros((n, n), dtype=bool)
    for b in range(1, n + 1):
        a = b
        while a != 0:
            anc[b - 1, a - 1] = True
            a = topo.body_parent[a]
    return anc


@pytest.mark.parametrize("seed", range(20))
def test_massless_subtrees_and_ancestors_match_the_plain_algorithms_on_random_trees(seed):
    rng = random.Random(seed)
    desc = random_tree(rng, rng.randrange(2, 40))
    expected = massless_reference(desc)
    assert massless_moving_subtrees(desc) == expected
    assert massless_moving_subtrees(desc, limit=1) == expected[:1]
    topo = build_topology(desc)
    np.testing.assert_array_equal(topo.ancestors, ancestors_reference(topo))
    # the depth levels are the contiguous runs of equal depth
    for d, (start, stop) in enumerate(topo.levels, start=1):
        assert np.all(topo.body_depth[start:stop] == d)
    assert sum(stop - start for start, stop in topo.levels) == topo.n_bodies


def test_5000_link_chain_loads_and_its_massless_tail_is_found():
    desc = parse_urdf_string(chain_urdf(5000))
    assert len(desc.links) == 5000 and len(desc.movable_joints) == 4999
    assert massless_moving_subtrees(desc) == []
    assert desc.joint("j4999").child == "l4999" and desc.parent_joint("l2500").name == "j2500"
    topo = build_topology(desc)
    assert topo.levels == tuple((d, d + 1) for d in range(1, 5000))
    # the tail l4950..l4999 moves nothing with mass: j4950 is the first bad joint, with 50 links; loaded
    # with a warning naming it (forward dynamics is refused), refused with strict=True
    tail = parse_urdf_string(chain_urdf(5000, massless_tail=50))
    assert any("j4950" in w for w in tail.warnings)
    with pytest.raises(URDFError, match="joint 'j4950' moves links 'l4950', 'l4951'"):
        parse_urdf_string(chain_urdf(5000, massless_tail=50), strict=True)
    bare = RobotDescription(
        name="c",
        links=tuple(
            Link(name=l.name, inertial=l.inertial if i < 4950 else None) for i, l in enumerate(desc.links)
        ),
        joints=desc.joints,
        root="l0",
    )
    bad = massless_moving_subtrees(bare)
    assert [j for j, _ in bad] == [f"j{i}" for i in range(4950, 5000)]
    assert bad[0][1] == tuple(f"l{i}" for i in range(4950, 5000)) and bad[-1][1] == ("l4999",)


def test_a_2000_link_chain_model_allocates_no_dense_tree_matrices_at_load():
    from engine.robots.model import RobotModel

    desc = parse_urdf_string(chain_urdf(2000))
    tracemalloc.start()
    model = RobotModel(desc)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # dense (n, n) float64 ancestor matrices and (L, n) link masks would be 5 x 32 MB here
    assert peak < 40e6, f"{peak / 1e6:.0f} MB"
    assert "_tree_mask_cache" not in model.__dict__
    # built on first use, in the model's dtype, and rebuilt after .to()
    assert model._anc.shape == (1999, 1999) and model._anc.dtype == model._rev.dtype
    np.testing.assert_array_equal(model._anc.numpy(), np.tril(np.ones((1999, 1999))))
    np.testing.assert_array_equal(model._link_rev_mask.numpy()[5], [1.0] * 5 + [0.0] * 1994)
    import torch

    model32 = model.to(torch.float32)
    assert (
        model32._anc.dtype == torch.float32
        and model32._anc_strict[3, 2] == 1.0
        and model32._anc_strict[3, 3] == 0.0
    )
