"""System identification from a joint log (engine.identification.from_log).

References: the masses and the torque noise used to make the example Panda log
(resources/logs/panda_joints.params.json, written by its generator), numpy for the noise
estimator, and the logged torques themselves.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from engine.identification.from_log import (
    LogIdentificationConfig,
    identify_from_log,
    robot_prepare_config,
    torque_noise_level,
)
from engine.jobs import JobCancelled, ThreadJobContext
from engine.logs import LogMapping, prepare_log, read_log
from engine.paths import resource
from engine.robots.library import load_robot

QUICK = LogIdentificationConfig(blackbox_steps=200)


@pytest.fixture(scope="module")
def panda():
    params = json.loads(resource("logs", "panda_joints.params.json").read_text())
    table = read_log(resource("logs", "panda_joints.csv"))
    full = LogMapping.load(resource("logs", "panda_joints.mapping.json"))
    # q alone (no logged velocities): velocities and accelerations come from the preparation
    q_only = LogMapping(
        time=full.time, q=list(full.q), u=list(full.u), units=dict(full.units), name="panda q only"
    )
    prepared = prepare_log(table, q_only, robot_prepare_config())
    model = load_robot("panda")
    result = identify_from_log(prepared, model, QUICK)
    return params, prepared, model, result


def test_recovers_the_masses_of_links_2_to_7_and_flags_link_1(panda):
    params, _, model, result = panda
    true = dict(zip(params["links"], params["mass"]))
    for link in params["links"][1:]:
        p = result.parameter(link, "mass")
        assert p.identifiable, (link, p.reason)
        assert p.identified == pytest.approx(true[link], rel=0.10), link
        assert p.nominal == pytest.approx(float(model.link_mass(link)))
    # better than the URDF's masses overall (which are off by up to 15 %)
    err_fit = np.mean([abs(result.parameter(l).identified / true[l] - 1) for l in params["links"][1:]])
    err_nom = np.mean([abs(result.parameter(l).nominal / true[l] - 1) for l in params["links"][1:]])
    assert err_fit < 0.25 * err_nom
    link1 = result.parameter("panda_link1", "mass")
    assert not link1.identifiable and "no effect" in link1.reason
    assert link1.identified == link1.nominal  # the data cannot move it: it keeps the URDF value
    assert "panda_link1/mass" in result.unidentifiable and "panda_link0" in result.unidentifiable
    # the nominal model is not modified by the fit
    assert float(model.link_mass("panda_link4")) == pytest.approx(params["nominal_mass"][3])


def test_held_out_torque_error_is_at_the_noise_level(panda):
    params, prepared, _, result = panda
    sigma = np.asarray(params["torque_noise"])
    learned = np.asarray(result.torque_rmse_validation_per_joint["learned"])
    nominal = np.asarray(result.torque_rmse_validation_per_joint["nominal"])
    assert np.all(learned <= 1.15 * sigma), learned / sigma
    noise_rms = float(np.sqrt(np.mean(sigma ** 2)))
    assert result.torque_rmse_validation["learned"] <= 1.1 * noise_rms
    assert result.torque_rmse_validation["nominal"] > 5 * noise_rms  # the URDF is clearly worse
    assert nominal[1] > 5 * sigma[1] and nominal[3] > 5 * sigma[3]
    # the noise level estimated from the log alone matches the one used to make it
    np.testing.assert_allclose(result.noise_level_per_joint, sigma, rtol=0.1)
    assert result.noise_level == pytest.approx(noise_rms, rel=0.1)
    # the black box was trained and evaluated on the same split
    bb = result.torque_rmse_validation["blackbox"]
    assert bb is not None and np.isfinite(bb) and result.torque_rmse_train["blackbox"] < bb
    assert result.samples_validation == int(prepared.val_mask[:-QUICK.trim].sum())
    v = result.validation
    assert v["tau"].shape == v["learned"].shape == v["blackbox"].shape == (result.samples_validation, 7)
    np.testing.assert_allclose(np.sqrt(np.mean((v["learned"] - v["tau"]) ** 2)),
                               result.torque_rmse_validation["learned"], rtol=1e-9)
    json.dumps(result.to_dict())  # JSON-ready


def test_noise_estimator_against_known_white_noise():
    rng = np.random.default_rng(0)
    t = np.arange(4000) * 0.01
    smooth = np.stack([np.sin(2 * np.pi * 0.3 * t) * 3, 2 * np.cos(2 * np.pi * 0.7 * t + 1) + t * 0.1], -1)
    sigma = np.array([0.05, 0.2])
    est = torque_noise_level(smooth + rng.normal(size=smooth.shape) * sigma, trim=20)
    np.testing.assert_allclose(est, sigma, rtol=0.05)
    assert np.all(torque_noise_level(smooth) < 1e-3 * sigma)  # a smooth signal has no noise
    with pytest.raises(ValueError, match="torque_noise_level"):
        torque_noise_level(smooth[:10])


def test_damping_fit_finds_none_in_a_log_without_friction(panda):
    params, prepared, model, _ = panda
    result = identify_from_log(prepared, model, replace(QUICK, learn=("mass", "damping"), blackbox_steps=0))
    assert result.torque_rmse_validation["blackbox"] is None
    for link in params["links"]:
        d = result.parameter(link, "damping")
        assert d.identifiable and 0 <= d.identified < 0.05, (link, d.identified)
    true = dict(zip(params["links"], params["mass"]))
    for link in params["links"][1:]:
        assert result.parameter(link).identified == pytest.approx(true[link], rel=0.10)


def test_bad_inputs_give_clear_errors(panda):
    _, prepared, model, _ = panda
    with pytest.raises(ValueError, match="learn"):
        identify_from_log(prepared, model, replace(QUICK, learn=("friction",)))
    with pytest.raises(ValueError, match="no link named 'nope'"):
        identify_from_log(prepared, model, replace(QUICK, links=("nope",)))
    with pytest.raises(ValueError, match="never moves"):
        identify_from_log(prepared, model, replace(QUICK, links=("panda_link0",)))
    narrow = replace(prepared, u=prepared.u[:, :6])
    with pytest.raises(ValueError, match="u has 6 columns"):
        identify_from_log(narrow, model, QUICK)
    with pytest.raises(ValueError, match="no accelerations"):
        identify_from_log(replace(prepared, qdd=None), model, QUICK)
    with pytest.raises(ValueError, match="validation part is empty"):
        identify_from_log(replace(prepared, val_mask=np.zeros_like(prepared.val_mask)), model, QUICK)


def test_cancel_stops_the_job(panda):
    _, prepared, model, _ = panda
    ctx = ThreadJobContext()
    ctx.cancel()
    with pytest.raises(JobCancelled):
        identify_from_log(prepared, model, QUICK, ctx)


def test_cli_identify_log_json(capsys):
    from engine.cli import main

    rc = main(["identify", "log", str(resource("logs", "panda_joints.csv")),
               "--mapping", str(resource("logs", "panda_joints.mapping.json")), "--robot", "panda",
               "--train-range", "0", "20", "--epochs", "5", "--blackbox-steps", "20", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    params = json.loads(resource("logs", "panda_joints.params.json").read_text())
    got = {p["link"]: p for p in out["parameters"]}
    for link, m in zip(params["links"][1:], params["mass"][1:]):
        assert got[link]["kind"] == "mass" and got[link]["identifiable"]
        assert got[link]["identified"] == pytest.approx(m, rel=0.10)
    assert not got["panda_link1"]["identifiable"]
    assert set(out["torque_rmse_validation"]) == {"learned", "nominal", "blackbox"}
    assert out["torque_rmse_validation"]["learned"] < out["torque_rmse_validation"]["nominal"]
    assert out["noise_level"] > 0 and out["seconds"] > 0
    assert out["prepare"]["train_ranges"] == [[0.0, 20.0]]


def test_cli_rejects_an_unknown_kind(capsys):
    from engine.cli import main

    rc = main(["identify", "log", str(resource("logs", "panda_joints.csv")),
               "--mapping", str(resource("logs", "panda_joints.mapping.json")), "--learn", "mass,stiction"])
    err = capsys.readouterr().err   # "friction" is accepted (the URDF's word for coulomb); this is not
    assert rc == 2 and "stiction" in err and "coulomb" in err


def test_full_inertial_fit_flags_combinations_and_still_predicts_at_the_noise_level(panda):
    params, prepared, model, _ = panda
    config = replace(
        QUICK, learn=("mass", "com", "inertia"), blackbox_steps=0, max_train_samples=400, epochs=2
    )
    result = identify_from_log(prepared, model, config)
    # the full inertial parameters are not all identifiable: link 1 acts on no torque, and the
    # others enter the torques only through base-parameter combinations
    # link 1 turns about its z axis alone: of its inertia only Izz acts, in one sum with link 2's
    reason = result.unidentifiable["panda_link1/inertia"]
    assert "combination" in reason and "panda_link1 Izz" in reason and "no effect: panda_link1 Ixx" in reason
    assert result.unidentifiable["panda_link1/com"].startswith("no effect")
    assert "combination" in result.parameter("panda_link4", "mass").reason
    assert result.parameter("panda_link1", "com").identified == result.parameter("panda_link1", "com").nominal
    assert np.asarray(result.parameter("panda_link4", "inertia").identified).shape == (3, 3)
    # ...but the identifiable combinations are fitted: held-out torques at the noise level
    sigma = np.asarray(params["torque_noise"])
    assert result.torque_rmse_validation["learned"] <= 1.1 * float(np.sqrt(np.mean(sigma ** 2)))
    assert result.torque_rmse_validation["nominal"] > 5 * result.torque_rmse_validation["learned"]


def test_the_gradient_method_is_still_there_and_agrees_on_the_masses(panda):
    params, prepared, model, closed = panda
    config = replace(QUICK, method="gradient", blackbox_steps=0, epochs=6, max_train_samples=1000)
    result = identify_from_log(prepared, model, config)
    assert result.config["method"] == "gradient" and result.loss_history and not result.base_parameters
    true = dict(zip(params["links"], params["mass"]))
    for link in params["links"][2:]:
        assert result.parameter(link).identified == pytest.approx(true[link], rel=0.10), link
        assert closed.parameter(link).identified == pytest.approx(true[link], rel=0.10), link
    assert "no effect" in result.parameter("panda_link1").reason


def test_kinds_the_closed_form_does_not_take_are_fitted_by_gradient_with_a_warning(panda):
    _, prepared, model, _ = panda
    result = identify_from_log(prepared, model, replace(QUICK, learn=("com",), blackbox_steps=0, epochs=2,
                                                        max_train_samples=300))
    assert any("fitted by gradient instead" in w for w in result.warnings)
    assert result.loss_history and np.asarray(result.parameter("panda_link3", "com").identified).shape == (3,)
