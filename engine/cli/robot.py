"""`python -m engine robot ...`: the robot library, URDF summaries, inverse kinematics and the
identification loop. Parsing and printing only; the work lives in engine.robots.

    robot list [--json]
    robot info FILE_OR_NAME [--xacro-arg NAME:=VALUE ...] [--json]   (FILE: URDF, xacro or MJCF)
    robot ik URDF_OR_NAME --link NAME --target x y z [roll pitch yaw] [--json]
    robot simulate URDF_OR_NAME [--q0 ...] [--qd0 ...] [--tau ...] [--mode free_fall] [--duration 2]
                   [--dt 0.002] [--json]
    robot identify [URDF_OR_NAME] [--perturb 0.3] [--epochs N] ... [--json]

Flags of ``ik`` and ``identify`` are generated from :class:`engine.robots.ik.IKOptions` and
:class:`engine.identification.synthetic.IdentificationConfig` (their defaults are the single
source of truth).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

from engine.cli._common import add_device_option, add_group, print_json, run_cli_job
from engine.io import finite_or_none


def _add_dataclass_flags(parser, cls, skip=()):
    """One ``--flag`` per int/float/str/bool field of a dataclass, default = the field's."""
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        if isinstance(default, bool):
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=default,
                                help=f"(default: {default})")
        elif isinstance(default, (int, float, str)):
            parser.add_argument(flag, dest=f.name, type=type(default), default=default,
                                help=f"(default: {default})")


def _dataclass_kwargs(args, cls, skip=()):
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
            if f.name not in skip and hasattr(args, f.name)}


def _finite(x: float):
    return finite_or_none(float(x))


# --------------------------------------------------------------------------- list

def _cmd_list(args) -> int:
    from engine.robots.library import list_robots

    entries = list_robots()
    if args.json:
        print_json({"robots": [e.to_dict() for e in entries]})
        return 0
    width = max((len(e.name) for e in entries), default=4)
    for e in entries:
        print(f"{e.name:<{width}}  {e.source:<18}  {e.title}")
    return 0


# --------------------------------------------------------------------------- info

def _add_file_flags(parser) -> None:
    parser.add_argument(
        "--xacro-arg",
        dest="xacro_args",
        action="append",
        default=None,
        metavar="NAME:=VALUE",
        help="an argument of a .xacro file (repeat for several)",
    )
    parser.add_argument(
        "--tree",
        default=None,
        metavar="NAME",
        help="an MJCF file with several kinematic trees (a robot and free objects): the one to load "
        "('world': the bodies fixed to the world; else a free body's name; default: the largest)",
    )


def _load(args):
    """The robot of ``args.robot`` (library name, URDF, xacro or MJCF file) with --xacro-arg."""
    from engine.robots.files import parse_xacro_args
    from engine.robots.library import load_robot

    xacro_args = parse_xacro_args(getattr(args, "xacro_args", None))
    device = {"device": args.device} if getattr(args, "device", None) else {}  # float64 on every device
    tree = {"tree": args.tree} if getattr(args, "tree", None) else {}
    return load_robot(args.robot, **({"xacro_args": xacro_args} if xacro_args else {}), **device, **tree)


def robot_info(name_or_path, xacro_args=None, tree: str | None = None) -> dict:
    """Summary of a robot: dof, joints (type, limits), links (mass), total mass, springs, gravity
    (m/s^2), the constraints that close loops (``constraints``: name, kind, bodies or joints, rows),
    what the file holds that the model does not (``not_modelled``, one line per kind) and what the
    loader accepted although it is not physically consistent (``warnings``, one line per kind)."""
    from engine.robots.files import file_format
    from engine.robots.library import joint_springs, load_robot, resolve_robot

    path = resolve_robot(name_or_path)
    model = load_robot(name_or_path, **({"xacro_args": dict(xacro_args)} if xacro_args else {}),
                       **({"tree": tree} if tree else {}))
    desc = model.description
    lim = model.joint_limits
    joints = []
    for i, name in enumerate(model.joint_names):
        j = desc.joint(name)
        joints.append({
            "name": name, "type": j.type, "parent": j.parent, "child": j.child, "axis": list(j.axis),
            "lower": _finite(float(lim.lower[i])), "upper": _finite(float(lim.upper[i])),
            "velocity": _finite(float(lim.velocity[i])), "effort": _finite(float(lim.effort[i])),
            "damping": j.damping, "friction": j.friction,
        })
    fixed = [{"name": j.name, "parent": j.parent, "child": j.child} for j in desc.joints if not j.movable]
    links = [{"name": l.name, "mass": l.inertial.mass if l.inertial is not None else 0.0,
              "visuals": len(l.visuals), "collisions": len(l.collisions)} for l in desc.links]
    springs = {k: {"stiffness": s.stiffness, "rest": s.rest} for k, s in joint_springs(path).items()}
    return {
        "name": model.name,
        "path": str(path),
        "format": file_format(path),
        "dof": model.dof,
        "root": desc.root,
        "joints": joints,
        "fixed_joints": fixed,
        "links": links,
        "total_mass": model.total_mass,
        "springs": springs,
        "floating_base": bool(desc.floating_base),
        "gravity": [float(g) for g in model.gravity.tolist()],
        "gravcomp": {l.name: l.gravcomp for l in desc.links if l.gravcomp},
        "constraints": [constraint_summary(c) for c in desc.constraints],
        "not_modelled": list(desc.not_modelled),
        "warnings": list(desc.warnings),
        "trees": [{"name": name, "summary": summary} for name, summary in desc.trees],
    }


def constraint_summary(c) -> dict:
    """One constraint for ``robot info``: name, kind (connect, weld, tendon, tendon limit), what it
    joins, rows (a tendon limit: its range (null for an open side), one-sided, no equality row)."""
    if c.kind == "tendon limit":
        finite = [None if abs(x) == float("inf") else float(x) for x in (c.lower, c.upper)]
        joins = {"joints": dict(zip(c.joints, c.coefficients)), "range": finite}
    elif c.kind == "tendon":
        joins = {"joints": dict(zip(c.joints, c.coefficients)), "tendons": list(c.tendons)}
    else:
        joins = {"bodies": [c.body1 or "world", c.body2 or "world"]}
    return {"name": c.name, "kind": c.kind, **joins, "rows": c.rows}


def _cmd_info(args) -> int:
    from engine.robots.files import parse_xacro_args

    info = robot_info(args.robot, parse_xacro_args(args.xacro_args), tree=args.tree)
    if args.json:
        print_json(info)
        return 0
    print(f"{info['name']}  ({info['path']})")
    print(
        f"  dof {info['dof']}, {len(info['links'])} links, total mass {info['total_mass']:.4g} kg, root {info['root']}"
    )
    for j in info["joints"]:
        lo = "-inf" if j["lower"] is None else f"{j['lower']:.4g}"
        hi = "inf" if j["upper"] is None else f"{j['upper']:.4g}"
        print(
            f"  {j['name']:<24} {j['type']:<10} [{lo}, {hi}]  effort {j['effort']}  velocity {j['velocity']}"
        )
    for name, s in info["springs"].items():
        print(f"  spring at {name}: k = {s['stiffness']:g}, rest {s['rest']:g}")
    if info["gravity"] != [0.0, 0.0, -9.81]:
        print(f"  gravity {' '.join(f'{g:g}' for g in info['gravity'])} m/s^2")
    for name, c in info["gravcomp"].items():
        print(f"  gravity compensation of {name}: {c:g} of its weight")
    for c in info["constraints"]:
        what = " - ".join(c["bodies"]) if "bodies" in c else " + ".join(f"{k:g} {j}" for j, k in c["joints"].items())
        if "range" in c:
            lo, hi = ("-inf" if c["range"][0] is None else f"{c['range'][0]:g}",
                      "inf" if c["range"][1] is None else f"{c['range'][1]:g}")
            print(f"  constraint {c['name']}: {c['kind']} ({what} in [{lo}, {hi}]), one-sided")
            continue
        print(f"  constraint {c['name']}: {c['kind']} ({what}), {c['rows']} row{'s' if c['rows'] > 1 else ''}")
    for line in info["not_modelled"]:
        print(f"  not modelled: {line}")
    for line in info["warnings"]:
        print(f"  warning: {line}")
    return 0


# --------------------------------------------------------------------------- ik

def _pose_from_target(values):
    """3 numbers: a position (3,); 6: a pose (4, 4) from x y z roll pitch yaw."""
    import numpy as np
    import torch

    from engine.robots.description import rpy_to_matrix
    from engine.validation import check_finite

    for v in values:
        check_finite(None, "--target", v, hint="give x y z in m [roll pitch yaw in rad]")
    if len(values) == 3:
        return torch.tensor(values, dtype=torch.float64)
    if len(values) == 6:
        T = np.eye(4)
        T[:3, :3] = rpy_to_matrix(values[3:])
        T[:3, 3] = values[:3]
        return torch.tensor(T)
    raise ValueError(
        f"--target takes 3 (x y z, m) or 6 (x y z roll pitch yaw, m and rad) numbers, got {len(values)}"
    )


def _run_ik(args) -> int:
    import torch

    from engine.robots.ik import IKOptions, solve_ik

    model = _load(args)
    if args.link not in model.link_names:
        raise ValueError(
            f"robot {model.name!r} has no link {args.link!r}; links: {', '.join(model.link_names)}"
        )
    target = _pose_from_target(args.target).to(model.device)
    q0 = None
    if args.q0 is not None:
        if len(args.q0) != model.dof:
            raise ValueError(f"--q0 needs {model.dof} joint values, got {len(args.q0)}")
        q0 = torch.tensor(args.q0, dtype=torch.float64, device=model.device)
    options = IKOptions(**_dataclass_kwargs(args, IKOptions))
    _check_reach(model, args.link, args.target[:3])
    result = solve_ik(model, {args.link: target}, q0=q0, options=options)
    out = {
        "robot": model.name, "link": args.link, "target": list(args.target),
        "joint_names": model.joint_names, "q": result.q.tolist(),
        "converged": bool(result.converged), "position_error": float(result.position_error),
        "rotation_error": float(result.rotation_error), "residual": float(result.residual),
        "iterations": int(result.iterations), "starts": int(result.starts),
        "pose": model.link_pose(result.q, args.link).tolist(),
    }
    if args.json:
        print_json(out)
    else:
        status = "converged" if out["converged"] else "NOT converged"
        print(f"{status}: position error {out['position_error'] * 1e3:.3f} mm, rotation error "
              f"{out['rotation_error']:.4f} rad, {out['iterations']} iterations, {out['starts']} start(s)")
        for name, v in zip(model.joint_names, out["q"]):
            print(f"  {name:<24} {v: .6f}")
    return 0 if out["converged"] else 1


def _check_reach(model, link: str, xyz) -> None:
    """Refuse a position farther from the base than ``link`` can ever be (a bound: the sum of the
    joint offsets along its chain plus the prismatic travel), before the solver works on it."""
    if getattr(model, "floating", False):
        return  # a free base goes anywhere
    desc = model.description
    reach, name = 0.0, link
    while (joint := desc.parent_joint(name)) is not None:
        reach += math.hypot(*joint.origin.xyz)
        if joint.type == "prismatic":
            reach += max(abs(joint.limit.lower), abs(joint.limit.upper))
        name = joint.parent
    distance = math.hypot(*xyz)
    if math.isfinite(reach) and distance > 1.001 * reach + 1e-6:
        raise ValueError(
            f"--target: ({', '.join(f'{v:.6g}' for v in xyz)}) is {distance:.4g} m from the base of "
            f"{model.name}, but link {link!r} reaches at most {reach:.4g} m from it: not reachable; "
            f"give a target within reach"
        )


# --------------------------------------------------------------------------- simulate

def _finite_number(text: str) -> float:
    """argparse type: a finite float (nan and inf refused with a plain message)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _positive_number(text: str) -> float:
    value = _finite_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def _run_simulate(args) -> int:
    import numpy as np

    from engine.robots.ik import neutral_configuration
    from engine.robots.simulate import SimulationOptions, simulate

    model = _load(args)
    n = model.dof
    nq, nv = int(getattr(model, "nq", n)), int(getattr(model, "nv", n))
    base = " (a floating base first: x y z, quaternion x y z w)" if model.floating else (
        " (a ball joint: quaternion x y z w; its velocity: 3 values)" if nq != n else "")
    for flag, values, size in (("--q0", args.q0, nq), ("--qd0", args.qd0, nv), ("--tau", args.tau, nv)):
        if values is not None and len(values) != size:
            raise ValueError(f"{flag} needs {size} values{base} (joints of {model.name}: "
                             f"{', '.join(model.joint_names)}), got {len(values)}")
    if args.q0 is not None:
        q0 = np.asarray(args.q0, float)
    elif nq != n:
        q0 = model.neutral().numpy()
    else:
        q0 = neutral_configuration(model).numpy()
    options = SimulationOptions(mode=args.mode, duration=args.duration, dt=args.dt, kp=args.kp, kd=args.kd,
                                damping=args.damping, frame_rate=args.frame_rate, hold_base=args.hold_base,
                                tau=tuple(args.tau) if args.tau is not None else ())
    keyframes = ([0.0], [np.asarray(args.target, float)]) if args.target is not None else ((), ())
    if args.target is not None and len(args.target) != nq:
        raise ValueError(f"--target needs {nq} values{base}, got {len(args.target)}")
    notes: list[str] = []
    terms = None
    if args.damping and Path(args.robot).is_file():      # an identified robot: the actuation file beside it
        from engine.models.robot_source import actuation_terms

        terms = actuation_terms(model, args.robot, notes)
    result = simulate(model, q0, args.qd0, options, keyframe_times=keyframes[0], keyframe_poses=keyframes[1],
                      joint_terms=terms)
    out = {"robot": model.name, "joint_names": model.joint_names, "dt": options.dt, "notes": notes,
           **result.to_dict()}
    if args.json:
        print_json(out)
        return 0
    print(
        f"{model.name}: {options.mode.replace('_', ' ')}, {result.t[-1]:.3f} s in steps of {options.dt:g} s, "
        f"{len(result.t)} samples"
    )
    if model.floating:
        print(
            f"  base position {np.round(result.q[0, :3], 6).tolist()} -> {np.round(result.q[-1, :3], 6).tolist()} m"
        )
    for note in notes:
        print(f"  {note}")
    print(f"  {'joint':<24}{'q0':>12}{'q(end)':>12}{'qd(end)':>12}")
    balls = set(getattr(model, "ball_joint_names", ()))
    for name in model.joint_names:
        sq, sv = model.joint_coordinates(name)
        if name in balls:       # a quaternion (x y z w) and an angular velocity: their norms' change
            print(f"  {name + ' (ball, |w|)':<24}{'':>12}{'':>12}{np.linalg.norm(result.qd[-1, sv]):>12.6f}")
            continue
        print(f"  {name:<24}{result.q[0, sq.start]:>12.6f}{result.q[-1, sq.start]:>12.6f}"
              f"{result.qd[-1, sv.start]:>12.6f}")
    return 0


# --------------------------------------------------------------------------- identify

def _run_identify(args) -> int:
    from engine.identification.synthetic import IdentificationConfig, identification_job

    kw = _dataclass_kwargs(args, IdentificationConfig, skip=("links", "robot"))
    config = IdentificationConfig(robot=args.robot, links=tuple(args.links) if args.links else None, **kw)
    result = run_cli_job(identification_job(config), quiet=args.json)
    if args.json:
        print_json(result.to_dict())
        return 0
    print(f"{result.robot}: {result.samples} samples, {result.seconds:.1f} s")
    print(
        f"{'link':<22}{'kind':<9}{'true':>10}{'initial':>10}{'fitted':>10}{'err before':>12}{'err after':>11}"
    )
    for p in result.parameters:
        flag = "" if p.identifiable else "  (unidentifiable)"
        print(f"{p.link:<22}{p.kind:<9}{p.true:>10.4g}{p.initial:>10.4g}{p.fitted:>10.4g}"
              f"{100 * p.initial_error:>11.2f}%{100 * p.fitted_error:>10.3f}%{flag}")
    print(
        f"torque RMSE on test motions: {result.torque_rmse_before:.4g} -> {result.torque_rmse_after:.4g} N m"
    )
    for name, reason in result.unidentifiable.items():
        print(f"not identifiable: {name}: {reason}")
    return 0


# --------------------------------------------------------------------------- registration

def register(subparsers) -> None:
    from engine.identification.synthetic import IdentificationConfig
    from engine.robots.ik import IKOptions

    _, sub = add_group(
        subparsers,
        "robot",
        "robots: the library, URDF summaries, inverse kinematics, simulation, identification",
    )

    p = sub.add_parser("list", help="robots shipped in urdf/ and found in installed description packages")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser(
        "info", help="dof, joints, links, limits and total mass of a robot file or library robot"
    )
    p.add_argument("robot", help="library name (see `robot list`) or a URDF, xacro or MJCF file")
    _add_file_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser(
        "ik", help="inverse kinematics of one link to a position or pose (exit 1: not converged)"
    )
    p.add_argument("robot", help="library name or a URDF, xacro or MJCF file")
    _add_file_flags(p)
    p.add_argument("--link", required=True, help="the link to place")
    p.add_argument("--target", required=True, nargs="+", type=float, metavar="X",
                   help="x y z (m) [roll pitch yaw (rad, URDF convention)]")
    p.add_argument("--q0", nargs="+", type=float, default=None, help="start joint values (default: neutral)")
    _add_dataclass_flags(p, IKOptions)
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run_ik)

    from engine.robots.simulate import SimulationOptions as S

    p = sub.add_parser(
        "simulate",
        help="integrate the forward dynamics from a state (RK4, joints held at their limits)",
        description="Integrate the robot's forward dynamics (articulated-body algorithm) with RK4 at a fixed "
        "step from q0, qd0. Modes: free_fall (tau = --tau), gravity_compensation (tau = g(q) + --tau), "
        "pd_keyframes (a PD on accelerations to --target). Units: rad or m, s, N m or N.",
    )
    p.add_argument("robot", help="library name (see `robot list`) or a URDF, xacro or MJCF file")
    _add_file_flags(p)
    p.add_argument("--q0", nargs="+", type=_finite_number, default=None, metavar="Q",
                   help="initial joint positions, one per joint (default: the neutral pose)")
    p.add_argument("--qd0", nargs="+", type=_finite_number, default=None, metavar="QD",
                   help="initial joint velocities (default: 0)")
    p.add_argument("--tau", nargs="+", type=_finite_number, default=None, metavar="TAU",
                   help="constant joint torques/forces added in every mode (default: 0)")
    p.add_argument("--mode", choices=S.MODES, default=S.mode, help=f"(default: {S.mode})")
    p.add_argument("--target", nargs="+", type=_finite_number, default=None, metavar="Q",
                   help="joint positions the pd_keyframes mode drives to")
    p.add_argument(
        "--duration", type=_positive_number, default=S.duration, help=f"seconds (default: {S.duration})"
    )
    p.add_argument("--dt", type=_positive_number, default=S.dt, help=f"RK4 step in seconds (default: {S.dt})")
    p.add_argument(
        "--kp", type=_finite_number, default=S.kp, help=f"pd_keyframes gain, 1/s^2 (default: {S.kp})"
    )
    p.add_argument(
        "--kd", type=_finite_number, default=S.kd, help=f"pd_keyframes gain, 1/s (default: {S.kd})"
    )
    p.add_argument("--damping", action=argparse.BooleanOptionalAction, default=S.damping,
                   help="apply the URDF joint damping (default: on)")
    p.add_argument("--hold-base", action="store_true",
                   help="a floating robot: hold its base where it is (default: it flies freely, no contacts)")
    p.add_argument("--frame-rate", dest="frame_rate", type=_positive_number, default=S.frame_rate,
                   help=f"samples kept per second of simulated time (default: {S.frame_rate})")
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print JSON: t, q, qd and the joint names")
    p.set_defaults(func=_run_simulate)

    p = sub.add_parser(
        "identify", help="the learning loop: perturb masses, fit them on sine-motion data, report"
    )
    p.add_argument("robot", nargs="?", default=IdentificationConfig.robot, help="library name or URDF path "
                   f"(default: {IdentificationConfig.robot})")
    p.add_argument(
        "--links", nargs="+", default=None, help="links to perturb and learn (default: every moving body)"
    )
    _add_dataclass_flags(p, IdentificationConfig, skip=("robot", "links", "device"))
    add_device_option(p)
    p.add_argument("--json", action="store_true", help="print JSON (progress stays off)")
    p.set_defaults(func=_run_identify)
