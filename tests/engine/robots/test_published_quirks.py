"""Published URDFs load with the default options where the physics is well defined (as Pinocchio
loads them): point masses, thin bodies and a fixed base link with mass 0 and an inertia, each with
a logged warning; ``strict=True`` still refuses them; a joint that moves nothing with mass loads
with a warning, and the model refuses forward dynamics naming it. The loaded models are checked
against Pinocchio on the same files."""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest
import torch
from pinocchio_pair import PinocchioPair, close
from test_urdf_parse import JOINT, LINK, robot

from engine.robots import RobotModel, URDFError, load_urdf, parse_urdf_string
from engine.robots.compiled_calls import CompiledCalls
from engine.robots.library import load_robot, robot_entry
from engine.robots.simulate import SimulationOptions, simulate

# library name -> the phrase of the accepted quirk (example-robot-data, pybullet_data, diff_robot_data)
PUBLISHED = {
    "so101": "point mass",
    "talos-left-arm": "point mass",
    "baxter": "point mass",
    "iiwa-bullet": "root link with mass 0",
    "finger-edu": "thin body",
    "trifinger-drm": "thin body",
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_file_loads_by_default_and_matches_pinocchio(name, caplog):
    entry = robot_entry(name)
    assert "strict" not in entry.options              # the library needs no lenient flag any more
    # mimic joints as independent joints, as Pinocchio's default model has them (the coupling is
    # checked against its mimic=True model in test_mimic.py); the quirks are the inertias
    with caplog.at_level(logging.WARNING, logger="engine.robots.urdf"):
        pair = PinocchioPair(entry.path, {**entry.options, "mimic": "independent"})
    assert PUBLISHED[name] in caplog.text and str(entry.path) in caplog.text
    with pytest.raises(URDFError, match="default loader"):
        load_urdf(entry.path, strict=True, **entry.options)
    model, pm, pd = pair.model, pair.pm, pair.pd
    q, qd, qdd = pair.random_states(8, seed=3)
    t = lambda x: torch.as_tensor(x, dtype=torch.float64)  # noqa: E731
    tau = model.inverse_dynamics(t(q), t(qd), t(qdd)).numpy()
    M = model.mass_matrix(t(q)).numpy()
    acc = model.forward_dynamics(t(q), t(qd), t(tau)).numpy()
    for k in range(len(q)):
        qp, vp, ap = pair.q_to_pin(q[k]), pair.to_pin(qd[k]), pair.to_pin(qdd[k])
        close(tau[k], pair.from_pin(pin.rnea(pm, pd, qp, vp, ap)), 1e-9)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        close(M[k], Mp[np.ix_(pair.perm, pair.perm)], 1e-9)
    assert np.isfinite(acc).all()
    close(acc, qdd, 1e-7)                               # ABA inverts RNEA


def test_published_quirks_loaded_through_the_library():
    for name in PUBLISHED:
        assert load_robot(name).dof > 0


POINT_MASS = ('<link name="tip"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>'
              '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>')
HEAVY_BASE_NO_MASS = ('<link name="base"><inertial><mass value="0"/>'
                      '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>')


def test_point_mass_and_massless_base_in_a_small_file(caplog):
    xml = robot(HEAVY_BASE_NO_MASS, POINT_MASS, JOINT.format(n="j", t="revolute", p="base", c="tip"))
    with caplog.at_level(logging.WARNING):
        model = RobotModel.from_string(xml)
    assert "point mass" in caplog.text and "root link with mass 0" in caplog.text
    # a point mass 0.1 m from a vertical axis: M = m r^2, no gravity torque about z
    M = model.mass_matrix(torch.zeros(1, dtype=torch.float64))
    assert float(M[0, 0]) == pytest.approx(0.5 * 0.1**2, rel=1e-12)
    for strict in (True,):
        with pytest.raises(URDFError, match="point mass|root link"):
            parse_urdf_string(xml, strict=strict)
    assert parse_urdf_string(xml, strict=False).link("tip").inertial.mass == 0.5


def test_mass_zero_with_an_inertia_on_a_moving_link_is_still_refused():
    xml = robot(LINK.format(n="base"), HEAVY_BASE_NO_MASS.replace('"base"', '"arm"'),
                JOINT.format(n="j", t="revolute", p="base", c="arm"))
    with pytest.raises(URDFError, match="mass must be positive.*strict=False"):
        parse_urdf_string(xml)


def test_a_joint_that_moves_nothing_loads_with_a_warning_and_no_forward_dynamics(caplog):
    """As Pinocchio loads it: the default loader names the joint once (log and description), the
    model's kinematics, inverse dynamics and mass matrix work, forward dynamics and simulation say
    which joint makes M singular (not a NaN); strict=True refuses the file naming the joint and line."""
    marker = '<link name="{n}"/>'
    xml = robot(LINK.format(n="base"), LINK.format(n="upper"), marker.format(n="flange"),
                marker.format(n="tool"),
                JOINT.format(n="shoulder", t="revolute", p="base", c="upper"),
                JOINT.format(n="wrist", t="revolute", p="upper", c="flange"),
                JOINT.format(n="tool_joint", t="fixed", p="flange", c="tool"))
    with pytest.raises(URDFError, match=r"joint 'wrist' moves links 'flange', 'tool' that have no mass") as err:
        parse_urdf_string(xml, source="arm.urdf", strict=True)
    assert err.value.line == 8 and "arm.urdf" in str(err.value) and err.value.remedy == {"strict": None}
    for strict in (None, False):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="engine.robots.urdf"):
            desc = parse_urdf_string(xml, source="arm.urdf", strict=strict)
        (line,) = desc.warnings
        assert line.startswith("joint 'wrist' moves no mass") and "shoulder" not in line
        assert [r.getMessage() for r in caplog.records] == [f"arm.urdf: {line}. File: arm.urdf"]
    model = RobotModel.from_description(desc)
    assert model.singular_joints == ("wrist",)
    q = torch.tensor([[0.3, -0.7]], dtype=torch.float64)
    M = model.mass_matrix(q)
    # the wrist moves nothing: its row and column of M are zero, the shoulder's entry is the upper
    # link's inertia about z (0.1, its CoM on the axis)
    assert torch.equal(M[0, 1], torch.zeros(2, dtype=torch.float64)) and float(M[0, 0, 0]) == pytest.approx(0.1)
    tau = model.inverse_dynamics(q, torch.ones_like(q), torch.ones_like(q))
    assert torch.isfinite(tau).all() and float(tau[0, 1]) == 0.0
    assert model.link_pose(q, "tool").shape == (1, 4, 4)
    for call in (lambda: model.forward_dynamics(q, torch.zeros_like(q), torch.zeros_like(q)),
                 lambda: CompiledCalls(model).aba(q.numpy(), np.zeros((1, 2)), np.zeros((1, 2))),
                 lambda: simulate(model, q[0], options=SimulationOptions(duration=0.01))):
        with pytest.raises(ValueError, match=r"forward dynamics is undefined: joint 'wrist' moves no mass"):
            call()
    # a prismatic joint needs mass: rotational inertia alone does not resist a translation
    spinner = ('<link name="s"><inertial><mass value="0"/>'
               '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>')
    xml = robot(LINK.format(n="base"), spinner, JOINT.format(n="slide", t="prismatic", p="base", c="s"))
    with pytest.raises(URDFError, match="joint 'slide'"):
        parse_urdf_string(xml, strict=True)
    assert RobotModel.from_string(xml).singular_joints == ("slide",)
    # a massless link moved together with a massive one is fine
    xml = robot(LINK.format(n="base"), marker.format(n="flange"), LINK.format(n="tool"),
                JOINT.format(n="wrist", t="revolute", p="base", c="flange"),
                JOINT.format(n="tool_joint", t="fixed", p="flange", c="tool"))
    model = RobotModel.from_string(xml)
    assert model.dof == 1 and model.singular_joints == () and model.description.warnings == ()
    # a rotor inertia on the joint (armature, e.g. from MJCF or an actuation file) keeps M regular
    from dataclasses import replace

    wrist = replace(desc.joint("wrist"), armature=0.01)
    geared = replace(desc, joints=tuple(wrist if j.name == "wrist" else j for j in desc.joints))
    model = RobotModel.from_description(geared)
    assert model.singular_joints == ()
    qdd = model.forward_dynamics(q, torch.zeros_like(q), torch.tensor([[0.0, 0.02]], dtype=torch.float64))
    assert float(qdd[0, 1]) == pytest.approx(2.0)      # tau / armature: the wrist moves nothing else


def test_inertials_accepted_as_written_are_one_warning_line(caplog):
    """Several links with the same accepted fault are one plain warning naming them all (TALOS's five
    sensor frames with a zero rotational inertia were five warnings in the log console)."""
    tips = "".join(POINT_MASS.replace('"tip"', f'"tip{i}"') for i in range(3))
    joints = "".join(JOINT.format(n=f"j{i}", t="revolute", p="base", c=f"tip{i}") for i in range(3))
    xml = robot(HEAVY_BASE_NO_MASS, tips, joints)
    with caplog.at_level(logging.WARNING, logger="engine.robots.urdf"):
        parse_urdf_string(xml, source="three_tips.urdf", strict=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "engine.robots.urdf"]
    assert len(lines) == 1, lines
    assert lines[0].startswith("three_tips.urdf: 4 link inertials kept as written")
    assert "tip0, tip1, tip2" in lines[0] and "base" in lines[0]
