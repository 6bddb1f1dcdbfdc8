"""A form bound to an engine dataclass: one editor per field, built from the field's type and default.

``DataclassForm(PrepareConfig)`` (or an instance) shows spin boxes for ``int``/``float``,
check boxes for ``bool``, combo boxes for fields given ``choices`` (or ``Literal`` types),
line edits for ``str``, and for ``float | None`` / ``int | None`` a spin box with an "auto"
check box (unchecked = None). Lists and tuples are edited as JSON text. :meth:`value` returns
a *new* dataclass instance (``dataclasses.replace`` of the bound one, so the dataclass's own
validation runs and fields not shown keep their values); a ``ValueError`` from the dataclass
is raised with the field named. The engine dataclass stays the one source of truth for the
defaults.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QWidget,
)

__all__ = ["DataclassForm", "FormError"]

_NONE = type(None)


class FormError(ValueError):
    """A form value the dataclass rejects; ``field`` names the field."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _optional_of(hint) -> type | None:
    """``X`` for ``X | None`` / ``Optional[X]`` with X in (int, float, str), else None."""
    args = typing.get_args(hint)
    if args and _NONE in args and len(args) == 2:
        other = args[0] if args[1] is _NONE else args[1]
        if other in (int, float, str):
            return other
    return None


class _FloatEdit(QDoubleSpinBox):
    """A double spin box wide enough for physical quantities from 1e-9 to 1e9."""

    def __init__(self, value: float, parent=None):
        super().__init__(parent)
        self.setDecimals(12)
        self.setRange(-1e12, 1e12)
        self.setKeyboardTracking(False)
        v = float(value)
        mag = abs(v) if v else 1.0
        self.setSingleStep(10 ** math.floor(math.log10(mag)) if mag > 0 else 0.1)
        self.setValue(v)

    def textFromValue(self, value: float) -> str:
        return f"{value:.6g}"

    def valueFromText(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text, pos):  # accept any text while typing; fixed in valueFromText
        from PySide6.QtGui import QValidator

        try:
            float(text)
            return QValidator.State.Acceptable, text, pos
        except ValueError:
            return QValidator.State.Intermediate, text, pos


class _Field:
    """One editor: ``widget`` to put in the layout, ``get()``/``set(v)`` for its value."""

    def __init__(self, widget: QWidget, get, set_, changed):
        self.widget, self.get, self.set, self.changed = widget, get, set_, changed


class DataclassForm(QWidget):
    """Editors for the fields of a dataclass; :meth:`value` builds a new instance.

    ``source``: a dataclass type (its defaults are shown) or instance. ``include``/``exclude``:
    field names to show or hide (order follows ``include`` when given). ``choices``: field ->
    list of allowed values (a combo box). ``labels``/``tooltips``: field -> text. ``ranges``:
    field -> (min, max) for numeric editors.
    """

    changed = Signal()

    def __init__(self, source, *, include: list[str] | None = None, exclude: list[str] | None = None,
                 choices: dict[str, list] | None = None, labels: dict[str, str] | None = None,
                 tooltips: dict[str, str] | None = None, ranges: dict[str, tuple] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        if isinstance(source, type):
            if not dataclasses.is_dataclass(source):
                raise TypeError(f"{source!r} is not a dataclass")
            self._cls = source
            self._base = None
        else:
            if not dataclasses.is_dataclass(source):
                raise TypeError(f"{type(source)!r} is not a dataclass")
            self._cls = type(source)
            self._base = source
        self._choices = dict(choices or {})
        self._ranges = dict(ranges or {})
        hints = typing.get_type_hints(self._cls)
        fields = {f.name: f for f in dataclasses.fields(self._cls) if f.init}
        names = list(include) if include is not None else list(fields)
        for name in names:
            if name not in fields:
                raise ValueError(f"{self._cls.__name__} has no field {name!r}")
        names = [n for n in names if n not in set(exclude or ())]
        self._fields: dict[str, _Field] = {}
        self.layout_ = QFormLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        for name in names:
            f = fields[name]
            value = self._initial(f)
            editor = self._make_editor(name, hints.get(name, type(value)), value)
            editor.widget.setObjectName(f"field_{name}")
            tip = (tooltips or {}).get(name)
            if tip:
                editor.widget.setToolTip(tip)
            self._fields[name] = editor
            self.layout_.addRow((labels or {}).get(name, _label(name)), editor.widget)
            editor.changed.connect(lambda *a: self.changed.emit())

    # -- building ----------------------------------------------------------------------
    def _initial(self, f: dataclasses.Field):
        if self._base is not None:
            return getattr(self._base, f.name)
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            return f.default_factory()  # type: ignore[misc]
        return None

    def _numeric(self, name: str, kind: type, value) -> QWidget:
        lo, hi = self._ranges.get(name, (None, None))
        if kind is int:
            w = QSpinBox()
            w.setRange(int(lo) if lo is not None else -2 ** 31 + 1, int(hi) if hi is not None else 2 ** 31 - 1)
            w.setKeyboardTracking(False)
            w.setValue(int(value) if value is not None else 0)
            return w
        w = _FloatEdit(float(value) if value is not None else 0.0)
        if lo is not None or hi is not None:
            w.setRange(float(lo) if lo is not None else -1e12, float(hi) if hi is not None else 1e12)
        return w

    def _make_editor(self, name: str, hint, value) -> _Field:
        choices = self._choices.get(name)
        if choices is None and typing.get_origin(hint) is typing.Literal:
            choices = list(typing.get_args(hint))
        if choices is not None:
            w = QComboBox()
            for c in choices:
                w.addItem(str(c), c)
            idx = next((i for i, c in enumerate(choices) if c == value), 0)
            w.setCurrentIndex(idx)
            return _Field(w, lambda: w.currentData(), lambda v: w.setCurrentIndex(max(0, w.findData(v))),
                          w.currentIndexChanged)
        if hint is bool:
            w = QCheckBox()
            w.setChecked(bool(value))
            return _Field(w, w.isChecked, lambda v: w.setChecked(bool(v)), w.toggled)
        if hint in (int, float):
            w = self._numeric(name, hint, value)
            return _Field(w, w.value, lambda v, w=w, k=hint: w.setValue(k(v)), w.valueChanged)
        if hint is str:
            w = QLineEdit(str(value if value is not None else ""))
            return _Field(w, w.text, lambda v: w.setText(str(v)), w.textChanged)
        inner = _optional_of(hint)
        if inner in (int, float):
            box = QWidget()
            row = QHBoxLayout(box)
            row.setContentsMargins(0, 0, 0, 0)
            auto = QCheckBox("auto")
            auto.setObjectName(f"field_{name}_auto")
            spin = self._numeric(name, inner, value)
            auto.setChecked(value is None)
            spin.setVisible(value is not None)   # "auto" alone reads better than a greyed 0
            auto.toggled.connect(lambda on: spin.setVisible(not on))
            row.addWidget(spin, 1)
            row.addWidget(auto)
            box.spin, box.auto = spin, auto  # for tests and callers

            def get(spin=spin, auto=auto, k=inner):
                return None if auto.isChecked() else k(spin.value())

            def set_(v, spin=spin, auto=auto, k=inner):
                auto.setChecked(v is None)
                if v is not None:
                    spin.setValue(k(v))

            sig = _Multi(spin.valueChanged, auto.toggled)
            return _Field(box, get, set_, sig)
        # str | None, lists, tuples, anything else: JSON text
        w = QLineEdit(json.dumps(value))
        w.setToolTip("JSON")

        def get_json(w=w, name=name):
            try:
                return json.loads(w.text() or "null")
            except json.JSONDecodeError as exc:
                raise FormError(f"{name}: not valid JSON ({exc})", field=name) from None

        return _Field(w, get_json, lambda v: w.setText(json.dumps(v)), w.textChanged)

    # -- values ------------------------------------------------------------------------
    def field_names(self) -> list[str]:
        return list(self._fields)

    def editor(self, name: str) -> QWidget:
        return self._fields[name].widget

    def values(self) -> dict[str, Any]:
        """The edited fields as a dict (only the fields shown)."""
        return {name: f.get() for name, f in self._fields.items()}

    def value(self, base=None):
        """A new dataclass instance: ``base`` (or the bound instance, or the defaults) with the edits.

        Raises :class:`FormError` (a ValueError) naming the field the dataclass rejects.
        """
        values = self.values()
        base = base if base is not None else self._base
        try:
            if base is not None:
                return dataclasses.replace(base, **values)
            return self._cls(**values)
        except (TypeError, ValueError) as exc:
            msg = str(exc)
            field = next((n for n in values if n in msg), None)
            raise FormError(f"{self._cls.__name__}: {msg}", field=field) from None

    def set_value(self, instance_or_dict) -> None:
        """Show the values of an instance (or a dict of field values); becomes the bound instance."""
        if dataclasses.is_dataclass(instance_or_dict):
            self._base = instance_or_dict
            data = {n: getattr(instance_or_dict, n) for n in self._fields}
        else:
            data = dict(instance_or_dict)
        for name, v in data.items():
            if name in self._fields:
                self._fields[name].set(v)



class _Multi:
    """Several signals seen as one (``connect`` connects the slot to all)."""

    def __init__(self, *signals):
        self._signals = signals

    def connect(self, slot):
        for s in self._signals:
            s.connect(slot)
