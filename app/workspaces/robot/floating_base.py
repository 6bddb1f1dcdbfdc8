"""A floating robot in the Robot workspace's view: the base's own gizmo (drag to move and turn
the base; one undo step per drag), the centre of mass with its ground projection and the
support polygon of the contact links (green when the projection is inside, red outside).
It observes the page's :class:`~app.workspaces.robot.state.RobotState` and forwards drags to it."""

from __future__ import annotations

from app.viewer.gizmo import TargetGizmo

__all__ = ["BASE_GIZMO_SCALE", "FloatingBaseView"]

# the base's gizmo is this much larger than a target's: a target on the base sits on the same
# spot, picked first (the base gizmo's ``pick_last``); the base's longer arrows and wider rings
# stay grabbable beyond the target's
BASE_GIZMO_SCALE = 1.6


class FloatingBaseView:
    """``solver``: the page's LatestJob for IK while dragging (a drag with held links is solved
    there, the newest drag position only); None solves in the UI thread (RobotState.drag_base)."""

    def __init__(self, view, state, solver=None, make_job=None, overrides=None):
        self.view, self.state = view, state
        self.solver, self.make_job, self.overrides = solver, make_job, dict(overrides or {})
        self.gizmo: TargetGizmo | None = None
        self._drag_start = None
        self._moving = False

    def setup(self, gizmo_size: float) -> None:
        """After a robot was set: a gizmo on a floating base (none for a fixed one)."""
        if self.gizmo is not None:
            self.view.remove_gizmo(self.gizmo)
            self.gizmo = None
        if self.state.floating:
            g = TargetGizmo(pose=self.state.base_pose(), size=gizmo_size * BASE_GIZMO_SCALE,
                            color=(1.0, 1.0, 1.0, 1.0), label="base")
            g.pick_last = True
            g.pose_changed.connect(self._dragged)
            g.drag_finished.connect(self._drag_finished)
            self.view.add_gizmo(g)
            self.gizmo = g
        self.refresh()

    def _dragged(self, T) -> None:
        """The base gizmo moved to ``T``: with held links ("keep in place") whole-body IK keeps
        them where they were at the drag's start and the legs bend; else the robot moves rigidly."""
        if self._drag_start is None:
            self._drag_start = self.state.q.copy()
        start = self._drag_start
        self._moving = True
        try:
            if self.solver is None or self.state.base_drag_request(T, start) is None:
                self.state.drag_base(T, start, overrides=self.overrides)
            else:
                T = T.copy()

                def make():
                    request = self.state.base_drag_request(T, start, overrides=self.overrides)
                    return None if request is None else self.make_job(self.state.model, request)
                self.solver.submit(make)
        finally:
            self._moving = False

    def _drag_finished(self) -> None:
        """One undo step for the drag, once the last solve is in."""
        start, self._drag_start = self._drag_start, None
        if start is None:
            return
        if self.solver is not None and self.solver.busy:
            def when_idle():
                self.solver.idle.disconnect(when_idle)
                self.state.push_pose(start, self.state.q, "move base")
            self.solver.idle.connect(when_idle)
        else:
            self.state.push_pose(start, self.state.q, "move base")

    def refresh(self) -> None:
        """After the pose changed: the gizmo on the base, the balance overlay."""
        if self.gizmo is not None and not self._moving:
            self.gizmo.set_pose(self.state.base_pose())
        b = self.state.balance() if self.state.floating else None
        if b is None:
            self.view.set_balance(None)
        else:
            self.view.set_balance(b.com, b.com_ground, b.support, b.inside)
