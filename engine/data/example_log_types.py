"""The record every example-log generator returns (:mod:`engine.data.example_logs`,
:mod:`engine.data.mujoco_logs`) and the README's parameter table."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from engine.logs.mapping import LogMapping

__all__ = ["ExampleLog", "params_table"]


@dataclass
class ExampleLog:
    """A generated log: ordered ``columns`` (name -> (N,) array), the printf format of each,
    the :class:`LogMapping` that reads it, README text and the comment lines of the file."""

    name: str
    columns: dict[str, np.ndarray]
    formats: dict[str, str]
    mapping: LogMapping
    readme: str
    comments: list[str] = field(default_factory=list)
    truth: dict = field(default_factory=dict)


def params_table(obj) -> str:
    """A frozen config dataclass as the rows of a Markdown ``| parameter | value |`` table."""
    return "\n".join(f"| `{k}` | {v} |" for k, v in asdict(obj).items())
