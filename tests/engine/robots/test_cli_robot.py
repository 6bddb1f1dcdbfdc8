"""`python -m engine robot ...` (run in-process through engine.cli.main)."""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest

from engine.cli import main
from engine.paths import urdf_dir


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_robot_list_json(capsys):
    code, out, _ = _run(capsys, "robot", "list", "--json")
    assert code == 0
    robots = {r["name"]: r for r in json.loads(out)["robots"]}
    assert robots["panda"]["source"] == "shipped" and robots["ur5"]["source"] == "example-robot-data"


def test_robot_info_json_matches_pinocchio(capsys):
    code, out, _ = _run(capsys, "robot", "info", "panda", "--json")
    assert code == 0
    info = json.loads(out)
    pm = pin.buildModelFromUrdf(str(urdf_dir() / "panda.urdf"))
    assert info["dof"] == pm.nv == 7
    assert [j["name"] for j in info["joints"]] == list(pm.names[1:])
    np.testing.assert_allclose([j["lower"] for j in info["joints"]], pm.lowerPositionLimit)
    np.testing.assert_allclose([j["upper"] for j in info["joints"]], pm.upperPositionLimit)
    np.testing.assert_allclose([j["effort"] for j in info["joints"]], pm.effortLimit)
    assert info["total_mass"] == pytest.approx(sum(i.mass for i in pm.inertias))
    assert {l["name"] for l in info["links"]} >= {"panda_link0", "panda_hand_tcp"}


def test_robot_info_reports_springs_and_unbounded_joints(capsys):
    code, out, _ = _run(capsys, "robot", "info", str(urdf_dir() / "double_pendulum.urdf"), "--json")
    info = json.loads(out)
    assert info["springs"]["joint2"]["stiffness"] == 0.5
    assert info["joints"][0]["lower"] is None and info["joints"][0]["type"] == "continuous"


def test_robot_ik_json_reaches_the_target(capsys):
    target = ["0.45", "0.1", "0.4", "3.14159", "0", "0"]
    code, out, _ = _run(
        capsys, "robot", "ik", "panda", "--link", "panda_hand_tcp", "--target", *target, "--json"
    )
    assert code == 0
    res = json.loads(out)
    assert res["converged"] and res["position_error"] <= 1e-3 and res["rotation_error"] <= 1e-2
    pm = pin.buildModelFromUrdf(str(urdf_dir() / "panda.urdf"))
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, np.array(res["q"]))
    np.testing.assert_allclose(
        data.oMf[pm.getFrameId("panda_hand_tcp")].translation, [0.45, 0.1, 0.4], atol=1e-3
    )
    # within the chain's length but out of the arm's reach: exit code 1, converged false
    code, out, _ = _run(
        capsys,
        "robot",
        "ik",
        "panda",
        "--link",
        "panda_hand_tcp",
        "--target",
        "1.1",
        "0",
        "0.333",
        "--n-starts",
        "2",
        "--json",
    )
    assert code == 1 and json.loads(out)["converged"] is False
    # farther than the sum of the panda's link offsets (1.42 m from panda_link0 to the TCP): refused before
    # solving, a user error
    code, out, err = _run(
        capsys, "robot", "ik", "panda", "--link", "panda_hand_tcp", "--target", "3", "0", "0"
    )
    assert code == 2 and out == "" and "not reachable" in err and "--target" in err and "1.423 m" in err


def test_robot_identify_json(capsys):
    code, out, _ = _run(
        capsys,
        "robot",
        "identify",
        "planar_2link",
        "--duration",
        "1",
        "--test-duration",
        "0.5",
        "--epochs",
        "5",
        "--json",
    )
    assert code == 0
    res = json.loads(out)
    assert {p["link"] for p in res["parameters"]} == {"link1", "link2"}
    assert all(p["fitted_error"] < 1e-3 for p in res["parameters"])
    assert res["torque_rmse_after"] < res["torque_rmse_before"]
    assert res["config"]["perturb"] == 0.3


def test_robot_errors_are_clear(capsys):
    code, _, err = _run(capsys, "robot", "info", "pandaa")
    assert code == 2 and "unknown robot" in err and "panda" in err
    code, _, err = _run(capsys, "robot", "info", "tests/engine/robots/malformed/two_parents.urdf")
    assert code == 2 and "two_parents.urdf" in err and "two parents" in err
    code, _, err = _run(capsys, "robot", "ik", "panda", "--link", "nope", "--target", "0", "0", "0")
    assert code == 2 and "no link 'nope'" in err
    code, _, err = _run(capsys, "robot", "ik", "panda", "--link", "panda_link7", "--target", "0", "0")
    assert code == 2 and "--target" in err
    for flag, value in (("--mu-max", "0"), ("--tol-pos", "nan"), ("--max-step", "inf"), ("--max-iters", "0")):
        code, _, err = _run(
            capsys,
            "robot",
            "ik",
            "panda",
            "--link",
            "panda_link7",
            "--target",
            "0.3",
            "0",
            "0.5",
            flag,
            value,
        )
        assert code == 2 and flag in err and len(err.strip().splitlines()) == 1, (flag, err)
    code, _, err = _run(capsys, "robot", "identify", "pendulum", "--duration", "1e30")
    assert code == 2 and "--duration" in err and "3600" in err


def test_bench_ik_runs_and_reports(capsys):
    """Smoke test of the benchmark's plumbing (no timing assertions: speed is not tested)."""
    code, out, _ = _run(capsys, "bench", "ik", "--robot", "planar_2link", "--n", "3", "--batch", "4",
                        "--tracking", "3", "--json")
    assert code == 0
    res = json.loads(out)
    assert res["link"] == "tool" and res["position_only"] is True  # 2 joints cannot follow 6-D poses
    assert res["single"]["converged"] == 3 and res["batch"]["converged"] == 4
    assert res["tracking"]["converged"] == 3
    for flag in ("--batch", "--threads", "--n", "--tracking"):
        code, out, err = _run(capsys, "bench", "ik", "--robot", "planar_2link", flag, "0")
        assert code == 2 and out == "" and err.startswith(f"error: {flag}: must be between 1 and"), err


def test_robot_info_lists_what_the_loader_accepted(capsys):
    """example-robot-data's romeo.urdf: its hands' joints move only massless finger links (Pinocchio
    loads it; M is singular along them). `robot info` loads it by default and names them, once, in
    ``warnings`` (JSON) and in a ``warning:`` line (text); a robot without any has an empty list."""
    from robots_testdata import example_robot_data

    path = str(example_robot_data("romeo_description/urdf/romeo.urdf"))
    code, out, _ = _run(capsys, "robot", "info", path, "--json")
    assert code == 0
    info = json.loads(out)
    assert info["dof"] == pin.buildModelFromUrdf(path, mimic=False).nv - 22      # 22 coupled finger joints
    (line,) = info["warnings"]
    assert line.startswith("joints 'LHand', 'RHand' move no mass or inertia")
    code, out, _ = _run(capsys, "robot", "info", path)
    assert code == 0 and out.count("warning: joints 'LHand', 'RHand'") == 1
    code, out, _ = _run(capsys, "robot", "info", "panda", "--json")
    assert json.loads(out)["warnings"] == []
