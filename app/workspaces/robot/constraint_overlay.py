"""The Robot workspace's constraints in its 3D view: the state's constraint marks (loop closures,
welds, tendon couplings and limits: :meth:`RobotState.constraint_marks`, from the engine) drawn by
the view's constraints layer (:mod:`app.viewer.constraints_layer`) at every pose the state shows
(sliders, IK, simulation playback, undo)."""

from __future__ import annotations

__all__ = ["ConstraintOverlay"]


class ConstraintOverlay:
    """Keeps ``view.constraints`` on ``state``'s pose (made once by the page)."""

    def __init__(self, view, state):
        self.view, self.state = view, state
        state.events.robot.connect(lambda _loaded: self.refresh())
        state.events.q.connect(lambda _q: self.refresh())

    def refresh(self) -> None:
        self.view.constraints.set_marks(self.state.constraint_marks() if self.state.robot is not None else [])
