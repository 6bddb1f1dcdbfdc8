"""Forms bound to the engine's settings dataclasses: the widgets take their defaults and types
from the dataclass; reading the form builds a new instance (the engine validates it)."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QSpinBox,
    QWidget,
)

__all__ = ["DataclassForm", "FieldSpec"]


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """Presentation of one field: label, range, step, decimals, choices (for strings)."""

    label: str
    minimum: float = -1e9
    maximum: float = 1e9
    step: float = 0.1
    decimals: int = 3
    choices: tuple = ()
    log: bool = False


class DataclassForm(QWidget):
    """A QFormLayout with one editor per field listed in ``specs`` (other fields keep their values).

    Floats -> QDoubleSpinBox (``log`` fields use scientific-friendly decimals), ints -> QSpinBox,
    bools -> QCheckBox, str with choices -> QComboBox, 2-tuples of floats -> two spin boxes.
    """

    changed = Signal()

    def __init__(self, instance, specs: dict[str, FieldSpec], parent=None):
        super().__init__(parent)
        self._cls = type(instance)
        self._base = instance
        self.editors: dict[str, object] = {}
        layout = QFormLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for name, spec in specs.items():
            value = getattr(instance, name)
            editor = self._make_editor(name, value, spec)
            layout.addRow(spec.label, editor if isinstance(editor, QWidget) else editor[0].parentWidget())
        self.set_value(instance)

    def _spin(self, value, spec: FieldSpec, name: str) -> QWidget:
        if isinstance(value, bool):
            w = QCheckBox()
            w.toggled.connect(self.changed)
        elif isinstance(value, int):
            w = QSpinBox()
            w.setRange(int(spec.minimum), int(min(spec.maximum, 2 ** 31 - 1)))
            w.setSingleStep(int(max(1, spec.step)))
            w.valueChanged.connect(self.changed)
        elif isinstance(value, str):
            w = QComboBox()
            w.addItems(list(spec.choices))
            w.currentTextChanged.connect(self.changed)
        else:
            w = QDoubleSpinBox()
            w.setDecimals(spec.decimals)
            w.setRange(spec.minimum, spec.maximum)
            w.setSingleStep(spec.step)
            w.setKeyboardTracking(False)
            w.valueChanged.connect(self.changed)
        w.setObjectName(name)
        return w

    def _make_editor(self, name, value, spec):
        if isinstance(value, tuple):
            box = QWidget()
            row = QHBoxLayout(box)
            row.setContentsMargins(0, 0, 0, 0)
            parts = []
            for i, v in enumerate(value):
                w = self._spin(float(v), spec, f"{name}_{i}")
                row.addWidget(w)
                parts.append(w)
            self.editors[name] = parts
            return box
        w = self._spin(value, spec, name)
        self.editors[name] = w
        return w

    @staticmethod
    def _read(w):
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if isinstance(w, QComboBox):
            return w.currentText()
        return w.value()

    @staticmethod
    def _write(w, v):
        w.blockSignals(True)
        if isinstance(w, QCheckBox):
            w.setChecked(bool(v))
        elif isinstance(w, QComboBox):
            w.setCurrentText(str(v))
        else:
            w.setValue(v)
        w.blockSignals(False)

    def value(self):
        """A new dataclass instance with the form's values."""
        kw = {}
        for name, w in self.editors.items():
            kw[name] = tuple(self._read(x) for x in w) if isinstance(w, list) else self._read(w)
        self._base = dataclasses.replace(self._base, **kw)
        return self._base

    def set_value(self, instance) -> None:
        self._base = instance
        for name, w in self.editors.items():
            v = getattr(instance, name)
            if isinstance(w, list):
                for x, vi in zip(w, v):
                    self._write(x, float(vi))
            else:
                self._write(w, v)
        self.changed.emit()

    def set_field(self, name: str, value) -> None:
        """Set one field (e.g. from the canvas) without emitting per-widget signals; emits ``changed``."""
        w = self.editors[name]
        if isinstance(w, list):
            for x, vi in zip(w, value):
                self._write(x, float(vi))
        else:
            self._write(w, value)
        self.changed.emit()
