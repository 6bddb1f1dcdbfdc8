"""Dynamics readouts of the current state: end-effector pose, gravity torques (bars),
mass matrix (heatmap) and manipulability; a robot's constraints (``constraints_label``)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.workspaces.robot.targets_panel import xyz_rpy_from_pose

__all__ = ["DynamicsPanel"]


class DynamicsPanel(QWidget):
    """Shows a :class:`~app.workspaces.robot.robot_jobs.Readouts`."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.pose_label = QLabel("pose: –")
        self.pose_label.setObjectName("ee_pose")
        self.pose_label.setTextInteractionFlags(self.pose_label.textInteractionFlags()
                                                | pg.QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.manip_label = QLabel("manipulability: –")
        self.manip_label.setObjectName("manipulability")
        for label in (self.pose_label, self.manip_label):    # the side column's width, not the text's
            label.setWordWrap(True)
        # the robot's constraints (loops, welds, tendons), filled by the page's ConstraintOverlay
        self.constraints_label = QLabel(objectName="constraints")
        self.constraints_label.setWordWrap(True)
        self.constraints_label.setVisible(False)
        layout.addWidget(self.pose_label)
        layout.addWidget(self.manip_label)
        layout.addWidget(self.constraints_label)
        self.gravity_plot = pg.PlotWidget(title="gravity torques")
        self.gravity_plot.setLabel("left", "τ_g", units="N·m")
        self.gravity_plot.setLabel("bottom", "joint")
        self.gravity_plot.setMinimumHeight(150)
        self._bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=(90, 160, 255))
        self.gravity_plot.addItem(self._bars)
        layout.addWidget(self.gravity_plot, 1)
        self.mass_plot = pg.PlotWidget(title="mass matrix M(q)")
        self.mass_plot.setMinimumHeight(150)
        self.mass_plot.setAspectLocked(True)
        self.mass_plot.invertY(True)
        self._image = pg.ImageItem()
        self._image.setColorMap(pg.colormap.get("viridis"))
        self.mass_plot.addItem(self._image)
        self._colorbar = pg.ColorBarItem(colorMap=pg.colormap.get("viridis"), interactive=False, width=12)
        self._colorbar.setImageItem(self._image, insert_in=self.mass_plot.getPlotItem())
        layout.addWidget(self.mass_plot, 1)
        self.readouts = None

    def clear(self) -> None:
        self.readouts = None
        self.pose_label.setText("pose: –")
        self.manip_label.setText("manipulability: –")
        self._bars.setOpts(x=[], height=[])
        self._image.clear()

    def show_readouts(self, r) -> None:
        self.readouts = r
        xyz, rpy = xyz_rpy_from_pose(r.pose)
        deg = np.degrees(rpy)
        self.pose_label.setText(
            f"{r.link}: x {xyz[0]:+.4f}  y {xyz[1]:+.4f}  z {xyz[2]:+.4f} m   "
            f"roll {deg[0]:+.1f}°  pitch {deg[1]:+.1f}°  yaw {deg[2]:+.1f}°")
        self.manip_label.setText(f"manipulability √det(J Jᵀ): {r.manipulability:.4g}")
        n = len(r.gravity)
        if n == 0:                  # a robot without joints: a pose, nothing to plot
            self._bars.setOpts(x=[], height=[])
            self._image.clear()
            return
        self._bars.setOpts(x=np.arange(1, n + 1), height=r.gravity, width=0.7)
        self.gravity_plot.setXRange(0.3, n + 0.7, padding=0)
        M = np.asarray(r.mass_matrix)
        self._image.setImage(M.T, autoLevels=False)
        self._image.setRect(0.5, 0.5, n, n)      # cell (i, j) centred on joint numbers i, j
        lo, hi = float(M.min()), float(M.max())
        self._colorbar.setLevels((lo, hi if hi > lo else lo + 1e-9))
