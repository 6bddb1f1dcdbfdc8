"""`python -m engine eigenmode learn / stabilise` print JSON with the documented schema."""

import json

import pytest

from engine.cli import main


def _run(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_learn_and_stabilise_json_schema(tmp_path, capsys):
    out = tmp_path / "mode"
    learned = _run(capsys, ["eigenmode", "learn", "--q0", "-0.6", "-0.2", "--target", "1.2", "-1.5",
                            "--period", "2.5", "--epochs", "3", "--dt", "0.1", "--hidden", "16",
                            "--effort-weight", "1e-4", "--out", str(out), "--json"])
    assert set(learned) == {"tip_error", "periodicity_error", "p_half_norm", "line_shaped", "control_effort",
                            "period", "seconds"}
    assert isinstance(learned["line_shaped"], bool)
    for k in ("tip_error", "periodicity_error", "p_half_norm", "control_effort", "seconds"):
        assert isinstance(learned[k], float) and learned[k] >= 0
    assert learned["period"] == 2.5
    assert (
        (out / "mode.safetensors").exists()
        and (out / "mode.json").exists()
        and (out / "trajectory.csv").exists()
    )

    stab = _run(capsys, ["eigenmode", "stabilise", "--mode", str(out), "--damping", "0.1",
                         "--perturb", "0.1", "-0.1", "--periods", "1", "--dt", "0.02",
                         "--settle-periods", "0", "--multiplier-steps", "60", "--json"])
    assert {"energy_error_final", "position_distance_final", "momentum_distance_final",
            "cycle_multipliers"} <= set(stab)
    assert len(stab["cycle_multipliers"]) == 3          # four states, the trivial multiplier excluded
    assert all(len(m) == 2 for m in stab["cycle_multipliers"])


def test_learn_rejects_unreachable_target(tmp_path, capsys):
    code = main(
        ["eigenmode", "learn", "--target", "3", "3", "--epochs", "1", "--out", str(tmp_path / "x"), "--json"]
    )
    assert code == 2
    assert "target" in capsys.readouterr().err


def test_out_of_range_numbers_are_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """Periods outside 0.1-60 s, absurd stabilisation lengths and oversized runs: exit 2, one line naming the flag,
    nothing written."""
    for argv, flag in (
        (["eigenmode", "learn", "--out", str(tmp_path / "a"), "--period", "1e30"], "--period"),
        (["eigenmode", "learn", "--out", str(tmp_path / "a"), "--dt", "1e30"], "--dt"),
        (["eigenmode", "learn", "--out", str(tmp_path / "a"), "--hidden", "100000000"], "--hidden"),
        (["eigenmode", "sweep", "--out", str(tmp_path / "a"), "--periods", "2.5", "1e30"], "--periods"),
        (["bench", "eigenmode", "--epochs", "0"], "--epochs"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {flag}") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "a").exists()


def test_stabilise_config_ranges_and_size(monkeypatch):
    from engine.eigenmodes.config import ConfigError, StabiliseConfig

    for name, value in (("periods", 1e30), ("settle_periods", 1e30), ("dt", 0.0), ("multiplier_steps", 0)):
        with pytest.raises(ConfigError, match=name):
            StabiliseConfig(**{name: value}).validate()
    StabiliseConfig(periods=1000.0, settle_periods=100.0).validate()      # the largest accepted
    monkeypatch.setenv("LAGRANGE_MEMORY_BUDGET", "1G")
    StabiliseConfig(periods=10.0, dt=0.005).check_steps(2.5)              # 5000 steps: fine
    with pytest.raises(ConfigError, match=r"--periods: the simulated run \(2\.5e\+07 RK4 steps.*"
                                          r"LAGRANGE_MEMORY_BUDGET"):
        StabiliseConfig(periods=1000.0, dt=1e-4).check_steps(2.5)
