"""The Car planner's Track tab: choose, load, save or draw a track; MPC settings; Drive / Stop
and the lap-time and control-rate readouts of :attr:`.state.CarPlannerState.drive`."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.workspaces.car.state import CarPlannerState
from engine.car.mpc import MPCConfig
from engine.car.tracks import MAX_TRACK_WIDTH, MIN_TRACK_WIDTH

__all__ = ["TrackPanel", "rate_text"]


def rate_text(dt: float, achieved, compute_ms, real_time: bool) -> str:
    """The control-rate readout: achieved Hz against the real-time pace ``1 / dt``, compute time."""
    target = 1.0 / dt
    parts = []
    if achieved is not None:
        parts.append(f"{achieved:.1f} Hz achieved ({achieved / target:.2f}× real time)")
    if compute_ms is not None and compute_ms > 0:
        parts.append(f"compute {compute_ms:.0f} ms/cycle ({1000 / compute_ms:.1f} Hz possible)")
    text = "Control rate: " + (", ".join(parts) if parts else "–")
    if real_time and achieved is not None and achieved < 0.95 * target:
        text += f" — slower than the {target:.0f} Hz real-time pace"
    return text


class TrackPanel(QWidget):
    """The Track tab's widgets; the page connects Drive / Stop / Load / Save / Draw."""

    def __init__(self, state: CarPlannerState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        dt = state.params.dt
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.drive_button = QPushButton("Drive")
        self.drive_button.setObjectName("carDrive")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        row.addWidget(self.drive_button)
        row.addWidget(self.stop_button)
        lay.addLayout(row)
        form = QFormLayout()
        self.track_combo = QComboBox()
        self.track_combo.setObjectName("carTrack")
        form.addRow("Track", self.track_combo)
        self.laps_spin = QSpinBox()
        self.laps_spin.setRange(1, 20)
        form.addRow("Laps", self.laps_spin)
        lay.addLayout(form)
        row = QHBoxLayout()
        self.load_button = QPushButton("Load track…")
        self.save_button = QPushButton("Save track…")
        row.addWidget(self.load_button)
        row.addWidget(self.save_button)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.draw_button = QPushButton("Draw track")
        self.draw_button.setCheckable(True)
        self.draw_button.setToolTip("Click centre-line points on the canvas, then Finish")
        self.finish_button = QPushButton("Finish track")
        self.finish_button.setEnabled(False)
        self.width_spin = QDoubleSpinBox()
        self.width_spin.setRange(max(0.3, MIN_TRACK_WIDTH), MAX_TRACK_WIDTH)   # a track's own limits (engine)
        self.width_spin.setValue(1.0)
        self.width_spin.setSuffix(" m")
        row.addWidget(self.draw_button)
        row.addWidget(self.finish_button)
        row.addWidget(self.width_spin)
        lay.addLayout(row)
        self.mpc_form = DataclassForm(
            MPCConfig,
            include=[
                "horizon",
                "iterations",
                "candidates",
                "target_speed",
                "w_progress",
                "w_track",
                "margin",
                "direction",
            ],
            choices={"direction": ["conjugate", "gradient"]},
        )
        lay.addWidget(self.mpc_form)
        self.real_time_check = QCheckBox("Real-time pace (one control cycle per dt)")
        self.real_time_check.setObjectName("carRealTime")
        self.real_time_check.setChecked(True)
        self.real_time_check.setToolTip(
            f"The car laps at simulated real time: one MPC cycle every "
            f"{dt * 1000:.0f} ms of wall time; unticked, as fast as the computer can"
        )
        lay.addWidget(self.real_time_check)
        self.lap_label = QLabel("Lap time: –")
        self.lap_label.setObjectName("carLapTime")
        self.lap_label.setWordWrap(True)
        lay.addWidget(self.lap_label)
        self.rate_label = QLabel("Control rate: –")
        self.rate_label.setObjectName("carControlRate")
        self.rate_label.setWordWrap(True)
        lay.addWidget(self.rate_label)
        lay.addStretch(1)
        state.connect("drive", self.show_drive)

    def show_drive(self):
        """Buttons and readouts for the drive in the state (none, running, finished, stopped)."""
        s, d = self.state, self.state.drive
        self.drive_button.setEnabled(not s.driving)
        self.stop_button.setEnabled(s.driving)
        dt = s.params.dt
        real_time = self.real_time_check.isChecked()
        if d is None:
            self.lap_label.setText("Lap time: –")
            self.rate_label.setText("Control rate: –")
        elif d.result is not None:
            res = d.result
            lap = f"{res['lap_time']:.2f} s" if res["lap_time"] else "not completed"
            laps = res.get("lap_times") or []
            more = f" (laps: {', '.join(f'{x:.2f}' for x in laps)} s)" if len(laps) > 1 else ""
            self.lap_label.setText(f"Lap time: {lap}{more}")
            n = res["iterations_per_cycle"]
            wall = res.get("wall_seconds")
            achieved = res["steps"] / wall if wall else None
            self.rate_label.setText(rate_text(dt, achieved, res.get("cycle_ms"), res.get("real_time", False))
                                    + f"; {n} optimiser iteration{'s' if n != 1 else ''} per cycle")
        elif d.stopped:
            self.lap_label.setText("Lap time: stopped")
        elif d.last_cycle is not None:
            info = d.last_cycle
            self.rate_label.setText(rate_text(dt, info["achieved_hz"], info["compute_ms"], real_time))
            self.lap_label.setText(f"Lap time: driving… t = {info['time']:.2f} s simulated, "
                                   f"{info['wall']:.2f} s wall clock")
        elif s.driving:
            self.lap_label.setText("Lap time: driving…")
            self.rate_label.setText(f"Control rate: starting ({'real time, ' if real_time else ''}"
                                    f"target {1 / dt:.0f} Hz)…")
