"""The Robot workspace's inverse kinematics at work: Optimise (every target solved as a job, the
robot animating to the solution), Follow (a short solve while a target is dragged, only the
latest request solved) and one undo step per drag."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from app.widgets.latest_job import LatestJob
from app.workspaces.robot.robot_jobs import ik_job
from app.workspaces.robot.state import RobotState
from app.workspaces.robot.targets_panel import TargetsPanel

__all__ = ["FOLLOW_IK", "TargetsIK"]

# Follow mode: a short solve from the current pose, one start (speed over global search)
FOLLOW_IK = {"n_starts": 1, "max_iters": 30}


class TargetsIK(QObject):
    """Solves the state's targets with the Targets panel's options; ``stop_animation()`` ends the
    robot's move to an earlier solution before a new one is shown."""

    def __init__(self, ctx, state: RobotState, targets: TargetsPanel, stop_animation: Callable[[], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self.ctx, self.state, self.targets = ctx, state, targets
        self._stop_animation = stop_animation
        self.handle = None
        self._drag_start_q = None
        self.follow = LatestJob(ctx.jobs, "robot IK (follow)", self)
        self.follow.result.connect(self._on_follow_result)
        self.follow.failed.connect(lambda msg: targets.set_message(f"IK failed: {msg}", None, ok=False))
        targets.optimise_requested.connect(self.optimise)
        targets.cancel_requested.connect(self.cancel)
        targets.target_dragged.connect(self._on_target_dragged)
        targets.drag_finished.connect(self._on_drag_finished)
        targets.end_effector_changed.connect(state.set_end_effector)
        targets.whole_body_changed.connect(lambda: self.set_whole_body(show=False))

    def set_whole_body(self, held=None, base=None, show: bool = True) -> None:
        """A floating robot's IK keeps the ``held`` links in place, its base "free" or "fixed"
        (None: as the Targets panel shows)."""
        st = self.state
        st.set_held_links(self.targets.held_links() if held is None else held)
        st.set_ik_base(self.targets.ik_base() if base is None else base)
        if show and st.model is not None:
            self.targets.set_whole_body(st.floating, st.model.link_names, st.held_links, st.ik_base)

    def request(self, overrides: dict):
        """The state's request for its targets and the panel's options; None (message shown) if none."""
        try:
            return self.state.ik_request(self.targets.ik_options(), overrides)
        except ValueError as exc:
            # "Add a target first" clears as soon as a target exists
            until = (lambda: bool(self.state.targets)) if not self.state.targets else None
            self.targets.set_message(str(exc), None, ok=False, until=until)
            return None

    def optimise(self):
        """Solve IK for every target as a job; the robot animates to the solution."""
        request = self.request({})
        if request is None:
            return None
        self.cancel()
        self._stop_animation()
        self.targets.set_busy(True)
        self.targets.set_message("Solving…", None)
        start_q = self.state.q.copy()
        say = self.targets.set_message
        handle = self.ctx.jobs.submit(ik_job(self.state.robot.model, request), name="robot IK",
                                      on_result=lambda out, q0=start_q: self.state.accept_ik(out, q0),
                                      on_error=lambda msg, tb: say(f"IK failed: {msg}", None, ok=False),
                                      on_cancelled=lambda: say("Cancelled.", None),
                                      on_progress=self._on_progress)
        handle.ended.connect(lambda h=handle: self._on_ended(h))
        self.handle = handle
        return handle

    def _on_progress(self, update) -> None:
        if update.fraction is not None:
            self.targets.set_message(f"Solving… {100 * update.fraction:.0f}%", None)

    def _on_ended(self, handle) -> None:
        if handle is self.handle:
            self.handle = None
            self.targets.set_busy(False)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.follow.cancel()

    # -- dragging a target -----------------------------------------------------------------------
    def gizmo_pressed(self, gizmo) -> None:
        self.targets.select_gizmo(gizmo)
        self._drag_start_q = self.state.q.copy()
        self.state.begin_target_edit()          # the drag's moves: one undo step

    def _on_target_dragged(self) -> None:
        if not self.targets.follow_box.isChecked():
            return

        def make_job():
            request = self.request(dict(FOLLOW_IK))
            return None if request is None else ik_job(self.state.robot.model, request)
        self.follow.submit(make_job)

    def _on_follow_result(self, out) -> None:
        if out.serial == self.state.generation:
            self._stop_animation()
            self.state.accept_ik(out)

    def _on_drag_finished(self) -> None:
        """A gizmo drag ends: one undo step for it; in follow mode it holds the pose the solves
        reached too (recorded once the last solve is in)."""
        start, self._drag_start_q = self._drag_start_q, None
        if start is None or not self.targets.follow_box.isChecked():
            self.state.end_target_edit("move target")
            return

        def end_when_idle():
            self.follow.idle.disconnect(end_when_idle)
            self.state.end_target_edit("follow targets", old_q=start)
        if self.follow.busy:
            self.follow.idle.connect(end_when_idle)
        else:
            self.state.end_target_edit("follow targets", old_q=start)
