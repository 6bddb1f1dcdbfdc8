"""Units of log columns and their factors to SI (s, rad, m, rad/s, m/s, N, N m)."""

from __future__ import annotations

import math

from engine.logs.errors import LogError

__all__ = ["ANGLE_UNITS", "UNIT_FACTORS", "UNIT_KINDS", "si_unit", "unit_factor"]

UNIT_FACTORS: dict[str, float] = {
    # time
    "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "min": 60.0,
    # angles
    "rad": 1.0, "deg": math.pi / 180.0, "rev": 2.0 * math.pi,
    # lengths
    "m": 1.0, "cm": 1e-2, "mm": 1e-3,
    # angular and linear rates
    "rad/s": 1.0, "deg/s": math.pi / 180.0, "rpm": 2.0 * math.pi / 60.0,
    "m/s": 1.0, "mm/s": 1e-3,
    # accelerations
    "rad/s^2": 1.0, "deg/s^2": math.pi / 180.0, "m/s^2": 1.0, "mm/s^2": 1e-3,
    # forces, torques, dimensionless commands
    "N": 1.0, "N m": 1.0, "Nm": 1.0, "mN m": 1e-3, "mNm": 1e-3, "1": 1.0, "": 1.0, "%": 0.01,
}

UNIT_KINDS: dict[str, tuple[str, ...]] = {
    "time": ("s", "ms", "us", "ns", "min"),
    "position": ("rad", "deg", "rev", "m", "cm", "mm"),
    "velocity": ("rad/s", "deg/s", "rpm", "m/s", "mm/s"),
    "control": ("N", "N m", "Nm", "mN m", "mNm", "1", "%", ""),
}

ANGLE_UNITS = ("rad", "deg", "rev")

_SI = {"s": "s", "ms": "s", "us": "s", "ns": "s", "min": "s", "rad": "rad", "deg": "rad", "rev": "rad",
       "m": "m", "cm": "m", "mm": "m", "rad/s": "rad/s", "deg/s": "rad/s", "rpm": "rad/s",
       "m/s": "m/s", "mm/s": "m/s", "N": "N", "N m": "N m", "Nm": "N m", "mN m": "N m", "mNm": "N m",
       "%": "1", "1": "1", "": ""}


def unit_factor(unit: str, *, field: str = "unit") -> float:
    """The factor that turns a value in ``unit`` into SI; a LogError names ``field`` if unknown."""
    if not isinstance(unit, str):
        raise LogError(f"{field} must be a unit name in quotes (such as \"rad\" or \"deg\"), got {unit!r}",
                       column=field)
    try:
        return UNIT_FACTORS[unit]
    except KeyError:
        raise LogError(f"unknown unit {unit!r} for {field}; known: {', '.join(k for k in UNIT_FACTORS if k)}",
                       column=field) from None


def si_unit(unit: str) -> str:
    return _SI.get(unit, unit)

