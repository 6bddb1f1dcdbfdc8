"""Joint controls: a slider and a spin box per joint, within its limits; reset and random.

Values are held in SI units (rad, m); revolute joints are shown in degrees or radians
(``set_units``). ``q_changed(np.ndarray)`` fires for every user edit (the view follows
at once); ``edit_finished(old_q, new_q)`` when a discrete action (reset, random) ends,
for the undo stack.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

__all__ = ["JointsPanel"]

SLIDER_STEPS = 2000


class JointsPanel(QWidget):
    q_changed = Signal(object)          # (dof,) float array, SI
    pose_action = Signal(object, object, str)   # old q, new q, description (undoable)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._names: list[str] = []
        self._revolute: np.ndarray = np.zeros(0, bool)
        self._lo = np.zeros(0)
        self._hi = np.zeros(0)
        self._q = np.zeros(0)
        self._neutral = np.zeros(0)
        self._units = "deg"
        self._sliders: list[QSlider] = []
        self._spins: list[QDoubleSpinBox] = []
        self._updating = False
        self._rng = np.random.default_rng()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("Units"))
        self.units_box = QComboBox()
        self.units_box.addItem("degrees", "deg")
        self.units_box.addItem("radians", "rad")
        self.units_box.currentIndexChanged.connect(lambda _i: self.set_units(self.units_box.currentData()))
        top.addWidget(self.units_box)
        top.addStretch(1)
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("All joints to the neutral pose (the middle of their limits)")
        self.reset_button.clicked.connect(self.reset)
        self.random_button = QPushButton("Random")
        self.random_button.setToolTip("A random pose within the joint limits")
        self.random_button.clicked.connect(self.randomize)
        top.addWidget(self.reset_button)
        top.addWidget(self.random_button)
        layout.addLayout(top)
        self._grid_host = QWidget()
        self._grid = QGridLayout(self._grid_host)
        self._grid.setContentsMargins(2, 2, 2, 2)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self._grid_host)
        layout.addWidget(scroll, 1)

    # ------------------------------------------------------------ setup
    def set_robot(self, names, revolute, lower, upper, neutral) -> None:
        """Rebuild the controls. ``revolute``: (dof,) bool (False = prismatic, metres)."""
        for r in range(self._grid.rowCount()):
            self._grid.setRowStretch(r, 0)
        while self._grid.count():
            item = self._grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self._names = list(names)
        self._revolute = np.asarray(revolute, bool)
        self._lo = np.asarray(lower, float)
        self._hi = np.asarray(upper, float)
        self._neutral = np.clip(np.asarray(neutral, float), self._lo, self._hi)
        self._q = self._neutral.copy()
        self._sliders, self._spins = [], []
        for i, name in enumerate(self._names):
            label = QLabel(name)
            label.setToolTip(name)
            slider = QSlider(Qt.Orientation.Horizontal)
            slider.setRange(0, SLIDER_STEPS)
            slider.setObjectName(f"joint_slider_{i}")
            slider.valueChanged.connect(lambda v, i=i: self._on_slider(i, v))
            spin = QDoubleSpinBox()
            spin.setObjectName(f"joint_spin_{i}")
            spin.setKeyboardTracking(False)
            spin.valueChanged.connect(lambda v, i=i: self._on_spin(i, v))
            self._grid.addWidget(label, i, 0)
            self._grid.addWidget(slider, i, 1)
            self._grid.addWidget(spin, i, 2)
            self._sliders.append(slider)
            self._spins.append(spin)
        self._grid.setColumnStretch(1, 1)
        self._grid.setRowStretch(len(self._names), 1)
        self._configure_spins()
        self._sync_widgets()

    def _scale(self, i: int) -> float:
        return 180.0 / np.pi if (self._revolute[i] and self._units == "deg") else 1.0

    def _configure_spins(self) -> None:
        self._updating = True
        for i, spin in enumerate(self._spins):
            s = self._scale(i)
            spin.setDecimals(1 if s != 1.0 else 3)
            spin.setSingleStep(1.0 if s != 1.0 else 0.01)
            spin.setRange(self._lo[i] * s, self._hi[i] * s)
            spin.setSuffix(" °" if s != 1.0 else (" rad" if self._revolute[i] else " m"))
        self._updating = False

    def set_units(self, units: str) -> None:
        """'deg' or 'rad' for revolute joints (prismatic joints stay in metres)."""
        if units not in ("deg", "rad"):
            raise ValueError(f"units must be 'deg' or 'rad', not {units!r}")
        self._units = units
        idx = self.units_box.findData(units)
        if idx >= 0 and self.units_box.currentIndex() != idx:
            self.units_box.setCurrentIndex(idx)
        self._configure_spins()
        self._sync_widgets()

    @property
    def units(self) -> str:
        return self._units

    # ------------------------------------------------------------ values
    @property
    def limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(dof,) lower and upper bounds of the controls (SI units)."""
        return self._lo.copy(), self._hi.copy()

    @property
    def q(self) -> np.ndarray:
        return self._q.copy()

    def set_q(self, q, emit: bool = True) -> None:
        """Set every joint (SI units), clamped into the limits."""
        q = np.clip(np.asarray(q, float).reshape(-1), self._lo, self._hi)
        self._q = q
        self._sync_widgets()
        if emit:
            self.q_changed.emit(self.q)

    def _sync_widgets(self) -> None:
        self._updating = True
        for i, (slider, spin) in enumerate(zip(self._sliders, self._spins)):
            span = self._hi[i] - self._lo[i]
            slider.setValue(int(np.rint((self._q[i] - self._lo[i]) / span * SLIDER_STEPS)) if span > 0 else 0)
            spin.setValue(self._q[i] * self._scale(i))
        self._updating = False

    def _on_slider(self, i: int, value: int) -> None:
        if self._updating:
            return
        self._q[i] = self._lo[i] + (self._hi[i] - self._lo[i]) * value / SLIDER_STEPS
        self._updating = True
        self._spins[i].setValue(self._q[i] * self._scale(i))
        self._updating = False
        self.q_changed.emit(self.q)

    def _on_spin(self, i: int, value: float) -> None:
        if self._updating:
            return
        self._q[i] = float(np.clip(value / self._scale(i), self._lo[i], self._hi[i]))
        self._updating = True
        span = self._hi[i] - self._lo[i]
        self._sliders[i].setValue(
            int(np.rint((self._q[i] - self._lo[i]) / span * SLIDER_STEPS)) if span > 0 else 0
        )
        self._updating = False
        self.q_changed.emit(self.q)

    def slider(self, i: int) -> QSlider:
        return self._sliders[i]

    def spin(self, i: int) -> QDoubleSpinBox:
        return self._spins[i]

    def reset(self) -> None:
        old = self.q
        self.set_q(self._neutral)
        self.pose_action.emit(old, self.q, "reset pose")

    def randomize(self) -> None:
        old = self.q
        self.set_q(self._rng.uniform(self._lo, self._hi))
        self.pose_action.emit(old, self.q, "random pose")
