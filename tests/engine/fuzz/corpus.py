"""Fuzz corpora kept as regression tests: inputs that once found a bug live in fuzz_corpus/<name>/."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).parent / "fuzz_corpus"


def corpus(name: str) -> list[Path]:
    """The files of ``fuzz_corpus/<name>/`` (sorted), for ``pytest.mark.parametrize``."""
    folder = CORPUS / name
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def fuzz_examples(default: int) -> int:
    """Examples per fuzz test: short in the suite; ``LAGRANGE_FUZZ_EXAMPLES=5000`` for a long hunt."""
    import os

    return int(os.environ.get("LAGRANGE_FUZZ_EXAMPLES", default))
