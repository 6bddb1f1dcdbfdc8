"""`python -m engine learn ...`: learned dynamics (data, train, sweep, reproduce). Parsing and printing only."""

from __future__ import annotations

from pathlib import Path

from engine.cli._common import add_device_option, add_group, check_output, print_json, run_cli_job


def _csv(kind):
    def parse(text):
        return tuple(kind(v) for v in text.split(",") if v.strip())
    return parse


def register(subparsers) -> None:
    from engine.data.config import DatasetConfig
    from engine.models.registry import PAPER_MODELS, model_names
    from engine.training.config import TrainConfig
    from engine.training.executors import EXECUTORS
    from engine.training.report import REPRODUCTIONS
    from engine.training.sweep import SweepConfig

    T, S, D = TrainConfig(), SweepConfig(), DatasetConfig()
    _, sub = add_group(
        subparsers, "learn", "learn dynamics models (NODE, L-NODE, SyMo, E2E-SyMo) from trajectories"
    )

    p = sub.add_parser("data", help="generate the paper's data set (.npz + .json)")
    p.add_argument("--system", default=D.system)
    p.add_argument("--trajectories", type=int, default=D.train_trajectories)
    p.add_argument("--test-trajectories", type=int, default=D.test_trajectories)
    p.add_argument("--long-term-steps", type=int, default=D.long_term_steps)
    p.add_argument(
        "--sampler",
        choices=["paper", "numpy"],
        default=D.sampler,
        help="paper: the SyMo repository's exact random draws (default); numpy: the older sampling",
    )
    p.add_argument("--seed", type=int, default=D.seed)
    p.add_argument("--out", required=True, help="output .npz path")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_data)

    p = sub.add_parser("train", help="train one model and save it (safetensors + JSON)")
    p.add_argument("--system", default=T.system)
    p.add_argument("--model", default=T.model, choices=model_names())
    p.add_argument("--trajectories", type=int, default=T.trajectories)
    p.add_argument("--epochs", type=int, default=None,
                   help=f"default: {T.epochs}; with --resume: the new total (extends a finished run)")
    p.add_argument(
        "--lr",
        type=float,
        default=T.learning_rate,
        help="default: the system's protocol value (the paper's: pendulum 1e-4, cartpole and acrobot 1e-3)",
    )
    p.add_argument("--hidden", type=int, default=T.hidden, help="default: the system's protocol value")
    p.add_argument("--seed", type=int, default=T.seed)
    p.add_argument("--data", default=None, help="a data set .npz (default: generate the protocol's)")
    p.add_argument("--robot", default=None,
                   help="robot models: the robot to learn, a library name or a URDF, xacro or MJCF file whose "
                        "joints are the system's coordinates (default: the system's own URDF)")
    p.add_argument(
        "--out",
        default=None,
        help="run folder: config.json, metrics.csv, checkpoints/, and model.* when the run ends well",
    )
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its last checkpoint (its own settings; --epochs N to extend)",
    )
    p.add_argument(
        "--tensorboard",
        default=None,
        metavar="LOGDIR",
        help="also write the run's scalars and hyperparameters for TensorBoard (the 'tensorboard' extra)",
    )
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_train)

    def sweep_args(p):
        p.add_argument("--epochs", type=int, default=S.epochs)
        p.add_argument("--seeds", type=_csv(int), default=S.seeds, help="comma-separated, e.g. 0,1,2")
        p.add_argument("--trajectories", type=_csv(int), default=S.trajectories, help="comma-separated N")
        p.add_argument("--executor", default="local", choices=list(EXECUTORS),
                       help="local: a process pool; inline: in this process, one run after another; "
                            "ray: tasks on a Ray cluster (the 'cluster' extra; see --address)")
        p.add_argument("--workers", type=int, default=None,
                       help="local processes (default: CPU cores); with ray: runs in flight at once "
                            "(default: all)")
        p.add_argument("--address", default=None,
                       help="with --executor ray: the cluster's address HOST:PORT (as `ray start --head` "
                            "prints) or 'auto' (default: RAY_ADDRESS, else a new local Ray instance)")
        p.add_argument("--out", required=True, help="output folder")
        add_device_option(p)
        p.add_argument("--json", action="store_true")

    p = sub.add_parser("sweep", help="models x training-set sizes x seeds, one table")
    p.add_argument("--system", default=S.system)
    p.add_argument(
        "--models", type=_csv(str), default=S.models, help="comma-separated: " + ",".join(PAPER_MODELS)
    )
    p.add_argument("--data", default=None, help="a data set .npz (default: generate the protocol's)")
    sweep_args(p)
    p.set_defaults(func=_sweep)

    p = sub.add_parser("reproduce", help="the paper's experiment: table (CSV + JSON) and Fig. 3-like PNG")
    p.add_argument("name", choices=list(REPRODUCTIONS))
    p.add_argument("--models", type=_csv(str), default=None, help="default: the paper's six")
    p.add_argument("--data", default=None, help="a data set .npz (default: generate the protocol's)")
    sweep_args(p)
    p.set_defaults(func=_reproduce)
    _add_compare(sub)


def _add_compare(sub) -> None:
    from engine.models.registry import model_names
    from engine.training.compare import ROBOT_DEFAULTS, LogCompareConfig

    defaults = LogCompareConfig()
    p = sub.add_parser("compare", help="train models on a hardware log and compare them (one table)")
    p.add_argument("--log", required=True, help="log file (CSV/TSV/NPZ/Parquet/bag/MCAP)")
    p.add_argument("--mapping", required=True, help="mapping JSON (engine.logs.LogMapping)")
    p.add_argument("--models", required=True,
                   help=f"comma-separated, from: {','.join(model_names())}; with --robot also urdf (the robot "
                        "file as it is) and rigid-body (identified from the log's torques)")
    p.add_argument("--robot", default=None,
                   help="the robot whose log this is: a library name or a URDF, xacro or MJCF file; its joints "
                        "are matched to the log's columns by name (the mapping's order as fallback), the robot "
                        "models learn it, and every row gets the torque error (N m) beside the rollout errors")
    p.add_argument(
        "--dt", type=float, default=None, help="resample step in s (default: the log's median step)"
    )
    for name in ("steps", "horizon", "epochs", "hidden", "layers", "seed"):
        p.add_argument("--" + name, type=int, default=getattr(defaults, name),
                       help=f"(default: {getattr(defaults, name)})")
    p.add_argument(
        "--lr", type=float, default=defaults.learning_rate, help=f"(default: {defaults.learning_rate})"
    )
    p.add_argument(
        "--time-budget", type=float, default=None, metavar="S",
        help="seconds of training for the whole comparison, shared out model by model (0: none; default: "
             f"{ROBOT_DEFAULTS['time_budget']:.0f} with --robot, none without). With --robot each model also "
             "keeps its best weights on held-out training chunks and stops early when they stop improving")
    p.add_argument(
        "--lagrangian-prior", choices=("robot", "none"), default="robot",
        help="with --robot: 'robot' (default) makes the learned Lagrangian of L-NODE, SyMo and E2E-SyMo a "
             "residual on top of the rigid body identified from the log (each starts as that robot and learns "
             "its own terms); 'none': the papers' models, from scratch")
    p.add_argument(
        "--out", "--save",
        dest="out",
        default=None,
        help="folder for compare.csv + compare.json, and runs/<model> (each model's run folder; with --robot "
             "the identified rigid body also as rigid_body.urdf + rigid_body.actuation.json); --save is the "
             "same option",
    )
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_compare)


def _compare(args) -> int:
    import sys

    from engine.identification.from_log import LogIdentificationConfig, identify_from_log
    from engine.logs import PrepareConfig
    from engine.training.compare import LogCompareConfig, compare_on_log
    from engine.training.report import rows_to_csv, write_compare_report

    config = LogCompareConfig(
        steps=args.steps,
        horizon=args.horizon,
        epochs=args.epochs,
        learning_rate=args.lr,
        hidden=args.hidden,
        layers=args.layers,
        seed=args.seed,
        device=args.device,
        time_budget=args.time_budget,
        lagrangian_prior=args.lagrangian_prior,
    )
    if args.out:
        check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
    runs_dir = None if args.out is None else Path(args.out) / "runs"

    def identify(prepared, model, learn, ctx):   # the rigid-body row: identification from the torques
        config = LogIdentificationConfig(robot=args.robot or "", learn=tuple(learn), blackbox_steps=0,
                                         device=args.device)
        return identify_from_log(prepared, model, config, ctx)

    rows = run_cli_job(lambda ctx: compare_on_log(args.log, args.mapping, args.models,
                                                  prepare=PrepareConfig(dt=args.dt), config=config, ctx=ctx,
                                                  runs_dir=runs_dir, robot=args.robot, identify=identify),
                       quiet=args.json)
    if args.out:
        write_compare_report(
            args.out, rows, {"log": args.log, "mapping": args.mapping, "robot": args.robot,
                             "config": config.to_dict()}
        )
    if args.json:
        print_json(rows)
    elif args.robot:
        _print_robot_rows(rows)
    else:
        sys.stdout.write(rows_to_csv(rows))
    return 0


def _print_robot_rows(rows) -> None:
    """The robot comparison as a table: both metrics per model, the noise level for scale."""
    def num(v, w=10):
        return f"{v:>{w}.4g}" if isinstance(v, (int, float)) and v is not None else f"{'-':>{w}}"

    if rows:
        print(f"robot {rows[0].get('robot')}, log {rows[0].get('log')}; torque noise level "
              f"{rows[0].get('noise_level', float('nan')):.4g} N m")
        for note in rows[0].get("notes") or []:
            print(note)
        print("torque: RMSE over every validation sample; sliding: over the samples where the joint moves "
              ">= 0.1 rad/s (a dry friction's torque near rest is not a function of the motion)")
    print(f"{'model':<14}{'torque N m':>11}{'sliding':>9}{'integ. MSE':>11}{'q@0.1s':>10}{'q@0.5s':>10}{'q@1s':>10}"
          f"{'seconds':>9}  note")
    for r in rows:
        roll = r.get("rollout_rmse") or {}
        note = r.get("error") or r.get("torque_note") or ""
        print(f"{r['model']:<14}{num(r.get('torque_rmse'), 11)}{num(r.get('torque_rmse_sliding'), 9)}"
              f"{num(r.get('integration_mse'), 11)}"
              f"{num(roll.get('0.1'))}{num(roll.get('0.5'))}{num(roll.get('1'))}{num(r.get('seconds'), 9)}  {note}")


def _executor(args):
    from engine.training.executors import get_executor

    if args.address is not None and args.executor != "ray":
        raise ValueError(f"--address is for --executor ray (the executor is {args.executor!r})")
    try:
        return get_executor(args.executor, workers=args.workers, address=args.address)
    except ImportError as exc:  # an optional extra is missing: a clear message, not a traceback
        raise ValueError(str(exc)) from exc


def _data(args) -> int:
    from engine.data import DatasetConfig, generate_dataset, save_dataset

    cfg = DatasetConfig(
        system=args.system,
        train_trajectories=args.trajectories,
        test_trajectories=args.test_trajectories,
        long_term_steps=args.long_term_steps,
        seed=args.seed,
        sampler=args.sampler,
    )
    check_output(
        args.out, "file", "--out", written_as=".npz"
    )  # before the work; save_dataset writes NAME.npz
    ds = generate_dataset(cfg)
    path = save_dataset(ds, args.out)
    desc = {"path": str(path), **ds.describe()}
    print_json(desc) if args.json else print(f"wrote {path} {desc['shapes']}")
    return 0


def _train(args) -> int:
    from engine.runs import interrupts_as_keyboard
    from engine.training import TrainConfig, resume_job, train_job

    if args.resume is not None:
        if args.out is not None:
            raise ValueError("--out and --resume: a resumed run stays in its folder; give one of them")
        job = resume_job(args.resume, args.epochs, device=args.device)
    else:
        epochs = args.epochs if args.epochs is not None else TrainConfig().epochs
        cfg = TrainConfig(model=args.model, system=args.system, trajectories=args.trajectories, epochs=epochs,
                          learning_rate=args.lr, hidden=args.hidden, seed=args.seed, device=args.device,
                          robot=args.robot)
        if args.out:
            check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
        job = train_job(cfg, out_dir=args.out, data_path=args.data)
    with interrupts_as_keyboard():   # SIGTERM ends the run as Ctrl+C does: recorded, files kept
        try:
            result = run_cli_job(job, quiet=args.json)
        except KeyboardInterrupt:
            import sys

            print("training interrupted: no final model was written and the files that were there are "
                  "unchanged; the run folder's run.json says which checkpoint is kept (continue with "
                  "--resume RUN_DIR)", file=sys.stderr)
            raise
    if args.tensorboard and result["checkpoint"]:
        from engine.training.tensorboard import export_run

        export_run(result["checkpoint"], args.tensorboard)
    if args.json:
        print_json({"row": result["row"], "checkpoint": result["checkpoint"]})
    else:
        for k, v in result["row"].items():
            print(f"{k}: {v}")
    return 0


def _print_rows(rows):
    keys = [
        "model",
        "trajectories",
        "seed",
        "train_mse",
        "test_mse",
        "integration_mse",
        "energy_mse",
        "inertia_mse",
        "seconds",
    ]
    print("  ".join(f"{k:>15}" for k in keys))
    for r in rows:
        print(
            "  ".join(
                f"{v:>15.4g}" if isinstance(v, float) else f"{str(v):>15}" for v in (r.get(k) for k in keys)
            )
        )


def _sweep(args) -> int:
    from engine.training.report import write_table
    from engine.training.sweep import ROW_KEYS, SweepConfig, run_sweep

    cfg = SweepConfig(
        system=args.system,
        models=args.models,
        trajectories=args.trajectories,
        seeds=args.seeds,
        epochs=args.epochs,
        device=args.device,
    )
    executor = _executor(args)
    check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
    from engine.runs import RunLock

    with RunLock(args.out):   # one sweep writes a folder at a time (each of its runs locks its own)
        rows = run_cli_job(lambda ctx: run_sweep(cfg, args.out, executor, ctx, data_path=args.data),
                           quiet=args.json)
        write_table(rows, args.out)
    if args.json:
        print_json(
            [{k: r.get(k) for k in ROW_KEYS} | ({"error": r["error"]} if "error" in r else {}) for r in rows]
        )
    else:
        _print_rows(rows)
    return 0


def _reproduce(args) -> int:
    from engine.training.report import reproduce

    executor = _executor(args)
    check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
    from engine.runs import RunLock

    with RunLock(args.out):  # one sweep writes a folder at a time (each of its runs locks its own)
        result = run_cli_job(
            lambda ctx: reproduce(
                args.name,
                args.out,
                args.epochs,
                args.seeds,
                executor,
                ctx,
                args.trajectories,
                args.models,
                args.data,
                device=args.device,
            ),
            quiet=args.json,
        )
    if args.json:
        print_json({"rows": result["rows"], "comparison": result["comparison"], "files": result["files"]})
    else:
        _print_rows(result["rows"])
        for f in result["files"]:
            print(f"wrote {f}")
    return 0
