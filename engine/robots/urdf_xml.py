"""The URDF loader's error and its reading of XML elements: :class:`URDFError`, the parse
context (file, strictness, what was accepted) and typed attribute readers that name the
element and line of every fault. Part of :func:`engine.robots.urdf.load_urdf` (the names with
an underscore are the loader's own, not an API).
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

from engine.robots.description import Origin


class URDFError(ValueError):
    """A URDF that cannot be loaded. ``file``, ``element`` and ``line`` say where.

    ``remedy``: the loader options that accept the file anyway (``{"strict": False}``,
    ``{"mimic": "independent"}``), None when none does; ``impossible``: the values are
    physically impossible (a negative mass, a non-finite or not positive-definite inertia)."""

    def __init__(self, message: str, file: str | None = None, element: str | None = None,
                 line: int | None = None, remedy: dict | None = None, impossible: bool = False):
        self.file = file
        self.element = element
        self.line = line
        self.reason = message
        self.remedy = remedy
        self.impossible = impossible
        where = file or "<string>"
        if line is not None:
            where += f", line {line}"
        if element:
            where += f", {element}"
        super().__init__(f"{where}: {message}")


class _Ctx:
    """Where we are (the file name, for messages) and how strict the physical checks are."""

    def __init__(self, file: str | None, strict: bool | None = True):
        self.file = file
        self.strict = strict
        self.inertial_elements: dict[str, tuple] = {}   # link -> (<mass>, <inertia>) for messages
        self.accepted: list[tuple[str, str]] = []         # (link, what was accepted): one warning at the end
        self.warnings: list[str] = []                     # each accepted fault, one line per kind, for the description

    def error(self, message: str, el=None, element: str | None = None, **fields) -> URDFError:
        line = getattr(el, "sourceline", None) if el is not None else None
        if element is None and el is not None:
            element = _describe(el)
        return URDFError(message, file=self.file, element=element, line=line, **fields)


def _describe(el) -> str:
    tag = el.tag if isinstance(el.tag, str) else "?"
    name = el.get("name")
    if name is not None:
        return f"<{tag} name={name!r}>"
    parent = el.getparent()
    if parent is not None and isinstance(parent.tag, str):
        return f"<{tag}> in {_describe(parent)}"
    return f"<{tag}>"


# The readers' types: a value, unless the attribute may be absent and has no default. Values
# are ``tuple[Any, ...]``: the count is the caller's, so the tuple may stand for a fixed-length one.
@overload
def _floats(ctx: _Ctx, el, attr: str, count: int, default: tuple[float, ...],
            required: bool = False) -> tuple[Any, ...]: ...
@overload
def _floats(ctx: _Ctx, el, attr: str, count: int, default: None = None, *,
            required: Literal[True]) -> tuple[Any, ...]: ...
@overload
def _floats(ctx: _Ctx, el, attr: str, count: int, default: tuple[float, ...] | None = None,
            required: bool = False) -> tuple[Any, ...] | None: ...
def _floats(ctx: _Ctx, el, attr: str, count: int, default: tuple[float, ...] | None = None,
            required: bool = False) -> tuple[Any, ...] | None:
    """Parse ``count`` finite floats from attribute ``attr`` of ``el``."""
    text = el.get(attr) if el is not None else None
    if text is None:
        if required:
            raise ctx.error(f"missing attribute {attr!r}", el)
        return default
    parts = text.split()
    if len(parts) != count:
        raise ctx.error(f"attribute {attr}={text!r} must hold {count} number(s), found {len(parts)}", el)
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ctx.error(f"attribute {attr}={text!r} is not a number", el) from None
    if not all(math.isfinite(v) for v in values):
        raise ctx.error(f"attribute {attr}={text!r} is not finite (NaN or inf)", el)
    return values


@overload
def _float(ctx: _Ctx, el, attr: str, default: float, required: bool = False) -> float: ...
@overload
def _float(ctx: _Ctx, el, attr: str, default: None = None, *, required: Literal[True]) -> float: ...
def _float(ctx: _Ctx, el, attr: str, default: float | None = None, required: bool = False) -> float | None:
    v = _floats(ctx, el, attr, 1, None, required)
    return default if v is None else v[0]


def _origin(ctx: _Ctx, el) -> Origin:
    o = el.find("origin") if el is not None else None
    if o is None:
        return Origin()
    return Origin(xyz=_floats(ctx, o, "xyz", 3, (0.0, 0.0, 0.0)),
                  rpy=_floats(ctx, o, "rpy", 3, (0.0, 0.0, 0.0)))


def _name(ctx: _Ctx, el) -> str:
    name = el.get("name")
    if name is None or not name.strip():
        raise ctx.error("missing attribute 'name'", el, element=f"<{el.tag}>")
    return name
