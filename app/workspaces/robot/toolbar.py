"""The Robot workspace's tool row: the robot picker (library robots and recent files), Open
robot…, Play log…, the load progress, the status line, the 3D view's overlay toggles and Fit."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QPushButton, QToolButton

from app.settings import add_recent_file, recent_files
from app.widgets.layout import ElidedLabel, expanding
from engine.robots.files import ROBOT_FILE_SUFFIXES

log = logging.getLogger(__name__)

__all__ = ["OVERLAYS", "RECENT_KEY", "RobotToolRow"]

RECENT_KEY = "robot/recent"
MAX_RECENT = 8
# the 3D view's overlays: (key, button text)
OVERLAYS = (("frames", "Frames"), ("joint_axes", "Joint axes"), ("com", "CoM"),
            ("inertia", "Inertia"), ("collision", "Collision"))


class RobotToolRow(QHBoxLayout):
    """The row's widgets, unconnected: the page wires them to what they do."""

    def __init__(self):
        super().__init__()
        self.addWidget(QLabel("Robot"))
        self.picker = QComboBox()
        self.picker.setMinimumWidth(260)
        self.picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.picker.setMinimumContentsLength(28)
        self.picker.view().setMinimumWidth(420)
        self.picker.currentIndexChanged.connect(self._picker_tooltip)   # the whole name, however narrow
        self._picker_tooltip()
        self.addWidget(expanding(self.picker), 2)    # spare width shared 2:1 with the status line
        self.open_button = QPushButton("Open robot…")
        self.open_button.setToolTip("Open a URDF, xacro (.xacro, .urdf.xacro) or MuJoCo MJCF (.xml) file")
        self.addWidget(self.open_button)
        self.log_button = QPushButton("Play log…", objectName="playLog")
        self.log_button.setToolTip("Play a joint log (CSV, Parquet, bag, MCAP…) on this robot, with linked plots")
        self.addWidget(self.log_button)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        self.addWidget(self.progress)
        self.status_label = ElidedLabel()       # in the tool row: the 3D view keeps that height
        self.status_label.setObjectName("robot_status")
        self.addWidget(self.status_label, 1)
        self.overlay_buttons: dict[str, QToolButton] = {}
        for key, title in OVERLAYS:
            b = QToolButton()
            b.setText(title)
            b.setCheckable(True)
            if key == "inertia":
                b.setToolTip("Each link's inertia as its equivalent box: the uniform box of the same mass "
                             "and principal moments, on the principal axes at the centre of mass")
            self.addWidget(b)
            self.overlay_buttons[key] = b
        self.fit_button = QToolButton()         # Reset view and Screenshot: in the workspace menu
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Fit the view to the robot")
        self.addWidget(self.fit_button)

    # -- the picker ----------------------------------------------------------------------------
    def _picker_tooltip(self, *_args) -> None:
        """The picker's tooltip: what it lists, and the chosen entry in full (elided in a narrow row)."""
        text = "Robots of the library (shipped, installed packages) and recent files"
        current = self.picker.currentText()
        self.picker.setToolTip(f"{current}\n\n{text}" if current else text)

    def fill_picker(self, settings) -> None:
        """The library's robots, then the recent robot files kept in ``settings``."""
        picker = self.picker
        picker.blockSignals(True)
        picker.clear()
        try:
            from engine.robots.library import list_robots
            entries = list_robots()
        except Exception as exc:  # noqa: BLE001 - the library is optional for the picker
            log.warning("robot library unavailable: %s", exc)
            entries = []
        for e in entries:
            picker.addItem(f"{e.name} — {e.title}", e.name)
        recent = recent_files(settings, RECENT_KEY)
        if recent:
            picker.insertSeparator(picker.count())
            for path in recent:
                picker.addItem(f"{Path(path).name} (recent: {path})", path)
        picker.blockSignals(False)

    def remember(self, loaded, settings, add_recent) -> None:
        """Keep a robot opened from a file among the recent ones (``add_recent(path)``: the app's
        File menu too) and show ``loaded`` as the picker's choice."""
        if Path(loaded.source).name.lower().endswith(ROBOT_FILE_SUFFIXES):
            path = str(Path(loaded.path).resolve())
            add_recent_file(settings, path, RECENT_KEY, MAX_RECENT)
            add_recent(path)
            self.fill_picker(settings)
        self.select(loaded.source) or self.select(str(Path(loaded.path).resolve()))

    def select(self, source: str) -> bool:
        """Show ``source`` as the picker's choice when it is listed."""
        idx = self.picker.findData(source)
        if idx >= 0:
            self.picker.setCurrentIndex(idx)
        return idx >= 0
