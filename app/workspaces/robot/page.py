"""The Robot workspace page: lays out widgets, observes a :class:`RobotState` and forwards
gestures to it; jobs (loading, IK, readouts, simulation) report back into the state.

Layout: a tool row (robot picker, Open URDF, view toggles, load progress), the 3D view
taking most of the page, and one side column on the right with tabs (Joints, Targets,
Dynamics, Motion), each scrolling vertically only; the column collapses and its width is
remembered. Every long computation runs as a job: loading (URDF + meshes), IK (Optimise, and
Follow with only the latest request solved), the dynamics readouts and simulations.

Scripting/test surface: ``state`` (the Qt-free RobotState: q, targets, history, results),
``load_robot(name_or_path)``, ``robot``, ``set_q(q)``, ``q``, ``targets.add_target(link, pose)``,
``optimise()``, ``view``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from PySide6.QtCore import QElapsedTimer, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.settings import add_recent_file, recent_files
from app.viewer.scene import RobotView
from app.widgets.file_dialogs import example_folder, open_file_name
from app.widgets.latest_job import LatestJob
from app.widgets.layout import ElidedLabel, SidePanel, collapse_button, expanding, remember_splitter
from app.workspaces.robot.dynamics_panel import DynamicsPanel
from app.workspaces.robot.floating_base import FloatingBaseView
from app.workspaces.robot.joints_panel import JointsPanel
from app.workspaces.robot.log_replay import LogReplayPanel
from app.workspaces.robot.motion_panel import MotionPanel
from app.workspaces.robot.robot_jobs import (LoadedRobot, dynamics_readouts, ik_job, load_robot_job,
                                             simulate_job, xacro_file_of)
from app.workspaces.robot.state import RobotState, describe_ik
from app.workspaces.robot.targets_panel import TargetsPanel
from app.workspaces.robot.xacro_dialogs import ask_expand_xacro, ask_xacro_args
from engine.robots.files import ROBOT_FILE_SUFFIXES

log = logging.getLogger(__name__)

__all__ = ["RobotPage"]

DEFAULT_ROBOT = "panda"
RECENT_KEY = "robot/recent"
LAST_KEY = "robot/last"
UNITS_KEY = "robot/angle_units"
SPLITTER_KEY = "robot/splitter"
SIDE_WIDTH = 380           # the side column's first width (px); the 3D view takes the rest
MAX_RECENT = 8
ANIMATION_MS = 450
READOUT_INTERVAL_MS = 60
# Follow mode: a short solve from the current pose, one start (speed over global search)
FOLLOW_IK = {"n_starts": 1, "max_iters": 30}


class RobotPage(QWidget):
    """The Robot workspace page (``RobotPage(ctx, parent=None)``)."""

    robot_loaded = Signal(object)      # LoadedRobot
    robot_failed = Signal(str)         # the error message shown
    ik_finished = Signal(object)       # IKOutcome

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.state = RobotState()
        self._load_handle = None
        self._ik_handle = None
        self._sim_handle = None
        self._drag_start_q = None
        self._anim = QTimer(self)
        self._anim.setInterval(16)
        self._anim.timeout.connect(self._animate_step)
        self._anim_clock = QElapsedTimer()
        self._anim_from = self._anim_to = None
        self.setAcceptDrops(True)
        self._build()
        self._observe_state()
        units = str(self.ctx.settings.value(UNITS_KEY, "deg"))
        self.joints.set_units(units if units in ("deg", "rad") else "deg")
        self.joints.units_box.currentIndexChanged.connect(
            lambda _i: self.ctx.settings.setValue(UNITS_KEY, self.joints.units))
        self._readouts_timer = QTimer(self)          # coalesces readout requests (<= ~15 a second)
        self._readouts_timer.setSingleShot(True)
        self._readouts_timer.setInterval(READOUT_INTERVAL_MS)
        self._readouts_timer.timeout.connect(self._submit_readouts)
        self._readouts = LatestJob(ctx.jobs, "robot readouts", self)
        self._readouts.result.connect(self.state.accept_readouts)
        self._follow = LatestJob(ctx.jobs, "robot IK (follow)", self)
        self._follow.result.connect(self._on_follow_result)
        self._follow.failed.connect(lambda msg: self.targets.set_message(f"IK failed: {msg}", None, ok=False))
        self.floating_base.solver = self._follow     # a base drag with held links: solved in the follow job
        self._fill_picker()
        chosen = ctx.options.get("robot")      # a xacro file named on the command line: the user's say-so
        start = str(chosen or self.ctx.settings.value(LAST_KEY) or DEFAULT_ROBOT)
        self._pending_note = ""      # said with the next loaded robot's status
        if not chosen and xacro_file_of(start) is not None:      # the last run's xacro waits in the list
            self._pending_note, start = f"; the last robot, {Path(start).name}, is a xacro file: choose it in " \
                                        "the robot list to expand it again", DEFAULT_ROBOT
        self.load_robot(start, xacro_allowed=bool(chosen))

    # ================================================================== layout
    def _build(self) -> None:
        # panes and scroll areas show the window behind them (so they follow the app theme)
        self.setStyleSheet("QTabWidget::pane { background: transparent; border: 1px solid palette(mid); }"
                           "QScrollArea { background: transparent; border: none; }"
                           "QScrollArea > QWidget > QWidget { background: transparent; }")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Robot"))
        self.picker = QComboBox()
        self.picker.setMinimumWidth(260)
        self.picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.picker.setMinimumContentsLength(28)
        self.picker.view().setMinimumWidth(420)
        self.picker.setToolTip("Robots of the library (shipped, installed packages) and recent files")
        self.picker.activated.connect(self._on_picked)
        bar.addWidget(expanding(self.picker), 2)    # spare width shared 2:1 with the status line
        self.open_button = QPushButton("Open robot…")
        self.open_button.setToolTip("Open a URDF, xacro (.xacro, .urdf.xacro) or MuJoCo MJCF (.xml) file")
        self.open_button.clicked.connect(self._open_dialog)
        bar.addWidget(self.open_button)
        self.log_button = QPushButton("Play log…", objectName="playLog")
        self.log_button.setToolTip("Play a joint log (CSV, Parquet, bag, MCAP…) on this robot, with linked plots")
        self.log_button.clicked.connect(lambda: self.replay.open_log())
        bar.addWidget(self.log_button)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        bar.addWidget(self.progress)
        self.status_label = ElidedLabel()       # in the tool row: the 3D view keeps that height
        self.status_label.setObjectName("robot_status")
        bar.addWidget(self.status_label, 1)
        self.overlay_buttons = {}
        for key, title in (("frames", "Frames"), ("joint_axes", "Joint axes"), ("com", "CoM"),
                           ("inertia", "Inertia"), ("collision", "Collision")):
            b = QToolButton()
            b.setText(title)
            b.setCheckable(True)
            b.toggled.connect(lambda on, key=key: self.view.set_overlay(key, on))
            if key == "inertia":
                b.setToolTip("Each link's inertia as its equivalent box: the uniform box of the same mass "
                             "and principal moments, on the principal axes at the centre of mass")
            bar.addWidget(b)
            self.overlay_buttons[key] = b
        fit = QToolButton()                     # Reset view and Screenshot: in the workspace menu
        fit.setText("Fit")
        fit.setToolTip("Fit the view to the robot")
        fit.clicked.connect(lambda: self.view.fit_to_robot())
        bar.addWidget(fit)
        layout.addLayout(bar)

        # the 3D view takes most of the page; the panels (joints, targets, dynamics, motion) are
        # tabs of one side column on the right, each scrolling vertically only; the column
        # collapses (the ▶ button, or the handle dragged to the edge) and its width is remembered
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setObjectName("robot_splitter")
        self.view = RobotView()
        self.floating_base = FloatingBaseView(self.view, self.state, make_job=ik_job, overrides=FOLLOW_IK)
        self.view.link_clicked.connect(self._on_link_clicked)
        self.view.gizmo_pressed.connect(self._on_gizmo_pressed)
        self.replay = LogReplayPanel(self.ctx, self.view)   # a joint log played on the robot, under the view
        split.addWidget(self.replay.view_splitter())
        self.joints = JointsPanel()
        self.joints.q_changed.connect(self.state.set_joint_q)
        self.joints.pose_action.connect(lambda old, new, text: self.state.push_pose(
            self.state.full_q(old), self.state.full_q(new), text))
        self.targets = TargetsPanel(self.view, self.state)
        self.targets.optimise_requested.connect(self.optimise)
        self.targets.cancel_requested.connect(self.cancel_ik)
        self.targets.target_dragged.connect(self._on_target_dragged)
        self.targets.drag_finished.connect(self._on_drag_finished)
        self.targets.end_effector_changed.connect(self.state.set_end_effector)
        self.targets.whole_body_changed.connect(lambda: self.set_whole_body(show=False))
        self.dynamics = DynamicsPanel()
        self.motion = MotionPanel(lambda: self.q)
        self.motion.q_requested.connect(lambda q: self.set_q(q))
        self.motion.simulate_requested.connect(self.simulate)
        self.motion.cancel_requested.connect(self._cancel_simulation)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("robot_side_tabs")
        self.side_panels = {}
        for key, title, panel in (("joints", "Joints", self.joints), ("targets", "Targets", self.targets),
                                  ("dynamics", "Dynamics", self.dynamics), ("motion", "Motion", self.motion)):
            side = SidePanel(panel, preferred_width=SIDE_WIDTH)
            side.setObjectName(f"robot_{key}_panel")
            self.side_panels[key] = side
            self.tabs.addTab(side, title)
        self.tabs.setCurrentIndex(1)             # targets first: the workspace's first use
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)
        remember_splitter(split, getattr(self.ctx, "settings", None), SPLITTER_KEY,
                          default=[1000, SIDE_WIDTH])
        split.setCollapsible(0, False)           # the 3D view never disappears
        self.splitter = split
        self.collapse_button = collapse_button(split, 1, "robot panels")
        bar.addWidget(self.collapse_button)
        layout.addWidget(split, 1)

        self.undo_action = self._action("Undo", QKeySequence.StandardKey.Undo, self.state.undo)
        self.redo_action = self._action("Redo", QKeySequence.StandardKey.Redo, self.state.redo)
        self._on_history()

    def _action(self, text: str, key, slot) -> QAction:
        action = QAction(text, self)
        action.setShortcut(key)
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _observe_state(self) -> None:
        ev = self.state.events
        ev.robot.connect(self._on_state_robot)
        ev.q.connect(self._on_state_q)
        ev.end_effector.connect(self._on_state_end_effector)
        ev.ik.connect(self._on_state_ik)
        ev.readouts.connect(self.dynamics.show_readouts)
        ev.simulation.connect(self._on_state_simulation)
        ev.pose_requested.connect(self._go_to)
        ev.history.connect(self._on_history)

    def _on_history(self) -> None:
        h = self.state.history
        self.undo_action.setEnabled(h.can_undo)
        self.redo_action.setEnabled(h.can_redo)
        self.undo_action.setText(f"Undo {h.undo_text}".strip())
        self.redo_action.setText(f"Redo {h.redo_text}".strip())

    @property
    def robot(self) -> LoadedRobot | None:
        return self.state.robot

    def _status(self, message: str) -> None:
        self.status_label.setText(message)
        self.ctx.status(message)

    # ================================================================== robots
    def _fill_picker(self) -> None:
        self.picker.blockSignals(True)
        self.picker.clear()
        try:
            from engine.robots.library import list_robots
            entries = list_robots()
        except Exception as exc:  # noqa: BLE001 - the library is optional for the picker
            log.warning("robot library unavailable: %s", exc)
            entries = []
        for e in entries:
            self.picker.addItem(f"{e.name} — {e.title}", e.name)
        recent = recent_files(self.ctx.settings, RECENT_KEY)
        if recent:
            self.picker.insertSeparator(self.picker.count())
            for path in recent:
                self.picker.addItem(f"{Path(path).name} (recent: {path})", path)
        self.picker.blockSignals(False)

    def _remember(self, loaded: LoadedRobot) -> None:
        self.ctx.settings.setValue(LAST_KEY, loaded.source)
        if Path(loaded.source).name.lower().endswith(ROBOT_FILE_SUFFIXES):
            path = str(Path(loaded.path).resolve())
            add_recent_file(self.ctx.settings, path, RECENT_KEY, MAX_RECENT)
            self.ctx.add_recent_file(path)
            self._fill_picker()
        idx = self.picker.findData(loaded.source)
        if idx < 0:
            idx = self.picker.findData(str(Path(loaded.path).resolve()))
        if idx >= 0:
            self.picker.setCurrentIndex(idx)

    def _on_picked(self, index: int) -> None:
        data = self.picker.itemData(index)
        if data:
            self.load_robot(str(data))

    def load_robot(self, name_or_path: str, xacro_args: dict | None = None, xacro_allowed: bool = False,
                   why: str = "recent"):
        """Load a library robot or a URDF, xacro or MJCF file as a job; returns its JobHandle (None
        when the user declined to expand a xacro file: without ``xacro_allowed``, the user did not
        open it, so :meth:`confirm_xacro` asks first; ``why``: "session" or "recent"). On failure
        the error is shown (ctx.show_error, quoting the engine) and the robot already shown stays.
        """
        xacro_path = None if xacro_allowed else xacro_file_of(str(name_or_path))
        if xacro_path is not None and not self.confirm_xacro(str(xacro_path), why):
            self._status(f"Did not expand {xacro_path.name} (a xacro file)")
            if self.robot is None and self._load_handle is None:
                self.load_robot(DEFAULT_ROBOT)
            return None
        xacro_allowed = xacro_allowed or xacro_path is not None
        if self._load_handle is not None and self._load_handle.is_running:
            self._load_handle.cancel()
        self.progress.setValue(0)
        self.progress.setVisible(True)
        idx = self.picker.findData(str(name_or_path))
        if idx >= 0:
            self.picker.setCurrentIndex(idx)
        self._status(f"Loading {name_or_path}…")
        handle = self.ctx.jobs.submit(load_robot_job(name_or_path, xacro_args=xacro_args, xacro_allowed=xacro_allowed),
                                      name=f"load robot {name_or_path}",
                                      on_result=self._on_loaded,
                                      on_error=lambda msg, tb, src=name_or_path: self._on_load_failed(src, msg),
                                      on_progress=self._on_load_progress)
        handle.ended.connect(lambda h=handle: self._on_load_ended(h))
        self._load_handle = handle
        return handle

    def _on_load_progress(self, update) -> None:
        if update.fraction is not None:
            self.progress.setValue(int(1000 * update.fraction))
        self.progress.setFormat(update.message[:40] or "%p%")

    def _on_load_ended(self, handle) -> None:
        if handle is self._load_handle:
            self.progress.setVisible(False)
            self._load_handle = None

    def _on_load_failed(self, source: str, message: str) -> None:
        shown = self.robot.name if self.robot is not None else "none"
        self._status(f"Could not open {source}; still showing {shown}")
        self.ctx.show_error("Cannot open robot", f"{source}\n\n{message}")
        self.robot_failed.emit(message)
        if self.robot is None and source != DEFAULT_ROBOT:
            # nothing shown yet (a stale last robot, a bad --robot): fall back to the default
            self.load_robot(DEFAULT_ROBOT)

    def _on_loaded(self, loaded: LoadedRobot) -> None:
        self._stop_animation()
        self.cancel_ik()
        self._cancel_simulation()
        for w in loaded.geometry.warnings:
            log.warning("%s", w)
        self.view.set_robot(loaded.geometry, joint_axes=loaded.joint_axes, coms=loaded.coms,
                            inertia_boxes=loaded.inertia_boxes)
        self.state.set_robot(loaded)
        self.replay.set_robot(loaded.model)
        model = loaded.model
        self.view.fit_to_robot()
        self._remember(loaded)
        warn = f" ({len(loaded.geometry.warnings)} mesh warnings, see the log)" if loaded.geometry.warnings else ""
        if loaded.notes:
            warn += "; " + "; ".join(loaded.notes)
            for note in loaded.notes:
                log.warning("%s: %s", loaded.path, note)
        self._status(f"{model.name}: {model.dof} joints, {len(model.link_names)} links, "
                     f"{loaded.geometry.triangles} triangles{warn}{self._pending_note}")
        self._pending_note = ""
        self.robot_loaded.emit(loaded)

    # ================================================================== pose
    @property
    def q(self) -> np.ndarray:
        return self.state.q.copy()

    def set_q(self, q) -> None:
        """Show joint positions q (dof,), SI units, clamped into the limits."""
        self.state.set_q(q)

    def link_pose(self, link: str, q=None) -> np.ndarray:
        """World pose (4, 4) of a link at q (default: the shown pose), from the engine."""
        return self.state.link_pose(link, q)

    def _on_state_robot(self, loaded) -> None:
        state, model = self.state, loaded.model
        self.joints.set_robot(model.joint_names, state.joint_types(), state.lower, state.upper,
                              state.neutral[state.base_size:])
        self.targets.set_robot(model.link_names, state.end_effector, gizmo_size=max(0.03, 0.12 * state.extent()))
        self.targets.set_whole_body(state.floating, model.link_names, state.held_links, state.ik_base)
        self.motion.reset()
        self.dynamics.clear()
        self.floating_base.setup(gizmo_size=max(0.05, 0.2 * state.extent()))

    def _on_state_q(self, q) -> None:
        self.joints.set_q(q[self.state.base_size:], emit=False)
        if self.robot is not None:
            self.view.set_link_poses(self.state.link_poses(q))
            self.floating_base.refresh()
            self._request_readouts()

    def _request_readouts(self) -> None:
        if not self._readouts_timer.isActive():
            self._readouts_timer.start()

    def _submit_readouts(self) -> None:
        state = self.state
        if state.robot is None or not state.end_effector:
            return
        self._readouts.submit(lambda: None if state.robot is None else dynamics_readouts(
            state.model, state.q.copy(), state.end_effector, serial=state.generation))

    def _on_state_end_effector(self, link: str) -> None:
        self.view.set_highlight([link] if link else [])
        if self.targets.end_effector != link:
            self.targets.set_end_effector(link)
        self._request_readouts()

    def _on_link_clicked(self, link: str) -> None:
        self.state.set_end_effector(link)
        self._status(f"end effector: {link}")

    def _go_to(self, q, animate: bool) -> None:
        if not animate:
            self._stop_animation()
            self.set_q(q)
            return
        self._anim_from = self.q
        self._anim_to = np.asarray(q, float)
        self._anim_clock.start()
        self._anim.start()

    def _animate_step(self) -> None:
        s = min(self._anim_clock.elapsed() / ANIMATION_MS, 1.0)
        s_smooth = s * s * (3 - 2 * s)
        self.set_q((1 - s_smooth) * self._anim_from + s_smooth * self._anim_to)
        if s >= 1.0:
            self._anim.stop()

    def _stop_animation(self) -> None:
        if self._anim.isActive():
            self._anim.stop()
            if self._anim_to is not None:
                self.set_q(self._anim_to)

    @property
    def animating(self) -> bool:
        return self._anim.isActive()

    # ================================================================== IK
    def set_whole_body(self, held=None, base=None, show: bool = True) -> None:
        """A floating robot's IK keeps the ``held`` links in place, its base "free" or "fixed"
        (None: as the Targets panel shows)."""
        st = self.state
        st.set_held_links(self.targets.held_links() if held is None else held)
        st.set_ik_base(self.targets.ik_base() if base is None else base)
        if show and st.model is not None:
            self.targets.set_whole_body(st.floating, st.model.link_names, st.held_links, st.ik_base)

    def _ik_request(self, overrides: dict):
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
        request = self._ik_request({})
        if request is None:
            return None
        self.cancel_ik()
        self._stop_animation()
        self.targets.set_busy(True)
        self.targets.set_message("Solving…", None)
        start_q = self.q
        handle = self.ctx.jobs.submit(ik_job(self.robot.model, request), name="robot IK",
                                      on_result=lambda out, q0=start_q: self.state.accept_ik(out, q0),
                                      on_error=lambda msg, tb: self.targets.set_message(f"IK failed: {msg}", None, ok=False),
                                      on_cancelled=lambda: self.targets.set_message("Cancelled.", None),
                                      on_progress=self._on_ik_progress)
        handle.ended.connect(lambda h=handle: self._on_ik_ended(h))
        self._ik_handle = handle
        return handle

    def _on_ik_progress(self, update) -> None:
        if update.fraction is not None:
            self.targets.set_message(f"Solving… {100 * update.fraction:.0f}%", None)

    def _on_ik_ended(self, handle) -> None:
        if handle is self._ik_handle:
            self._ik_handle = None
            self.targets.set_busy(False)

    def cancel_ik(self) -> None:
        if self._ik_handle is not None:
            self._ik_handle.cancel()
        self._follow.cancel()

    def _on_state_ik(self, out) -> None:
        text, ok = describe_ik(out)
        self.targets.set_message(text, out.residual, ok=ok)
        self.ik_finished.emit(out)

    @property
    def last_ik(self):
        return self.state.last_ik

    def _on_gizmo_pressed(self, gizmo) -> None:
        self.targets.select_gizmo(gizmo)
        self._drag_start_q = self.q
        self.state.begin_target_edit()          # the drag's moves: one undo step

    def _on_target_dragged(self) -> None:
        if not self.targets.follow_box.isChecked():
            return
        def make_job():
            request = self._ik_request(dict(FOLLOW_IK))
            return None if request is None else ik_job(self.robot.model, request)
        self._follow.submit(make_job)

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
            self._follow.idle.disconnect(end_when_idle)
            self.state.end_target_edit("follow targets", old_q=start)
        if self._follow.busy:
            self._follow.idle.connect(end_when_idle)
        else:
            self.state.end_target_edit("follow targets", old_q=start)

    # ================================================================== simulation
    def simulate(self, options):
        if self.robot is None:
            return None
        self._cancel_simulation()
        self.motion.set_simulating(True)
        self.motion.status_label.setText("Simulating…")
        gen = self.state.generation
        handle = self.ctx.jobs.submit(
            simulate_job(self.robot.model, self.q, np.zeros(self.state.nv), options,
                         list(self.motion.key_times), list(self.motion.key_poses)),
            name="robot simulation",
            on_result=lambda res: self._on_simulated(res, gen),
            on_error=lambda msg, tb: self.motion.status_label.setText(f"Simulation failed: {msg}"),
            on_cancelled=lambda: self.motion.status_label.setText("Simulation cancelled."),
            on_progress=lambda u: self.motion.status_label.setText(u.message))
        handle.ended.connect(lambda: self.motion.set_simulating(False))
        self._sim_handle = handle
        return handle

    def _on_simulated(self, result, generation) -> None:
        self._sim_handle = None
        self.state.accept_simulation(result, generation)

    def _on_state_simulation(self, result) -> None:
        self.motion.play_trajectory(result.t, result.q, f"{result.mode.replace('_', ' ')}: {result.t[-1]:.2f} s")

    def _cancel_simulation(self) -> None:
        if self._sim_handle is not None and self._sim_handle.is_running:
            self._sim_handle.cancel()
        self._sim_handle = None

    # ================================================================== files
    def file_filters(self) -> list[str]:
        return ["Robot files (*.urdf *.xacro *.xml *.mjcf *.URDF)", "URDF (*.urdf *.URDF)",
                "xacro (*.xacro)", "MuJoCo MJCF (*.xml *.mjcf)", self.replay.file_filter]

    def open_file(self, path: str, xacro_args: dict | None = None) -> bool:
        """Open a robot file; a xacro file without ``xacro_args`` asks for its arguments."""
        if not Path(path).name.lower().endswith(ROBOT_FILE_SUFFIXES):
            return self.replay.open_file(path)      # a joint log: played on the shown robot
        if Path(path).name.lower().endswith(".xacro") and xacro_args is None:
            xacro_args = ask_xacro_args(self, self.ctx.settings, path)
            if xacro_args is None:
                return True          # the user cancelled: nothing to load, the file was ours
        self.load_robot(str(path), xacro_args=xacro_args or None, xacro_allowed=True)   # opening it: the say-so
        return True

    def confirm_xacro(self, path: str, why: str) -> bool:
        """Whether to expand a xacro file a session or recent entry names (tests replace this)."""
        return ask_expand_xacro(self, path, why)

    def _open_dialog(self) -> None:
        # as File > Open URDF: urdf/ the first time, then the last folder a robot came from
        path = open_file_name(self, "Open robot", ";;".join(self.file_filters()), self.ctx.settings, "robot",
                              example_folder("robot"))
        if path:
            self.open_file(path)

    def _screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save screenshot", "robot.png", "PNG (*.png)")
        if path:
            try:
                self.view.save_screenshot(path)
                self._status(f"saved {path}")
            except OSError as exc:
                self.ctx.show_error("Screenshot", str(exc))

    def dragEnterEvent(self, event):
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(Path(u.toLocalFile()).name.lower().endswith(ROBOT_FILE_SUFFIXES) for u in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event):
        for u in event.mimeData().urls():
            if self.open_file(u.toLocalFile()):
                event.acceptProposedAction()
                return
        event.ignore()

    # ================================================================== page interface
    def menu_actions(self) -> list[QAction]:
        shot = QAction("Save 3D view as PNG…", self)
        shot.triggered.connect(self._screenshot_dialog)
        fit = QAction("Fit view to robot", self)
        fit.triggered.connect(self.view.fit_to_robot)
        reset = QAction("Reset view", self)
        reset.triggered.connect(self.view.reset_camera)
        return [self.undo_action, self.redo_action, fit, reset, shot]

    def session_state(self) -> dict:
        return {
            **self.state.session_state(),
            "units": self.joints.units,
            "keyframes": {"times": list(self.motion.key_times), "poses": [q.tolist() for q in self.motion.key_poses]},
            "replay": self.replay.session_state(),
        }

    def _checked_q(self, q) -> np.ndarray:
        values = np.asarray(q, dtype=float).reshape(-1)
        if values.shape[0] != self.robot.model.dof or not np.all(np.isfinite(values)):
            raise ValueError(f"expected {self.robot.model.dof} finite numbers, got {str(q)[:80]}")
        return values

    def _restore_q(self, q) -> None:
        if q is not None:
            self.set_q(self._checked_q(q).tolist())

    def restore_session_state(self, state: dict) -> None:
        if state.get("units") in ("deg", "rad"):
            self.joints.set_units(state["units"])
        source = state.get("robot")
        if not source:
            return

        def apply(_loaded):
            self.robot_loaded.disconnect(apply)
            skipped = []  # damaged parts are named and skipped; the rest is restored
            parts = [("joint positions 'q'", lambda: self._restore_q(state.get("q")))]
            targets = state.get("targets", [])
            targets = targets if isinstance(targets, list) else [targets]
            parts += [(f"target {i + 1}", lambda t=t: self.targets.add_target(
                t["link"], np.asarray(t["pose"], float), bool(t.get("position_only")))) for i, t in enumerate(targets)]
            if "held_links" in state or "ik_base" in state:
                parts.append(("whole-body IK choices", lambda: self.set_whole_body(
                    list(state.get("held_links") or []), state.get("ik_base") or "free")))
            kf = state.get("keyframes") or {}
            poses = kf.get("poses", []) if isinstance(kf, dict) else [kf]
            parts += [(f"keyframe {i + 1}", lambda q=q: self.motion.add_keyframe(self._checked_q(q)))
                      for i, q in enumerate(poses)]
            parts.append(("log replay", lambda: self.replay.restore_session(state.get("replay"))))
            for what, restore in parts:
                try:
                    restore()
                except (TypeError, ValueError, KeyError, IndexError) as exc:
                    skipped.append(f"{what} ({exc})")
            self.state.clear_history()            # a restored session starts a fresh history
            if skipped:
                self.ctx.show_error("Session partly restored",
                                    "Robot workspace: skipped " + "; ".join(skipped) + ". The rest was restored.")
        self.robot_loaded.connect(apply)
        if self.load_robot(source, xacro_args=state.get("xacro_args") or None, why="session") is None:
            self.robot_loaded.disconnect(apply)     # a xacro robot the user chose not to expand

    def shutdown(self) -> None:
        self.replay.shutdown()
        self.ctx.settings.setValue(UNITS_KEY, self.joints.units)
        self._stop_animation()
        self.motion.stop()
        self.cancel_ik()
        self._readouts_timer.stop()
        self._readouts.cancel()
        self._cancel_simulation()
        if self._load_handle is not None:
            self._load_handle.cancel()
