"""`python -m engine car ...`: train the learned car model, plan, drive a track with MPC, select models."""

from __future__ import annotations

from dataclasses import replace

from engine.cli._common import add_device_option, add_group, check_output, print_json, run_cli_job


def register(subparsers) -> None:
    _, sub = add_group(subparsers, "car", "RC car: learn its dynamics, optimise trajectories, MPC on a track")

    p = sub.add_parser("train", help="simulate driving data and train the learned car model")
    p.add_argument(
        "--out",
        default=None,
        help="run folder: config.json, metrics.csv, checkpoints/, and "
        "car_model.safetensors + car_model.json when the run ends well",
    )
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its last checkpoint (its own settings; --epochs N to extend)",
    )
    p.add_argument(
        "--minutes", type=float, default=None, help="minutes of simulated driving data (default 15)"
    )
    p.add_argument("--log", default=None,
                   help="train on a recorded CSV log (columns t, x, y, yaw, throttle, steering) instead")
    p.add_argument("--epochs", type=int, default=None,
                   help="default 160; with --resume: the new total (extends a finished run)")
    p.add_argument("--activation", choices=("gelu", "relu"), default=None)
    p.add_argument("--loss", choices=("relative", "l1", "l2"), default=None)
    p.add_argument("--hidden", type=int, default=None)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_train)

    p = sub.add_parser("plan", help="optimise a scenario's trajectory and execute it on the simulator")
    p.add_argument("--scenario", default="drifting-turn",
                   help="parallel-parking, dynamic-reverse, drifting-turn, or a plan JSON file")
    p.add_argument(
        "--model",
        default="default",
        help="'default' (the shipped learned model), a trained model folder, or 'sim' (the simulator)",
    )
    p.add_argument("--max-iterations", type=int, default=None)
    p.add_argument("--candidates", type=int, default=None)
    p.add_argument("--save", default=None, help="write the optimised plan (JSON) here")
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_plan)

    p = sub.add_parser(
        "mpc", help="drive laps on a track with receding-horizon MPC (closed loop on the simulator)"
    )
    p.add_argument("--track", default="default", help="a shipped track name or a CSV/JSON file")
    p.add_argument(
        "--model",
        default="default",
        help="'default' (the shipped learned model), a trained model folder, or 'sim' (the simulator)",
    )
    p.add_argument("--laps", type=int, default=1)
    p.add_argument("--horizon", type=int, default=None)
    p.add_argument("--iterations", type=int, default=None, help="optimiser iterations per cycle")
    p.add_argument("--target-speed", type=float, default=None)
    p.add_argument("--max-seconds", type=float, default=None, help="simulated time limit")
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_mpc)

    p = sub.add_parser("select", help="model selection: TVE of ReLU/GELU x L1/L2/relative (table + box plot)")
    p.add_argument("--out", default=None, help="folder for selection.json and selection.png")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--minutes", type=float, default=None)
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_select)


def _overrides(args, names):
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


_RUN_SETTINGS = ("out", "minutes", "log", "activation", "loss", "hidden", "layers", "seed")


def _train(args) -> int:
    from engine.car.car_runs import resume_job, train_job
    from engine.car.training import CarTrainConfig
    from engine.cli._common import check_output
    from engine.runs import interrupts_as_keyboard

    if args.resume is not None:
        given = [f"--{n}" for n in _RUN_SETTINGS if getattr(args, n, None) is not None]
        if given:
            raise ValueError(f"--resume continues a run with its own settings; leave out {', '.join(given)} "
                             "(only --epochs and --device go with it)")
        return _finish_train(
            args, resume_job(args.resume, args.epochs, device=args.device), interrupts_as_keyboard
        )
    if args.out is None:
        raise ValueError("car train: give --out DIR for a new run or --resume RUN_DIR to continue one")
    check_output(args.out, kind="folder", flag="--out", allow_nonempty_folder=True)
    cfg = CarTrainConfig()
    cfg = replace(
        cfg,
        model=replace(
            cfg.model, **_overrides(args, ("epochs", "activation", "loss", "hidden", "layers", "seed"))
        ),
        driving=replace(cfg.driving, **_overrides(args, ("minutes",))),
        device=args.device,
    )
    check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
    dataset = None
    if args.log:
        import torch

        from engine.car.driving_logs import load_car_log

        prep = load_car_log(
            args.log, cfg.params, cfg.driving
        )  # the model lab's reader, then the car's preparation
        dataset = {"inputs": torch.from_numpy(prep["inputs"]).float(),
                   "targets": torch.from_numpy(prep["targets"]).float()}
    return _finish_train(
        args, train_job(cfg, args.out, dataset=dataset, log_path=args.log), interrupts_as_keyboard
    )


def _finish_train(args, job, interrupts_as_keyboard) -> int:
    with interrupts_as_keyboard():   # SIGTERM ends the run as Ctrl+C does: recorded, checkpoint kept
        res = run_cli_job(job, quiet=args.json)
    out = {
        k: res[k]
        for k in (
            "model_dir",
            "epochs",
            "train_loss",
            "val_loss",
            "initial_loss",
            "tve",
            "samples",
            "seconds",
        )
    }
    if args.json:
        print_json(out)
    else:
        print(f"trained: loss {out['initial_loss']:.4f} -> {out['train_loss']:.4f}, TVE {out['tve']:.3f}, "
              f"{out['epochs']} epochs, saved in {out['model_dir']}")
    return 0


def _plan(args) -> int:
    from pathlib import Path

    from engine.car.dynamics import load_dynamics
    from engine.car.optimiser import OptimiserConfig
    from engine.car.scenarios import (
        SCENARIOS,
        check_plan_memory,
        execute_open_loop,
        load_plan,
        plan_trajectory,
        save_plan,
        scenario,
    )
    from engine.systems.rc_car import CarParams

    params = CarParams()
    cfg = OptimiserConfig(**_overrides(args, ("candidates", "max_iterations")))   # checked before any work
    if args.save:
        from engine.cli._common import check_output

        check_output(args.save, kind="file", flag="--save", suffix=".json")
    plan = scenario(args.scenario) if args.scenario in SCENARIOS or not Path(args.scenario).exists() \
        else load_plan(args.scenario)[0]
    check_plan_memory(plan, cfg)                                     # before the model is loaded
    dyn = load_dynamics(args.model, params, device=args.device)
    outcome = run_cli_job(lambda ctx: plan_trajectory(plan, dyn, params, cfg, ctx=ctx), quiet=args.json)
    ex = execute_open_loop(plan, outcome.controls, params)
    r = outcome.result
    out = {"scenario": plan.name, "model": dyn.name, "converged": r.converged, "iterations": r.iterations,
           "seconds": r.seconds, "initial_cost": r.initial_cost, "final_cost": r.cost, "reason": r.reason,
           "target_errors": outcome.target_errors,
           "executed_position_error": ex["position_error"], "executed_heading_error": ex["heading_error"]}
    if args.save:
        save_plan(args.save, plan, outcome.controls, {"model": dyn.name})
    if args.json:
        print_json(out)
    else:
        print(
            f"{plan.name} on {dyn.name}: {'converged' if r.converged else 'not converged'} in {r.iterations} "
            f"iterations ({r.seconds:.2f} s), cost {r.initial_cost:.3g} -> {r.cost:.3g}; executed on the "
            f"simulator: end error {ex['position_error']:.3f} m, {ex['heading_error']:.3f} rad"
        )
    return 0


def _mpc(args) -> int:
    from engine.car.dynamics import load_dynamics
    from engine.car.mpc import MPCConfig, check_laps, run_mpc
    from engine.car.tracks import load_track
    from engine.systems.rc_car import CarParams

    params = CarParams()
    cfg = MPCConfig(**_overrides(args, ("horizon", "iterations", "target_speed", "max_seconds")))
    check_laps(args.laps)                                   # numbers checked before any work
    track = load_track(args.track)
    dyn = load_dynamics(args.model, params, device=args.device)
    res = run_cli_job(lambda ctx: run_mpc(track, dyn, params, cfg, laps=args.laps, ctx=ctx), quiet=args.json)
    out = {k: res[k] for k in ("completed", "lap_time", "max_track_deviation", "control_rate_hz",
                               "iterations_per_cycle", "cycle_ms", "lap_times", "track")}
    if args.json:
        print_json(out)
    else:
        lap = f"{out['lap_time']:.2f} s" if out["lap_time"] else "not completed"
        print(
            f"{track.name}: lap {lap}, max deviation {out['max_track_deviation']:.3f} m, "
            f"{out['control_rate_hz']:.1f} Hz control rate ({out['iterations_per_cycle']} iterations per cycle)"
        )
    return 0


def _select(args) -> int:
    from engine.car.training import SelectionConfig, select_models_job

    cfg = SelectionConfig(**_overrides(args, ("seeds", "epochs", "minutes", "device")))
    if args.out:
        check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
    res = run_cli_job(select_models_job(cfg, args.out), quiet=args.json)
    if args.json:
        print_json({k: v for k, v in res.items() if k != "runs"})
    else:
        print(f"{'activation':<10} {'loss':<9} {'TVE mean':>9} {'min':>7} {'max':>7}")
        for r in res["table"]:
            print(
                f"{r['activation']:<10} {r['loss']:<9} {r['tve_mean']:9.3f} {r['tve_min']:7.3f} {r['tve_max']:7.3f}"
            )
        if res.get("plot"):
            print(f"box plot: {res['plot']}")
    return 0
