"""`python -m engine`: the command groups and the self-test job."""

from __future__ import annotations

import json
import subprocess
import sys


def test_help_lists_the_command_groups(subprocess_env):
    out = subprocess.run([sys.executable, "-m", "engine", "--help"], capture_output=True, text=True,
                         env=subprocess_env, check=True).stdout
    for group in ("bench", "selftest"):
        assert group in out


def test_selftest_json(subprocess_env):
    out = subprocess.run([sys.executable, "-m", "engine", "selftest", "--json"], capture_output=True,
                         text=True, env=subprocess_env, check=True).stdout
    result = json.loads(out)
    assert result["ok"] is True and result["energy_drift"] < 1e-6
    # the compiled kernels (numba is installed here): the compiled backward against the torch algorithms
    assert result["compiled_kernels"] is True and result["agree"] is True and result["kernel_error"] < 1e-9


def test_selftest_without_the_compiled_kernels(subprocess_env):
    """Switched off (as where numba is missing): the torch algorithms serve, and the self-test says so."""
    out = subprocess.run([sys.executable, "-m", "engine", "selftest", "--json"], capture_output=True, text=True,
                         env={**subprocess_env, "LAGRANGE_NO_COMPILED": "1"}, check=True).stdout
    result = json.loads(out)
    assert result["ok"] is True and result["compiled_kernels"] is False and "agree" not in result


# ----------------------------------------------------------------------------- errors and exit codes

import argparse  # noqa: E402
import types  # noqa: E402

import pytest  # noqa: E402

import engine.cli as cli  # noqa: E402
from engine.validation import InputError  # noqa: E402


def _run(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, env=env,
                          timeout=300, **kw)


def test_bare_engine_prints_help_on_stderr_and_exits_2(subprocess_env):
    out = _run([], subprocess_env)
    assert out.returncode == 2 and out.stdout == ""
    assert "usage: python -m engine" in out.stderr and "learn" in out.stderr
    group = _run(["learn"], subprocess_env)
    assert group.returncode == 2 and "usage: python -m engine learn" in group.stderr


def test_a_bad_flag_is_one_line_naming_it_with_exit_code_2(subprocess_env):
    out = _run(["learn", "train", "--epochs", "many"], subprocess_env)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--epochs" in lines[0] and "'many'" in lines[0]
    assert "python -m engine learn train --help" in lines[0]
    unknown = _run(["robot", "info", "panda", "--no-such-flag"], subprocess_env)
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert "--no-such-flag" in unknown.stderr


def test_a_users_mistake_in_a_real_command_is_one_plain_line(subprocess_env, tmp_path):
    missing = tmp_path / "nowhere" / "robot.urdf"
    out = _run(["robot", "info", str(missing)], subprocess_env)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0] and "Traceback" not in out.stderr
    assert not lines[0].removeprefix("error: ").split(":")[0].endswith("Error")
    eig = _run(["eigenmode", "learn", "--target", "5", "5", "--out", str(tmp_path / "m")], subprocess_env)
    assert eig.returncode == 2 and len(eig.stderr.strip().splitlines()) == 1
    assert "EigenmodeTask" not in eig.stderr and "--target" in eig.stderr


def _leaf_parsers(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_parsers(child, (*path, name))


def test_every_numeric_option_of_every_command_refuses_a_word_in_one_line(capsys):
    checked = 0
    for path, parser in _leaf_parsers(cli.build_parser()):
        for action in parser._actions:
            if action.type in (int, float) and action.option_strings:
                flag = action.option_strings[-1]
                value = ["many"] * (action.nargs if isinstance(action.nargs, int) else 1)
                code = cli.main([*path, flag, *value])
                err = capsys.readouterr().err
                assert code == 2, (path, flag)
                assert len(err.strip().splitlines()) == 1 and flag in err and "Traceback" not in err, err
                checked += 1
    assert checked > 30


def _fake_command(func):
    def register(sub):
        p = sub.add_parser("boom")
        p.add_argument("--epochs", type=int, default=1)
        p.add_argument("--learning-rate", type=float, default=1.0)
        p.set_defaults(func=func)

    return types.SimpleNamespace(register=register)


def _raising(exc):
    def func(args):
        raise exc

    return func


@pytest.mark.parametrize(
    "exc, expected",
    [
        (
            InputError("expected a positive integer, got 0", owner="TrainConfig", field="epochs"),
            "error: --epochs: expected a positive integer, got 0",
        ),
        (
            ValueError("LogError: ValueError: cart.csv, line 3: 'abc' is not a number"),
            "error: cart.csv, line 3: 'abc' is not a number",
        ),
        (
            FileNotFoundError(2, "No such file or directory", "data/x.csv"),
            "error: data/x.csv: not found; check the path",
        ),
        (PermissionError(13, "Permission denied", "/ro/out"), "error: /ro/out: permission denied"),
        (
            IsADirectoryError(21, "Is a directory", "runs"),
            "error: runs: is a folder where a file is expected",
        ),
    ],
)
def test_user_errors_are_one_plain_line_with_exit_code_2(monkeypatch, capsys, exc, expected):
    monkeypatch.setattr(cli, "_command_modules", lambda: [_fake_command(_raising(exc))])
    assert cli.main(["boom"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(expected) and len(captured.err.strip().splitlines()) == 1
    assert "Traceback" not in captured.err and captured.out == ""


def test_an_internal_error_is_one_line_and_a_log_file_with_the_traceback(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("LAGRANGE_LOG_DIR", str(tmp_path / "logs"))

    def broken(args):
        return {}["missing"]

    monkeypatch.setattr(cli, "_command_modules", lambda: [_fake_command(broken)])
    assert cli.main(["boom", "--epochs", "3"]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("internal error: ") and "Traceback" not in err
    assert "KeyError" not in lines[0]
    log = tmp_path / "logs" / "engine-cli.log"
    assert str(log) in lines[0]
    text = log.read_text(encoding="utf-8")
    assert "Traceback" in text and "KeyError: 'missing'" in text and "boom --epochs 3" in text


def test_ctrl_c_is_one_line_with_exit_code_130(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_command_modules", lambda: [_fake_command(_raising(KeyboardInterrupt()))])
    assert cli.main(["boom"]) == 130
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err


def test_an_internal_error_in_a_real_process_leaves_no_traceback_on_the_terminal(subprocess_env, tmp_path):
    env = dict(subprocess_env, LAGRANGE_LOG_DIR=str(tmp_path / "logs"))
    code = ("import sys, engine.cli as cli, engine.cli.selftest as s\n"
            "def broken(args):\n    raise RuntimeError('the solver lost its state')\n"
            "s._run = broken\nsys.exit(cli.main(['selftest']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "the solver lost its state" in lines[0] and "RuntimeError" not in lines[0]
    assert "Traceback" in (tmp_path / "logs" / "engine-cli.log").read_text(encoding="utf-8")


def test_device_option_parses_and_refuses_what_is_not_a_device(capsys):
    from engine.cli._common import add_device_option, device_from_args

    parser = cli.CommandLineParser(prog="t")
    add_device_option(parser)
    assert str(device_from_args(parser.parse_args([]))) == "cpu"
    assert str(device_from_args(parser.parse_args(["--device", "CPU"]))) == "cpu"
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--device", "gpu"])
    assert info.value.code == 2 and "--device" in capsys.readouterr().err
