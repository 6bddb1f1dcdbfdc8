"""A short, smooth move of the shown robot from its pose to another (an IK solution, an undone
pose), at the screen's pace; stopping it early jumps to the end pose."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QElapsedTimer, QObject, QTimer

__all__ = ["ANIMATION_MS", "PoseAnimation"]

ANIMATION_MS = 450


class PoseAnimation(QObject):
    """Moves from ``start`` to ``end`` through ``set_q(q)`` over :data:`ANIMATION_MS` (smoothstep)."""

    def __init__(self, set_q: Callable[[np.ndarray], None], parent: QObject | None = None):
        super().__init__(parent)
        self._set_q = set_q
        self._timer = QTimer(self)
        self._timer.setInterval(16)
        self._timer.timeout.connect(self._step)
        self._clock = QElapsedTimer()
        self._from = self._to = None

    @property
    def active(self) -> bool:
        return self._timer.isActive()

    def start(self, start, end) -> None:
        self._from = np.asarray(start, float)
        self._to = np.asarray(end, float)
        self._clock.start()
        self._timer.start()

    def stop(self) -> None:
        """Stop, at the end pose."""
        if self._timer.isActive():
            self._timer.stop()
            if self._to is not None:
                self._set_q(self._to)

    def _step(self) -> None:
        s = min(self._clock.elapsed() / ANIMATION_MS, 1.0)
        s_smooth = s * s * (3 - 2 * s)
        self._set_q((1 - s_smooth) * self._from + s_smooth * self._to)
        if s >= 1.0:
            self._timer.stop()
