"""The URDF loader under byte and structured mutations of a shipped robot: a validated
description (and a model whose dynamics are finite) or a URDFError / ValueError naming the file."""

from __future__ import annotations

import re

import pytest
import torch
from corpus import corpus, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.paths import urdf_dir
from engine.robots.urdf import parse_urdf_string

_SETTINGS = settings(
    max_examples=fuzz_examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
BASE = (urdf_dir() / "double_pendulum.urdf").read_text()
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_ATTRS = list(_ATTR.finditer(BASE))
_ELEMENTS = list(
    re.finditer(r"<(link|joint|inertial|mass|inertia|origin|axis|limit|visual|geometry)\b[^>]*/?>", BASE)
)
VALUES = [
    "nan",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "",
    "abc",
    "1 2",
    "1 2 3 4",
    "inf",
    "1e-320",
    "-0",
    "base",
    "joint1",
    "link1",
    "revolute",
    "floating",
    "planar",
    "continuous",
    "fixed",
    "prismatic",
    "&amp;",
    "&bad;",
]


def _load(xml):
    try:
        description = parse_urdf_string(xml, base_dir=urdf_dir(), source="fuzz.urdf")
    except ValueError as exc:
        assert str(exc)
        return None
    from engine.robots import RobotModel

    try:
        model = RobotModel.from_description(description, dtype=torch.float64)
    except ValueError as exc:
        assert str(exc)
        return None
    return model


def _mutate(text: str, ops) -> str:
    for kind, i, value in ops:
        if kind == "attr" and _ATTRS:
            m = _ATTRS[i % len(_ATTRS)]
            text = text.replace(m.group(0), f'{m.group(1)}="{value}"', 1)
        elif kind == "drop" and _ELEMENTS:
            m = _ELEMENTS[i % len(_ELEMENTS)]
            text = text.replace(m.group(0), "", 1)
        elif kind == "dup" and _ELEMENTS:
            m = _ELEMENTS[i % len(_ELEMENTS)]
            text = text.replace(m.group(0), m.group(0) * 2, 1)
        elif kind == "cut":
            text = text[: i % max(len(text), 1)]
    return text


@_SETTINGS
@given(ops=st.lists(st.tuples(st.sampled_from(["attr", "attr", "drop", "dup", "cut"]), st.integers(0, 10_000),
                              st.sampled_from(VALUES)), min_size=1, max_size=4))
def test_structured_mutations(ops):
    _load(_mutate(BASE, ops))


@_SETTINGS
@given(data=st.binary(max_size=300), at=st.integers(0, len(BASE)))
def test_byte_insertions(data, at):
    raw = BASE.encode()
    _load(raw[:at] + data + raw[at:])


@pytest.mark.parametrize("path", corpus("urdf"), ids=lambda p: p.name)
def test_urdf_corpus(path):
    _load(path.read_bytes())


def _tree_is_valid(n: int, edges: list[tuple[int, int]]) -> bool:
    """The plain reference: each link has at most one parent, no joint joins a link to itself,
    exactly one root, and walking up from any link reaches that root."""
    parent: dict[int, int] = {}
    for p, c in edges:
        if p == c or c in parent:
            return False
        parent[c] = p
    if sum(1 for i in range(n) if i not in parent) != 1:
        return False
    for start in range(n):
        seen, link = {start}, start
        while link in parent:
            link = parent[link]
            if link in seen:
                return False
            seen.add(link)
    return True


@_SETTINGS
@given(n=st.integers(1, 9), edges=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), max_size=10),
       massless=st.sets(st.integers(0, 8)))
def test_random_joint_graphs_load_exactly_when_they_form_one_tree(n, edges, massless):
    """Loops, two parents, several roots: refused with a message; a tree loads (the loop check
    and the massless-subtree check are linear passes; this holds them to the plain definitions)."""
    edges = [(p % n, c % n) for p, c in edges]
    inertia = (
        '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
    )
    links = "".join(f'<link name="l{i}">{"" if i in massless else inertia}</link>' for i in range(n))
    joints = "".join(
        f'<joint name="j{k}" type="revolute"><parent link="l{p}"/><child link="l{c}"/><axis xyz="0 0 1"/>'
        f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for k, (p, c) in enumerate(edges)
    )
    xml = f'<robot name="g">{links}{joints}</robot>'
    try:
        desc = parse_urdf_string(xml, source="graph.urdf")
    except ValueError as exc:
        assert "graph.urdf" in str(exc)
        if not _tree_is_valid(n, edges):
            return
        assert "no mass" in str(exc)      # a valid tree refused only for a massless moving subtree
        return
    assert _tree_is_valid(n, edges) and len(desc.links) == n
