"""xacro files: expanded by the xacro package (macros, arguments, an include of a sibling file),
then loaded as URDF; checked against Pinocchio on the expanded text and against the rod formulas
the macro writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import torch

from engine.cli import main
from engine.robots import RobotModel, URDFError
from engine.robots.files import file_format, parse_xacro_args
from engine.robots.xacro_loader import expand_xacro

ARM = Path(__file__).parent / "xacro_arm" / "arm.urdf.xacro"


def test_defaults_arguments_and_the_included_macro():
    default = RobotModel.from_file(ARM)
    assert file_format(ARM) == "xacro"
    assert default.name == "xacro_arm" and default.joint_names == ["joint1", "joint2"]
    longer = RobotModel.from_file(ARM, xacro_args={"links": "3", "length": "0.5", "tool": "true"})
    assert longer.joint_names == ["joint1", "joint2", "joint3"] and "tool" in longer.link_names
    # the macro's uniform rod: I = m l^2 / 12 about the centre, centre at l / 2
    link2 = longer.description.link("link2").inertial
    assert link2.origin.xyz == pytest.approx((0, 0, 0.25))
    assert link2.inertia[0] == pytest.approx(1.0 * 0.5**2 / 12)
    assert longer.total_mass == pytest.approx(2.0 + 1.5 + 1.0 + 0.5 + 0.2)


def test_dynamics_match_pinocchio_on_the_expanded_urdf():
    args = {"links": "3", "length": "0.35"}
    model = RobotModel.from_file(ARM, xacro_args=args)
    pm = pin.buildModelFromXML(expand_xacro(ARM, args))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, a = rng.uniform(-2, 2, 3), rng.normal(size=3), rng.normal(size=3)
        tau = model.inverse_dynamics(*(torch.as_tensor(x) for x in (q, v, a))).numpy()
        np.testing.assert_allclose(tau, pin.rnea(pm, pd, q, v, a), atol=1e-10)
        np.testing.assert_allclose(
            model.mass_matrix(torch.as_tensor(q)).numpy(), pin.crba(pm, pd, q), atol=1e-10
        )


def test_xacro_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="name:=value"):
        parse_xacro_args(["links=3"])
    assert parse_xacro_args(["links:=3", " tool:=true "]) == {"links": "3", "tool": "true"}
    broken = tmp_path / "broken.urdf.xacro"
    broken.write_text(ARM.read_text().replace("macros.xacro", "missing.xacro"))
    with pytest.raises(URDFError, match="broken.urdf.xacro.*xacro could not expand"):
        RobotModel.from_file(broken)
    with pytest.raises(ValueError, match="not xacro"):
        RobotModel.from_file(Path(__file__).parents[3] / "urdf" / "pendulum.urdf", xacro_args={"a": "1"})


def test_cli_info_with_xacro_arguments(capsys):
    assert (
        main(["robot", "info", str(ARM), "--xacro-arg", "links:=3", "--xacro-arg", "tool:=true", "--json"])
        == 0
    )
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "xacro" and info["dof"] == 3
    assert info["total_mass"] == pytest.approx(5.2)
    assert main(["robot", "info", str(ARM), "--xacro-arg", "links"]) == 2
    assert "name:=value" in capsys.readouterr().err
