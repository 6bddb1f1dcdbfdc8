"""`python -m engine eigenmode ...`: learn an eigenmode, stabilise it, sweep the paper's ablations.

Flags are generated from the engine dataclasses' defaults (engine.eigenmodes.config).
"""

from __future__ import annotations

from pathlib import Path

from engine.cli._common import add_device_option, add_group, check_output, print_json, run_cli_job


def _defaults():
    from engine.eigenmodes.config import EigenmodeTask, LossWeights, StabiliseConfig, TrainConfig
    return EigenmodeTask(), LossWeights(), TrainConfig(), StabiliseConfig()


def _design_from_args(args):
    from engine.eigenmodes.config import DesignConfig
    d = DesignConfig()
    d.task.q0, d.task.target = tuple(args.q0), tuple(args.target)
    flags = {"task": ("period", "learn_period"),
             "weights": ("effort_weight", "constraint_weight", "task_weight", "constraint_mode"),
             "train": ("epochs", "lr", "dt", "dtype", "seed"), "potential": ("hidden",)}
    for part, names in flags.items():
        for name in names:
            setattr(getattr(d, part), name, getattr(args, name))
    if d.train.epochs is None:
        d.train.epochs = DesignConfig().train.epochs
    d.train.device = args.device
    d.validate()
    return d


def _add_design_args(p):
    task, w, tr, _ = _defaults()
    from engine.eigenmodes.config import PotentialConfig
    pot = PotentialConfig()
    p.add_argument(
        "--q0",
        type=float,
        nargs=2,
        default=list(task.q0),
        metavar=("Q1", "Q2"),
        help="start configuration (rad), at rest",
    )
    p.add_argument(
        "--target",
        type=float,
        nargs=2,
        default=list(task.target),
        metavar=("X", "Y"),
        help="tip target at T/2 (m)",
    )
    p.add_argument(
        "--period",
        type=float,
        default=task.period,
        help="period T (s); the initial guess with --learn-period",
    )
    p.add_argument("--learn-period", action="store_true", help="learn the period jointly (appendix D)")
    p.add_argument("--effort-weight", type=float, default=w.effort_weight, help="metabolic weight lambda")
    p.add_argument(
        "--constraint-weight",
        type=float,
        default=w.constraint_weight,
        help="eigenmode constraint weight gamma",
    )
    p.add_argument("--task-weight", type=float, default=w.task_weight, help="task (tip) weight")
    p.add_argument("--constraint-mode", choices=["soft", "hard"], default=w.constraint_mode,
                   help="soft: fixed gamma; hard: gamma raised towards constraint_weight_max")
    p.add_argument("--epochs", type=int, default=tr.epochs)
    p.add_argument("--lr", type=float, default=tr.lr)
    p.add_argument("--dt", type=float, default=tr.dt, help="RK4 step (s)")
    p.add_argument("--dtype", choices=["float32", "float64"], default=tr.dtype)
    p.add_argument("--seed", type=int, default=tr.seed)
    p.add_argument("--hidden", type=int, default=pot.hidden, help="hidden units of V_theta")
    add_device_option(p)


def _learn(args) -> int:
    from engine.eigenmodes.jobs import learn_summary
    from engine.eigenmodes.storage import learn_into
    from engine.runs import interrupts_as_keyboard

    if (args.out is None) == (args.resume is None):
        raise ValueError("eigenmode learn: give --out DIR for a new run or --resume RUN_DIR to continue one")
    if args.resume is not None:
        job = lambda ctx: learn_into(
            None, ctx=ctx, resume_dir=args.resume, epochs=args.epochs, device=args.device
        )
    else:
        design = _design_from_args(args)
        check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
        job = lambda ctx: learn_into(design, args.out, ctx)
    with interrupts_as_keyboard():   # SIGTERM ends the run as Ctrl+C does: recorded, files kept
        mode = run_cli_job(job, quiet=args.json)
    _print_summary(learn_summary(mode), args.json)
    if not args.json:
        print(f"saved to {mode.run_dir}")
    return 0


def _stabilise(args) -> int:
    from engine.eigenmodes.config import StabiliseConfig
    from engine.eigenmodes.jobs import StabiliseJob, stabilise_summary
    from engine.eigenmodes.storage import load_mode, stabilised_csv, write_trajectory_csv
    mode = load_mode(args.mode)
    if args.csv:
        check_output(args.csv, "file", "--csv", suffix=".csv")  # before the work
    perturb = list(args.perturb)
    if len(perturb) not in (2, 4):
        raise ValueError("--perturb: expected DQ1 DQ2 [DP1 DP2]")
    cfg = StabiliseConfig(
        k_energy=args.k_energy,
        k_mode=args.k_mode,
        damping=args.damping,
        perturb_q=tuple(perturb[:2]),
        perturb_p=tuple(perturb[2:]) if len(perturb) == 4 else (0.0, 0.0),
        periods=args.periods,
        dt=args.dt,
        multiplier_steps=args.multiplier_steps,
        settle_periods=args.settle_periods,
    )
    cfg.validate()                 # before the work: ranges, then the size of the simulated run
    cfg.check_steps(mode.period)
    result = run_cli_job(StabiliseJob(mode, cfg, multipliers=not args.no_multipliers, check_fd=args.check_fd),
                         quiet=args.json)
    if args.csv:
        write_trajectory_csv(stabilised_csv(result), args.csv)
    _print_summary(stabilise_summary(result), args.json)
    return 0


def _print_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        print_json(summary)
    else:
        for k, v in summary.items():
            print(f"{k}: {v}")


def _sweep(args) -> int:
    from engine.eigenmodes.config import check_period
    from engine.eigenmodes.sweep import SweepJob
    design = _design_from_args(args)
    for period in args.periods:
        check_period(period, "--periods", None)
    check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # before the work
    job = SweepJob(design, effort_weights=args.effort_weights, periods=args.periods, out=Path(args.out))
    rows = run_cli_job(job, quiet=args.json)
    if args.json:
        print_json({"runs": rows, "figures": sorted(str(p) for p in Path(args.out).glob("*.png"))})
    else:
        for r in rows:
            print(r)
    return 0


def register(subparsers) -> None:
    _, sub = add_group(
        subparsers, "eigenmode", "learn an efficient oscillation of the double pendulum and stabilise it"
    )
    _, _, _, st = _defaults()

    p = sub.add_parser(
        "learn", help="learn a control potential whose closed loop oscillates through the task"
    )
    _add_design_args(p)
    p.set_defaults(epochs=None)   # None: the design's default, or with --resume the run's planned epochs
    p.add_argument(
        "--out",
        default=None,
        help="run folder: config.json, metrics.csv, checkpoints/, and "
        "mode.safetensors, mode.json, trajectory.csv when the run ends well",
    )
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its last checkpoint (its own design; --epochs N to extend)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_learn)

    p = sub.add_parser("stabilise", help="simulate the stabilising controller from a perturbed start")
    p.add_argument("--mode", required=True, help="folder written by `eigenmode learn`")
    p.add_argument("--damping", type=float, default=st.damping, help="viscous damping D (N m s/rad)")
    p.add_argument("--perturb", type=float, nargs="+", default=[*st.perturb_q, *st.perturb_p],
                   metavar="X", help="DQ1 DQ2 [DP1 DP2]: offset of the start from (q0, 0)")
    p.add_argument("--k-energy", type=float, default=st.k_energy)
    p.add_argument("--k-mode", type=float, default=st.k_mode)
    p.add_argument("--periods", type=float, default=st.periods)
    p.add_argument("--dt", type=float, default=st.dt)
    p.add_argument(
        "--multiplier-steps",
        type=int,
        default=st.multiplier_steps,
        help="RK4 steps per period for the monodromy",
    )
    p.add_argument("--settle-periods", type=float, default=st.settle_periods)
    p.add_argument("--no-multipliers", action="store_true", help="skip the cycle multipliers")
    p.add_argument("--check-fd", action="store_true", help="check the monodromy against finite differences")
    p.add_argument("--csv", help="write the simulated run as CSV")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_stabilise)

    p = sub.add_parser("sweep", help="appendix B ablations: effort weight and period, with PNG figures")
    _add_design_args(p)
    p.add_argument("--effort-weights", type=float, nargs="+", default=[1e-5, 1e-4, 1e-3, 1e-2])
    p.add_argument("--periods", type=float, nargs="+", default=[2.0, 2.5, 3.0])
    p.add_argument("--out", required=True, help="folder for the figures and sweep.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_sweep)
