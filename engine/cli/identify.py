"""`python -m engine identify ...`: system identification of a robot from a joint log
(work in engine.identification.from_log)."""

from __future__ import annotations

import dataclasses

from engine.cli._common import add_device_option, add_group, check_output, print_json, run_cli_job


def _config(args):
    from engine.identification.from_log import LogIdentificationConfig

    # "friction" is the URDF's word for the Coulomb friction
    learn = tuple(dict.fromkeys("coulomb" if k.strip() == "friction" else k.strip()
                                for k in args.learn.split(",") if k.strip()))
    links = tuple(l.strip() for l in args.links.split(",") if l.strip()) if args.links else None
    return LogIdentificationConfig(
        robot=args.robot,
        learn=learn,
        links=links,
        epochs=args.epochs,
        blackbox_steps=args.blackbox_steps,
        weighting=args.weighting,
        method=args.method,
        coulomb_velocity_scale=args.coulomb_velocity_scale,
        fit_velocity_scale=args.fit_velocity_scale,
        seed=args.seed,
        device=args.device,
    )


def _log(args) -> int:
    from engine.identification.from_log import identify_from_log, robot_prepare_config
    from engine.logs import LogMapping, prepare_log, read_log
    from engine.logs.robot_order import order_for_robot
    from engine.models.robot_source import actuation_path, read_actuation, write_actuation
    from engine.robots.library import load_robot, resolve_robot

    config = _config(args)
    config.validate()
    if args.save_urdf:   # before the fit: a bad name must not cost the work
        check_output(args.save_urdf, "file", "--save-urdf", suffix=".urdf")
    mapping = LogMapping.load(args.mapping)
    overrides = {"window": args.window, "polyorder": args.polyorder}
    if args.train_range:
        overrides["train_ranges"] = [list(args.train_range)]
    prep_config = robot_prepare_config(**overrides)
    prep_config.validate()
    model = load_robot(config.robot, device=config.device)  # float64 on every device
    # the log's joints matched to the robot's by name (the mapping's order as the fallback), before any work
    mapping, notes = order_for_robot(mapping, list(model.joint_names), repr(config.robot))
    friction_start: dict | None = None
    side = actuation_path(resolve_robot(config.robot))
    if side.is_file():   # the robot's identified friction, armature and offsets (written by --save-urdf)
        per_joint, _ = read_actuation(side, list(model.joint_names))
        friction_start = {}
        for i, name in enumerate(model.joint_names):
            for kind, v in per_joint.get(name, {}).items():
                friction_start.setdefault(kind, [None] * model.dof)[i] = v
        notes.append(f"joint friction and actuation read from {side}")

    def job(ctx):
        table = read_log(args.file, ctx)
        prepared = prepare_log(table, mapping, prep_config, ctx)
        return identify_from_log(prepared, model, config, ctx, friction_start=_filled(friction_start, model))

    result = run_cli_job(job, quiet=args.json)
    out = result.to_dict()
    summary = {
        "robot": out["robot"],
        "file": str(args.file),
        "parameters": [{k: p[k] for k in ("link", "joint", "kind", "nominal", "identified", "identifiable",
                                          "reason")}
                       for p in out["parameters"]],
        "joint_values": out["joint_values"],
        "coulomb_velocity_scale": out["velocity_scale"],
        "notes": notes,
        "warnings": out["warnings"],
        "torque_rmse_validation": out["torque_rmse_validation"],
        "torque_rmse_validation_per_joint": out["torque_rmse_validation_per_joint"],
        "torque_rmse_train": out["torque_rmse_train"],
        "torque_rmse_validation_sliding": out["torque_rmse_validation_sliding"],
        "torque_rmse_validation_sliding_per_joint": out["torque_rmse_validation_sliding_per_joint"],
        "noise_level": out["noise_level"],
        "noise_level_per_joint": out["noise_level_per_joint"],
        "unidentifiable": out["unidentifiable"],
        "base_parameters": out["base_parameters"],
        "samples_train": out["samples_train"],
        "samples_validation": out["samples_validation"],
        "seconds": out["seconds"],
        "config": out["config"],
        "prepare": dataclasses.asdict(prep_config),
    }
    if args.save_urdf:
        from engine.robots.urdf_export import save_urdf

        summary["saved_urdf"] = str(save_urdf(result.model, args.save_urdf))
        # offsets and v_s have no URDF field: the actuation file beside it (read back on loading)
        summary["saved_actuation"] = str(write_actuation(actuation_path(args.save_urdf), list(model.joint_names),
                                                         result.joint_values, result.velocity_scale))
    if args.json:
        print_json(summary)
        return 0
    print(f"{summary['robot']} from {summary['file']}: {summary['samples_train']} training, "
          f"{summary['samples_validation']} validation samples, {summary['seconds']:.1f} s")
    for note in notes + [f"warning: {w}" for w in summary["warnings"]]:
        print(note)
    print(f"{'link or joint':<22}{'kind':<9}{'nominal':>12}{'identified':>12}  identifiable")
    for p in summary["parameters"]:
        fmt = (lambda v: f"{v:12.5g}") if isinstance(p["nominal"], float) else (lambda v: f"{'(vector)':>12}")
        print(f"{p['joint'] or p['link']:<22}{p['kind']:<9}{fmt(p['nominal'])}{fmt(p['identified'])}  "
              f"{'yes' if p['identifiable'] else 'no: ' + p['reason']}")
    print(f"torque RMSE on the validation part (N m), noise level {summary['noise_level']:.4g}; every sample, "
          "and the sliding ones (|qd| >= 0.1 rad/s: a dry friction's torque near rest is not a function of "
          "the motion):")
    for key, v in summary["torque_rmse_validation"].items():
        sl = summary["torque_rmse_validation_sliding"].get(key)
        print(f"  {key:<9}{'-' if v is None else f'{v:.4g}':>10}{'-' if sl is None else f'{sl:.4g}':>10}")
    return 0


def _filled(start, model):
    """Actuation-file values ``{kind: [dof, None where absent]}`` completed from the robot file."""
    if start is None:
        return None
    from engine.models.robot_source import split_rigid_body

    _, own = split_rigid_body(model)
    return {k: [own[k][i] if v is None else v for i, v in enumerate(vals)] for k, vals in start.items()}


def register(subparsers) -> None:
    from engine.identification.from_log import LogIdentificationConfig

    d = LogIdentificationConfig()
    _, sub = add_group(subparsers, "identify", "system identification of robots from joint logs")
    p = sub.add_parser("log", help="fit a robot's link masses (and more) to a joint log; compare with the "
                                   "nominal URDF and a black-box MLP")
    p.add_argument("file", help="joint log (CSV, NPZ, Parquet, bag, MCAP) with q (and qd) and torques")
    p.add_argument("--mapping", required=True, help="mapping JSON (LogMapping): time, q, u = joint torques")
    p.add_argument("--robot", default=d.robot, help=f"library name or URDF path (default: {d.robot})")
    p.add_argument("--train-range", type=float, nargs=2, metavar=("START", "END"), default=None,
                   help="training time range in s (default: the first 70 %% of the log)")
    p.add_argument("--learn", default=",".join(d.learn),
                   help="comma-separated kinds to fit: per link mass, com, inertia; per joint damping, coulomb "
                        "(or friction), armature, offset (default: mass)")
    p.add_argument("--links", default=None, help="comma-separated links to fit (default: every moving body)")
    p.add_argument("--epochs", type=int, default=d.epochs,
                   help=f"L-BFGS steps of --method gradient (default: {d.epochs})")
    p.add_argument("--blackbox-steps", type=int, default=d.blackbox_steps,
                   help=f"Adam steps of the black-box MLP, 0 for none (default: {d.blackbox_steps})")
    p.add_argument("--method", default=d.method, choices=("closed_form", "gradient"),
                   help="closed_form: weighted least squares on the base parameters, physically consistent; "
                        f"gradient: L-BFGS from the URDF (default: {d.method})")
    p.add_argument("--coulomb-velocity-scale", type=float, default=d.coulomb_velocity_scale,
                   help=f"v_s of the Coulomb term Fc tanh(qd / v_s), rad/s (default: {d.coulomb_velocity_scale:g})")
    p.add_argument("--fit-velocity-scale", action="store_true",
                   help="choose v_s among 0.005-0.2 rad/s by the training fit (closed form)")
    p.add_argument("--weighting", default=d.weighting, choices=("noise", "variance"),
                   help=f"per-joint weighting of the torque errors (default: {d.weighting})")
    p.add_argument(
        "--window", type=int, default=31, help="Savitzky-Golay window for the derivatives (default: 31)"
    )
    p.add_argument("--polyorder", type=int, default=5, help="Savitzky-Golay polyorder (default: 5)")
    p.add_argument(
        "--seed", type=int, default=d.seed, help=f"black-box initialisation seed (default: {d.seed})"
    )
    p.add_argument("--save-urdf", default=None, metavar="FILE.urdf",
                   help="write the robot with the identified parameters as a URDF (visuals and meshes kept; "
                        "damping, friction and armature in <dynamics>), and offsets and v_s in "
                        "FILE.actuation.json beside it")
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_log)
