"""Tracks (CSV/JSON, coordinates) and receding-horizon MPC laps on the simulator."""

import math

import numpy as np
import pytest
import torch

from engine.car.dynamics import SimulatorCarModel
from engine.car.mpc import MPCConfig, run_mpc
from engine.car.tracks import Track, TrackError, TrackField, default_track, load_track, save_track
from engine.systems.rc_car import CarParams


def test_track_coordinates_on_a_circle_match_the_analytic_ones():
    R = 2.0
    t = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    track = Track("circle", np.stack([R * np.cos(t), R * np.sin(t)], -1), 1.0)
    field = TrackField(track, cell=0.02)
    ang = torch.tensor([0.3, 1.2, 2.5, 4.0])
    for r in (1.7, 2.0, 2.3):
        xy = torch.stack([r * torch.cos(ang), r * torch.sin(ang)], -1)
        d = field.lateral(xy)
        assert torch.allclose(d, torch.full_like(d, R - r), atol=0.01)   # left of a CCW circle is inside
        s = field.arc_length(xy)
        assert torch.allclose(s, ang * field.length / (2 * math.pi), atol=0.03)
    assert field.length == pytest.approx(2 * math.pi * R, rel=1e-3)


def test_track_files_and_errors(tmp_path):
    track = default_track()
    assert track.width > 0 and track.length > 10
    save_track(tmp_path / "t.json", track)
    back = load_track(tmp_path / "t.json")
    assert np.allclose(back.centre, track.centre)
    (tmp_path / "bad.csv").write_text("x,y\n0,0\n1,zero\n")
    with pytest.raises(TrackError, match="line 3"):
        load_track(tmp_path / "bad.csv")
    with pytest.raises(TrackError, match="unknown track"):
        load_track("no-such-track")


def test_mpc_keeps_the_simulated_car_on_the_default_track_for_a_lap():
    params = CarParams(substeps=2)
    track = default_track()
    cfg = MPCConfig(candidates=32, iterations=1, target_speed=2.5, max_seconds=20.0)
    res = run_mpc(track, SimulatorCarModel(params), params, cfg, laps=1)
    assert res["completed"], res["lap_times"]
    assert res["max_track_deviation"] < track.width / 2
    # the lap took about length / target speed (progress at the target speed)
    assert res["lap_time"] == pytest.approx(track.length / cfg.target_speed, rel=0.25)
