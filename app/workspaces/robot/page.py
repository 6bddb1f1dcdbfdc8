"""The Robot workspace page: lays out widgets, observes a :class:`RobotState` and forwards
gestures to it; jobs (loading, IK, readouts, simulation) report back into the state.

Layout: a tool row (:mod:`.toolbar`: robot picker, Open robot…, view toggles, load progress),
the 3D view taking most of the page, and one side column on the right with tabs (Joints,
Targets, Dynamics, Motion), each scrolling vertically only; the column collapses and its width
is remembered. Every long computation runs as a job: loading (:mod:`.robot_loading`: URDF +
meshes), IK (:mod:`.ik_control`: Optimise, and Follow with only the latest request solved), the
dynamics readouts and simulations. Sessions are saved and restored by :mod:`.session`.

Scripting/test surface: ``state`` (the Qt-free RobotState: q, targets, history, results),
``load_robot(name_or_path)``, ``robot``, ``set_q(q)``, ``q``, ``targets.add_target(link, pose)``,
``optimise()``, ``view``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu, QSplitter, QTabWidget, QVBoxLayout, QWidget

from app.viewer.scene import RobotView
from app.widgets.file_dialogs import example_folder, open_file_name
from app.widgets.latest_job import LatestJob
from app.widgets.layout import SidePanel, collapse_button, remember_splitter
from app.workspaces.robot.constraint_overlay import ConstraintOverlay
from app.workspaces.robot.dynamics_panel import DynamicsPanel
from app.workspaces.robot.floating_base import FloatingBaseView
from app.workspaces.robot.ik_control import FOLLOW_IK, TargetsIK
from app.workspaces.robot.joints_panel import JointsPanel
from app.workspaces.robot.log_replay import LogReplayPanel
from app.workspaces.robot.motion_panel import MotionPanel
from app.workspaces.robot.pose_animation import PoseAnimation
from app.workspaces.robot.robot_jobs import (
    LoadedRobot,
    dynamics_readouts,
    ik_job,
    simulate_job,
    xacro_file_of,
)
from app.workspaces.robot.robot_loading import DEFAULT_ROBOT, RobotLoader
from app.workspaces.robot.session import restore_robot_session, robot_session_state
from app.workspaces.robot.state import RobotState, describe_ik
from app.workspaces.robot.targets_panel import TargetsPanel
from app.workspaces.robot.toolbar import RECENT_KEY, RobotToolRow
from app.workspaces.robot.xacro_dialogs import ask_expand_xacro, ask_xacro_args
from engine.robots.files import ROBOT_FILE_SUFFIXES

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_ROBOT", "LAST_KEY", "RECENT_KEY", "RobotPage"]

LAST_KEY = "robot/last"
UNITS_KEY = "robot/angle_units"
SPLITTER_KEY = "robot/splitter"
SIDE_WIDTH = 380           # the side column's first width (px); the 3D view takes the rest
READOUT_INTERVAL_MS = 60


class RobotPage(QWidget):
    """The Robot workspace page (``RobotPage(ctx, parent=None)``)."""

    robot_loaded = Signal(object)      # LoadedRobot
    robot_failed = Signal(str)         # the error message shown
    ik_finished = Signal(object)       # IKOutcome

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.state = RobotState()
        self._sim_handle = None
        self.animation = PoseAnimation(self.set_q, self)
        self.setAcceptDrops(True)
        self._build()
        self.ik = TargetsIK(ctx, self.state, self.targets, self.animation.stop, self)
        self._follow = self.ik.follow
        self.floating_base.solver = self._follow     # a base drag with held links: solved in the follow job
        self.loader = RobotLoader(ctx, self.tool_row, lambda path, why: self.confirm_xacro(path, why),
                                  lambda: self.robot, self._status, self)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(self.robot_failed.emit)
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
        self._fill_picker()
        chosen = ctx.options.get("robot")      # a xacro file named on the command line: the user's say-so
        start = str(chosen or self.ctx.settings.value(LAST_KEY) or DEFAULT_ROBOT)
        self._pending_note = ""      # said with the next loaded robot's status
        if not chosen and xacro_file_of(start) is not None:      # the last run's xacro waits in the list
            self._pending_note = (f"; the last robot, {Path(start).name}, is a xacro file: choose it in "
                                  "the robot list to expand it again")
            start = DEFAULT_ROBOT
        self.load_robot(start, xacro_allowed=bool(chosen))

    # ================================================================== layout
    def _build(self) -> None:
        # panes and scroll areas show the window behind them (so they follow the app theme)
        self.setStyleSheet("QTabWidget::pane { background: transparent; border: 1px solid palette(mid); }"
                           "QScrollArea { background: transparent; border: none; }"
                           "QScrollArea > QWidget > QWidget { background: transparent; }")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.tool_row = bar = RobotToolRow()
        self.picker, self.progress, self.status_label = bar.picker, bar.progress, bar.status_label
        self.open_button, self.log_button = bar.open_button, bar.log_button
        self.overlay_buttons = bar.overlay_buttons
        self.picker.activated.connect(self._on_picked)
        self.open_button.clicked.connect(self._open_dialog)
        self.tree_menu = QMenu("Kinematic Tree", self)           # an MJCF scene's trees (Workspace menu)
        self.tree_menu.setToolTipsVisible(True)
        self.tree_group = QActionGroup(self)
        self.tree_group.triggered.connect(lambda action: self.load_tree(action.data()))
        self.tree_menu.menuAction().setEnabled(False)
        self.log_button.clicked.connect(lambda: self.replay.open_log())
        for key, button in self.overlay_buttons.items():
            button.toggled.connect(lambda on, key=key: self.view.set_overlay(key, on))
        bar.fit_button.clicked.connect(lambda: self.view.fit_to_robot())
        layout.addLayout(bar)

        # the 3D view takes most of the page; the panels (joints, targets, dynamics, motion) are
        # tabs of one side column on the right, each scrolling vertically only; the column
        # collapses (the ▶ button, or the handle dragged to the edge) and its width is remembered
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setObjectName("robot_splitter")
        self.view = RobotView()
        self.floating_base = FloatingBaseView(self.view, self.state, make_job=ik_job, overrides=FOLLOW_IK)
        self.view.link_clicked.connect(self._on_link_clicked)
        self.view.gizmo_pressed.connect(lambda gizmo: self.ik.gizmo_pressed(gizmo))
        self.replay = LogReplayPanel(self.ctx, self.view)   # a joint log played on the robot, under the view
        split.addWidget(self.replay.view_splitter())
        self.joints = JointsPanel()
        self.joints.q_changed.connect(self.state.set_joint_q)
        self.joints.pose_action.connect(lambda old, new, text: self.state.push_pose(
            self.state.full_q(old), self.state.full_q(new), text))
        self.targets = TargetsPanel(self.view, self.state)
        self.dynamics = DynamicsPanel()
        self.constraint_overlay = ConstraintOverlay(self.view, self.state, self.dynamics.constraints_label)
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
        self.tool_row.fill_picker(self.ctx.settings)

    def _on_picked(self, index: int) -> None:
        data = self.picker.itemData(index)
        if data:
            self.load_robot(str(data))

    def _show_trees(self, trees, tree: str | None) -> None:
        """Workspace > Kinematic Tree lists an MJCF file's trees (``((name, summary), ...)``;
        disabled for one): the loader's choice first (data None), then each tree, ``tree`` checked."""
        self.tree_menu.clear()
        for action in self.tree_group.actions():
            self.tree_group.removeAction(action)
        if len(trees) > 1:
            entries = [("Robot and Objects", None,
                        "the robot and the free objects it can keep beside it (else the largest tree)")]
            entries += [(f"Tree {name}", name, summary) for name, summary in trees]
            for text, data, tip in entries:
                action = self.tree_menu.addAction(text)
                action.setData(data)
                action.setToolTip(tip)
                action.setCheckable(True)
                action.setChecked(data == tree)
                self.tree_group.addAction(action)
        self.tree_menu.menuAction().setEnabled(len(trees) > 1)

    def load_tree(self, tree: str | None):
        """Load another kinematic tree of the MJCF file shown (None: the loader's choice); the
        tree picker's action."""
        if self.robot is None:
            return None
        return self.loader.load(self.robot.source, why="recent", tree=tree)

    def load_robot(self, name_or_path: str, xacro_args: dict | None = None, xacro_allowed: bool = False,
                   why: str = "recent", tree: str | None = None):
        """Load a library robot or a URDF, xacro or MJCF file as a job; returns its JobHandle (None
        when the user declined to expand a xacro file: without ``xacro_allowed``, the user did not
        open it, so :meth:`confirm_xacro` asks first; ``why``: "session" or "recent"; ``tree``: the
        kinematic tree of an MJCF scene, None: the loader's choice). On failure the error is shown
        (ctx.show_error, quoting the engine) and the robot already shown stays.
        """
        return self.loader.load(name_or_path, xacro_args, xacro_allowed, why, tree=tree)

    @property
    def _load_handle(self):
        return self.loader.handle

    def _on_loaded(self, loaded: LoadedRobot) -> None:
        self.animation.stop()
        self.ik.cancel()
        self._cancel_simulation()
        for w in loaded.geometry.warnings:
            log.warning("%s", w)
        self.view.set_robot(loaded.geometry, joint_axes=loaded.joint_axes, coms=loaded.coms,
                            inertia_boxes=loaded.inertia_boxes)
        self.state.set_robot(loaded)
        self.replay.set_robot(loaded.model)
        model = loaded.model
        self.view.fit_to_robot()
        self.ctx.settings.setValue(LAST_KEY, loaded.source)
        self.tool_row.remember(loaded, self.ctx.settings, self.ctx.add_recent_file)
        self._show_trees(loaded.trees, loaded.tree)
        warnings = loaded.geometry.warnings
        warn = f" ({len(warnings)} mesh warnings, see the log)" if warnings else ""
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
        self.joints.set_robot(state.slider_names(), state.joint_types(), state.lower, state.upper,
                              state.slider_q(state.neutral))
        self.targets.set_robot(model.link_names, state.end_effector,
                               gizmo_size=max(0.03, 0.12 * state.extent()))
        self.targets.set_whole_body(state.floating, model.link_names, state.held_links, state.ik_base)
        self.motion.reset()
        self.dynamics.clear()
        self.floating_base.setup(gizmo_size=max(0.05, 0.2 * state.extent()))

    def _on_state_q(self, q) -> None:
        self.joints.set_q(self.state.slider_q(q), emit=False)
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
        if animate:
            self.animation.start(self.q, q)
        else:
            self.animation.stop()
            self.set_q(q)

    @property
    def animating(self) -> bool:
        return self.animation.active

    # ================================================================== IK
    def set_whole_body(self, held=None, base=None, show: bool = True) -> None:
        """A floating robot's IK keeps the ``held`` links in place, its base "free" or "fixed"
        (None: as the Targets panel shows)."""
        self.ik.set_whole_body(held, base, show)

    def _ik_request(self, overrides: dict):
        """The state's request for its targets and the panel's options; None (message shown) if none."""
        return self.ik.request(overrides)

    def optimise(self):
        """Solve IK for every target as a job; the robot animates to the solution."""
        return self.ik.optimise()

    def cancel_ik(self) -> None:
        self.ik.cancel()

    def _on_state_ik(self, out) -> None:
        text, ok = describe_ik(out)
        self.targets.set_message(text, out.residual, ok=ok)
        self.ik_finished.emit(out)

    @property
    def last_ik(self):
        return self.state.last_ik

    # ================================================================== simulation
    def simulate(self, options):
        if self.robot is None:
            return None
        self._cancel_simulation()
        self.motion.set_simulating(True)
        say = self.motion.status_label.setText
        say("Simulating…")
        gen = self.state.generation
        handle = self.ctx.jobs.submit(
            simulate_job(self.robot.model, self.q, np.zeros(self.state.nv), options,
                         list(self.motion.key_times), list(self.motion.key_poses),
                         joint_terms=getattr(self.robot, "joint_terms", None)),
            name="robot simulation",
            on_result=lambda res: self._on_simulated(res, gen),
            on_error=lambda msg, tb: say(f"Simulation failed: {msg}"),
            on_cancelled=lambda: say("Simulation cancelled."),
            on_progress=lambda u: say(u.message))
        handle.ended.connect(lambda: self.motion.set_simulating(False))
        self._sim_handle = handle
        return handle

    def _on_simulated(self, result, generation) -> None:
        self._sim_handle = None
        self.state.accept_simulation(result, generation)

    def _on_state_simulation(self, result) -> None:
        self.motion.play_trajectory(result.t, result.q,
                                    f"{result.mode.replace('_', ' ')}: {result.t[-1]:.2f} s")

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
        # opening it: the user's say-so to expand a xacro file
        self.load_robot(str(path), xacro_args=xacro_args or None, xacro_allowed=True)
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
        return [self.undo_action, self.redo_action, fit, reset, self.tree_menu.menuAction(), shot]

    def session_state(self) -> dict:
        return robot_session_state(self)

    def restore_session_state(self, state: dict) -> None:
        restore_robot_session(self, state)

    def shutdown(self) -> None:
        self.replay.shutdown()
        self.ctx.settings.setValue(UNITS_KEY, self.joints.units)
        self.animation.stop()
        self.motion.stop()
        self.cancel_ik()
        self._readouts_timer.stop()
        self._readouts.cancel()
        self._cancel_simulation()
        self.loader.cancel()
