"""Motion: keyframes of poses played back on a time slider (joint-space interpolation),
and simulations (forward dynamics) played back in real time."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QElapsedTimer, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from app.widgets.run_row import RunRow
from app.workspaces.robot.robot_jobs import SimulationOptions, interpolate_keyframes

__all__ = ["MotionPanel"]

TIME_STEPS = 1000
MODE_TITLES = {"free_fall": "Free fall (τ = 0)", "gravity_compensation": "Gravity compensation",
               "pd_keyframes": "PD to keyframes"}


class MotionPanel(QWidget):
    """``q_requested(q)``: show this pose (playback); ``simulate_requested(options)``;
    ``cancel_requested()``. The page supplies the current pose with ``current_q``."""

    q_requested = Signal(object)
    simulate_requested = Signal(object)
    cancel_requested = Signal()

    def __init__(self, current_q, parent=None):
        super().__init__(parent)
        self._current_q = current_q
        self.key_times: list[float] = []
        self.key_poses: list[np.ndarray] = []
        self.trajectory: tuple[np.ndarray, np.ndarray] | None = None   # (t (T,), q (T, dof))
        self._source = "keyframes"
        self._about = ""          # what the trajectory is, for the status
        self._timer = QTimer(self)
        self._timer.setInterval(16)
        self._timer.timeout.connect(self._tick)
        self._clock = QElapsedTimer()
        self._t0 = 0.0
        layout = QVBoxLayout(self)

        layout.addWidget(QLabel("<b>Keyframes</b>"))
        row = QHBoxLayout()
        self.add_key_button = QPushButton("Add keyframe")
        self.add_key_button.setToolTip("Append the current pose, 1 s after the last keyframe")
        self.add_key_button.clicked.connect(self.add_keyframe)
        self.remove_key_button = QPushButton("Remove")
        self.remove_key_button.clicked.connect(self.remove_keyframe)
        self.clear_key_button = QPushButton("Clear")
        self.clear_key_button.clicked.connect(self.clear_keyframes)
        for b in (self.add_key_button, self.remove_key_button, self.clear_key_button):
            row.addWidget(b)
        layout.addLayout(row)
        self.key_list = QListWidget()
        self.key_list.setMaximumHeight(90)
        layout.addWidget(self.key_list)
        self.interval_spin = QDoubleSpinBox()
        self.interval_spin.setRange(0.1, 30.0)
        self.interval_spin.setValue(1.0)
        self.interval_spin.setSuffix(" s")
        form = QFormLayout()
        form.addRow("Interval", self.interval_spin)
        layout.addLayout(form)

        play = QHBoxLayout()
        self.play_button = QPushButton("Play")
        self.play_button.clicked.connect(self.toggle_play)
        self.time_slider = QSlider(Qt.Orientation.Horizontal)
        self.time_slider.setRange(0, TIME_STEPS)
        self.time_slider.valueChanged.connect(self._on_slider)
        self.time_label = QLabel("0.00 s")
        play.addWidget(self.play_button)
        play.addWidget(self.time_slider, 1)
        play.addWidget(self.time_label)
        layout.addLayout(play)

        sim_title = QLabel("<b>Simulation</b> (forward dynamics from the current pose, at rest)")
        sim_title.setWordWrap(True)
        layout.addWidget(sim_title)
        sim = QFormLayout()
        self.mode_box = QComboBox()
        for mode in SimulationOptions.MODES:
            self.mode_box.addItem(MODE_TITLES[mode], mode)
        sim.addRow("Torques", self.mode_box)
        defaults = SimulationOptions()
        self.duration_spin = QDoubleSpinBox()
        self.duration_spin.setRange(0.1, 30.0)
        self.duration_spin.setValue(defaults.duration)
        self.duration_spin.setSuffix(" s")
        sim.addRow("Duration", self.duration_spin)
        self.dt_spin = QDoubleSpinBox()
        self.dt_spin.setDecimals(4)
        self.dt_spin.setRange(0.0002, 0.02)
        self.dt_spin.setSingleStep(0.0005)
        self.dt_spin.setValue(defaults.dt)
        self.dt_spin.setSuffix(" s")
        sim.addRow("Step (RK4)", self.dt_spin)
        self.kp_spin = QDoubleSpinBox()
        self.kp_spin.setRange(0.0, 1e4)
        self.kp_spin.setValue(defaults.kp)
        sim.addRow("PD kp", self.kp_spin)
        self.kd_spin = QDoubleSpinBox()
        self.kd_spin.setRange(0.0, 1e3)
        self.kd_spin.setValue(defaults.kd)
        sim.addRow("PD kd", self.kd_spin)
        self.damping_box = QCheckBox("URDF joint damping")
        self.damping_box.setChecked(defaults.damping)
        sim.addRow(self.damping_box)
        self.hold_base_box = QCheckBox("Hold the base (floating robots)")
        self.hold_base_box.setToolTip("A legged robot or humanoid: keep its base where it is; "
                                      "otherwise it flies freely (there are no contacts)")
        self.hold_base_box.setChecked(True)
        sim.addRow(self.hold_base_box)
        layout.addLayout(sim)
        self.sim_row = RunRow("Simulate")
        self.simulate_button = self.sim_row.run_button
        self.sim_cancel_button = self.sim_row.cancel_button
        self.sim_row.run_clicked.connect(lambda: self.simulate_requested.emit(self.simulation_options()))
        self.sim_row.cancel_clicked.connect(self.cancel_requested)
        layout.addWidget(self.sim_row)
        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        layout.addWidget(self.status_label)
        layout.addStretch(1)

    # ------------------------------------------------------------ keyframes
    def add_keyframe(self, q=None) -> None:
        q = np.asarray(self._current_q() if q is None else q, float).copy()
        t = 0.0 if not self.key_times else self.key_times[-1] + self.interval_spin.value()
        self.key_times.append(t)
        self.key_poses.append(q)
        self.key_list.addItem(f"t = {t:.2f} s")
        self._source = "keyframes"
        self.trajectory = None
        if len(self.key_times) >= 2 and self.status_label.text().startswith("Add two keyframes"):
            self._show_status()          # the hint's cause is gone

    def remove_keyframe(self) -> None:
        i = self.key_list.currentRow()
        if 0 <= i < len(self.key_times):
            self.key_times.pop(i)
            self.key_poses.pop(i)
            self.key_list.takeItem(i)

    def clear_keyframes(self) -> None:
        self.key_times.clear()
        self.key_poses.clear()
        self.key_list.clear()

    def reset(self) -> None:
        """A new robot: forget keyframes and trajectories."""
        self.stop()
        self.clear_keyframes()
        self.trajectory = None
        self.status_label.setText("")

    # ------------------------------------------------------------ playback
    def duration(self) -> float:
        if self._source == "trajectory" and self.trajectory is not None:
            return float(self.trajectory[0][-1])
        return float(self.key_times[-1]) if self.key_times else 0.0

    def pose_at(self, t: float) -> np.ndarray | None:
        if self._source == "trajectory" and self.trajectory is not None:
            ts, qs = self.trajectory
            i = int(np.clip(np.searchsorted(ts, t), 0, len(ts) - 1))
            return qs[i]
        if self.key_times:
            return interpolate_keyframes(self.key_times, self.key_poses, t)
        return None

    def play_trajectory(self, t: np.ndarray, q: np.ndarray, about: str = "") -> None:
        """Play a simulated trajectory (t (T,) s, q (T, dof)) in real time; ``about`` names it in
        the status ("free fall: 2.00 s"), followed by ", playing" while it plays."""
        self.trajectory = (np.asarray(t, float), np.asarray(q, float))
        self._source = "trajectory"
        self._about = about or f"simulation: {float(t[-1]):.2f} s"
        self.play()

    def _show_status(self) -> None:
        """What plays (or would): the trajectory's description or the keyframes, and ", playing"
        only while the timer runs (the status used to keep "playing" after the end)."""
        if self._source == "trajectory" and self.trajectory is not None:
            about = self._about or "simulation"
        elif self.key_times:
            about = f"{len(self.key_times)} keyframes: {self.duration():.2f} s"
        else:
            about = ""
        self.status_label.setText(f"{about}, playing" if about and self.playing else about)

    def play_keyframes(self) -> None:
        self._source = "keyframes"
        self.play()

    def toggle_play(self) -> None:
        if self._timer.isActive():
            self.stop()
        else:
            if self._source == "trajectory" and self.trajectory is None:
                self._source = "keyframes"
            self.play()

    def play(self) -> None:
        if self.duration() <= 0:
            self.status_label.setText("Add two keyframes (or run a simulation) to play a motion.")
            return
        self._t0 = (
            0.0
            if self.time_slider.value() >= TIME_STEPS
            else self.time_slider.value() / TIME_STEPS * self.duration()
        )
        self._clock.start()
        self._timer.start()
        self.play_button.setText("Stop")
        self._show_status()

    def stop(self) -> None:
        was_playing = self.playing
        self._timer.stop()
        self.play_button.setText("Play")
        if was_playing:
            self._show_status()

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def _tick(self) -> None:
        T = self.duration()
        t = self._t0 + self._clock.elapsed() / 1000.0
        if t >= T:
            t = T
            self.stop()
        self._show_time(t)

    def _show_time(self, t: float) -> None:
        T = self.duration()
        self.time_slider.blockSignals(True)
        self.time_slider.setValue(int(np.rint(t / T * TIME_STEPS)) if T > 0 else 0)
        self.time_slider.blockSignals(False)
        self.time_label.setText(f"{t:.2f} s")
        q = self.pose_at(t)
        if q is not None:
            self.q_requested.emit(np.asarray(q, float))

    def _on_slider(self, value: int) -> None:
        if self.duration() > 0:
            self._show_time(value / TIME_STEPS * self.duration())

    # ------------------------------------------------------------ simulation
    def simulation_options(self) -> SimulationOptions:
        return SimulationOptions(
            mode=self.mode_box.currentData(),
            duration=self.duration_spin.value(),
            dt=self.dt_spin.value(),
            kp=self.kp_spin.value(),
            kd=self.kd_spin.value(),
            damping=self.damping_box.isChecked(),
            hold_base=self.hold_base_box.isChecked(),
        )

    def set_simulating(self, busy: bool) -> None:
        self.sim_row.set_running(busy)
