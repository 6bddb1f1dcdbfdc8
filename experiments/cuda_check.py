"""CUDA check of the engine: the same computations on ``cuda`` and on ``cpu``, side by side.

    python -m experiments.cuda_check [--device cuda] [--ref cpu] [--out DIR] [--threads 1]

Compares (max abs difference, max relative difference, timings) for
- the rigid-body engine on the shipped primitive Panda (urdf/panda.urdf), float64 and float32,
  batch 1, 64, 4096 (the batch-last path starts at 96): forward_kinematics, jacobian,
  inverse_dynamics, mass_matrix, forward_dynamics, and a gradient through forward_dynamics;
- engine.robots.ik.solve_ik (device follows the targets);
- the learned dynamics models (node-rk4, lnode-rk4, symo, e2e-symo, mlp): one loss on the same
  weights, then a short training with engine.training.trainer.fit on the device (first as is,
  then with the windows moved to the device if that fails), then evaluate();
- the car planner: car_step of engine.systems.rc_car, a CarMLP through
  engine.car.dynamics.LearnedCarModel, AutogradEvaluator.cost_and_grad, the optimiser
  (engine.car.optimiser.optimise), and the fast MLPEvaluator.

Every check runs in its own try block: a failure is recorded with its traceback and the run
goes on. Writes ``cuda_check.json`` and ``cuda_check.txt`` (table + failures) to ``--out``.
This is a measurement script, not a test: CI has no GPU.
"""

# ruff: noqa: B023  (each closure runs at once, inside the loop iteration that made it)

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path

import torch

from engine.paths import urdf_dir

ROWS: list[dict] = []
FAILURES: list[dict] = []
NOTES: list[str] = []


def sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, reps=5, warmup=2):
    """Median wall time of ``fn()`` (s) after ``warmup`` calls; returns (result, seconds)."""
    out = None
    for _ in range(warmup):
        out = fn()
    sync(device)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        sync(device)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return out, ts[len(ts) // 2]


def diff(a, b):
    """(max abs diff, max abs diff / max(|b|, 1e-30)) of two tensors (or tuples of tensors)."""
    if isinstance(a, (tuple, list)):
        ds = [diff(x, y) for x, y in zip(a, b)]
        return max(d[0] for d in ds), max(d[1] for d in ds)
    a = a.detach().to("cpu", torch.float64)
    b = b.detach().to("cpu", torch.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    if a.numel() == 0:
        return 0.0, 0.0
    d = float((a - b).abs().max())
    scale = float(b.abs().max())
    return d, d / max(scale, 1e-30)


def check(name, fn):
    """Run ``fn()`` (which appends rows); record a failure with its traceback."""
    t0 = time.perf_counter()
    try:
        fn()
        ok = True
    except Exception as exc:  # noqa: BLE001 - a measurement harness: record everything
        ok = False
        FAILURES.append(
            {"check": name, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        )
    print(f"[{'ok' if ok else 'FAIL'}] {name} ({time.perf_counter() - t0:.1f} s)", flush=True)


def row(group, what, dtype, batch, d=None, t_dev=None, t_ref=None, note=""):
    r = {
        "group": group,
        "what": what,
        "dtype": str(dtype).replace("torch.", ""),
        "batch": batch,
        "max_abs_diff": None if d is None else d[0],
        "max_rel_diff": None if d is None else d[1],
        "t_device_ms": None if t_dev is None else 1e3 * t_dev,
        "t_ref_ms": None if t_ref is None else 1e3 * t_ref,
        "note": note,
    }
    ROWS.append(r)
    return r


# ----------------------------------------------------------------------------- rigid body
def robot_checks(dev, ref):
    from engine.robots.model import RobotModel

    urdf = urdf_dir() / "panda.urdf"
    for dtype in (torch.float64, torch.float32):
        models = {}

        def build():
            models["ref"] = RobotModel.from_urdf(urdf, dtype=dtype, device=ref)
            models["dev"] = RobotModel.from_urdf(urdf, dtype=dtype, device=dev)
            assert models["dev"].device.type == torch.device(dev).type, f"model on {models['dev'].device}"
        check(f"RobotModel.from_urdf panda {dtype}", build)
        if "dev" not in models:
            continue
        mr, md = models["ref"], models["dev"]
        n = md.dof
        lo, hi = (t.to("cpu", torch.float64) for t in mr.joint_limits[:2])
        ee = "panda_hand_tcp" if "panda_hand_tcp" in md.link_names else md.link_names[-1]
        for B in (1, 64, 4096):
            g = torch.Generator().manual_seed(B)
            q = (lo + (hi - lo) * torch.rand(B, n, generator=g, dtype=torch.float64)).to(dtype)
            qd = torch.randn(B, n, generator=g, dtype=torch.float64).to(dtype)
            qdd = torch.randn(B, n, generator=g, dtype=torch.float64).to(dtype)
            tau = (10 * torch.randn(B, n, generator=g, dtype=torch.float64)).to(dtype)
            qs = {"ref": (q, qd, qdd, tau), "dev": tuple(t.to(dev) for t in (q, qd, qdd, tau))}
            fns = {
                "forward_kinematics": lambda m, a: m.forward_kinematics(a[0]),
                "jacobian": lambda m, a: m.jacobian(a[0], ee),
                "jacobian(point)": lambda m, a: m.jacobian(
                    a[0], ee, point=torch.tensor([0.01, 0.02, 0.03], dtype=dtype, device=a[0].device)
                ),
                "inverse_dynamics": lambda m, a: m.inverse_dynamics(a[0], a[1], a[2]),
                "inverse_dynamics(damping)": lambda m, a: m.inverse_dynamics(a[0], a[1], a[2], damping=True),
                "mass_matrix": lambda m, a: m.mass_matrix(a[0]),
                "forward_dynamics": lambda m, a: m.forward_dynamics(a[0], a[1], a[3]),
                "bias_forces": lambda m, a: m.bias_forces(a[0], a[1]),
                "kinetic_energy": lambda m, a: m.kinetic_energy(a[0], a[1]),
                "potential_energy": lambda m, a: m.potential_energy(a[0]),
            }
            for name, fn in fns.items():
                def one(name=name, fn=fn):
                    out_r, t_r = timed(lambda: fn(mr, qs["ref"]), ref, reps=3 if B > 64 else 5)
                    out_d, t_d = timed(lambda: fn(md, qs["dev"]), dev, reps=3 if B > 64 else 5)
                    assert out_d.device.type == torch.device(dev).type, f"result on {out_d.device}"
                    assert torch.isfinite(out_d).all(), "non-finite result on the device"
                    row("robot", name, dtype, B, diff(out_d, out_r), t_d, t_r)
                check(f"{name} {dtype} B={B}", one)

            def grad_fd(B=B):
                def g_of(m, a):
                    qq = a[0].clone().requires_grad_(True)
                    out = m.forward_dynamics(qq, a[1], a[3]).square().sum()
                    (gq,) = torch.autograd.grad(out, qq)
                    return gq
                out_r, t_r = timed(lambda: g_of(mr, qs["ref"]), ref, reps=3)
                out_d, t_d = timed(lambda: g_of(md, qs["dev"]), dev, reps=3)
                row("robot", "grad of |forward_dynamics|^2 wrt q", dtype, B, diff(out_d, out_r), t_d, t_r)
            check(f"grad forward_dynamics {dtype} B={B}", grad_fd)

    # IK: device follows the targets
    from engine.robots.ik import solve_ik

    for B in (1, 64, 1024):
        def ik(B=B):
            mr = RobotModel.from_urdf(urdf, dtype=torch.float64, device=ref)
            md = RobotModel.from_urdf(urdf, dtype=torch.float64, device=dev)
            lo, hi = (t.to("cpu") for t in mr.joint_limits[:2])
            g = torch.Generator().manual_seed(100 + B)
            q = lo + (hi - lo) * torch.rand(B, md.dof, generator=g, dtype=torch.float64)
            ee = "panda_hand_tcp" if "panda_hand_tcp" in md.link_names else md.link_names[-1]
            T = mr.link_pose(q, ee)
            res_r, t_r = timed(lambda: solve_ik(mr, {ee: T}), ref, reps=1, warmup=1)
            res_d, t_d = timed(lambda: solve_ik(md, {ee: T.to(dev)}), dev, reps=1, warmup=1)
            assert res_d.q.device.type == torch.device(dev).type, f"IK result on {res_d.q.device}"
            # the solutions may differ (redundant arm); compare what must agree: the reached poses
            reached = md.link_pose(res_d.q, ee).to("cpu")
            conv_d = float(res_d.converged.float().mean())
            conv_r = float(res_r.converged.float().mean())
            perr = float(res_d.position_error.max())
            row(
                "ik",
                "solve_ik pose (converged dev/ref, max pos err dev m)",
                torch.float64,
                B,
                diff(reached[res_d.converged.cpu()], T[res_d.converged.cpu()]),
                t_d,
                t_r,
                note=f"converged {conv_d:.3f} vs {conv_r:.3f}; max pos err {perr:.2e}; "
                f"iters dev {float(res_d.iterations.float().mean()):.1f} "
                f"ref {float(res_r.iterations.float().mean()):.1f}",
            )

        check(f"solve_ik B={B}", ik)


# ----------------------------------------------------------------------------- learned dynamics
LEARNED = ("node-rk4", "lnode-rk4", "symo", "e2e-symo", "mlp")


def fit_with_windows_on(device, trainer, cfg, ds):
    """``trainer.fit`` with the training windows made on ``device`` (the workaround the check
    measures beside the plain ``model.to(device)``); returns ``(model, result)``."""
    orig = trainer.make_windows
    trainer.make_windows = lambda *a, **k: orig(*a, **k).to(device=device)
    try:
        m = trainer.build_for(cfg, ds).to(device)
        return m, trainer.fit(m, ds, cfg)
    finally:
        trainer.make_windows = orig


def learned_checks(dev, ref, epochs, n_traj):
    from engine.data import DatasetConfig, generate_dataset
    from engine.data.windows import make_windows
    from engine.training import trainer
    from engine.training.config import TrainConfig
    from engine.training.metrics import evaluate

    ds = generate_dataset(DatasetConfig(system="pendulum", train_trajectories=128, test_trajectories=32,
                                        long_term_steps=100))
    n = ds.system.dof
    for name in LEARNED:
        cfg = TrainConfig(model=name, system="pendulum", trajectories=n_traj, epochs=epochs, threads=None)
        state = {}

        def loss_same_weights(name=name, cfg=cfg):
            m_ref = trainer.build_for(cfg, ds)
            m_dev = trainer.build_for(cfg, ds).to(dev)
            m_dev.load_state_dict(m_ref.state_dict())
            w = make_windows(ds.train_x[:n_traj], ds.train_u[:n_traj], n, torch.float32)
            (l_r, t_r) = timed(lambda: m_ref.loss(w), ref, reps=3)
            (l_d, t_d) = timed(lambda: m_dev.loss(w.to(device=dev)), dev, reps=3)
            row("learned", f"{name} loss (same weights)", torch.float32, len(w), diff(l_d, l_r), t_d, t_r)
            q_r, _ = m_ref.predict(w)
            q_d, _ = m_dev.predict(w.to(device=dev))
            row("learned", f"{name} predict q_next", torch.float32, len(w), diff(q_d, q_r))
            # gradients of the loss
            m_ref.zero_grad()
            m_ref.loss(w).backward()
            m_dev.zero_grad()
            m_dev.loss(w.to(device=dev)).backward()
            g_r = [p.grad for p in m_ref.parameters() if p.grad is not None]
            g_d = [p.grad for p in m_dev.parameters() if p.grad is not None]
            row("learned", f"{name} loss gradient", torch.float32, len(w), diff(g_d, g_r))
        check(f"{name}: loss/predict/grad on the same weights", loss_same_weights)

        def fit_as_is(name=name, cfg=cfg):
            m = trainer.build_for(cfg, ds).to(dev)
            r = trainer.fit(m, ds, cfg)
            state["as_is"] = r
        check(f"{name}: trainer.fit on {dev} as is (model.to(device), nothing else)", fit_as_is)

        def fit_moved(name=name, cfg=cfg):
            # the workaround: windows made on the model's device (what fit could do itself)
            m, r = fit_with_windows_on(dev, trainer, cfg, ds)
            state["model"] = m
            L = r.losses
            dec = L[-1] < L[0]
            row("learned", f"{name} fit {epochs} ep N={n_traj} on {dev}", torch.float32, n_traj, None,
                r.seconds / max(r.epochs, 1), None,
                note=f"loss {L[0]:.3e} -> {L[-1]:.3e} ({'decreases' if dec else 'DOES NOT DECREASE'})"
                     + ("" if "as_is" not in state else "; fit as is also ran"))
            assert all(math.isfinite(x) for x in L), "non-finite loss"
            assert dec, "loss did not decrease"
        if "as_is" not in state:
            check(f"{name}: trainer.fit on {dev} with the windows moved to {dev}", fit_moved)
        else:
            r = state["as_is"]
            row("learned", f"{name} fit {epochs} ep N={n_traj} on {dev} (as is)", torch.float32, n_traj, None,
                r.seconds / max(r.epochs, 1), None, note=f"loss {r.losses[0]:.3e} -> {r.losses[-1]:.3e}")
            state["model"] = r.model

        def eval_on_dev(name=name, cfg=cfg):
            m = state["model"]
            out = evaluate(m, ds.subset(n_traj))
            m_cpu = m.to("cpu")
            out_cpu = evaluate(m_cpu, ds.subset(n_traj))
            m.to(dev)
            d = max(abs(out[k] - out_cpu[k]) / max(abs(out_cpu[k]), 1e-30)
                    for k in out if isinstance(out.get(k), float) and isinstance(out_cpu.get(k), float))
            row(
                "learned",
                f"{name} evaluate() on {dev} vs cpu (max rel diff of metrics)",
                torch.float32,
                n_traj,
                (float("nan"), d),
                note=json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in out.items()}),
            )
        if "model" in state:
            check(f"{name}: evaluate() with the model on {dev}", eval_on_dev)

    # per-epoch time at the reproduction's largest N (pendulum, N=128): device vs ref (1 thread)
    for name in ("e2e-symo", "lnode-rk4", "symo", "node-rk4"):
        def epoch_time(name=name):
            out = {}
            for where in (dev, ref):
                cfg = TrainConfig(model=name, system="pendulum", trajectories=128, epochs=2, threads=None)
                m, r = fit_with_windows_on(where, trainer, cfg, ds)
                out[where] = r.seconds / r.epochs
            row("learned", f"{name} seconds per epoch, N=128 (batch 512)", torch.float32, 128, None,
                out[dev], out[ref], note="t columns in ms per epoch")
        check(f"{name}: epoch time N=128", epoch_time)


# ----------------------------------------------------------------------------- car
def car_checks(dev, ref):
    from engine.car.costs import PlanWeights, Target, TargetCost
    from engine.car.dynamics import LearnedCarModel, SimulatorCarModel
    from engine.car.evaluators import AutogradEvaluator, MLPEvaluator
    from engine.car.model import CarMLP, CarMLPConfig
    from engine.car.optimiser import OptimiserConfig, optimise
    from engine.systems.rc_car import CarParams, car_step

    params = CarParams()
    for B in (1, 4096):
        def step(B=B):
            g = torch.Generator().manual_seed(B)
            pose = torch.randn(B, 3, generator=g)
            v = torch.randn(B, 3, generator=g) * torch.tensor([2.0, 0.5, 1.0])
            u = torch.randn(B, 2, generator=g) * torch.tensor([3.0, 0.3])
            fr = lambda: car_step(pose, v, u, params)
            fd = lambda: car_step(pose.to(dev), v.to(dev), u.to(dev), params)
            r, t_r = timed(fr, ref)
            d, t_d = timed(fd, dev)
            assert d.v.device.type == torch.device(dev).type
            row("car", "rc_car.car_step (pose, v, slip)", torch.float32, B,
                diff((d.pose, d.v, d.slip), (r.pose, r.v, r.slip)), t_d, t_r)
        check(f"car_step B={B}", step)

    torch.manual_seed(0)
    mlp = CarMLP(CarMLPConfig())
    x = torch.randn(2048, 5) * torch.tensor([2.0, 0.5, 1.0, 3.0, 0.3])
    y = x[:, :3] + 0.05 * torch.randn(2048, 3)
    mlp.set_normalisation(x, y)
    weights = PlanWeights()
    targets = [Target(18, 1.6, 0.0, 0.0), Target(40, 0.7, 0.45, 0.0)]
    horizon = 40
    u_scale = torch.tensor([params.max_throttle, params.max_steering])
    W0 = 0.1 * torch.randn(horizon, 2, generator=torch.Generator().manual_seed(1))

    def problem(where, dyn_kind):
        if dyn_kind == "mlp":
            m = CarMLP(CarMLPConfig())
            m.load_state_dict(mlp.state_dict())
            dyn = LearnedCarModel(m.to(where), h=0.05)
        else:
            dyn = SimulatorCarModel(params)
        cost = TargetCost(targets, weights, horizon, device=where)
        ev = AutogradEvaluator(dyn, torch.zeros(3, device=where), torch.tensor([1.5, 0.0, 0.0], device=where),
                               cost, weights, u_scale.to(where))
        return ev

    for kind in ("mlp", "simulator"):
        def grad(kind=kind):
            er, ed = problem(ref, kind), problem(dev, kind)
            (c_r, g_r, _), t_r = timed(lambda: er.cost_and_grad(W0), ref, reps=3)
            (c_d, g_d, _), t_d = timed(lambda: ed.cost_and_grad(W0.to(dev)), dev, reps=3)
            assert g_d.device.type == torch.device(dev).type
            row("car", f"AutogradEvaluator.cost_and_grad ({kind})", torch.float32, horizon,
                diff((torch.tensor(c_d), g_d), (torch.tensor(c_r), g_r)), t_d, t_r)
        check(f"AutogradEvaluator.cost_and_grad {kind} on {dev}", grad)

        def batch(kind=kind):
            er, ed = problem(ref, kind), problem(dev, kind)
            Wc = W0.unsqueeze(0) + 0.05 * torch.randn(
                512, horizon, 2, generator=torch.Generator().manual_seed(2)
            )
            (c_r, _), t_r = timed(lambda: er.batch_costs(Wc), ref, reps=3)
            (c_d, _), t_d = timed(lambda: ed.batch_costs(Wc.to(dev)), dev, reps=3)
            row("car", f"AutogradEvaluator.batch_costs ({kind}, 512 candidates)", torch.float32, 512,
                diff(c_d, c_r), t_d, t_r)
        check(f"AutogradEvaluator.batch_costs {kind} on {dev}", batch)

        def opt(kind=kind):
            cfg = OptimiserConfig(max_iterations=8)
            er, ed = problem(ref, kind), problem(dev, kind)
            rr, t_r = timed(lambda: optimise(er, W0, cfg), ref, reps=1, warmup=0)
            rd, t_d = timed(lambda: optimise(ed, W0.to(dev), cfg), dev, reps=1, warmup=0)
            row("car", f"optimise 8 it ({kind}): final cost", torch.float32, horizon,
                diff(torch.tensor(rd.cost), torch.tensor(rr.cost)), t_d, t_r,
                note=f"cost {rr.initial_cost:.4g} -> ref {rr.cost:.4g} / dev {rd.cost:.4g}")
        check(f"optimise {kind} on {dev}", opt)

    def fast(where=dev):
        ev = MLPEvaluator(
            mlp.to(where),
            0.05,
            torch.zeros(3, device=where),
            torch.tensor([1.5, 0.0, 0.0], device=where),
            TargetCost(targets, weights, horizon, device=where),
            weights,
            u_scale.to(where),
        )
        c, g, _ = ev.cost_and_grad(W0.to(where))
        er = problem(ref, "mlp")
        c_r, g_r, _ = er.cost_and_grad(W0)
        row("car", "MLPEvaluator.cost_and_grad vs AutogradEvaluator (cpu)", torch.float32, horizon,
            diff((torch.tensor(c), g), (torch.tensor(c_r), g_r)))
    check(f"MLPEvaluator on {dev}", fast)
    mlp.to("cpu")


def eigenmode_note():
    NOTES.append("eigenmode learning and car model training take a device (eigenmode TrainConfig.device, "
                 "fit_car_model(device=...)); the 'cli' group runs them through `--device`.")


def cli_commands(tmp: Path) -> list[list[str]]:
    """Every computing command of ``python -m engine`` on tiny settings (``--device`` is added)."""
    log = ["resources/logs/panda_joints.csv", "--mapping", "resources/logs/panda_joints.mapping.json"]
    return [
        ["robot", "ik", "panda", "--link", "panda_link8", "--target", "0.4", "0.1", "0.5"],
        ["robot", "simulate", "panda", "--duration", "0.05"],
        ["robot", "identify", "--epochs", "2", "--duration", "1", "--test-duration", "0.5"],
        ["identify", "log", *log, "--epochs", "2", "--blackbox-steps", "10"],
        ["learn", "train", "--model", "symo", "--trajectories", "2", "--epochs", "3", "--hidden", "16",
         "--out", str(tmp / "learn")],
        ["learn", "train", "--resume", str(tmp / "learn"), "--epochs", "4"],
        ["car", "train", "--minutes", "0.2", "--epochs", "2", "--hidden", "16", "--layers", "2",
         "--out", str(tmp / "car")],
        ["car", "train", "--resume", str(tmp / "car"), "--epochs", "3"],
        ["car", "plan", "--scenario", "drifting-turn", "--max-iterations", "3"],
        ["car", "mpc", "--max-seconds", "1"],
        ["eigenmode", "learn", "--epochs", "3", "--out", str(tmp / "mode")],
        ["bench", "ik", "--n", "3", "--batch", "8", "--tracking", "5"],
        ["bench", "rbd", "--batch", "1,64", "--repeats", "1", "--min-time", "0.01", "--plain-batch", "0",
         "--floating", "none"],
        ["bench", "learn", "--models", "symo", "--steps", "3", "--epochs", "10", "--workers", "1"],
        ["bench", "car", "--cycles", "3"],
        ["bench", "eigenmode", "--epochs", "3", "--dtypes", "float32"],
    ]


def cli_checks(dev, out: Path):
    """Each computing command run with ``--device dev`` in a fresh process: exit code and time."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    tmp = out / "cli_runs"
    tmp.mkdir(parents=True, exist_ok=True)
    for argv in cli_commands(tmp):
        name = " ".join(argv[:2])

        def run(argv=argv, name=name):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "engine", *argv, "--device", dev, "--json"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=600,
            )
            seconds = time.perf_counter() - t0
            last = (proc.stderr.strip().splitlines() or [""])[-1]
            row("cli", f"{name} --device {dev}", "-", 0, t_dev=seconds,
                note=f"exit {proc.returncode}" + (f": {last[:150]}" if proc.returncode else ""))
            if proc.returncode:
                raise RuntimeError(
                    f"`python -m engine {' '.join(argv)} --device {dev}` exit {proc.returncode}: {last}"
                )

        check(f"cli {name}", run)


# ----------------------------------------------------------------------------- report
def fmt(v, spec):
    return "" if v is None else (format(v, spec) if isinstance(v, (int, float)) else str(v))


def table() -> str:
    lines = [(f"{'group':8} {'what':58} {'dtype':8} {'batch':>6} {'max|d|':>10} {'max rel':>10} "
              f"{'t_dev ms':>10} {'t_ref ms':>10}  note")]
    for r in ROWS:
        lines.append(f"{r['group']:8} {r['what'][:58]:58} {r['dtype']:8} {r['batch']:>6} "
                     f"{fmt(r['max_abs_diff'], '10.2e'):>10} {fmt(r['max_rel_diff'], '10.2e'):>10} "
                     f"{fmt(r['t_device_ms'], '10.3f'):>10} {fmt(r['t_ref_ms'], '10.3f'):>10}  {r['note']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--ref", default="cpu")
    ap.add_argument("--out", default=".")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the reference's timings)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--trajectories", type=int, default=16)
    ap.add_argument("--only", default="robot,learned,car,cli",
                    help="comma-separated groups (cli: every computing command with --device)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    env = {"torch": torch.__version__, "cuda_available": torch.cuda.is_available(), "threads": args.threads,
           "device": args.device, "ref": args.ref}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    print(json.dumps(env), flush=True)
    groups = set(args.only.split(","))
    if "robot" in groups:
        robot_checks(args.device, args.ref)
    if "learned" in groups:
        learned_checks(args.device, args.ref, args.epochs, args.trajectories)
    if "car" in groups:
        car_checks(args.device, args.ref)
    if "cli" in groups:
        cli_checks(args.device, Path(args.out))
    check("notes", eigenmode_note)
    text = table() + "\n\nNOTES\n" + "\n".join(NOTES) + f"\n\nFAILURES ({len(FAILURES)})\n" + "\n".join(
        f"--- {f['check']}: {f['error']}\n{f['traceback']}" for f in FAILURES)
    text += f"\n\ntotal {time.perf_counter() - t0:.1f} s\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cuda_check.txt").write_text(text)
    (out / "cuda_check.json").write_text(
        json.dumps({"env": env, "rows": ROWS, "failures": FAILURES, "notes": NOTES}, indent=1, default=str)
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
