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

    return ReadOptions(delimiter=check_delimiter(args.delimiter), topics=args.topics)


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
        for note in summary["notes"]:
            print(f"note: {note}")
        for p in summary["problems"]:
            print(f"problem ({p['kind']}): {p['message']}" + (f" [column {p['column']}]" if p["column"] else ""))
    return 0 if summary["ok"] else 1


def _prepare(args) -> int:
    from engine.logs.mapping import LogMapping
    from engine.logs.prepare import PrepareConfig, prepare_log
    from engine.logs.reader import read_log
    from engine.validation import check_output_path

    config = _config_from_args(PrepareConfig, args)
    config.validate()
    options = _read_options(args)
    check_output_path(args.out, "file", "--out")
    mapping = LogMapping.load(args.mapping)

    def job(ctx):
        table = read_log(args.file, ctx, options)
        return prepare_log(table, mapping, config, ctx)

    prepared = run_cli_job(job, quiet=args.json)
    prepared.save(args.out)
    d = prepared.description
    summary = {"out": str(args.out), "samples": prepared.n_samples, "dt": prepared.dt, "t_range": d["t_range"],
               "nq": int(prepared.q.shape[1]), "nu": int(prepared.u.shape[1]), "n_train": d["n_train"],
               "n_val": d["n_val"], "qd_source": d["qd_source"], "data_hash": prepared.data_hash}
    if args.json:
        print_json(summary)
    else:
        print(f"wrote {args.out}: {summary['samples']} samples at dt = {summary['dt']:.6g} s "
              f"({summary['n_train']} train, {summary['n_val']} validation)")
    return 0


def _make_examples(args) -> int:
    from engine.data.example_logs import make_examples
    from engine.validation import check_output_path

    check_output_path(args.out, "folder", "--out", allow_nonempty_folder=True)  # it rewrites its own files
    paths = run_cli_job(lambda ctx: make_examples(args.out, args.only, ctx), quiet=args.json)
    if args.json:
        print_json({"written": [str(p) for p in paths]})
    else:
        for p in paths:
            print(p)
    return 0


def register(subparsers) -> None:
    from engine.logs.prepare import PrepareConfig

    _, sub = add_group(subparsers, "logs", "hardware logs: inspect, prepare, example logs")

    def read_flags(p):
        p.add_argument("--delimiter", default=None, help="text delimiter (default: sniffed; 'ws' = whitespace)")
        p.add_argument("--topics", nargs="+", default=None, help="bag/MCAP topics to read (default: all)")
        p.add_argument("--json", action="store_true", help="print JSON on stdout")

    p = sub.add_parser("inspect", help="columns, rows, rate and problems of a log file")
    p.add_argument("file")
    p.add_argument("--time", default=None, help="the time column (default: guessed)")
    read_flags(p)
    p.set_defaults(func=_inspect)

    p = sub.add_parser("prepare", help="resample, smooth, differentiate and split a log into an .npz")
    p.add_argument("file")
    p.add_argument("--mapping", required=True, help="mapping JSON (LogMapping)")
    p.add_argument("--out", required=True, help="output .npz (PreparedLog)")
    read_flags(p)
    _add_dataclass_flags(p, PrepareConfig)
    p.set_defaults(func=_prepare)

    p = sub.add_parser("make-examples", help="simulate the example logs (CSV + mapping + README each)")
    p.add_argument("--out", required=True, help="output folder (the shipped ones live in resources/logs)")
    p.add_argument("--only", nargs="+", default=None, help="names of the logs to make (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(func=_make_examples)


