"""Checks on a designed mode: is it periodic, does it stop at T/2, is it line-shaped, does it hit the target."""

from __future__ import annotations

import numpy as np

__all__ = [
    "control_effort",
    "half_period_momentum",
    "is_line_shaped",
    "mode_checks",
    "path_self_intersects",
    "periodicity_error",
    "retrace_error",
    "tip_error",
]


def periodicity_error(xs: np.ndarray) -> float:
    """|x(T) - x(0)| over the full state (q in rad, p in kg m^2/s)."""
    return float(np.linalg.norm(xs[-1] - xs[0]))


def half_period_momentum(xs: np.ndarray) -> float:
    """|p(T/2)|: zero for an eigenmode (the second turning point)."""
    return float(np.linalg.norm(xs[(len(xs) - 1) // 2, 2:]))


def retrace_error(qs: np.ndarray) -> float:
    """max_t |q(t) - q(T - t)| (rad): zero when the path is traced back the way it came."""
    return float(np.max(np.linalg.norm(qs - qs[::-1], axis=-1)))


def _segments_cross(a, b, c, d) -> bool:
    def orient(p, q, r):
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])
    o1, o2, o3, o4 = orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b)
    return (o1 * o2 < 0) and (o3 * o4 < 0)


def path_self_intersects(qs: np.ndarray) -> bool:
    """Whether the polyline ``qs`` of shape ``(n, 2)`` crosses itself (non-adjacent segments)."""
    n = len(qs) - 1
    lo = np.minimum(qs[:-1], qs[1:])
    hi = np.maximum(qs[:-1], qs[1:])
    for i in range(n):
        # bounding-box prefilter, then the exact test
        cand = (
            np.nonzero(np.all(lo[i + 2 :] <= hi[i], axis=1) & np.all(hi[i + 2 :] >= lo[i], axis=1))[0] + i + 2
        )
        for j in cand:
            if _segments_cross(qs[i], qs[i + 1], qs[j], qs[j + 1]):
                return True
    return False


def is_line_shaped(xs: np.ndarray, tolerance: float = 0.05) -> bool:
    """The line-shape test of Definition 2.0.1 on a trajectory over one period.

    Line-shaped: the path over the full period retraces itself (``retrace_error`` at most
    ``tolerance`` times the path's extent), the half path from ``q(0)`` to ``q(T/2)`` does not
    cross itself, and the momentum does not vanish between the two turning points (else the
    orbit would be a shorter oscillation traced several times).
    """
    qs = xs[:, :2]
    extent = float(np.max(np.linalg.norm(qs - qs[0], axis=-1)))
    if extent <= 0:
        return False
    if retrace_error(qs) > tolerance * extent:
        return False
    half = xs[: (len(xs) - 1) // 2 + 1]
    if path_self_intersects(half[:, :2]):
        return False
    pn = np.linalg.norm(half[:, 2:], axis=-1)
    inner = pn[len(pn) // 10: len(pn) - len(pn) // 10]
    return bool(inner.size == 0 or inner.min() > tolerance * pn.max())


def tip_error(tip_half: np.ndarray, target: np.ndarray) -> float:
    """|tip(T/2) - target| (m)."""
    return float(np.linalg.norm(np.asarray(tip_half) - np.asarray(target)))


def control_effort(us: np.ndarray, period: float) -> float:
    """int_0^T |u|^2 dt (trapezoidal), N^2 m^2 s."""
    sq = np.sum(us ** 2, axis=-1)
    n = len(sq) - 1
    return float(period / n * (sq.sum() - 0.5 * (sq[0] + sq[-1])))


def mode_checks(xs: np.ndarray, us: np.ndarray, tip_half: np.ndarray, target, period: float) -> dict:
    """All checks as a JSON-able dict."""
    return {"tip_error": tip_error(tip_half, target),
            "periodicity_error": periodicity_error(xs),
            "p_half_norm": half_period_momentum(xs),
            "retrace_error": retrace_error(xs[:, :2]),
            "line_shaped": is_line_shaped(xs),
            "control_effort": control_effort(us, period),
            "period": float(period)}
