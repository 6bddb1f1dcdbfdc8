"""engine/validation.py: number checks, memory estimates before allocation, output paths."""

from __future__ import annotations

import math

import pytest

from engine.validation import (
    BUDGET_ENV,
    InputError,
    check_allocation,
    check_finite,
    check_int,
    check_output_path,
    check_positive,
    check_range,
    format_bytes,
    memory_budget,
    physical_memory,
)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "abc", None])
def test_check_finite_refuses_non_numbers(bad):
    with pytest.raises(InputError) as info:
        check_finite("training setting", "hidden (--hidden)", bad)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("training setting hidden (--hidden):")
    assert info.value.field == "hidden (--hidden)"


def test_range_and_positive_messages_name_field_value_and_unit():
    assert check_range(None, "--dt", 0.5, 0.0, 1.0, unit="s") == 0.5
    with pytest.raises(InputError, match=r"^--dt: must be greater than 0 s, got -1 s; e\.g\. 0\.01$"):
        check_range(None, "--dt", -1.0, 0.0, None, lo_open=True, unit="s", hint="e.g. 0.01")
    with pytest.raises(InputError, match=r"must be in \(0, 1\]"):
        check_range("x", "lr", 0.0, 0.0, 1.0, lo_open=True)
    with pytest.raises(InputError, match="must be greater than zero"):
        check_positive("x", "mass", 0.0)
    assert check_positive("x", "mass", 0.0, allow_zero=True) == 0.0


def test_check_int_refuses_fractions_bools_and_out_of_range():
    assert check_int("x", "n", 3.0, 1, 5) == 3
    for bad in (2.5, True, "3", math.nan):
        with pytest.raises(InputError, match="whole number"):
            check_int("x", "n", bad, 1, 5)
    with pytest.raises(InputError, match="must be between 1 and 5, got 6"):
        check_int("x", "n", 6, 1, 5)
    with pytest.raises(InputError, match="must be at least 1, got 0"):
        check_int("x", "n", 0, 1)


def test_memory_budget_default_env_and_override(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    total = physical_memory()
    assert total is not None and total > 0
    assert memory_budget() == pytest.approx(0.25 * total)
    monkeypatch.setenv(BUDGET_ENV, "1G")
    assert memory_budget() == 2**30
    monkeypatch.setenv(BUDGET_ENV, "0")
    assert memory_budget() is None
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(InputError, match=BUDGET_ENV):
        memory_budget()


def test_check_allocation_refuses_above_the_budget_with_estimate_and_flag(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "1M")
    assert check_allocation("a small table", 1000, 8) == 8000
    with pytest.raises(InputError) as info:
        check_allocation("the resampled log", 10**9, 8, override_flag="--allow-large")
    msg = str(info.value)
    assert "7.45 GiB" in msg and "1 MiB" in msg and "--allow-large" in msg and BUDGET_ENV in msg
    # the flag lets it through; an infinite or NaN size is never let through by the budget
    assert check_allocation("the resampled log", 10**9, 8, allow=True) == 8e9
    for n in (math.inf, math.nan):
        with pytest.raises(InputError, match="unbounded"):
            check_allocation("x", n, 8)
    assert format_bytes(1536) == "1.5 KiB"


def test_check_output_path_file(tmp_path):
    assert (
        check_output_path(tmp_path / "new" / "deeper" / "out.npz") == tmp_path / "new" / "deeper" / "out.npz"
    )
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match=r"^--out: .*folder.* is a folder; give a file name"):
        check_output_path(tmp_path / "folder")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output_path(tmp_path / "f.txt" / "out.npz")
    with pytest.raises(InputError, match="already exists"):
        check_output_path(tmp_path / "f.txt", allow_existing=False)
    with pytest.raises(InputError, match="empty"):
        check_output_path("", flag="--out")


def test_check_output_path_folder(tmp_path):
    assert check_output_path(tmp_path / "run", "folder") == tmp_path / "run"
    (tmp_path / "run").mkdir()
    assert check_output_path(tmp_path / "run", "folder") == tmp_path / "run"  # empty: fine
    (tmp_path / "run" / "model.json").write_text("{}")
    with pytest.raises(InputError, match="not empty"):
        check_output_path(tmp_path / "run", "folder", flag="--out")
    assert check_output_path(tmp_path / "run", "folder", allow_nonempty_folder=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output_path(tmp_path / "file", "folder")


def test_check_output_path_unwritable_place_named_as_given():
    with pytest.raises(InputError) as info:
        check_output_path("/proc/no/such/out.npz")
    assert "/proc/no/such/out.npz" in str(info.value) and ".tmp" not in str(info.value)
