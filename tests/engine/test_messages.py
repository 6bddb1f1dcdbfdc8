"""engine/messages.py: every exception read as plain language (no class names), and tracebacks
kept in the user's log folder."""

from __future__ import annotations

import pytest

from engine.messages import is_user_error, plain, user_message, write_traceback
from engine.systems.double_pendulum import DoublePendulumParams
from engine.validation import InputError


@pytest.mark.parametrize("text, expected", [
    ("LogError: cart.csv: no time column", "cart.csv: no time column"),
    ("engine.robots.urdf.URDFError: robot.urdf line 4: mass < 0", "robot.urdf line 4: mass < 0"),
    ("RobotNotFoundError: unknown robot 'x'", "unknown robot 'x'"),
    ("cannot read MyRobot.urdf or /data/Panda.csv", "cannot read MyRobot.urdf or /data/Panda.csv"),
    ("out.txt: a URDF file name must end in .urdf", "out.txt: a URDF file name must end in .urdf"),
])
def test_class_names_are_removed(text, expected):
    assert plain(text) == expected


def test_a_bad_value_names_the_field_in_the_app_and_the_flag_on_the_command_line():
    from engine.eigenmodes.config import EigenmodeTask
    from engine.training import TrainConfig

    with pytest.raises(InputError) as info:
        EigenmodeTask(target=(5.0, 5.0)).validate(DoublePendulumParams())
    exc = info.value
    assert (exc.owner, exc.field) == ("EigenmodeTask", "target")
    assert str(exc).startswith("target: (5.0, 5.0) is 7.071 m from the pivot, outside the reachable annulus")
    assert user_message(exc) == str(exc)
    assert user_message(exc, {"target": "--target"}).startswith("--target: (5.0, 5.0) is 7.071 m")
    with pytest.raises(InputError) as info:
        EigenmodeTask(q0=(0.1,)).validate()
    assert str(info.value) == "q0: expected two numbers, got (0.1,)"
    with pytest.raises(InputError) as info:    # checked once, in TrainConfig._check_sizes
        TrainConfig(checkpoint_every=0)
    assert str(info.value) == "training setting 'checkpoint_every': must be between 1 and 100000000, got 0"
    # a flag named where it is raised wins over the parser's names
    flagged = InputError("must be greater than zero, got -1", owner="LogCompareConfig", field="learning_rate",
                         flag="--lr")
    assert str(flagged) == "learning_rate: must be greater than zero, got -1"
    assert (
        user_message(flagged, {"learning_rate": "--learning-rate"})
        == "--lr: must be greater than zero, got -1"
    )


def test_user_errors_and_internal_errors_are_told_apart():
    assert is_user_error(ValueError("x")) and is_user_error(FileNotFoundError("x"))
    assert is_user_error(PermissionError("x")) and is_user_error(IsADirectoryError("x"))
    assert not is_user_error(RuntimeError("x")) and not is_user_error(KeyError("x"))


def test_file_errors_name_the_file_and_what_to_do():
    assert user_message(FileNotFoundError(2, "No such file or directory", "a/b.csv")) == \
        "a/b.csv: not found; check the path"
    assert "permission denied" in user_message(PermissionError(13, "Permission denied", "/ro"))
    assert (
        user_message(OSError(28, "No space left on device", "/full/x")) == "/full/x: no space left on device"
    )


def test_messages_are_one_line_and_never_empty():
    assert user_message(ValueError("first\n  second\n")) == "first second"
    assert user_message(RuntimeError()) == "runtime error"
    assert user_message(KeyError("mass")) == "missing entry 'mass'"


def test_tracebacks_go_to_the_log_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LAGRANGE_LOG_DIR", str(tmp_path))
    try:
        raise RuntimeError("deep down")
    except RuntimeError as exc:
        path = write_traceback(exc, context="cmd")
    text = path.read_text(encoding="utf-8")
    assert path.parent == tmp_path and "Traceback" in text and "RuntimeError: deep down" in text
