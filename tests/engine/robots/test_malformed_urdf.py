"""Malformed URDFs: each one is answered by a URDFError that names the file and the element.

The corpus lives in ``malformed/``; ``malformed/expected.json`` gives, per file, a word the
message must contain (the offending element, value or rule). A hypothesis fuzz test mutates a
valid URDF and checks that the loader raises nothing but URDFError.

Three files are refused only by ``strict=True`` (``STRICT_ONLY``): a rotational inertia that is not
positive definite or breaks the triangle inequality, and a mimic joint whose master is absent; the
default loader keeps them (as Pinocchio does) with one warning in the description.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.paths import urdf_dir
from engine.robots import RobotModel
from engine.robots.library import load_robot
from engine.robots.urdf import URDFError, load_urdf, parse_urdf_string

CORPUS = Path(__file__).parent / "malformed"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())
# refused by strict=True only: file -> a phrase of the default loader's warning
STRICT_ONLY = {"inertia_not_pd": "not positive definite: arm", "triangle_inequality": "triangle inequality: arm",
               "mimic_joint": "'j2' mimics 'nosuch'"}


def _options(name: str) -> dict:
    return {"strict": True} if name in STRICT_ONLY else {}


def test_corpus_is_large_and_complete():
    files = sorted(p.stem for p in CORPUS.glob("*.urdf"))
    assert len(files) >= 20
    assert files == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_urdf_raises_a_clear_error(name):
    path = CORPUS / f"{name}.urdf"
    with pytest.raises(URDFError) as err:
        load_urdf(path, **_options(name))
    exc = err.value
    message = str(exc)
    assert isinstance(exc, ValueError)
    assert str(path) in message and exc.file == str(path)          # names the file
    assert EXPECTED[name].lower() in message.lower()                 # names the offending thing
    # names the element (or, for unreadable XML, the line)
    assert exc.element or exc.line is not None, message
    if exc.element:
        assert "<" in exc.element
    # the model and the library refuse it the same way: nothing half-loaded
    with pytest.raises(URDFError):
        RobotModel.from_urdf(path, **_options(name))
    with pytest.raises(URDFError):
        load_robot(str(path), **_options(name))


@pytest.mark.parametrize("name", sorted(STRICT_ONLY))
def test_what_only_strict_refuses_loads_by_default_with_one_warning(name, caplog):
    path = CORPUS / f"{name}.urdf"
    with caplog.at_level(logging.WARNING, logger="engine.robots.urdf"):
        model = load_robot(str(path))
    (line,) = model.description.warnings
    assert STRICT_ONLY[name] in line
    assert [r.getMessage() for r in caplog.records] == [f"{path.name}: {line}. File: {path}"]
    if name == "mimic_joint":           # the mimic is dropped: j2 is an independent joint
        assert model.joint_names == ["j1", "j2"] and model.mimic_joint_names == []


def test_line_numbers_point_at_the_element():
    with pytest.raises(URDFError) as err:
        load_urdf(CORPUS / "bad_number_text.urdf")
    line = err.value.line
    text = (CORPUS / "bad_number_text.urdf").read_text().splitlines()
    assert "heavy" in text[line - 1]


def test_missing_mesh_is_a_warning_only(tmp_path, caplog):
    xml = (urdf_dir() / "pendulum.urdf").read_text().replace(
        '<geometry><cylinder radius="0.02" length="1.0"/></geometry>',
        '<geometry><mesh filename="package://nowhere_description/meshes/rod.stl"/></geometry>', 1)
    assert "nowhere_description" in xml
    path = tmp_path / "meshy.urdf"
    path.write_text(xml)
    with caplog.at_level(logging.WARNING):
        model = load_robot(str(path))
    assert model.dof == 1
    assert any("rod.stl" in r.getMessage() for r in caplog.records)


# --------------------------------------------------------------------------- fuzzing

VALID = (urdf_dir() / "planar_2link.urdf").read_text()
_TOKENS = ["<", ">", "/>", "</link>", "<joint>", '"', "=", " ", "nan", "-1", "1e309", "0", "&", "<!--",
           "<link name=\"link1\"/>", "type=\"floating\"", "xyz=\"1 2\"", "\x00", "é", "]]>", "<?xml"]


@st.composite
def mutated_urdf(draw):
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace_number", "duplicate", "truncate"]))
        n = len(text)
        if n == 0:
            break
        if kind == "delete":
            a = draw(st.integers(0, n - 1))
            text = text[:a] + text[a + draw(st.integers(1, 40)):]
        elif kind == "insert":
            a = draw(st.integers(0, n))
            token = draw(st.one_of(st.sampled_from(_TOKENS), st.text(max_size=5)))
            text = text[:a] + token + text[a:]
        elif kind == "replace_number":
            numbers = list(re.finditer(r"-?\d+(\.\d+)?(e-?\d+)?", text))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                new = draw(st.sampled_from(["nan", "-inf", "abc", "", "-5", "1e400", "0", "1 2", "0x10"]))
                text = text[:m.start()] + new + text[m.end():]
        elif kind == "duplicate":
            a = draw(st.integers(0, n - 1))
            b = min(n, a + draw(st.integers(1, 200)))
            text = text[:b] + text[a:b] + text[b:]
        else:
            text = text[:draw(st.integers(0, n))]
    return text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_urdf())
def test_fuzzed_urdf_raises_only_urdf_error(text):
    try:
        desc = parse_urdf_string(text)
    except URDFError as exc:
        assert str(exc)
        return
    # whatever loads is a usable tree
    model = RobotModel.from_description(desc)
    assert model.dof == len([j for j in desc.joints if j.movable])


# what the loader can be asked to accept, as the error's fields (the app decides leniency from them)
REMEDIES = {
    "negative_mass": ({"strict": False}, True),
    "nan_mass": (None, False),
    "inf_inertia": (None, False),
    "inertia_not_pd": ({"strict": None}, True),
    "mimic_joint": ({"strict": None}, False),
    "triangle_inequality": ({"strict": None}, False),
    "zero_mass": ({"strict": False}, False),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_error_says_which_loader_option_accepts_the_file(name):
    with pytest.raises(URDFError) as err:
        load_urdf(CORPUS / f"{name}.urdf", **_options(name))
    exc = err.value
    remedy, impossible = REMEDIES.get(name, (None, False))
    assert exc.remedy == remedy and exc.impossible == impossible, str(exc)
    if remedy is not None:          # the option it names does load the file
        load_urdf(CORPUS / f"{name}.urdf", **remedy)


def test_a_refused_mimic_joint_names_the_independent_option():
    text = (CORPUS / "mimic_joint.urdf").read_text().replace("nosuch", "j1")
    with pytest.raises(URDFError) as err:
        parse_urdf_string(text, mimic="error")
    assert err.value.remedy == {"mimic": "independent"} and not err.value.impossible
    assert parse_urdf_string(text, **err.value.remedy).joints[1].mimic is None
