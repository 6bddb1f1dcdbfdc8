"""The learnable rigid-body robot as a learned dynamics model (robot-rk4, robot-midpoint).

References are independent of the robot engine: the analytic systems' closed forms and their
Euler-Lagrange equations (engine.systems), central finite differences, RK45 data.
"""

import json
import math

import pytest
import torch

from engine.cli import main
from engine.data import DatasetConfig, generate_dataset, make_windows
from engine.io import CheckpointError
from engine.models import ModelSpec, build_model, load_model, model_names, save_model
from engine.models.robot import SYSTEM_URDFS, RobotDynamics
from engine.paths import urdf_dir
from engine.systems import get_system
from engine.systems.base import MechanicalSystem
from engine.training.config import TrainConfig
from engine.training.metrics import evaluate
from engine.training.trainer import build_for

torch.set_num_threads(1)  # small tensors: one thread; more oversubscribes the shared 2-core CPU

F64 = torch.float64


def _system(name):
    """The analytic system; every system the robot model maps must have its URDF shipped."""
    assert (urdf_dir() / f"{name}.urdf").is_file(), f"urdf/{name}.urdf is missing"
    return get_system(name)


def _robot(system, h=0.05, name="robot-rk4", **overrides):
    return build_model(name, ModelSpec.for_system(system, h, **overrides))


def _states(system, B=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = system.dof
    q = (2 * torch.rand(B, n, generator=g, dtype=F64) - 1) * math.pi
    qd = 4 * torch.randn(B, n, generator=g, dtype=F64)
    u = 2 * torch.randn(B, system.control_dim, generator=g, dtype=F64)
    return q, qd, u


def _pendulum_identifiable(model):
    """The pendulum's identifiable combinations: inertia about the pivot ``m (cx^2 + cz^2) + Iyy``
    and the gravity moment ``m cz`` (truth: 1/3 kg m^2 and 0.5 kg m)."""
    r = model.robot
    m, c, I = (t.detach() for t in (r.link_mass("rod"), r.link_com("rod"), r.link_inertia("rod")))
    return float(m * (c[0] ** 2 + c[2] ** 2) + I[1, 1]), float(m * c[2])


# -- the model with the URDF values is the analytic system --------------------------------------

@pytest.mark.parametrize("name", sorted(SYSTEM_URDFS))
def test_unperturbed_model_is_the_analytic_system(name):
    system = _system(name)
    torch.manual_seed(0)
    model = _robot(system, robot_perturb=0.0)
    q, qd, u = _states(system)
    x = torch.cat([q, qd], -1)
    with torch.no_grad():
        f = model.vector_field(x, u)
    # the system's own forward dynamics (a closed form for pendulum and cart-pole) ...
    torch.testing.assert_close(
        f, torch.cat([qd, system.forward_dynamics(q, qd, u)], -1), rtol=1e-10, atol=1e-10
    )
    # ... and the forced Euler-Lagrange equations of its H(q), V(q) (autograd in engine.systems.base)
    torch.testing.assert_close(f[:, system.dof:], MechanicalSystem.forward_dynamics(system, q, qd, u),
                               rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(model.mass_matrix(q), system.mass_matrix(q), rtol=1e-12, atol=1e-12)
    # a potential is known up to a constant
    dV = model.potential_energy(q) - system.potential_energy(q)
    torch.testing.assert_close(dV, dV[:1].expand_as(dV), rtol=0, atol=1e-12)
    # any batch shape; the step is the chosen integrator on that field
    assert model.mass_matrix(q.reshape(4, 4, -1)).shape == (4, 4, system.dof, system.dof)
    assert model.step(x.reshape(2, 8, -1), u.reshape(2, 8, -1)).shape == (2, 8, 2 * system.dof)
    # the default start is a different, wrong model
    torch.manual_seed(0)
    wrong = _robot(system)
    assert float((wrong.vector_field(x, u) - f).detach().abs().max()) > 1e-2


def test_unperturbed_model_reproduces_the_data_and_metrics_run():
    ds = generate_dataset(DatasetConfig(system="cartpole", train_trajectories=2, test_trajectories=2,
                                        long_term_trajectories=2, long_term_steps=20))
    torch.manual_seed(0)
    metrics = {}
    for name in ("robot-rk4", "robot-midpoint"):
        model = build_model(name, ModelSpec.for_system(ds.system, ds.h, robot_perturb=0.0))
        m = metrics[name] = evaluate(model, ds)
        assert m["inertia_mse"] < 1e-24 and m["test_mse"] < (1e-10 if name == "robot-rk4" else 1e-6)
        assert all(math.isfinite(v) for v in m.values())
    torch.manual_seed(0)
    wrong = evaluate(build_model("robot-rk4", ModelSpec.for_system(ds.system, ds.h)), ds)
    assert wrong["inertia_mse"] > 1e-4 and wrong["test_mse"] > 1e3 * metrics["robot-rk4"]["test_mse"]


# -- learning ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pendulum_data():
    return generate_dataset(DatasetConfig(train_trajectories=8, test_trajectories=2, long_term_trajectories=2,
                                          long_term_steps=10, seed=5))


def test_training_from_a_perturbed_start_identifies_the_pendulum(pendulum_data):
    ds = pendulum_data
    torch.manual_seed(3)
    model = build_model("robot-rk4", ModelSpec.for_system(ds.system, ds.h))
    w = make_windows(ds.train_x, ds.train_u, 1, F64)
    J0, mc0 = _pendulum_identifiable(model)
    assert abs(J0 - 1 / 3) > 0.05 and abs(mc0 - 0.5) > 0.05      # a wrong start
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = model.loss(w).item()
    for _ in range(300):
        loss = model.loss(w)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.loss(w).item() < 1e-3 * first
    J, mc = _pendulum_identifiable(model)
    assert abs(J - 1 / 3) < 0.05 * abs(J0 - 1 / 3) and abs(mc - 0.5) < 0.05 * abs(mc0 - 0.5)
    # the inertia stays physically consistent (the parametrisation), the mass positive
    I = model.robot.link_inertia("rod").detach()
    assert float(model.robot.link_mass("rod").detach()) > 0 and torch.linalg.eigvalsh(I).min() > 0
    assert all(set(v) == {"mass", "com", "inertia", "damping"} for v in model.link_parameters().values())


def test_loss_gradients_match_finite_differences():
    system = get_system("cartpole")
    torch.manual_seed(4)
    model = _robot(system, name="robot-midpoint", robot_learn=("mass", "com", "inertia", "damping"))
    q, qd, u = _states(system, B=4, seed=1)
    ds_x = torch.cat([q, qd], -1)
    target = ds_x + 0.05 * torch.randn(4, 4, dtype=F64)

    def loss():
        return ((model.step(ds_x, u) - target) ** 2).mean()

    params = dict(model.named_parameters())
    # cart and pole: mass, com, inertia (2 tensors); the joints' damping, one (2,) vector
    assert len(params) == 2 * 4 + 1 and params["friction._damping_raw"].shape == (2,)
    grads = torch.autograd.grad(loss(), list(params.values()))
    eps = 1e-6
    checked = 0
    for (name, p), g in zip(params.items(), grads):
        for i in range(p.numel()):
            with torch.no_grad():
                flat = p.view(-1)
                flat[i] += eps
                lp = loss().item()
                flat[i] -= 2 * eps
                lm = loss().item()
                flat[i] += eps
            fd = (lp - lm) / (2 * eps)
            assert abs(fd - g.view(-1)[i].item()) < 1e-6 * max(1.0, abs(fd)), (
                name,
                i,
                fd,
                g.view(-1)[i].item(),
            )
            checked += 1
    assert checked == 2 * (1 + 3 + 6 + 1)
    # the pole's parameters act on the motion
    assert float(grads[list(params).index("robot.learnable.mass_2.raw")].abs()) > 1e-6


# -- checkpoints, seeds, specs ------------------------------------------------------------------

def test_checkpoint_round_trip_gives_identical_predictions(tmp_path):
    system = get_system("cartpole")
    torch.manual_seed(6)
    model = _robot(system, robot_learn=("mass", "com", "inertia", "damping"), robot_perturb=0.3)
    with torch.no_grad():       # move away from the initial guess: load must restore these values
        for p in model.parameters():
            p.add_(0.01)
    save_model(tmp_path, model)
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["type"] == "robot-rk4" and meta["hyperparameters"]["system"] == "cartpole"
    assert meta["hyperparameters"]["robot_learn"] == ["mass", "com", "inertia", "damping"]
    torch.manual_seed(99)       # a different draw while rebuilding: the weights must win
    back, _ = load_model(tmp_path)
    assert isinstance(back, RobotDynamics) and back.spec == model.spec
    q, qd, u = _states(system, B=8, seed=2)
    x = torch.cat([q, qd], -1)
    assert torch.equal(back.step(x, u), model.step(x, u))
    assert torch.equal(back.mass_matrix(q), model.mass_matrix(q))
    # a robot checkpoint that does not say its system cannot be rebuilt, and says why
    meta["hyperparameters"].pop("system")
    (tmp_path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="the robot model needs a robot: name it"):
        load_model(tmp_path)


def test_old_checkpoints_without_the_new_spec_fields_still_load(tmp_path):
    torch.manual_seed(0)
    model = build_model("node-rk4", ModelSpec(hidden=8))
    save_model(tmp_path, model)
    meta = json.loads((tmp_path / "model.json").read_text())
    for k in ("system", "robot_learn", "robot_perturb"):
        meta["hyperparameters"].pop(k)
    (tmp_path / "model.json").write_text(json.dumps(meta))
    back, _ = load_model(tmp_path)
    assert back.spec.system is None and back.spec == model.spec


def test_seeds_give_different_initial_guesses_and_the_same_seed_the_same(pendulum_data):
    ds = pendulum_data

    def start(seed):
        m = build_for(TrainConfig(model="robot-rk4", seed=seed), ds)
        return torch.cat([p.detach().reshape(-1) for p in m.parameters()]), m

    a, ma = start(0)
    b, _ = start(0)
    c, _ = start(1)
    assert torch.equal(a, b) and not torch.allclose(a, c)
    assert ma.spec.system == "pendulum"
    # within U[0.5, 1.5] of the URDF values (the com's zero components stay zero)
    p = ma.link_parameters()["rod"]
    assert 0.5 <= p["mass"] <= 1.5 and 0.25 <= p["com"][2] <= 0.75 and p["com"][0] == 0.0
    assert 0.5 * 0.08333 <= p["inertia"][1][1] <= 1.5 * 0.08334
    # perturbation 0 starts at the URDF values whatever the seed
    torch.manual_seed(7)
    z = _robot(ds.system, robot_perturb=0.0)
    assert z.link_parameters()["rod"]["mass"] == pytest.approx(1.0, rel=1e-12)
    torch.testing.assert_close(z.robot.link_com("rod").detach(), torch.tensor([0.0, 0.0, 0.5], dtype=F64))


def test_spec_fields_validate_and_missing_urdfs_are_clear_errors(monkeypatch, tmp_path):
    from engine.models.base import ROBOT_KINDS
    from engine.robots.parametrizations import KINDS
    from engine.validation import InputError

    assert ROBOT_KINDS[:4] == KINDS and ROBOT_KINDS[3:] == ("damping", "coulomb", "armature", "offset")
    assert {"robot-rk4", "robot-midpoint"} <= set(model_names())
    assert ModelSpec.for_system(get_system("cartpole"), 0.05).system == "cartpole"
    assert ModelSpec(robot_learn="mass, damping").robot_learn == ("mass", "damping")
    for bad in ({"robot_learn": ("mass", "volume")}, {"robot_learn": ()}, {"robot_learn": ("mass", "mass")},
                {"robot_perturb": 1.0}, {"robot_perturb": -0.1}):
        with pytest.raises(InputError, match="^robot_") as info:
            ModelSpec(**bad)
        assert info.value.owner == "ModelSpec" and info.value.field in ("robot_learn", "robot_perturb")
    with pytest.raises(ValueError, match="the robot model needs a robot: name it"):
        build_model("robot-rk4", ModelSpec())
    with pytest.raises(ValueError, match="no URDF for system 'double_pendulum'"):
        build_model("robot-rk4", ModelSpec(dof=2, angle_mask=(True, True), input_matrix=((1.0,), (0.0,)),
                                           system="double_pendulum"))
    with pytest.raises(ValueError, match="4 coordinates"):
        build_model("robot-rk4", ModelSpec(dof=4, angle_mask=(True,) * 4, input_matrix=((1.0,),) * 4,
                                           system="pendulum"))
    monkeypatch.setattr("engine.models.robot.urdf_dir", lambda: tmp_path)
    with pytest.raises(ValueError, match="pendulum.urdf, which does not exist"):
        build_model("robot-rk4", ModelSpec.for_system(get_system("pendulum"), 0.1))


# -- the trainer and the CLI ---------------------------------------------------------------------

def test_learn_train_cli_trains_and_evaluates_the_robot_model(tmp_path, capsys):
    data = tmp_path / "d.npz"
    assert main(["learn", "data", "--system", "pendulum", "--trajectories", "2", "--test-trajectories", "2",
                 "--long-term-steps", "10", "--out", str(data), "--json"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "learn",
                "train",
                "--model",
                "robot-rk4",
                "--system",
                "pendulum",
                "--trajectories",
                "2",
                "--epochs",
                "2",
                "--lr",
                "1e-2",
                "--data",
                str(data),
                "--out",
                str(tmp_path / "m"),
                "--json",
            ]
        )
        == 0
    )
    row = json.loads(capsys.readouterr().out)["row"]
    assert row["model"] == "robot-rk4"
    for k in ("train_mse", "test_mse", "integration_mse", "energy_mse", "inertia_mse", "final_loss"):
        assert isinstance(row[k], float) and math.isfinite(row[k]), (k, row[k])
    back, meta = load_model(tmp_path / "m")
    assert isinstance(back, RobotDynamics) and meta["hyperparameters"]["system"] == "pendulum"
    assert next(back.parameters()).dtype == F64


# -- checkpoints of the layout before JointFriction ---------------------------------------------


def _old_layout_checkpoint(folder, damping, learn=("mass", "com", "inertia", "damping")):
    """A robot-rk4 checkpoint of the acrobot as the model wrote it before the joint friction module:
    the damping one softplus scalar per moving link (``robot.learnable.damping_<index>.raw``),
    no ``friction.*`` tensors (safetensors + JSON, written here by hand)."""
    from engine.io import save_tensors, write_json

    system = _system("acrobot")
    spec = ModelSpec.for_system(system, 0.01, robot_learn=learn, robot_perturb=0.0)
    model = build_model("robot-rk4", spec)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("friction.")}
    for link, d in zip(model.links, damping):
        state[f"robot.learnable.damping_{model.robot._link_idx(link)}.raw"] = torch.tensor(
            d + math.log(-math.expm1(-d)), dtype=F64)      # softplus(raw) = d
    save_tensors(folder / "model.safetensors", state)
    write_json(folder / "model.json", {"type": "robot-rk4", "hyperparameters": spec.to_dict()})
    return system


def test_an_old_checkpoint_with_learned_damping_loads_with_the_same_dynamics(tmp_path):
    """Reference: the acrobot's Euler-Lagrange equations with the viscous term,
    qdd = qdd(u, D = 0) - H(q)^-1 D qd (the damping enters linearly)."""
    damping = [0.3, 0.05]
    system = _old_layout_checkpoint(tmp_path, damping)
    model, meta = load_model(tmp_path)
    assert meta["type"] == "robot-rk4"
    vals = model.friction.values()
    assert vals["damping"] == pytest.approx(damping, rel=1e-9)
    assert vals["coulomb"] == vals["armature"] == vals["offset"] == [0.0, 0.0]
    q, qd, u = _states(system)
    D = torch.tensor(damping, dtype=F64)
    H = system.mass_matrix(q)
    want = MechanicalSystem.forward_dynamics(system, q, qd, u) - torch.linalg.solve(H, D * qd)
    with torch.no_grad():
        got = model.vector_field(torch.cat([q, qd], -1), u)[:, system.dof:]
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_an_old_checkpoint_that_cannot_be_migrated_is_refused_in_one_line(tmp_path):
    _old_layout_checkpoint(tmp_path, [0.3, 0.05])
    meta = json.loads((tmp_path / "model.json").read_text())
    meta["hyperparameters"]["robot_learn"] = ["mass", "com", "inertia"]     # damping not learned
    (tmp_path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError) as err:
        load_model(tmp_path)
    text = str(err.value)
    assert "\n" not in text and "model.json" in text and "damping" in text
