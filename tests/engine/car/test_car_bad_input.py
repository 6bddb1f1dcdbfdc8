"""Bad numbers and broken model files for the car: refused before any work, one plain line naming
the flag (or file and tensor), exit code 2, no traceback, nothing built or written."""

import argparse
import json
import math

import pytest
import torch

from engine.car.model import (
    CarMLP,
    CarMLPConfig,
    CarModelError,
    load_car_model,
    save_car_model,
    training_elements,
)
from engine.cli import build_parser, main

# every numeric option of every car command (and `bench car`), with values that must be refused
BAD = {
    "--minutes": ["-1", "0", "0.001", "0.05", "nan", "inf", "1e9"],
    "--epochs": ["-1", "0", "10000000000"],
    "--hidden": ["-1", "0", "10000000"],
    "--layers": ["-1", "0", "100000"],
    "--seed": ["-1", "100000000000"],
    "--max-iterations": ["-1", "0", "10000000000"],
    "--candidates": ["-1", "0", "10000000000"],
    "--laps": ["-1", "0", "100000000"],
    "--horizon": ["-1", "0", "1", "10000000"],
    "--iterations": ["-1", "0", "10000000"],
    "--target-speed": ["-1", "0", "nan", "inf", "1e6"],
    "--max-seconds": ["-1", "0", "nan", "inf", "1e12"],
    "--seeds": ["-1", "0", "10000000"],
    "--cycles": ["-1", "0", "10000000000"],
    "--threads": ["-1", "0", "100000"],
}
REQUIRED = {"train": ["--out", "{tmp}/model"]}


def _numeric_options():
    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = []
    for group, sub_name in (("car", None), ("bench", "car")):
        gp = top.choices[group]
        sub = next(a for a in gp._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            if sub_name is not None and name != sub_name:
                continue
            for action in p._actions:
                if action.type in (int, float) and action.option_strings:
                    commands.append(([group, name], action.option_strings[-1]))
    return commands


OPTIONS = _numeric_options()


def test_every_numeric_car_option_has_bad_values_in_this_test():
    assert len(OPTIONS) >= 17
    assert {flag for _, flag in OPTIONS} <= set(BAD)


@pytest.mark.parametrize("command,flag", OPTIONS, ids=[" ".join(c) + " " + f for c, f in OPTIONS])
def test_bad_numbers_are_one_line_naming_the_flag_exit_2(command, flag, tmp_path, capsys):
    for value in BAD[flag]:
        extra = [a.format(tmp=tmp_path) for a in REQUIRED.get(command[1], [])] if command[0] == "car" else []
        code = main(command + extra + [flag, value])
        out, err = capsys.readouterr()
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2, (command, flag, value, err)
        assert len(lines) == 1 and "Traceback" not in err, err
        assert flag in lines[0], lines[0]
        assert not any(w in lines[0] for w in ("InputError", "CarModelError", "ValueError", "Config.")), (
            lines[0]
        )
        assert not (tmp_path / "model").exists()                  # nothing written


def test_a_huge_network_is_refused_with_its_memory_estimate(capsys):
    assert main(["car", "train", "--out", "/nonexistent-never-made", "--hidden", "10000000"]) == 2
    err = capsys.readouterr().err
    # 8 layers x 1e7 units: 7e14 weights, each with its gradient and two Adam moments, float32
    h, n = 10_000_000, 8
    weights = 5 * h + (n - 1) * h * (h + 1) + 4 * h + 3
    assert math.isclose(training_elements(argparse.Namespace(hidden=h, layers=n, batch_size=256)),
                        4 * weights + 6 * 256 * h * n)
    pib = 4 * (4 * weights + 6 * 256 * h * n) / 2**50
    assert f"{pib:.3g} PiB" in err and "--hidden" in err and "budget" in err


def test_selection_and_forms_get_the_same_checks():
    from engine.car.training import SelectionConfig

    with pytest.raises(ValueError, match="--hidden"):
        SelectionConfig(hidden=10_000_000)
    with pytest.raises(ValueError, match="--minutes"):
        SelectionConfig(minutes=-1)
    with pytest.raises(ValueError, match="lr"):
        CarMLPConfig(lr=float("nan"))


# -- model files ---------------------------------------------------------------------------------
def _model(tmp_path, hidden=8, layers=2):
    torch.manual_seed(0)
    folder = tmp_path / f"m{hidden}x{layers}"
    save_car_model(folder, CarMLP(CarMLPConfig(hidden=hidden, layers=layers)), {"h": 0.05})
    return folder


def test_sizes_in_the_json_that_disagree_with_the_weights_are_refused_before_building(tmp_path, monkeypatch):
    folder = _model(tmp_path)
    meta = json.loads((folder / "car_model.json").read_text())
    meta["config"]["hidden"] = 4096                         # the JSON says 4096, the weights hold 8
    (folder / "car_model.json").write_text(json.dumps(meta))
    built = []
    monkeypatch.setattr(CarMLP, "__init__", lambda self, *a, **k: built.append(1) or None)
    with pytest.raises(CarModelError) as err:
        load_car_model(folder)
    msg = str(err.value)
    assert (
        "car_model.safetensors" in msg
        and "linears.0.weight" in msg
        and "[8, 5]" in msg
        and "[4096, 5]" in msg
    )
    assert built == []                                      # no network was made


def test_weights_with_nan_are_refused_naming_the_tensor(tmp_path):
    folder = _model(tmp_path)
    model, _ = load_car_model(folder)
    with torch.no_grad():
        model.linears[1].bias[3] = float("nan")
    save_car_model(folder, model, {"h": 0.05})
    with pytest.raises(ValueError, match=r"'linears\.1\.bias'.*NaN"):  # the weights reader's check, first
        load_car_model(folder)


def test_broken_weight_headers_are_plain_errors(tmp_path, capsys):
    folder = _model(tmp_path)
    weights = folder / "car_model.safetensors"
    weights.write_bytes((10**12).to_bytes(8, "little") + b"{}")          # a header length beyond the file
    with pytest.raises(CarModelError, match="not a valid safetensors"):
        load_car_model(folder)
    weights.write_bytes(b"\x01")
    with pytest.raises(CarModelError, match="too short"):
        load_car_model(folder)
    weights.unlink()
    assert main(["car", "plan", "--model", str(folder), "--max-iterations", "1"]) == 2
    err = capsys.readouterr().err
    assert "car_model.safetensors" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
