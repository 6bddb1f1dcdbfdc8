"""Range checks of the numbers a session file gives (Qt-free), before any of them reaches a widget.

A session comes from a file that may have been edited or written by someone else; Qt takes C
ints, so a splitter size of 1e30 or a spin value of -2**40 would raise OverflowError deep in a
setter, or be clamped silently into a state that no longer matches the file. Each helper returns
the checked value or raises :class:`~engine.validation.InputError` naming the session field; the
caller skips that part of the session with one line and restores the rest.
"""

from __future__ import annotations

import math

from engine.validation import InputError, check_int, check_range

__all__ = ["MAX_SPLITTER_SIZE", "finite_list", "session_float", "session_int", "splitter_sizes"]

MAX_SPLITTER_SIZE = 100_000    # pixels: more than any screen


def session_int(state: dict, key: str, lo: int, hi: int, default: int, where: str = "session") -> int:
    """``state[key]`` as a whole number in ``[lo, hi]`` (``default`` when absent or null)."""
    value = state.get(key)
    if value is None:
        return default
    return check_int(where, key, value, lo, hi)


def session_float(state: dict, key: str, lo: float, hi: float, default: float, where: str = "session",
                  unit: str | None = None) -> float:
    """``state[key]`` as a finite number in ``[lo, hi]`` (``default`` when absent or null)."""
    value = state.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, got {str(value)[:40]!r}", owner=where, field=key)
    return check_range(where, key, value, lo, hi, unit=unit)


def splitter_sizes(state: dict, key: str, count: int, where: str = "session") -> list[int] | None:
    """``state[key]`` as ``count`` pane sizes (whole pixels in ``[0, MAX_SPLITTER_SIZE]``, not all
    zero), or None when absent."""
    value = state.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != count:
        raise InputError(
            f"expected a list of {count} pane sizes, got {str(value)[:60]}", owner=where, field=key
        )
    sizes = [check_int(where, key, v, 0, MAX_SPLITTER_SIZE) for v in value]
    if not any(sizes):
        raise InputError("all pane sizes are zero", owner=where, field=key)
    return sizes


def finite_list(state: dict, key: str, max_length: int, where: str = "session") -> list[float]:
    """``state[key]`` as a list of at most ``max_length`` finite numbers (empty when absent)."""
    value = state.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > max_length:
        raise InputError(f"expected a list of at most {max_length} numbers", owner=where, field=key)
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"expected finite numbers, got {str(v)[:40]!r}", owner=where, field=key)
        out.append(float(v))
    return out
