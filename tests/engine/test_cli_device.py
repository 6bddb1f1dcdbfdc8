"""`--device cpu|cuda|auto` on every command that computes (issue 23).

The parser is introspected: every sub-command of the computing groups has ``--device`` unless
it is listed below with the reason it does not compute with torch, so a new command without the
flag fails here. CUDA is made absent (``engine.devices.cuda_available``) so these tests mean the
same on a machine with a GPU.
"""

from __future__ import annotations

import argparse
import json

import pytest

import engine.cli as cli
from engine import devices

COMPUTING_GROUPS = ("robot", "learn", "car", "eigenmode", "identify", "bench")

# sub-commands that do not compute with torch, and why (a new one needs a reason here)
NOT_COMPUTING = {
    ("robot", "list"): "lists the library's files",
    ("robot", "info"): "reads a robot file and prints its joints and links",
    ("learn", "data"): "generates the data set with NumPy/SciPy (the paper's draws, bit for bit)",
    ("eigenmode", "stabilise"): "one sequential float64 closed-loop simulation of a learnt mode, on the CPU",
    ("bench", "jobs"): "times other commands, each in a process of its own (with their --threads)",
}


def _leaf_parsers(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_parsers(child, (*path, name))


def _commands():
    return [
        (path, leaf)
        for path, leaf in _leaf_parsers(cli.build_parser())
        if path and path[0] in COMPUTING_GROUPS
    ]


def _computing():
    return [path for path, _ in _commands() if path not in NOT_COMPUTING]


def _device_action(parser):
    return next((a for a in parser._actions if "--device" in a.option_strings), None)


def _required_argv(parser) -> list[str]:
    """Values for a command's required arguments (never used: the device is resolved first)."""
    argv = []
    for action in parser._actions:
        if not (action.required or (not action.option_strings and action.nargs not in ("?", "*"))):
            continue
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        value = (
            str(list(action.choices)[0])
            if action.choices
            else ("1" if action.type not in (None, str) else "x")
        )
        count = action.nargs if isinstance(action.nargs, int) else 1
        argv += ([action.option_strings[-1]] if action.option_strings else []) + [value] * count
    return argv


def test_every_computing_group_exists_and_the_exceptions_are_real_commands():
    paths = {path for path, _ in _commands()}
    assert {p[0] for p in paths} == set(COMPUTING_GROUPS)
    assert set(NOT_COMPUTING) <= paths
    assert len(_computing()) >= 17


@pytest.mark.parametrize("path", _computing(), ids=" ".join)
def test_each_computing_command_has_the_device_option(path):
    parser = dict(_commands())[path]
    action = _device_action(parser)
    assert action is not None, (
        f"`{' '.join(path)}` computes but has no --device (or list it in NOT_COMPUTING)"
    )
    assert action.default == "cpu"
    for name in ("cpu", "auto", "cuda", "cuda:1"):
        assert parser.parse_args([*_required_argv(parser), "--device", name]).device == name


@pytest.mark.parametrize("path", sorted(NOT_COMPUTING), ids=" ".join)
def test_commands_that_do_not_compute_have_no_device_option(path):
    assert _device_action(dict(_commands())[path]) is None


def test_cuda_where_there_is_none_is_exit_2_and_one_line_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    started = []
    real = cli.build_parser

    def parser_that_records_work():
        parser = real()
        for _, leaf in _leaf_parsers(parser):
            leaf.set_defaults(func=lambda args: started.append(args) or 0)
        return parser

    monkeypatch.setattr(cli, "build_parser", parser_that_records_work)
    for path in _computing():
        parser = dict(_commands())[path]
        code = cli.main([*path, *_required_argv(parser), "--device", "cuda"])
        err = capsys.readouterr().err
        assert code == 2, path
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err and "DeviceError" not in err, err
        assert "--device cuda" in lines[0] and "no usable CUDA GPU" in lines[0] and "--device cpu" in lines[0]
    assert started == []


def test_cpu_and_auto_reach_each_command_as_this_machines_device(monkeypatch, capsys):
    monkeypatch.setattr(devices, "cuda_available", lambda: False)
    seen = {}
    real = cli.build_parser

    def recording_parser():
        parser = real()
        for path, leaf in _leaf_parsers(parser):
            leaf.set_defaults(func=lambda args, path=path: seen.setdefault(path, []).append(args.device) or 0)
        return parser

    monkeypatch.setattr(cli, "build_parser", recording_parser)
    for path in _computing():
        parser = dict(_commands())[path]
        assert cli.main([*path, *_required_argv(parser), "--device", "auto"]) == 0, capsys.readouterr().err
        assert cli.main([*path, *_required_argv(parser), "--device", "cpu"]) == 0
        assert cli.main([*path, *_required_argv(parser)]) == 0
    assert seen == {path: ["cpu", "cpu", "cpu"] for path in _computing()}


# -- real commands on this machine's device (small settings) ---------------------------------------

def test_robot_ik_and_simulate_run_with_auto(capsys):
    assert cli.main(["robot", "ik", "panda", "--link", "panda_link8", "--target", "0.4", "0.1", "0.5",
                     "--device", "auto", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["converged"] and out["position_error"] < 1e-3
    assert cli.main(["robot", "simulate", "panda", "--duration", "0.02", "--device", "auto", "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    # free fall from rest: the joints start moving, and the result is plain numbers (brought to the CPU)
    assert len(sim["t"]) >= 2 and any(abs(v) > 0 for v in sim["qd"][-1])


def test_learn_train_runs_on_the_cpu_and_records_the_device(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        cli.main(
            [
                "learn",
                "train",
                "--model",
                "node-rk4",
                "--trajectories",
                "2",
                "--epochs",
                "2",
                "--hidden",
                "8",
                "--device",
                "auto",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["train"]["device"] == "cpu"   # auto, resolved here
    from safetensors.torch import load_file

    assert all(t.device.type == "cpu" for t in load_file(out / "model.safetensors").values())
