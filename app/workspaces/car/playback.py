"""Playing a plan on the Car planner's canvas: the car drives the executed path at the
simulator's pace, leaving wheel marks where it slides; the marks go when playback ends."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, QTimer

from app.workspaces.car.canvas import CarCanvas
from app.workspaces.car.state import PlanResult, skid_marks

__all__ = ["PlanPlayback"]


class PlanPlayback(QObject):
    """Plays a :class:`PlanResult`'s main variant on ``canvas``, one frame per ``params().dt``."""

    def __init__(self, canvas: CarCanvas, params, parent: QObject | None = None):
        super().__init__(parent)
        self.canvas = canvas
        self._params = params              # () -> CarParams, read when each mark is computed
        self._frames = None
        self._frame = 0
        self._marks: list = []
        self.timer = QTimer(self)
        self.timer.setInterval(int(params().dt * 1000))
        self.timer.timeout.connect(self.next_frame)

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    def play(self, plan: PlanResult) -> None:
        m = plan.main
        self._frames = (m.executed_pose, m.controls, m.slip)
        self._frame = 0
        self.clear_marks()
        self.timer.start()

    def stop(self, forget: bool = False) -> None:
        """Stop playing (``forget``: the frames too, as when the plan is cleared)."""
        self.timer.stop()
        if forget:
            self._frames = None

    def clear_marks(self) -> None:
        self._marks = []
        self.canvas.skid.setData([], [])

    def next_frame(self) -> None:
        if self._frames is None or self._frame >= len(self._frames[0]):
            self.timer.stop()
            self.clear_marks()                   # the wheel marks go with the playback
            return
        E, U, slip = self._frames
        i = self._frame
        x, y, yaw = E[i]
        self.canvas.set_car(x, y, yaw, float(U[min(i, len(U) - 1), 1]))
        if i > 0:
            pts = skid_marks(E[i:i + 1], slip[i - 1:i], self._params())
            if len(pts):
                self._marks.extend(map(tuple, pts))
                P = np.asarray(self._marks)
                self.canvas.skid.setData(P[:, 0], P[:, 1])
        self._frame += 1
