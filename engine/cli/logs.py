"""`python -m engine logs ...`: inspect, prepare and generate hardware logs (work in engine.logs)."""

from __future__ import annotations

import argparse
import dataclasses
import typing

from engine.cli._common import add_group, print_json, run_cli_job


def _add_dataclass_flags(parser, cls, skip=()) -> None:
    """One flag per field of a config dataclass (its defaults are the flags' defaults)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        hint = hints[f.name]
        default = f.default if f.default is not dataclasses.MISSING else None
        if hint is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                                help=f"(default: {default})")
        elif hint in (int, float, str):
            parser.add_argument(flag, type=hint, default=default, help=f"(default: {default})")
        elif hint == (float | None):
            parser.add_argument(flag, type=float, default=default, help="(default: none)")
        elif typing.get_origin(hint) is list:  # time ranges: repeatable START END pairs
            single = flag.removesuffix("s")
            parser.add_argument(single, dest=f.name, type=float, nargs=2, action="append", default=None,
                                metavar=("START", "END"), help="time range in s (repeatable)")


def _config_from_args(cls, args):
    values = {}
    for f in dataclasses.fields(cls):
        if hasattr(args, f.name):
            v = getattr(args, f.name)
            if v is None and f.default_factory is not dataclasses.MISSING:
                continue
            values[f.name] = v
    return cls(**values)


def _read_options(args):
    from engine.logs.delimited import check_delimiter
    from engine.logs.reader import ReadOptions

    return ReadOptions(delimiter=check_delimiter(args.delimiter), topics=args.topics,
                       episode=getattr(args, "episode", None))


def _inspect(args) -> int:
    from engine.logs.inspect import inspect_log

    options = _read_options(args)  # a bad --delimiter is a usage error (exit 2), not a problem of the file
    summary = run_cli_job(lambda ctx: inspect_log(args.file, ctx, options, args.time), quiet=args.json)
    if args.json:
        print_json(summary)
    else:
        print(f"{summary['file']}: {summary['format']}, {summary['rows']} rows")
        if summary["time_column"]:
            rate = summary["rate_hz"]
            print(f"time column {summary['time_column']!r}, rate {rate:.6g} Hz" if rate else
                  f"time column {summary['time_column']!r}")
        for c in summary["columns"]:
            print(f"  {c['name']}: min {c['min']}, max {c['max']}, missing {c['missing']}")
        _print_episodes(summary)
        for note in summary["notes"]:
            print(f"note: {note}")
        for p in summary["problems"]:
            print(
                f"problem ({p['kind']}): {p['message']}" + (f" [column {p['column']}]" if p["column"] else "")
            )
    return 0 if summary["ok"] else 1


def _print_episodes(summary: dict, most: int = 20) -> None:
    eps = summary.get("episodes") or []
    if not eps:
        return
    rows = [e["rows"] for e in eps]
    print(f"{len(eps)} episodes in column {summary['episode_column']!r} ({min(rows)} to {max(rows)} rows "
          "each); time is checked within each episode")
    for e in eps[:most]:
        rate = f", {e['rate_hz']:.6g} Hz" if e["rate_hz"] else ""
        span = f", {e['duration']:.6g} s" if e["duration"] is not None else ""
        print(f"  episode {e['episode']}: {e['rows']} rows{span}{rate}")
    if len(eps) > most:
        print(f"  ... and {len(eps) - most} more (--json lists them all)")


def _prepare(args) -> int:
    from engine.cli._common import check_output
    from engine.logs.mapping import LogMapping
    from engine.logs.prepare import PrepareConfig, prepare_log
    from engine.logs.reader import read_log

    config = _config_from_args(PrepareConfig, args)
    config.validate()
    options = _read_options(args)
    check_output(args.out, "file", "--out", suffix=".npz")   # before the work
    mapping = LogMapping.load(args.mapping)

    def job(ctx):
        table = read_log(args.file, ctx, options)
        return prepare_log(table, mapping, config, ctx)

    prepared = run_cli_job(job, quiet=args.json)
    prepared.save(args.out)
    d = prepared.description
    summary = {
        "out": str(args.out),
        "samples": prepared.n_samples,
        "dt": prepared.dt,
        "t_range": d["t_range"],
        "nq": int(prepared.q.shape[1]),
        "nu": int(prepared.u.shape[1]),
        "n_train": d["n_train"],
        "n_val": d["n_val"],
        "qd_source": d["qd_source"],
        "data_hash": prepared.data_hash,
        "episodes": [e["episode"] for e in d.get("episodes", [])],
        "val_episodes": d.get("val_episodes", []),
        "skipped_episodes": d.get("skipped_episodes", []),
    }
    if args.json:
        print_json(summary)
    else:
        print(f"wrote {args.out}: {summary['samples']} samples at dt = {summary['dt']:.6g} s "
              f"({summary['n_train']} train, {summary['n_val']} validation)")
        if summary["episodes"]:
            held = d.get("split_by") == "episode"
            print(f"{len(summary['episodes'])} episodes, each its own run (no window crosses from one into the "
                  "next); validation: " + (f"episodes {summary['val_episodes']}" if held
                                           else "by time within each episode"))
        for s in summary["skipped_episodes"]:
            print(f"note: episode {s['episode']} left out: {s['reason']}")
    return 0


def _make_examples(args) -> int:
    from engine.cli._common import check_output
    from engine.data.example_logs import make_examples

    check_output(args.out, "folder", "--out", allow_nonempty_folder=True)  # it rewrites its own files
    paths = run_cli_job(lambda ctx: make_examples(args.out, args.only, ctx), quiet=args.json)
    if args.json:
        print_json({"written": [str(p) for p in paths]})
    else:
        for p in paths:
            print(p)
    return 0


def register(subparsers) -> None:
    from engine.logs.episodes import EPISODE_COLUMNS
    from engine.logs.prepare import PrepareConfig

    _, sub = add_group(subparsers, "logs", "hardware logs: inspect, prepare, example logs")

    def read_flags(p, episode_help):
        p.add_argument(
            "--delimiter", default=None, help="text delimiter (default: sniffed; 'ws' = whitespace)"
        )
        p.add_argument("--episode", type=int, default=None, metavar="K", help=episode_help)
        p.add_argument("--topics", nargs="+", default=None, help="bag/MCAP topics to read (default: all)")
        p.add_argument("--json", action="store_true", help="print JSON on stdout")

    p = sub.add_parser("inspect", help="columns, rows, rate, episodes and problems of a log file",
                       description="Columns, rows, rate and problems of a log. A file with an episode "
                                   f"column ({', '.join(EPISODE_COLUMNS)}; LeRobot's episode_index) is "
                                   "listed episode by episode (rows, duration, rate) and its time is "
                                   "checked within each episode.")
    p.add_argument("file")
    p.add_argument("--time", default=None, help="the time column (default: guessed)")
    read_flags(p, "inspect only episode K (files with an episode column; default: all)")
    p.set_defaults(func=_inspect)

    p = sub.add_parser("prepare", help="resample, smooth, differentiate and split a log into an .npz",
                       description="Resample, smooth, differentiate and split a log. A file of several "
                                   f"episodes ({', '.join(EPISODE_COLUMNS)} column) becomes one data set of "
                                   "separate runs: each episode prepared on its own, no training window "
                                   "crossing from one episode into the next, and the last episodes "
                                   "(--val-fraction of them, at least one) held out for validation. "
                                   "Times are each episode's own: --val-range/--train-range (which then "
                                   "replace the split by episode) and --t-start/--t-end apply within "
                                   "every episode.")
    p.add_argument("file")
    p.add_argument("--mapping", required=True, help="mapping JSON (LogMapping)")
    p.add_argument("--out", required=True, help="output .npz (PreparedLog)")
    read_flags(p, "prepare only episode K (default: every episode, as separate runs)")
    _add_dataclass_flags(p, PrepareConfig)
    p.set_defaults(func=_prepare)

    p = sub.add_parser("make-examples", help="simulate the example logs (CSV + mapping + README each)")
    p.add_argument("--out", required=True, help="output folder (the shipped ones live in resources/logs)")
    p.add_argument("--only", nargs="+", default=None, help="names of the logs to make (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(func=_make_examples)

    _register_replay(sub)


# ---------------------------------------------------------------- logs replay (the log on the robot)
def _replay(args) -> int:
    from engine.cli._common import check_output
    from engine.data.log_replay import ReplayMapping, make_replay, rollout_ghost
    from engine.data.replay_video import VideoOptions, write_replay_video
    from engine.logs.reader import read_log
    from engine.robots.library import load_robot

    for flag, path, suffix in (("--video", args.video, ".mp4"), ("--gif", args.gif, ".gif"),
                               ("--save-mapping", args.save_mapping, ".json")):
        if path:   # before the work starts: a bad output path is a usage error
            check_output(path, "file", flag, suffix=suffix)
    robot = load_robot(args.robot)
    rmap = ReplayMapping.load(args.mapping, robot) if args.mapping else None
    options = VideoOptions(fps=args.fps, start=args.start, end=args.end, width=args.width, height=args.height,
                           speed=args.speed)
    options.validate()
    read_options = _read_options(args)
    read_options.episode = None     # the replay picks the episode, and says how many there are

    def job(ctx):
        table = read_log(args.file, ctx, read_options)
        used = rmap or ReplayMapping.auto(table, robot)
        if args.episode is not None:
            used.episode = args.episode
        replay = make_replay(table, used, robot)
        ghost = None
        if args.ghost_horizon:
            t0 = replay.t[0] if args.start is None else args.start
            ghost = rollout_ghost(robot, replay, t0, args.ghost_horizon)
        written = []
        for path in (args.video, args.gif):
            if path:
                written.append(write_replay_video(path, robot, replay, options, ctx, ghost=ghost))
        return used, replay, ghost, written

    used, replay, ghost, written = run_cli_job(job, quiet=args.json)
    if args.save_mapping:
        from engine.io import write_json

        write_json(args.save_mapping, used.to_dict())
    summary = {"file": str(args.file), "robot": robot.name, "samples": replay.n, "duration": replay.duration,
               "dt": replay.dt, "joints": used.joints, "q": used.mapping.q, "qd": used.mapping.qd,
               "u": used.mapping.u, "time": used.mapping.time, "units": used.mapping.units,
               "base": used.base, "episode": replay.episode, "n_episodes": replay.n_episodes,
               "notes": replay.notes, "videos": written,
               "ghost_rms": None if ghost is None else ghost.rms.tolist()}
    if args.json:
        print_json(summary)
    else:
        print(f"{args.file} on {robot.name}: {replay.n} samples, {replay.duration:.3f} s "
              f"(dt {replay.dt:.4g} s)" + (f", episode {replay.episode} of {replay.n_episodes}"
                                            if replay.n_episodes > 1 else ""))
        for joint, col in zip(used.joints, used.mapping.q):
            unit = used.mapping.unit(col) or "SI"
            print(f"  {joint} <- {col} [{unit}]")
        for note in replay.notes:
            print(f"note: {note}")
        if ghost is not None:
            print(f"ghost ({ghost.model}), {args.ghost_horizon} s: rms error per joint "
                  + ", ".join(f"{v:.3g}" for v in ghost.rms))
        for w in written:
            print(f"wrote {w['path']}: {w['frames']} frames, {w['width']}x{w['height']} at {w['fps']:g} fps")
    return 0


def _example_logs_epilog() -> str:
    """Where the shipped example logs are, with a command that plays one (for ``--help``)."""
    from engine.paths import resources_dir

    try:
        folder = resources_dir() / "logs"
    except FileNotFoundError as exc:
        return f"example logs: not found ({exc})"
    return (
        f"example logs (each with a README and a mapping): {folder}\n"
        f"  e.g. python -m engine logs replay {folder / 'panda_joints.csv'} --robot panda --gif panda.gif"
    )


def _register_replay(sub) -> None:
    from engine.logs.episodes import EPISODE_COLUMNS

    p = sub.add_parser("replay", help="a joint log on a robot: match its columns, render it to MP4/GIF",
                       description="Play a joint log on a robot: columns matched to the joints by name (or "
                                   "--mapping), units converted, rendered off screen to a video.",
                       epilog=_example_logs_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="the log (CSV/TSV, NPZ, Parquet, ROS 1/2 bag, MCAP)")
    p.add_argument("--robot", required=True, help="library name (panda, ur5...) or URDF path")
    p.add_argument("--mapping", default=None,
                   help="replay mapping JSON (or a LogMapping JSON whose q are the joints in order); "
                        "default: matched by name")
    p.add_argument("--video", default=None, help="write an MP4 here")
    p.add_argument("--gif", default=None, help="write an animated GIF here")
    p.add_argument("--fps", type=float, default=30.0, help="video frames per second (default: 30)")
    p.add_argument("--speed", type=float, default=1.0, help="log seconds per video second (default: 1)")
    p.add_argument("--start", type=float, default=None, help="clip start in log seconds (default: the start)")
    p.add_argument("--end", type=float, default=None, help="clip end in log seconds (default: the end)")
    p.add_argument("--width", type=int, default=640, help="frame width in pixels (default: 640)")
    p.add_argument("--height", type=int, default=480, help="frame height in pixels (default: 480)")
    p.add_argument(
        "--episode", type=int, default=None, metavar="K",
        help=f"the episode to play, by its number (files with an episode column: {', '.join(EPISODE_COLUMNS)}; "
             "default: the first; the summary says how many there are)"
    )
    p.add_argument(
        "--ghost-horizon",
        type=float,
        default=None,
        help="also draw the robot's rigid-body model rolled out from --start for this many seconds",
    )
    p.add_argument("--save-mapping", default=None, help="write the mapping used (JSON) here")
    p.add_argument("--delimiter", default=None, help="text delimiter (default: sniffed; 'ws' = whitespace)")
    p.add_argument("--topics", nargs="+", default=None, help="bag/MCAP topics to read (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(func=_replay)
