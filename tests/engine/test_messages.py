"""engine/messages.py: every exception read as plain language (no class names), and tracebacks
kept in the user's log folder."""

from __future__ import annotations

import pytest

from engine.messages import is_user_error, plain, user_message, write_traceback


@pytest.mark.parametrize("text, expected", [
    ("LogError: cart.csv: no time column", "cart.csv: no time column"),
    ("engine.robots.urdf.URDFError: robot.urdf line 4: mass < 0", "robot.urdf line 4: mass < 0"),
    ("RobotNotFoundError: unknown robot 'x'", "unknown robot 'x'"),
    ("EigenmodeTask.target: (5, 5) is too far", "target: (5, 5) is too far"),
    ("EigenmodeTask.q0 and .target: expected two numbers each", "q0 and target: expected two numbers each"),
    ("TrainConfig.learning_rate: expected > 0", "learning_rate: expected > 0"),
    ("cannot read MyRobot.urdf or /data/Panda.csv", "cannot read MyRobot.urdf or /data/Panda.csv"),
])
def test_class_names_are_removed(text, expected):
    assert plain(text) == expected


def test_fields_become_the_flags_that_set_them():
    assert plain("TrainConfig.learning_rate: expected > 0", {"learning_rate": "--lr"}) == "--lr: expected > 0"


def test_user_errors_and_internal_errors_are_told_apart():
    assert is_user_error(ValueError("x")) and is_user_error(FileNotFoundError("x"))
    assert is_user_error(PermissionError("x")) and is_user_error(IsADirectoryError("x"))
    assert not is_user_error(RuntimeError("x")) and not is_user_error(KeyError("x"))


def test_file_errors_name_the_file_and_what_to_do():
    assert user_message(FileNotFoundError(2, "No such file or directory", "a/b.csv")) == \
        "a/b.csv: not found; check the path"
    assert "permission denied" in user_message(PermissionError(13, "Permission denied", "/ro"))
    assert user_message(OSError(28, "No space left on device", "/full/x")) == "/full/x: no space left on device"


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
