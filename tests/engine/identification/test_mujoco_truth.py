"""Identification of friction, armature and masses judged against MuJoCo's truth.

The reference is MuJoCo (tests/engine/identification/mujoco_arm.py): it loads urdf/arm3.urdf
with its own parser, adds joint damping, dry friction (``frictionloss``, a constraint),
armature and link masses 20 % off, and simulates the arm under a PD controller; the log holds
q, qd and noisy torques at 200 Hz. Our smooth Coulomb model ``Fc tanh(qd / v_s)`` agrees with
MuJoCo's dry friction while a joint slides and not while it sticks (there MuJoCo's friction is
anything in [-Fc, Fc]); the motion keeps the joints mostly sliding, and the torque error is
also checked on the samples where every joint moves faster than 0.1 rad/s (2 v_s).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco")

from engine.identification.from_log import LogIdentificationConfig, identify_from_log, robot_prepare_config  # noqa: E402
from engine.logs import LogMapping, prepare_log, read_log  # noqa: E402
from engine.logs.robot_order import order_for_robot  # noqa: E402
from engine.robots.library import load_robot  # noqa: E402
from tests.engine.identification import mujoco_arm  # noqa: E402

KINDS = ("mass", "damping", "coulomb", "armature", "offset")


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arm3")
    csv, mapping_path = mujoco_arm.write_log(folder, seconds=10.0, shuffle=True)
    model = load_robot(str(mujoco_arm.URDF))
    mapping, notes = order_for_robot(LogMapping.load(mapping_path), model.joint_names, "arm3")
    prepared = prepare_log(read_log(csv), mapping, robot_prepare_config())
    config = LogIdentificationConfig(learn=KINDS, blackbox_steps=0, epochs=12, max_train_samples=1500)
    return identify_from_log(prepared, model, config), prepared, mapping, notes


def test_log_columns_are_matched_to_the_joints_by_name(identified):
    _, _, mapping, notes = identified
    # the CSV lists joint2, joint3, joint1: the robot's order is restored from the names
    assert mapping.q == ["joint1_pos", "joint2_pos", "joint3_pos"]
    assert mapping.u == ["joint1_effort", "joint2_effort", "joint3_effort"]
    assert mapping.qd == ["joint1_vel", "joint2_vel", "joint3_vel"]
    assert notes and "joint2_pos -> joint2" in notes[0]


def _joint(result, joint, kind):
    return next(p for p in result.parameters if p.joint == joint and p.kind == kind)


def test_friction_armature_and_masses_match_mujoco(identified):
    result, _, _, _ = identified
    truth = mujoco_arm.TRUTH
    for i, joint in enumerate(mujoco_arm.JOINTS):
        d, c, a = (_joint(result, joint, k) for k in ("damping", "coulomb", "armature"))
        assert d.identified == pytest.approx(truth["damping"][i], rel=0.10), joint
        assert c.identified == pytest.approx(truth["coulomb"][i], rel=0.10), joint
        assert a.identified == pytest.approx(truth["armature"][i], rel=0.10), joint
        assert d.nominal == c.nominal == a.nominal == 0.0   # the URDF has none: all found from the log
    # link 1 turns about the vertical axis only: its mass acts through m (cx^2 + cy^2) on joint 1
    # alone, in one sum with joint 1's armature (both flagged, the mass kept near its URDF value)
    assert not result.parameter("link1", "mass").identifiable
    assert not _joint(result, "joint1", "armature").identifiable
    assert result.parameter("link1", "mass").identified == pytest.approx(1.5, rel=0.05)
    for link in ("link2", "link3"):
        p = result.parameter(link, "mass")
        assert p.identifiable
        assert p.identified == pytest.approx(_true_mass(link), rel=0.03)


def _true_mass(link: str) -> float:
    i = mujoco_arm.LINKS.index(link)
    nominal = {"link1": 1.5, "link2": 1.2, "link3": 0.8}[link]
    return nominal * mujoco_arm.TRUTH["mass_factor"][i]


def test_validation_torque_error_is_near_the_noise(identified):
    result, prepared, _, _ = identified
    noise = result.noise_level
    assert noise == pytest.approx(mujoco_arm.TAU_NOISE, rel=0.15)   # estimated from the torques alone
    rmse = result.torque_rmse_validation
    assert rmse["learned"] < 2.2 * noise
    assert rmse["nominal"] > 10 * noise          # the URDF without friction, armature, right masses
    # where every joint slides (|qd| > 2 v_s) the smooth Coulomb model is MuJoCo's dry friction
    trim = result.config["trim"]
    n = prepared.n_samples
    inner = np.zeros(n, dtype=bool)
    inner[trim:n - trim] = True
    qd = prepared.qd[prepared.val_mask & inner]
    sliding = (np.abs(qd) > 0.1).all(1)
    err = result.validation["learned"] - result.validation["tau"]
    assert sliding.mean() > 0.6
    assert float(np.sqrt((err[sliding] ** 2).mean())) < 1.8 * noise


def test_identify_cli_lists_joint_kinds_and_writes_the_robot_back(tmp_path, capsys):
    """identify log --learn ...,coulomb,armature,offset --save-urdf: the URDF's <dynamics> and
    the actuation JSON beside it hold what was found, and loading that robot reads both back."""
    import json

    from engine.cli import main
    from engine.models.robot_source import load_rigid_body

    csv, mapping = mujoco_arm.write_log(tmp_path, seconds=8.0, shuffle=True)
    out = tmp_path / "arm3_identified.urdf"
    assert main(["identify", "log", str(csv), "--mapping", str(mapping), "--robot", str(mujoco_arm.URDF),
                 "--learn", "mass,damping,friction,armature,offset", "--epochs", "8", "--blackbox-steps", "0",
                 "--save-urdf", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    kinds = {(p["joint"], p["kind"]) for p in summary["parameters"] if p["joint"]}
    assert kinds == {(j, k) for j in mujoco_arm.JOINTS for k in ("damping", "coulomb", "armature", "offset")}
    assert summary["saved_actuation"].endswith("arm3_identified.actuation.json")
    back = load_rigid_body(str(out))
    found = summary["joint_values"]
    for kind in ("damping", "coulomb", "armature", "offset"):
        assert back.friction[kind] == pytest.approx(found[kind], rel=1e-12, abs=1e-15)
    assert back.friction["coulomb"][1] == pytest.approx(mujoco_arm.TRUTH["coulomb"][1], rel=0.15)
    # the URDF itself carries damping, friction and armature (for other readers: no offsets there)
    text = out.read_text()
    assert text.count("<dynamics") == 3 and "armature=" in text


def test_identify_cli_with_every_kind_lists_the_joint_terms_and_the_base_parameters(tmp_path, capsys):
    """identify log --learn mass,com,inertia,damping,coulomb,armature,offset --json (issue 30, item 5)."""
    import json

    from engine.cli import main

    csv, mapping = mujoco_arm.write_log(tmp_path, seconds=8.0, shuffle=True)
    assert main(["identify", "log", str(csv), "--mapping", str(mapping), "--robot", str(mujoco_arm.URDF),
                 "--learn", "mass,com,inertia,damping,coulomb,armature,offset", "--blackbox-steps", "0",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    kinds = {(p["joint"], p["kind"]) for p in summary["parameters"] if p["joint"]}
    assert kinds == {(j, k) for j in mujoco_arm.JOINTS for k in ("damping", "coulomb", "armature", "offset")}
    assert summary["config"]["method"] == "closed_form"
    base = summary["base_parameters"]
    assert base and all({"expression", "value", "std", "parameters"} <= set(b) for b in base)
    # joint 1 turns link 1 about the vertical: its armature only in one sum with the links' inertias
    assert not next(p for p in summary["parameters"] if p["joint"] == "joint1" and p["kind"] == "armature")[
        "identifiable"]
    assert all(p["identified"] > 0 for p in summary["parameters"] if p["kind"] == "mass")
