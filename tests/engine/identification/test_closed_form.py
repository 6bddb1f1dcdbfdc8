"""Closed-form identification (engine.identification.closed_form) and the joint columns of the
regressor (engine.identification.joint_terms.joint_regressor).

References: the engine's RNEA plus JointFriction (the torque model the regressor must reproduce,
an algebra check), the exact parameters used to make noise-free torques, and MuJoCo (a simulator
nobody here wrote) with its own damping, dry friction, armature and masses for the Panda.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from engine.identification.closed_form import closed_form_fit, link_parameters, pseudo_inertia
from engine.identification.from_log import LogIdentificationConfig
from engine.identification.joint_terms import JOINT_KINDS, joint_regressor
from engine.models.joint_friction import JointFriction
from engine.models.robot_source import split_rigid_body
from engine.robots.library import load_robot

TRUE_JOINT = {"damping": [0.6, 0.6, 0.5, 0.5, 0.2, 0.2, 0.1], "coulomb": [0.8, 0.8, 0.6, 0.6, 0.3, 0.3, 0.2],
              "armature": [0.15, 0.15, 0.12, 0.12, 0.05, 0.05, 0.03],
              "offset": [0.1, -0.2, 0.0, 0.05, 0.0, 0.0, 0.01]}
FACTOR = (1.0, 0.85, 1.15, 0.9, 1.1, 0.85, 1.0)


@pytest.fixture(scope="module")
def panda():
    model = load_robot("panda")
    rigid, nominal = split_rigid_body(model)
    child = {j.name: j.child for j in model.description.joints}
    labels = [child[n] for n in rigid.joint_names]
    g = torch.Generator().manual_seed(0)
    n = 1500
    q = torch.rand(n, 7, generator=g, dtype=torch.float64) * 2 - 1
    qd = torch.randn(n, 7, generator=g, dtype=torch.float64)
    qdd = 3 * torch.randn(n, 7, generator=g, dtype=torch.float64)
    truth = rigid.with_link_params(mass={l: float(rigid.link_mass(l)) * f for l, f in zip(labels, FACTOR)})
    joint = JointFriction(7, TRUE_JOINT, velocity_scale=0.05, dtype=torch.float64)
    with torch.no_grad():
        tau = truth.inverse_dynamics(q, qd, qdd) + joint.torque(qd, qdd)
    return rigid, nominal, labels, truth, (q, qd, qdd, tau)


def test_joint_regressor_columns_reproduce_rnea_plus_joint_friction(panda):
    rigid, _, _, _, (q, qd, qdd, _) = panda
    q, qd, qdd = q[:50], qd[:50], qdd[:50]
    joint = JointFriction(7, TRUE_JOINT, velocity_scale=0.03, dtype=torch.float64)
    theta = torch.tensor([TRUE_JOINT[k][i] for k in JOINT_KINDS for i in range(7)], dtype=torch.float64)
    Y = rigid.regressor(q, qd, qdd)
    Yj = joint_regressor(qd, qdd, JOINT_KINDS, velocity_scale=0.03)
    assert Yj.shape == (50, 7, 28)
    with torch.no_grad():
        reference = rigid.inverse_dynamics(q, qd, qdd) + joint.torque(qd, qdd)
    assert torch.allclose(Y @ rigid.dynamic_parameters() + Yj @ theta, reference, rtol=0, atol=1e-10)
    # a subset of kinds: their columns alone, in JOINT_KINDS order; joint i's columns act on its row only
    sub = joint_regressor(qd, qdd, ("offset", "damping"), velocity_scale=0.03)
    assert torch.equal(sub[..., :7], Yj[..., :7]) and torch.equal(sub[..., 7:], Yj[..., 21:])
    assert torch.count_nonzero(Yj[:, 0, 1::7]) == 0
    with pytest.raises(ValueError, match="stiction"):
        joint_regressor(qd, qdd, ("stiction",))


def test_closed_form_recovers_the_torque_model_exactly_and_flags_link1(panda):
    rigid, nominal, labels, truth, (q, qd, qdd, tau) = panda
    r = closed_form_fit(rigid, q, qd, qdd, tau, np.full(7, 0.05), labels, labels, ("mass",), JOINT_KINDS, nominal,
                        0.05)
    for link in labels[1:]:
        assert r.masses[link] == pytest.approx(float(truth.link_mass(link)), rel=1e-8), link
    for kind in JOINT_KINDS:
        assert r.joint_values[kind] == pytest.approx(TRUE_JOINT[kind], rel=1e-8, abs=1e-9), kind
    # link 1's centre of mass is on the joint-1 axis: its mass acts on no torque and keeps its value
    assert "panda_link1" not in r.masses
    assert r.unidentifiable[("panda_link1", "mass")].startswith("no effect")
    assert r.rank == r.columns - 1
    assert all(b["std"] < 1e-6 * max(abs(b["value"]), 1.0) for b in r.base_parameters)   # noise-free


def test_full_inertial_closed_form_is_physical_and_names_the_combinations(panda):
    rigid, nominal, labels, _, (q, qd, qdd, tau) = panda
    r = closed_form_fit(rigid, q, qd, qdd, tau, np.full(7, 0.05), labels, labels, ("mass", "com", "inertia"),
                        JOINT_KINDS, nominal, 0.05)
    model = rigid.with_link_params(mass=r.masses, com=r.coms, inertia=r.inertias)   # checks the URDF rules
    for link in labels:
        pi = link_parameters(float(model.link_mass(link)), model.link_com(link).numpy(),
                             model.link_inertia(link).numpy())
        assert float(model.link_mass(link)) > 0
        assert np.linalg.eigvalsh(pseudo_inertia(pi))[0] >= -1e-12, link
    assert min(r.joint_values["damping"] + r.joint_values["coulomb"] + r.joint_values["armature"]) >= 0
    # the torques are reproduced (base parameters kept) although many parameters are not identifiable
    joint = JointFriction(7, r.joint_values, velocity_scale=0.05, dtype=torch.float64)
    with torch.no_grad():
        err = model.inverse_dynamics(q, qd, qdd) + joint.torque(qd, qdd) - tau
    assert float(err.pow(2).mean().sqrt()) < 1e-3 * float(tau.std())
    # the textbook combination: joint 1's armature with link 1's Izz (and link 2's inertia about joint 1)
    assert any({"panda_joint1 armature", "panda_link1 Izz"} <= set(b["parameters"]) for b in r.base_parameters)
    assert "combination" in r.unidentifiable[("panda_link1", "armature")]
    assert r.unidentifiable[("panda_link1", "mass")].startswith("no effect")


def test_a_joint_that_does_not_move_is_reported_and_keeps_its_terms(panda):
    """Too little excitation (issue 30, item 8): joint 3 held still, its friction and armature act on
    no torque; a motionless log leaves every parameter at its nominal value, all reported."""
    rigid, nominal, labels, truth, (q, qd, qdd, _) = panda
    q, qd, qdd = q.clone(), qd.clone(), qdd.clone()
    q[:, 2], qd[:, 2], qdd[:, 2] = 0.3, 0.0, 0.0
    joint = JointFriction(7, TRUE_JOINT, velocity_scale=0.05, dtype=torch.float64)
    with torch.no_grad():
        tau = truth.inverse_dynamics(q, qd, qdd) + joint.torque(qd, qdd)
    r = closed_form_fit(rigid, q, qd, qdd, tau, np.full(7, 0.05), labels, labels, ("mass",), JOINT_KINDS, nominal,
                        0.05, min_speed=0.1)
    for kind in ("damping", "coulomb", "armature"):
        assert r.unidentifiable[("panda_link3", kind)].startswith("no effect"), kind
        assert r.joint_values[kind][2] == nominal[kind][2]
        assert r.joint_values[kind][3] == pytest.approx(TRUE_JOINT[kind][3], rel=1e-8)
    # the offset of joint 3 still acts (a constant torque): found from the gravity-loaded rows
    assert r.joint_values["offset"][2] == pytest.approx(TRUE_JOINT["offset"][2], abs=1e-8)
    still = torch.zeros_like(q)
    with torch.no_grad():
        zero = rigid.inverse_dynamics(still, still, still) * 0
    r = closed_form_fit(rigid, still, still, still, zero, np.full(7, 0.05), labels, labels, ("mass",),
                        ("damping",), nominal, 0.05)
    assert r.rank == 0 or all(k[1] != "damping" or v.startswith("no effect") for k, v in r.unidentifiable.items())


def test_config_rejects_an_unknown_method_in_one_line():
    with pytest.raises(ValueError, match="method must be 'closed_form' or 'gradient', got 'newton'"):
        replace(LogIdentificationConfig(), method="newton").validate()
    with pytest.raises(ValueError, match="min_speed"):
        replace(LogIdentificationConfig(), min_speed=-1.0).validate()


@pytest.fixture(scope="module")
def mujoco_panda(tmp_path_factory):
    pytest.importorskip("mujoco")
    from engine.data.example_logs import write_example
    from engine.data.mujoco_logs import PandaFrictionLogConfig, panda_friction_log, panda_friction_truth
    from engine.identification.from_log import identify_from_log, robot_prepare_config
    from engine.logs import LogMapping, prepare_log, read_log

    cfg = replace(PandaFrictionLogConfig(), duration=15.0, seed=3)
    csv, mapping = write_example(panda_friction_log(cfg), tmp_path_factory.mktemp("panda"))[:2]
    prepared = prepare_log(read_log(csv), LogMapping.load(mapping), robot_prepare_config())
    config = LogIdentificationConfig(learn=("mass", "damping", "coulomb", "armature", "offset"), blackbox_steps=0)
    return identify_from_log(prepared, load_robot("panda"), config), panda_friction_truth(cfg), prepared


def test_closed_form_on_a_mujoco_panda_log_finds_friction_armature_and_masses(mujoco_panda):
    result, truth, prepared = mujoco_panda
    values = result.joint_values
    for kind in ("damping", "coulomb", "armature"):   # the large joints 1-4
        assert values[kind][:4] == pytest.approx(truth[kind][:4], rel=0.2), kind
    masses = {p.link: p.identified for p in result.parameters if p.kind == "mass"}
    true_mass = dict(zip(truth["links"], truth["mass"]))
    for link in truth["links"][2:]:   # links 3-7; link 2 is weakly excited (see the next test)
        assert masses[link] == pytest.approx(true_mass[link], rel=0.05), link
    assert result.unidentifiable["panda_link1/mass"].startswith("no effect")
    # MuJoCo's dry friction sticks near rest, which the smooth Coulomb model cannot: the engine's
    # model given the truth scores 1.7-2.3 x the noise on such logs; the fit is as close as the truth
    rigid, _ = split_rigid_body(load_robot("panda").with_link_params(mass=true_mass))
    joint = JointFriction(7, {k: truth[k] for k in ("damping", "coulomb", "armature")},
                          velocity_scale=result.velocity_scale, dtype=torch.float64)
    rows = np.isin(prepared.t, result.validation["t"])
    q, qd, qdd = (torch.as_tensor(a[rows]) for a in (prepared.q, prepared.qd, prepared.qdd))
    with torch.no_grad():
        given_truth = (rigid.inverse_dynamics(q, qd, qdd) + joint.torque(qd, qdd)).numpy()
    floor = float(np.sqrt(np.mean((given_truth - result.validation["tau"]) ** 2)))
    assert floor > 1.3 * result.noise_level
    assert result.torque_rmse_validation["learned"] < 1.05 * floor
    assert result.torque_rmse_validation["nominal"] > 10 * result.noise_level


def test_a_weakly_excited_mass_is_reported_with_its_standard_deviation(mujoco_panda):
    result = mujoco_panda[0]
    link2 = next(p for p in result.parameters if p.link == "panda_link2" and p.kind == "mass")
    base = {b["expression"]: b for b in result.base_parameters}
    assert "panda_link2 mass" in base and base["panda_link2 mass"]["std"] > 0
    if base["panda_link2 mass"]["std"] > 0.1 * abs(base["panda_link2 mass"]["value"]):
        assert link2.identifiable and link2.reason.startswith("weakly excited")


def test_fitting_the_coulomb_velocity_scale_keeps_the_parameters_and_fits_the_slow_samples_better(mujoco_panda):
    from engine.identification.from_log import VELOCITY_SCALES, identify_from_log

    result, truth, prepared = mujoco_panda
    config = replace(LogIdentificationConfig(**{**result.config, "learn": tuple(result.config["learn"]),
                                                "links": None}), fit_velocity_scale=True)
    fitted = identify_from_log(prepared, load_robot("panda"), config)
    assert fitted.velocity_scale in VELOCITY_SCALES and fitted.velocity_scale < 0.05   # MuJoCo's friction is sharp
    assert fitted.torque_rmse_validation["learned"] < result.torque_rmse_validation["learned"]
    for kind in ("damping", "coulomb", "armature"):
        assert fitted.joint_values[kind][:4] == pytest.approx(truth[kind][:4], rel=0.2), kind
