"""A player's timeline: play/pause, step, speed, a scrub bar, the time, and a loop range.

The widget only shows and reports: it holds no clock. Signals: ``scrubbed(float)`` (the user
dragged or clicked the bar, seconds), ``play_toggled()``, ``stepped(int)`` (-1 / +1 sample),
``speed_changed(float)``, ``loop_changed(object)`` (``(start, end)`` or None). Setters
(:meth:`set_range`, :meth:`set_time`, :meth:`set_playing`, :meth:`set_loop`) never emit.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QSlider,
    QStyle,
    QToolButton,
    QWidget,
)

__all__ = ["Timeline"]

_TICKS = 100_000


class Timeline(QWidget):
    """A scrub bar with player buttons (see the module doc)."""

    scrubbed = Signal(float)
    play_toggled = Signal()
    stepped = Signal(int)
    speed_changed = Signal(float)
    loop_changed = Signal(object)

    def __init__(self, speeds=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0), parent=None):
        super().__init__(parent)
        self.setObjectName("timeline")
        self._t0, self._t1 = 0.0, 1.0
        self._time = 0.0
        self._quiet = False
        style = self.style()
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 2, 4, 2)
        self.back_button = QToolButton(objectName="stepBack", toolTip="Step back one sample (,)")
        self.back_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_MediaSeekBackward))
        self.play_button = QToolButton(objectName="playPause", toolTip="Play / pause (space)")
        self.forward_button = QToolButton(objectName="stepForward", toolTip="Step forward one sample (.)")
        self.forward_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_MediaSeekForward))
        self.back_button.clicked.connect(lambda: self.stepped.emit(-1))
        self.forward_button.clicked.connect(lambda: self.stepped.emit(1))
        self.play_button.clicked.connect(self.play_toggled.emit)
        for b in (self.back_button, self.play_button, self.forward_button):
            row.addWidget(b)
        self.slider = QSlider(Qt.Orientation.Horizontal, objectName="scrubBar")
        self.slider.setRange(0, _TICKS)
        self.slider.setPageStep(_TICKS // 20)
        self.slider.valueChanged.connect(self._on_slider)
        row.addWidget(self.slider, 1)
        self.time_label = QLabel("0.000 s", objectName="timeLabel")
        self.time_label.setMinimumWidth(110)
        row.addWidget(self.time_label)
        row.addWidget(QLabel("Speed"))
        self.speed = QComboBox(objectName="speed")
        self._speeds = tuple(float(s) for s in speeds)
        self.speed.addItems([f"{s:g}x" for s in self._speeds])
        self.speed.setCurrentIndex(self._speeds.index(1.0) if 1.0 in self._speeds else 0)
        self.speed.currentIndexChanged.connect(lambda i: self.speed_changed.emit(self._speeds[i]))
        row.addWidget(self.speed)
        self.loop_box = QCheckBox("Loop", objectName="loop")
        self.loop_start = QDoubleSpinBox(objectName="loopStart", decimals=3, suffix=" s")
        self.loop_end = QDoubleSpinBox(objectName="loopEnd", decimals=3, suffix=" s")
        for w in (self.loop_box, self.loop_start, self.loop_end):
            row.addWidget(w)
        self.loop_box.toggled.connect(self._emit_loop)
        self.loop_start.valueChanged.connect(
            lambda *_: self._emit_loop() if self.loop_box.isChecked() else None
        )
        self.loop_end.valueChanged.connect(
            lambda *_: self._emit_loop() if self.loop_box.isChecked() else None
        )
        self.set_playing(False)
        self.setEnabled(False)

    # ------------------------------------------------------------------ setters (no signals)
    def set_range(self, t0: float, t1: float) -> None:
        self._t0, self._t1 = float(t0), float(max(t1, t0 + 1e-9))
        self._quiet = True
        for box in (self.loop_start, self.loop_end):
            box.blockSignals(True)
            box.setRange(self._t0, self._t1)
            box.blockSignals(False)
        self.loop_start.blockSignals(True)
        self.loop_end.blockSignals(True)
        self.loop_start.setValue(self._t0)
        self.loop_end.setValue(self._t1)
        self.loop_start.blockSignals(False)
        self.loop_end.blockSignals(False)
        self._quiet = False
        self.setEnabled(True)
        # the label's width for the longest time of this range: it does not change while playing
        longest = f"{-max(abs(self._t0), abs(self._t1)):8.3f} s / {self._t1:.2f}"
        self.time_label.setFixedWidth(max(110, self.time_label.fontMetrics().horizontalAdvance(longest) + 8))
        self.set_time(self._time)

    def set_time(self, t: float) -> None:
        self._time = float(t)
        self._quiet = True
        self.slider.setValue(self._tick(t))
        self._quiet = False
        self.time_label.setText(f"{t:8.3f} s / {self._t1:.2f}")

    def set_playing(self, playing: bool) -> None:
        icon = QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_button.setIcon(self.style().standardIcon(icon))
        self.play_button.setText("Pause" if playing else "Play")

    def set_loop(self, loop) -> None:
        for w in (self.loop_box, self.loop_start, self.loop_end):
            w.blockSignals(True)
        self.loop_box.setChecked(loop is not None)
        if loop is not None:
            self.loop_start.setValue(loop[0])
            self.loop_end.setValue(loop[1])
        for w in (self.loop_box, self.loop_start, self.loop_end):
            w.blockSignals(False)

    def set_speed(self, speed: float) -> None:
        if speed in self._speeds:
            self.speed.blockSignals(True)
            self.speed.setCurrentIndex(self._speeds.index(speed))
            self.speed.blockSignals(False)

    # ------------------------------------------------------------------ reading
    @property
    def time(self) -> float:
        return self._time

    def time_of_tick(self, tick: int) -> float:
        return self._t0 + (self._t1 - self._t0) * tick / _TICKS

    def _tick(self, t: float) -> int:
        return int(round((min(max(t, self._t0), self._t1) - self._t0) / (self._t1 - self._t0) * _TICKS))

    def scrub_to(self, t: float) -> None:
        """Act as if the user dragged the bar to ``t`` (emits ``scrubbed``)."""
        self.slider.setValue(self._tick(t))

    def _on_slider(self, tick: int) -> None:
        if self._quiet:
            return
        t = self.time_of_tick(tick)
        self._time = t
        self.time_label.setText(f"{t:8.3f} s / {self._t1:.2f}")
        self.scrubbed.emit(t)

    def _emit_loop(self, *_):
        self.loop_changed.emit(
            (self.loop_start.value(), self.loop_end.value()) if self.loop_box.isChecked() else None
        )
