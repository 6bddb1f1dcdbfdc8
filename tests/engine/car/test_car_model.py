"""Driving data, preprocessing (Savitzky-Golay + finite differences) and the learned model."""

import math

import numpy as np
import pytest
import torch

from engine.car.data import (
    DrivingConfig,
    make_dataset,
    prepare_car_log,
    validation_trajectories,
)
from engine.car.model import (
    CarMLP,
    CarMLPConfig,
    CarModelError,
    car_loss,
    load_car_model,
    save_car_model,
)
from engine.car.training import fit_car_model, trajectory_validation_error
from engine.systems.rc_car import CarParams


def _circle_log(speed=2.0, radius=1.5, rate=240.0, seconds=4.0):
    t = np.arange(0, seconds, 1 / rate)
    w = speed / radius
    return {
        "t": t,
        "x": radius * np.sin(w * t),
        "y": radius * (1 - np.cos(w * t)),
        "yaw": np.angle(np.exp(1j * w * t)),
        "throttle": np.ones_like(t),
        "steering": np.full_like(t, 0.2),
    }


def test_prepare_log_recovers_the_chord_velocities_of_a_circle():
    speed, radius, h = 2.0, 1.5, 0.05
    prep = prepare_car_log(_circle_log(speed, radius), h=h)
    w = speed / radius
    chord = 2 * radius * math.sin(w * h / 2) / h       # analytic chord speed over one step
    v = prep["v"][1:]
    assert np.allclose(v[:, 0], chord * math.cos(w * h / 2), atol=1e-3)
    assert np.allclose(v[:, 1], chord * math.sin(w * h / 2), atol=1e-3)
    assert np.allclose(v[:, 2], w, atol=1e-3)          # yaw unwrapped across +-pi
    assert prep["inputs"].shape[1] == 5 and np.allclose(prep["inputs"][:, 3:], [1.0, 0.2])


def test_savgol_smoothing_removes_most_of_the_motion_capture_noise():
    log = _circle_log()
    rng = np.random.default_rng(0)
    noisy = dict(log, x=log["x"] + rng.normal(0, 0.003, len(log["t"])),
                 yaw=log["yaw"] + rng.normal(0, 0.015, len(log["t"])))
    clean = prepare_car_log(log)["v"][1:]
    raw = prepare_car_log(noisy, savgol_window=0.0)["v"][1:]
    smooth = prepare_car_log(noisy, savgol_window=0.1)["v"][1:]
    assert np.abs(smooth - clean).mean() < 0.5 * np.abs(raw - clean).mean()


def test_csv_log_reading_and_errors(tmp_path):
    """A log goes through the model lab's reader (engine.logs), then the car's preparation."""
    from engine.car.driving_logs import load_car_log
    from engine.logs import LogError

    log = _circle_log(seconds=1.0)
    path = tmp_path / "drive.csv"
    rows = ["t,x,y,yaw,throttle,steering"] + [
        ",".join(f"{log[c][i]:.6f}" for c in ("t", "x", "y", "yaw", "throttle", "steering"))
        for i in range(len(log["t"]))
    ]
    path.write_text("\n".join(rows) + "\n")
    prep = load_car_log(path, CarParams(), DrivingConfig())
    direct = prepare_car_log(log, CarParams().dt, DrivingConfig().savgol_window, DrivingConfig().savgol_order)
    assert np.allclose(prep["pose"], direct["pose"], atol=1e-5) and np.allclose(
        prep["v"][1:], direct["v"][1:], atol=1e-3
    )
    (tmp_path / "bad.csv").write_text("t,x,y,yaw,throttle\n0,0,0,0,0\n0.1,0,0,0,0\n")
    with pytest.raises(LogError, match="steering") as err:
        load_car_log(tmp_path / "bad.csv", CarParams(), DrivingConfig())
    assert "bad.csv" in str(err.value)
    (tmp_path / "bad2.csv").write_text("t,x,y,yaw,throttle,steering\n0,0,0,0,0,0\n0,1,0,0,0,0\n")
    with pytest.raises(ValueError, match="bad2.csv"):
        load_car_log(tmp_path / "bad2.csv", CarParams(), DrivingConfig())


def test_a_small_model_trained_briefly_lowers_its_loss_and_round_trips(tmp_path):
    params = CarParams(substeps=2)
    data = make_dataset(params, DrivingConfig(minutes=1.0, segments=4))
    cfg = CarMLPConfig(hidden=32, layers=2, epochs=25, batch_size=64, lr=3e-3, loss="relative")
    untrained = CarMLP(cfg)
    untrained.set_normalisation(data["inputs"], data["targets"])
    x, y = data["inputs"], data["targets"]
    with torch.no_grad():
        before = float(car_loss(untrained(x[:, :3], x[:, 3:]), y))
    model, hist = fit_car_model(x, y, cfg)
    with torch.no_grad():
        after = float(car_loss(model(x[:, :3], x[:, 3:]), y))
    assert after < 0.8 * before
    assert hist["train_loss"][-1] < hist["train_loss"][0]
    save_car_model(tmp_path / "m", model, {"h": params.dt})
    back, meta = load_car_model(tmp_path / "m")
    with torch.no_grad():
        assert torch.equal(back(x[:5, :3], x[:5, 3:]), model(x[:5, :3], x[:5, 3:]))
    assert meta["config"]["hidden"] == 32
    val = validation_trajectories(params, count=4, seconds=1.0)
    tve, errs = trajectory_validation_error(model, val, params.dt)
    assert errs.shape == (4,) and tve == pytest.approx(errs.mean())


def test_bad_model_config_and_checkpoint(tmp_path):
    with pytest.raises(CarModelError, match="activation"):
        CarMLPConfig(activation="tanh")
    (tmp_path / "car_model.json").write_text('{"kind": "something"}')
    (tmp_path / "car_model.safetensors").write_bytes(b"junk")
    with pytest.raises(ValueError, match="car_model"):
        load_car_model(tmp_path)


def test_velocity_convention_round_trip_poses_to_velocities_to_poses():
    """Noise-free motion capture of the simulator -> prepare_car_log velocities -> the planner's pose
    update ``p_{k+1} = p_k + h R(yaw_k) v_{k+1}`` reproduces the recorded poses exactly (no
    off-by-one between the velocity definition and the update), and the training pairs use the
    control that was held over the step they predict."""
    from engine.car.costs import poses_from_velocities
    from engine.car.data import human_driving, mocap_log
    from engine.systems.rc_car import pose_update

    params = CarParams()
    cfg = DrivingConfig(pos_noise=0.0, yaw_noise=0.0, aggressive_rate=1.0)
    drive = human_driving(params, cfg, steps=60, segments=3, seed=5)
    for s, log in enumerate(mocap_log(drive, params, cfg)):
        prep = prepare_car_log(log, h=params.dt, savgol_window=0.0)
        pose, v = torch.from_numpy(prep["pose"]), torch.from_numpy(prep["v"])
        assert np.allclose(prep["pose"], drive["pose"][s], atol=1e-9)          # resampled at h
        back = poses_from_velocities(pose[0], v, params.dt)
        assert torch.allclose(back, pose, atol=1e-9)
        step = pose_update(pose[:-1], v[1:], params.dt)                          # one step at a time
        assert torch.allclose(step, pose[1:], atol=1e-9)
        # pairs: (v_k, u_k) -> v_{k+1} with u_k the control held on [t_k, t_k + h)
        assert np.allclose(prep["inputs"][:, :3], prep["v"][1:-1])
        assert np.allclose(prep["inputs"][:, 3:], drive["controls"][s][1:len(prep["inputs"]) + 1])
        assert np.allclose(prep["targets"], prep["v"][2:])




def test_held_out_pairs_are_whole_blocks_of_consecutive_steps():
    from engine.car.training import block_split

    train, val = block_split(5000, 0.1, torch.Generator().manual_seed(0))
    assert len(train) + len(val) == 5000 and not set(train.tolist()) & set(val.tolist())
    assert len(val) == 500 and set((val // 100).bincount().unique().tolist()) <= {0, 100}


def test_selection_config_refuses_empty_or_unknown_choices():
    from engine.car.training import SelectionConfig

    for bad, named in (({"seeds": 0}, "--seeds"), ({"activations": ()}, "activations"),
                       ({"losses": ("huber",)}, "losses"), ({"minutes": 0.0}, "--minutes")):
        with pytest.raises(ValueError, match=named):
            SelectionConfig(**bad)
    assert SelectionConfig(activations=("relu",), losses=("l2",), seeds=1).losses == ("l2",)


def test_the_shipped_default_model_is_a_small_learned_model_close_to_the_simulator():
    """resources/car_models/default: loads, is small, and predicts the simulator's motion (TVE
    recomputed here on freshly simulated validation trajectories, not read from its JSON)."""
    from engine.car.dynamics import LearnedCarModel, load_dynamics
    from engine.car.model import default_model_dir

    folder = default_model_dir()
    size = sum((folder / f).stat().st_size for f in ("car_model.safetensors", "car_model.json"))
    assert size < 2_000_000 // 10
    model, meta = load_car_model(folder)
    assert isinstance(model, CarMLP) and model.config.activation == "gelu"
    assert sum(p.numel() for p in model.parameters()) < 100_000
    assert meta["h"] == CarParams().dt
    dyn = load_dynamics("default")
    assert isinstance(dyn, LearnedCarModel) and dyn.name == "default"
    val = validation_trajectories(CarParams(), count=8, seconds=3.0, seed=99)   # not the training seed
    tve, errors = trajectory_validation_error(model, val, CarParams().dt)
    assert tve < 1.5 and np.isfinite(errors).all()
    # an untrained network of the same size is far worse: the weights carry the learning
    torch.manual_seed(0)
    untrained = CarMLP(model.config)
    untrained.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("linears")},
                              strict=False)
    assert trajectory_validation_error(untrained, val, CarParams().dt)[0] > 2 * tve
