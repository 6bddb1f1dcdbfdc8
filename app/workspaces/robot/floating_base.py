"""A floating robot in the Robot workspace's view: the base's own gizmo (drag to move and turn
the base; one undo step per drag), the centre of mass with its ground projection and the
support polygon of the contact links (green when the projection is inside, red outside).
It observes the page's :class:`~app.workspaces.robot.state.RobotState` and forwards drags to it."""

from __future__ import annotations

from app.viewer.gizmo import TargetGizmo

__all__ = ["FloatingBaseView"]


class FloatingBaseView:
    def __init__(self, view, state):
        self.view, self.state = view, state
        self.gizmo: TargetGizmo | None = None
        self._drag_start = None
        self._moving = False

    def setup(self, gizmo_size: float) -> None:
        """After a robot was set: a gizmo on a floating base (none for a fixed one)."""
        if self.gizmo is not None:
            self.view.remove_gizmo(self.gizmo)
            self.gizmo = None
        if self.state.floating:
            g = TargetGizmo(pose=self.state.base_pose(), size=gizmo_size, color=(1.0, 1.0, 1.0, 1.0), label="base")
            g.pose_changed.connect(self._dragged)
            g.drag_finished.connect(self._drag_finished)
            self.view.add_gizmo(g)
            self.gizmo = g
        self.refresh()

    def _dragged(self, T) -> None:
        if self._drag_start is None:
            self._drag_start = self.state.q.copy()
        self._moving = True
        try:
            self.state.set_base_pose(T)
        finally:
            self._moving = False

    def _drag_finished(self) -> None:
        if self._drag_start is not None:
            self.state.push_pose(self._drag_start, self.state.q, "move base")
            self._drag_start = None

    def refresh(self) -> None:
        """After the pose changed: the gizmo on the base, the balance overlay."""
        if self.gizmo is not None and not self._moving:
            self.gizmo.set_pose(self.state.base_pose())
        b = self.state.balance() if self.state.floating else None
        if b is None:
            self.view.set_balance(None)
        else:
            self.view.set_balance(b.com, b.com_ground, b.support, b.inside)
