"""The Robot workspace's log replay panel: a joint log on the robot in the 3D view.

Sits under the 3D view: a bar (open a log, map its columns, episode, ghost model and
horizon, exports), the :class:`~app.widgets.timeline.Timeline` and the
:class:`~app.widgets.linked_plots.LinkedPlots` of the logged positions, velocities and
torques (and the ghost's prediction and error). Every change goes through the Qt-free
:class:`~app.workspaces.robot.log_replay_state.LogReplayState` (``panel.state``); the panel
observes it and moves the robot in the view (``view.set_link_poses``) and a translucent ghost.

Hooks for the page: ``set_robot(model)`` when the robot changes, ``show_log(...)`` for the
Model lab's "Show on robot", ``session_state()`` / ``restore_session(d)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph.opengl as gl
from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QImage, QKeySequence, QPainter, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressDialog,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.viewer.gizmo import matrix_to_qt
from app.widgets.layout import ElidedLabel
from app.widgets.linked_plots import LinkedPlots
from app.widgets.timeline import Timeline
from app.workspaces.robot.log_replay_state import SPEEDS, LogReplayState
from engine.logs import LOG_FILE_FILTERS, LogError
from engine.logs.reader import ReadOptions, episodes, read_log

__all__ = ["LogReplayPanel"]

GHOST_RGBA = (1.0, 0.62, 0.2, 0.35)
FRAME_INTERVAL_MS = 33


class LogReplayPanel(QWidget):
    """The replay bar, timeline and linked plots (see the module doc)."""

    def __init__(self, ctx, view, parent=None):
        super().__init__(parent)
        self.setObjectName("logReplayPanel")
        self.ctx = ctx
        self.view = view
        self.state = LogReplayState()
        self._ghost_items: dict[str, gl.GLMeshItem] = {}
        self._load_handle = None
        self._ghost_handle = None
        self._export = None      # the video export in progress (log_replay_export.VideoExport)
        self.mapping_dialog = None
        self._build()
        self._clock = QElapsedTimer()
        self._timer = QTimer(self, interval=FRAME_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)
        s = self.state.events
        s.replay.connect(self._on_replay)
        s.cursor.connect(self._on_cursor)
        s.playing.connect(self._on_playing)
        s.loop.connect(self.timeline.set_loop)
        s.loop.connect(self.plots.set_region)
        s.ghost.connect(self._on_ghost)
        s.message.connect(self._message)

    # ------------------------------------------------------------------ what the page lays out
    file_filter = LOG_FILE_FILTERS[0]

    def view_splitter(self) -> QSplitter:
        """The 3D view over this panel in a vertical splitter (the page puts it where the view was)."""
        split = QSplitter(Qt.Orientation.Vertical)
        split.setObjectName("viewAndReplay")
        split.addWidget(self.view)
        split.addWidget(self)
        split.setStretchFactor(0, 1)
        split.setCollapsible(0, False)
        split.setSizes([640, 240])
        self._split = split
        self._show_replay_area(self.state.replay is not None)
        return split

    def _show_replay_area(self, on: bool) -> None:
        """The panel only while a log is open (the page's "Play log…" opens one); the timeline and
        plots only while it plays on the robot. Until then the 3D view keeps the room."""
        self.setVisible(on or self.state.table is not None)
        self.timeline.setVisible(on)
        self.plots.setVisible(on)
        split = getattr(self, "_split", None)
        if split is None:
            return
        total = sum(split.sizes()) or 880
        panel = max(360, total * 2 // 5) if on else self.minimumSizeHint().height()
        split.setSizes([max(total - panel, 1), panel])

    def open_file(self, path: str) -> bool:
        """Open ``path`` if it is a log (by its suffix); False for other files."""
        suffixes = {p.lstrip("*").lower() for p in self.file_filter.split("(")[1].rstrip(")").split()}
        if Path(path).suffix.lower() not in suffixes:
            return False
        self.open_log(str(path))
        return True

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        self.open_button = QPushButton("Open log…", objectName="openLog")
        self.open_button.clicked.connect(lambda: self.open_log())
        self.map_button = QPushButton("Map columns…", objectName="mapColumns", enabled=False)
        self.map_button.clicked.connect(lambda: self.show_mapping_dialog())
        self.episode = QSpinBox(objectName="episode", minimum=0, maximum=1_000_000, visible=False)
        self.episode.setPrefix("episode ")
        self.episode.editingFinished.connect(lambda: self.state.set_episode(self.episode.value()))
        self.ghost_box = QComboBox(objectName="ghostModel")
        self.ghost_box.addItems(["No ghost", "Rigid body (URDF)", "Learned model…"])
        self.ghost_box.activated.connect(self._on_ghost_choice)
        self.horizon = QDoubleSpinBox(objectName="horizon", decimals=2, minimum=0.01, maximum=60.0, value=1.0,
                                      suffix=" s", toolTip="How far the ghost is rolled out from the cursor")
        self.horizon.valueChanged.connect(self.state.set_horizon)
        self.ghost_button = QPushButton("Ghost from cursor", objectName="ghostButton", enabled=False)
        self.ghost_button.clicked.connect(lambda: self.request_ghost())
        self.follow = QCheckBox("follow", objectName="ghostFollows",
                                toolTip="Roll the ghost out again whenever the cursor stops")
        self.video_button = QPushButton("Export video…", objectName="exportVideo", enabled=False)
        self.video_button.clicked.connect(lambda: self.export_video())
        self.plots_button = QPushButton("Export plots…", objectName="exportPlots", enabled=False)
        self.plots_button.clicked.connect(lambda: self.export_plots())
        # two short rows, so the panel never makes the window wider than a laptop screen
        for w in (self.open_button, self.map_button, self.episode, self.video_button, self.plots_button):
            bar.addWidget(w)
        bar.addStretch(1)
        ghost_bar = QHBoxLayout()
        for w in (QLabel("Ghost"), self.ghost_box, self.horizon, self.ghost_button, self.follow):
            ghost_bar.addWidget(w)
        ghost_bar.addStretch(1)
        # one line, cut with "…" (the whole message in its tooltip and the status bar): a wrapped
        # message was cut off by the splitter's short pane when the log did not fit a new robot
        self.status = ElidedLabel("Open a joint log (CSV, Parquet, bag, MCAP…) to play it on this robot.")
        self.status.setObjectName("replayStatus")
        layout.addLayout(bar)
        layout.addLayout(ghost_bar)
        self.timeline = Timeline(SPEEDS)
        self.timeline.scrubbed.connect(self.state.set_cursor)
        self.timeline.play_toggled.connect(self.state.toggle_play)
        self.timeline.stepped.connect(self.state.step)
        self.timeline.speed_changed.connect(self.state.set_speed)
        self.timeline.loop_changed.connect(lambda loop: self.state.set_loop(*(loop or (None,))))
        layout.addWidget(self.timeline)
        self.plots = LinkedPlots()
        self.plots.cursor_moved.connect(self.state.set_cursor)
        self.plots.region_changed.connect(lambda r: self.state.set_loop(*r))
        self.plots.setMinimumHeight(300)
        layout.addWidget(self.plots, 1)
        layout.addWidget(self.status)
        for key, slot in (
            (Qt.Key.Key_Space, self.state.toggle_play),
            (Qt.Key.Key_Period, lambda: self.state.step(1)),
            (Qt.Key.Key_Comma, lambda: self.state.step(-1)),
        ):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
        self._cursor_idle = QTimer(self, singleShot=True, interval=250)
        self._cursor_idle.timeout.connect(self._follow_ghost)

    def _message(self, text: str) -> None:
        self.status.setText(text)
        self.ctx.status(text)

    # ------------------------------------------------------------------ robot and log
    def set_robot(self, model) -> None:
        """The page's robot changed (an engine RobotModel, or None)."""
        self._clear_ghost_items()
        self.state.set_robot(model)
        if self.ghost_box.currentIndex() == 1 and model is not None:
            self.state.set_ghost_model("rigid")

    def open_log(self, path: str | None = None) -> None:
        """Read a log in a job and replay it (a file dialog when ``path`` is None)."""
        if self.state.robot is None:
            self._message("Load a robot first, then open its log.")
            return
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, "Open a joint log", "", ";;".join(LOG_FILE_FILTERS))
            if not path:
                return

        def job(ctx):
            return read_log(path, ctx, ReadOptions())

        self._message(f"Reading {Path(path).name}…")
        handle = self.ctx.jobs.submit(job, name=f"read {Path(path).name}")
        handle.finished.connect(lambda table: self._on_table(table))
        handle.failed.connect(lambda message, _tb: self._failed("Cannot open the log", message))
        self._load_handle = handle

    def _on_table(self, table) -> None:
        try:
            self.state.open_table(table)
        except LogError as exc:   # nothing matched: the user maps by hand
            self.state.table = table
            self.state.path = table.source
            self._show_replay_area(False)
            self._message(f"{exc}")
            self.show_mapping_dialog()
            return
        self.ctx.add_recent_file(table.source)

    def _failed(self, title: str, message: str) -> None:
        self._message(f"{title}: {message}")
        self.ctx.show_error(title, message)

    def show_log(self, source, mapping=None, model=None, model_name: str = "") -> bool:
        """The Model lab's "Show on robot": a log path or LogTable, an optional LogMapping /
        ReplayMapping and an optional model for the ghost (see LogReplayState.show_log).
        Returns False (with a message) when the log does not fit the shown robot."""
        try:
            self.state.show_log(source, mapping, model, model_name)
        except (LogError, ValueError, OSError) as exc:
            self._failed("The log cannot be shown on this robot", str(exc))
            return False
        if model is not None:
            self.ghost_box.setCurrentIndex(2)
            self.ghost_button.setEnabled(True)
            self.request_ghost()
        return True

    def show_mapping_dialog(self):
        """The shared mapping dialog on the open log (roles and units only)."""
        from app.widgets.mapping_dialog import LogMappingDialog

        table = self.state.table
        if table is None:
            return None
        mapping = self.state.rmap.mapping if self.state.rmap is not None else None
        dialog = LogMappingDialog(table, mapping=mapping, origin="matched by name" if mapping else "",
                                  parent=self, show_preparation=False)
        dialog.accepted.connect(lambda: self._apply_mapping(dialog.mapping()))
        dialog.open()
        self.mapping_dialog = dialog
        return dialog

    def _apply_mapping(self, mapping) -> None:
        try:
            self.state.set_mapping(mapping)
        except LogError as exc:
            self._failed("The mapping does not fit the robot", str(exc))

    # ------------------------------------------------------------------ state observers
    def _on_replay(self, replay) -> None:
        on = replay is not None
        for w in (self.map_button, self.video_button, self.plots_button):
            w.setEnabled(on or (w is self.map_button and self.state.table is not None))
        self.ghost_button.setEnabled(on and self.state.ghost_model is not None)
        self.plots.clear()
        self.plots.set_region(None)
        self._clear_ghost_items()
        self._show_replay_area(on)
        if not on:
            self.timeline.setEnabled(False)
            return
        eps = episodes(self.state.table)
        self.episode.setVisible(len(eps) > 1)
        if len(eps) > 1:
            self.episode.setRange(eps[0], eps[-1])
            if self.state.rmap.episode is not None:
                self.episode.setValue(self.state.rmap.episode)
        lo, hi = self.state.t_range
        self.timeline.set_range(lo, hi)
        units = {"q": "rad", "qd": "rad/s", "tau": "N m"} if all(
            self.state.robot.description.joint(j).type in ("revolute", "continuous")
            for j in self.state.robot.joint_names) else \
            {"q": "rad or m", "qd": "rad/s or m/s", "tau": "N m or N"}
        titles = {"q": "position", "qd": "velocity", "tau": "torque"}
        for key, (t, values, labels) in self.state.series().items():
            self.plots.add_plot(key, titles[key], units[key])
            self.plots.set_curves(key, t, values, labels)
        self.plots.set_x_range(lo, hi)
        self._on_cursor(self.state.cursor)

    def _on_cursor(self, t: float) -> None:
        self.timeline.set_time(t)
        self.plots.set_cursor(t)
        if self.state.replay is not None and self.view is not None:
            self.view.set_link_poses(self.state.link_poses_at(t))
            g = self.state.ghost
            if g is not None and self._ghost_items:   # inside its horizon the ghost shows the same instant
                self._show_ghost_items(self.state.ghost_link_poses(t if g.t[0] < t <= g.t[-1] else None))
        if self.follow.isChecked() and not self.state.playing:
            self._cursor_idle.start()

    def _on_playing(self, playing: bool) -> None:
        self.timeline.set_playing(playing)
        if playing:
            self._clock.start()
            self._timer.start()
        else:
            self._timer.stop()

    def _tick(self) -> None:
        elapsed = self._clock.restart() / 1000.0
        self.state.advance(min(elapsed, 0.25))

    # ------------------------------------------------------------------ ghost
    def _on_ghost_choice(self, index: int) -> None:
        if index == 0:
            self.state.set_ghost_model(None)
        elif index == 1:
            self.state.set_ghost_model("rigid")
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Learned model", "", "Learned models (*.json)")
            if not path:
                self.ghost_box.setCurrentIndex(0)
                self.state.set_ghost_model(None)
                return
            self.load_learned_model(path)
        self.ghost_button.setEnabled(self.state.ghost_model is not None and self.state.replay is not None)

    def load_learned_model(self, path: str) -> None:
        """A model saved by the Model lab or ``learn train`` (``.json`` + ``.safetensors``)."""
        from engine.io import CheckpointError
        from engine.models.registry import load_model

        try:
            model, meta = load_model(Path(path).parent, Path(path).stem)
        except (CheckpointError, ValueError, OSError) as exc:
            self._failed("Cannot load the model", str(exc))
            self.ghost_box.setCurrentIndex(0)
            return
        model.eval()
        self.state.set_ghost_model(model, f"{meta.get('type', 'model')} ({Path(path).stem})")
        self.ghost_box.setCurrentIndex(2)

    def request_ghost(self) -> None:
        """Roll the chosen model out from the cursor in a job."""
        try:
            job = self.state.ghost_job()
        except ValueError as exc:
            self._message(str(exc))
            return
        if self._ghost_handle is not None and self._ghost_handle.is_running:
            self._ghost_handle.cancel()
        handle = self.ctx.jobs.submit(job, name="ghost rollout")
        handle.finished.connect(self.state.accept_ghost)
        handle.failed.connect(lambda message, _tb: self._failed("The ghost cannot be rolled out", message))
        self._ghost_handle = handle

    def _follow_ghost(self) -> None:
        if self.follow.isChecked() and self.state.ghost_model is not None and self.state.replay is not None:
            self.request_ghost()

    def _on_ghost(self, ghost) -> None:
        if "q" not in self.plots.plots:
            return
        r = self.state.replay
        ids = np.flatnonzero(r.mapped) if r is not None else []
        if ghost is None:
            self.plots.set_overlay("q", None, None, [])
            if "error" in self.plots.plots:
                self.plots.remove_plot("error")
            self._clear_ghost_items()
            return
        labels = [r.column_names[i] for i in ids]
        self.plots.set_overlay("q", ghost.t, ghost.q[:, ids], labels)
        if "qd" in self.plots.plots:
            self.plots.set_overlay("qd", ghost.t, ghost.qd[:, ids], labels)
        self.plots.add_plot("error", "ghost − log", "rad")
        self.plots.set_overlay("error", ghost.t, ghost.error[:, ids], labels, prefix="error ")
        self._show_ghost_items(self.state.ghost_link_poses())   # the end of the horizon

    def _show_ghost_items(self, poses) -> None:
        geometry = getattr(self.view, "geometry_data", None)
        if poses is None or geometry is None:
            return
        if not self._ghost_items:
            for name, g in geometry.links.items():
                if g.visual is None:
                    continue
                item = gl.GLMeshItem(vertexes=g.visual.vertices, faces=g.visual.faces, color=GHOST_RGBA,
                                     smooth=False, shader="shaded", glOptions="translucent")
                self._ghost_items[name] = item
                self.view.addItem(item)
        for name, item in self._ghost_items.items():
            if name in poses:
                item.setTransform(matrix_to_qt(poses[name]))
        self.view.update()

    def _clear_ghost_items(self) -> None:
        for item in self._ghost_items.values():
            self.view.removeItem(item)
        self._ghost_items = {}

    # ------------------------------------------------------------------ export
    def export_plots(self, path: str | None = None) -> Path | None:
        """The linked plots as ``.png``, ``.svg`` or ``.csv``."""
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export plots", "replay_plots.png",
                                                  "PNG (*.png);;SVG (*.svg);;CSV (*.csv)")
            if not path:
                return None
        out = self.plots.export(path)
        self._message(f"Wrote {out}")
        return out

    def grab_frame(self, t: float | None = None) -> np.ndarray:
        """The 3D view at ``t`` (default: the cursor) with the time and a timeline bar
        drawn under it, as an (H, W, 3) uint8 array of even size."""
        if t is not None:
            self.state.set_cursor(t)
        image: QImage = self.view.grabFramebuffer().convertToFormat(QImage.Format.Format_RGB888)
        lo, hi = self.state.t_range
        painter = QPainter(image)
        try:
            w, h = image.width(), image.height()
            painter.fillRect(0, h - 26, w, 26, QColor(20, 22, 26))
            frac = 0.0 if hi <= lo else (self.state.cursor - lo) / (hi - lo)
            painter.fillRect(8, h - 10, int((w - 16) * frac), 4, QColor(255, 209, 102))
            painter.setPen(QColor(235, 235, 235))
            painter.setFont(QFont("monospace", 10))
            painter.drawText(8, h - 13, f"t = {self.state.cursor:7.3f} s  ({Path(self.state.path).name})")
        finally:
            painter.end()
        w, h = image.width() // 2 * 2, image.height() // 2 * 2
        ptr = image.constBits()
        arr = np.frombuffer(ptr, np.uint8, count=image.sizeInBytes()).reshape(
            image.height(), image.bytesPerLine()
        )
        return arr[:h, : w * 3].reshape(h, w, 3).copy()

    def export_video(self, path: str | None = None, fps: float = 30.0, start: float | None = None,
                     end: float | None = None):
        """The 3D view with its timeline as ``.mp4`` or ``.gif``: frames grabbed at ``fps`` of
        log time over the loop range (else the whole log). Returns the running
        :class:`~app.workspaces.robot.log_replay_export.VideoExport` (None when nothing is
        exported): frames are rendered in short slices on the UI thread and encoded in a job,
        with progress, time left and Cancel in a dialog that does not block the event loop."""
        from app.workspaces.robot.log_replay_export import VideoExport

        if self.state.replay is None:
            return None
        if self._export is not None and self._export.running:
            self._message("A video is being written; wait for it or cancel it first.")
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self, "Export video", "replay.mp4", "MP4 (*.mp4);;GIF (*.gif)"
            )
            if not path:
                return None
        lo, hi = self.state.loop or self.state.t_range
        lo = lo if start is None else start
        hi = hi if end is None else end
        times = lo + np.arange(int(np.floor((hi - lo) * fps + 1e-9)) + 1) / fps
        self.state.pause()
        keep = self.state.cursor
        progress = QProgressDialog("Writing the video…", "Cancel", 0, 1000, self)
        progress.setObjectName("videoProgress")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(300)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        export = VideoExport(self.ctx.jobs, self.grab_frame, times, path, fps, parent=self)
        self._export = export
        self.video_button.setEnabled(False)

        def on_progress(fraction: float, text: str) -> None:
            progress.setValue(int(round(fraction * 1000)))
            progress.setLabelText(f"Writing {Path(path).name}… {text}")

        def on_ended(_info, message: str) -> None:
            progress.close()
            self.state.set_cursor(keep)
            self.video_button.setEnabled(self.state.replay is not None)
            self._message(message)

        export.progressed.connect(on_progress)
        export.ended.connect(on_ended)
        progress.canceled.connect(export.cancel)
        return export.start()

    # ------------------------------------------------------------------ session
    def shutdown(self) -> None:
        """Stop playing and cancel this panel's jobs (the page's shutdown calls it)."""
        self.state.pause()
        self._timer.stop()
        self._cursor_idle.stop()
        for handle in (self._load_handle, self._ghost_handle):
            if handle is not None and handle.is_running:
                handle.cancel()
        if self._export is not None and self._export.running:
            self._export.cancel()

    def session_state(self) -> dict:
        return self.state.to_dict()

    def restore_session(self, d: dict | None) -> None:
        try:
            self.state.from_dict(d)
        except (LogError, OSError, ValueError) as exc:
            self._message(f"The session's log could not be replayed: {exc}")
