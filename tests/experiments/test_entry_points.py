"""experiments/: each script imports through the engine's public API and parses its options."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.py") if p.stem != "__init__")


def test_results_holds_no_code():
    assert not [p for p in (ROOT / "results").rglob("*.py")]


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_uses_public_engine_names_only(name):
    tree = ast.parse((ROOT / "experiments" / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
            assert not [a.name for a in node.names if a.name.startswith("_")], (name, node.module)
        if isinstance(node, ast.Attribute) and node.attr == "path":
            assert not (isinstance(node.value, ast.Name) and node.value.id == "sys"), f"{name} edits sys.path"


@pytest.mark.parametrize("name", ["long_term_sets", "paper_network_trial"])
def test_script_has_a_main_that_parses_help(name, capsys):
    module = importlib.import_module(f"experiments.{name}")
    with pytest.raises(SystemExit) as exc:
        module.main(["--help"])
    assert exc.value.code == 0 and "usage" in capsys.readouterr().out
