"""A form bound to an engine dataclass: one editor per field, built from the field's type and default.

``DataclassForm(PrepareConfig)`` (or an instance) shows spin boxes for ``int``/``float``,
check boxes for ``bool``, combo boxes for fields given ``choices`` (or ``Literal`` types),
line edits for ``str``, two spin boxes side by side for a pair of numbers
(``tuple[float, float]``), and for ``float | None`` / ``int | None`` a spin box with an
"auto" check box (unchecked = None). Lists and other tuples are edited as JSON text.

:meth:`DataclassForm.value` returns a *new* dataclass instance (``dataclasses.replace`` of the
bound one, so the dataclass's own validation runs and fields not shown keep their values); a
``ValueError`` from the dataclass is raised as a :class:`FormError` naming the field.

Numbers outside a field's range are *rejected*, not clamped: the editor keeps the typed
value, turns red and says why (tooltip and the form's problem line), :meth:`problems` lists
them, :attr:`validity_changed` tells a Run button to disable itself, and :meth:`value`
raises. The engine dataclass stays the one source of truth for the defaults.

Presentation per field comes from keyword dicts (``labels``, ``ranges``, ``steps``,
``choices``, ``tooltips``) or, more compactly, ``specs={name: FieldSpec(...)}``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

__all__ = ["DataclassForm", "FieldSpec", "FormError", "range_problem"]

_NONE = type(None)
_INT_LIMIT = 2 ** 31 - 1
_FLOAT_LIMIT = 1e12
INVALID_STYLE = "border: 1px solid #d9534f; background: rgba(217, 83, 79, 40);"


class FormError(ValueError):
    """A form value the form or the dataclass rejects; ``field`` names the field."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """How one field is shown: its label, allowed range, spin step, fixed decimals, choices."""

    label: str
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    decimals: int | None = None
    choices: tuple = ()


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def range_problem(value: float, lo: float | None, hi: float | None) -> str | None:
    """Why ``value`` is not allowed in ``[lo, hi]`` (plain words), or None when it is."""
    if not math.isfinite(value):
        return "must be a finite number"
    if lo is not None and value < lo:
        return f"{_fmt(value)} is below the minimum {_fmt(lo)}" + (f" (allowed {_fmt(lo)} to {_fmt(hi)})"
                                                                   if hi is not None else "")
    if hi is not None and value > hi:
        return f"{_fmt(value)} is above the maximum {_fmt(hi)}" + (f" (allowed {_fmt(lo)} to {_fmt(hi)})"
                                                                   if lo is not None else "")
    return None


def _optional_of(hint) -> type | None:
    """``X`` for ``X | None`` / ``Optional[X]`` with X in (int, float, str), else None."""
    args = typing.get_args(hint)
    if args and _NONE in args and len(args) == 2:
        other = args[0] if args[1] is _NONE else args[1]
        if other in (int, float, str):
            return other
    return None


def _is_pair(hint, value) -> bool:
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        return len(args) == 2 and all(a in (int, float) for a in args)
    return (isinstance(value, tuple) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


class _Checked:
    """Mixin for the numeric editors: an allowed range checked, not enforced by Qt."""

    def _init_check(self, lo, hi) -> None:
        self.allowed = (lo, hi)
        self.problem: str | None = None
        self.setKeyboardTracking(False)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(56)
        self.valueChanged.connect(self._check)

    def minimumSizeHint(self):  # noqa: N802 - Qt name; the text decides, not the huge range
        hint = super().minimumSizeHint()
        hint.setWidth(56)
        return hint

    def sizeHint(self):  # noqa: N802
        hint = super().sizeHint()
        hint.setWidth(min(hint.width(), 110))
        return hint

    def _check(self, *_):
        self.problem = range_problem(float(self.value()), *self.allowed)
        self.setStyleSheet(INVALID_STYLE if self.problem else "")
        lo, hi = self.allowed
        allowed = "" if lo is None and hi is None else \
            f"allowed: {_fmt(lo) if lo is not None else '-inf'} to {_fmt(hi) if hi is not None else 'inf'}"
        self.setToolTip(self.problem or self.base_tip or allowed)


class _FloatEdit(_Checked, QDoubleSpinBox):
    """A double spin box for physical quantities from 1e-9 to 1e9 (compact text, any typed value)."""

    def __init__(self, value: float, lo=None, hi=None, step=None, decimals=None, parent=None):
        super().__init__(parent)
        self.base_tip = ""
        self.fixed_decimals = decimals
        self.setDecimals(12)
        self.setRange(-_FLOAT_LIMIT, _FLOAT_LIMIT)
        self._init_check(lo, hi)
        v = float(value)
        if step is None:
            mag = abs(v) if v else 1.0
            step = 10 ** math.floor(math.log10(mag)) if mag > 0 else 0.1
        self.setSingleStep(step)
        self.setValue(v)
        self._check()

    def textFromValue(self, value: float) -> str:  # noqa: N802
        if self.fixed_decimals is not None:
            return f"{value:.{self.fixed_decimals}f}"
        return _fmt(value)

    def valueFromText(self, text: str) -> float:  # noqa: N802
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text, pos):  # any number while typing; the range is checked afterwards
        try:
            v = float(text)
            if abs(v) > _FLOAT_LIMIT:
                return QValidator.State.Invalid, text, pos
            return QValidator.State.Acceptable, text, pos
        except ValueError:
            return QValidator.State.Intermediate, text, pos


class _IntEdit(_Checked, QSpinBox):
    def __init__(self, value: int, lo=None, hi=None, step=None, parent=None):
        super().__init__(parent)
        self.base_tip = ""
        self.setRange(-_INT_LIMIT, _INT_LIMIT)
        self._init_check(None if lo is None else int(lo), None if hi is None else int(hi))
        self.setSingleStep(int(max(1, step or 1)))
        self.setValue(int(value))
        self._check()


class _Field:
    """One editor: ``widget`` for the layout, ``get()``/``set(v)``, ``changed``, ``numbers`` to check."""

    def __init__(self, widget: QWidget, get, set_, changed, numbers=()):
        self.widget, self.get, self.set, self.changed = widget, get, set_, changed
        self.numbers = list(numbers)

    def problem(self) -> str | None:
        for n in self.numbers:
            if n.problem:
                return n.problem
        return None


class DataclassForm(QWidget):
    """Editors for the fields of a dataclass; :meth:`value` builds a new instance.

    ``source``: a dataclass type (its defaults are shown) or instance. ``include``/``exclude``:
    field names to show or hide (order follows ``include`` when given). ``choices``: field ->
    list of allowed values (a combo box). ``labels``/``tooltips``: field -> text. ``ranges``:
    field -> (min, max) allowed for numeric editors (either may be None). ``steps``: field ->
    spin step. ``specs``: field -> :class:`FieldSpec`, shown in that order (sets all of these).

    Signals: ``changed`` on any edit, ``validity_changed(bool)`` when the form turns valid or
    invalid (a value out of its range).
    """

    changed = Signal()
    validity_changed = Signal(bool)

    def __init__(self, source, *, include: list[str] | None = None, exclude: list[str] | None = None,
                 choices: dict[str, list] | None = None, labels: dict[str, str] | None = None,
                 tooltips: dict[str, str] | None = None, ranges: dict[str, tuple] | None = None,
                 steps: dict[str, float] | None = None, specs: dict[str, FieldSpec] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        if isinstance(source, type):
            if not dataclasses.is_dataclass(source):
                raise TypeError(f"{source!r} is not a dataclass")
            self._cls, self._base = source, None
        else:
            if not dataclasses.is_dataclass(source):
                raise TypeError(f"{type(source)!r} is not a dataclass")
            self._cls, self._base = type(source), source
        choices, labels, ranges = dict(choices or {}), dict(labels or {}), dict(ranges or {})
        self._steps, self._decimals = dict(steps or {}), {}
        if specs:
            include = list(specs) if include is None else include
            for name, spec in specs.items():
                labels.setdefault(name, spec.label)
                if spec.minimum is not None or spec.maximum is not None:
                    ranges.setdefault(name, (spec.minimum, spec.maximum))
                if spec.step is not None:
                    self._steps.setdefault(name, spec.step)
                if spec.decimals is not None:
                    self._decimals[name] = spec.decimals
                if spec.choices:
                    choices.setdefault(name, list(spec.choices))
        self._choices, self._ranges = choices, ranges
        hints = typing.get_type_hints(self._cls)
        fields = {f.name: f for f in dataclasses.fields(self._cls) if f.init}
        names = list(include) if include is not None else list(fields)
        for name in names:
            if name not in fields:
                raise ValueError(f"{self._cls.__name__} has no field {name!r}")
        names = [n for n in names if n not in set(exclude or ())]
        self._fields: dict[str, _Field] = {}
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        self.layout_ = QFormLayout()
        self.layout_.setContentsMargins(0, 0, 0, 0)
        self.layout_.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.layout_.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        outer.addLayout(self.layout_)
        self.problem_label = QLabel("")
        self.problem_label.setObjectName("formProblems")
        self.problem_label.setWordWrap(True)
        self.problem_label.setStyleSheet("color: #d9534f;")
        self.problem_label.hide()
        outer.addWidget(self.problem_label)
        self._labels: dict[str, str] = {}
        for name in names:
            f = fields[name]
            value = self._initial(f)
            editor = self._make_editor(name, hints.get(name, type(value)), value)
            editor.widget.setObjectName(f"field_{name}")
            tip = (tooltips or {}).get(name)
            if tip:
                editor.widget.setToolTip(tip)
                for n in editor.numbers:
                    n.base_tip = tip
                    n._check()
            self._fields[name] = editor
            self._labels[name] = labels.get(name, _label(name))
            self.layout_.addRow(self._labels[name], editor.widget)
            editor.changed.connect(lambda *a: self._edited())
        self._valid = True
        self._update_problems(emit=False)

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
        step = self._steps.get(name)
        if kind is int:
            return _IntEdit(int(value) if value is not None else 0, lo, hi, step)
        return _FloatEdit(float(value) if value is not None else 0.0, lo, hi, step, self._decimals.get(name))

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
            return _Field(w, w.value, lambda v, w=w, k=hint: w.setValue(k(v)), w.valueChanged, [w])
        if hint is str:
            w = QLineEdit(str(value if value is not None else ""))
            return _Field(w, w.text, lambda v: w.setText(str(v)), w.textChanged)
        if _is_pair(hint, value):
            box = QWidget()
            row = QHBoxLayout(box)
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(4)
            parts = [self._numeric(name, float, v) for v in (value or (0.0, 0.0))]
            for i, p in enumerate(parts):
                p.setObjectName(f"field_{name}_{i}")
                row.addWidget(p, 1)
            box.parts = parts

            def get_pair(parts=parts):
                return tuple(float(p.value()) for p in parts)

            def set_pair(v, parts=parts):
                for p, x in zip(parts, v):
                    p.setValue(float(x))

            return _Field(box, get_pair, set_pair, _Multi(*(p.valueChanged for p in parts)), parts)
        inner = _optional_of(hint)
        if inner in (int, float):
            box = QWidget()
            row = QHBoxLayout(box)
            row.setContentsMargins(0, 0, 0, 0)
            auto = QCheckBox("auto")
            auto.setObjectName(f"field_{name}_auto")
            spin = self._numeric(name, inner, value)
            auto.setChecked(value is None)
            spin.setHidden(value is None)   # "auto" alone reads better than a greyed 0
            auto.toggled.connect(lambda on: spin.setHidden(on))
            row.addWidget(spin, 1)
            row.addWidget(auto)
            box.spin, box.auto = spin, auto  # for tests and callers

            def get(spin=spin, auto=auto, k=inner):
                return None if auto.isChecked() else k(spin.value())

            def set_(v, spin=spin, auto=auto, k=inner):
                auto.setChecked(v is None)
                spin.setHidden(v is None)
                if v is not None:
                    spin.setValue(k(v))

            field = _Field(box, get, set_, _Multi(spin.valueChanged, auto.toggled), [spin])
            field.problem = lambda spin=spin, auto=auto: None if auto.isChecked() else spin.problem
            return field
        # str | None, lists, other tuples, anything else: JSON text
        w = QLineEdit(json.dumps(value))
        w.setToolTip("JSON")

        def get_json(w=w, name=name):
            try:
                v = json.loads(w.text() or "null")
            except json.JSONDecodeError as exc:
                raise FormError(
                    f"{self._labels.get(name, name)}: not valid JSON ({exc.msg})", field=name
                ) from None
            return tuple(v) if isinstance(value, tuple) and isinstance(v, list) else v

        return _Field(w, get_json, lambda v: w.setText(json.dumps(v)), w.textChanged)

    # -- validity ----------------------------------------------------------------------
    def _edited(self) -> None:
        self._update_problems()
        self.changed.emit()

    def problems(self) -> dict[str, str]:
        """Field name -> why its value is rejected (empty when every value is allowed).

        A value out of its editor's range is one problem; so is a value the dataclass itself
        refuses (its ``__post_init__`` checks, the same ones the command line runs): that one is
        found as soon as it is typed, not at Run, and named by the form's label (never a flag)."""
        out = {}
        for name, f in self._fields.items():
            p = f.problem()
            if p:
                out[name] = p
        if not out:
            refused = self._dataclass_problem()
            if refused is not None:
                out[refused[0]] = refused[1]
        return out

    def _dataclass_problem(self) -> tuple[str, str] | None:
        """(field, reason) when the dataclass refuses the edited values, else None."""
        try:
            values = self.values()
        except FormError as exc:
            return (exc.field or next(iter(self._fields), ""), str(exc).split(": ", 1)[-1])
        try:
            if self._base is not None:
                dataclasses.replace(self._base, **values)
            else:
                self._cls(**values)
        except ValueError as exc:
            return self._refused_field(exc, values)
        except TypeError:           # fields this form does not show are missing: Run's value() says so
            return None
        return None

    def _refused_field(self, exc: Exception, values: dict) -> tuple[str, str]:
        """The shown field an error names (``InputError.field`` such as ``"tol_pos (--tol-pos)"``,
        or the first field named in its text) and the reason without the field or flag."""
        field = getattr(exc, "field", None)
        reason = getattr(exc, "reason", None) or str(exc)
        name = str(field).split(" ")[0].strip("'\"") if field else None
        if name not in self._fields:
            name = next((n for n in values if n in str(exc)), None)
        if name is None:
            name = next(iter(self._fields), "")
        return name, reason

    def is_valid(self) -> bool:
        return not self.problems()

    def _update_problems(self, emit: bool = True) -> None:
        problems = self.problems()
        for name, f in self._fields.items():    # a value the dataclass refuses is red too
            if not f.problem():
                f.widget.setStyleSheet(INVALID_STYLE if name in problems else "")
        text = "; ".join(f"{self._labels[n]}: {p}" for n, p in problems.items())
        self.problem_label.setText(text)
        self.problem_label.setVisible(bool(problems))
        valid = not problems
        if valid != self._valid:
            self._valid = valid
            if emit:
                self.validity_changed.emit(valid)

    # -- values ------------------------------------------------------------------------
    def field_names(self) -> list[str]:
        return list(self._fields)

    def editor(self, name: str) -> QWidget:
        return self._fields[name].widget

    def values(self) -> dict[str, Any]:
        """The edited fields as a dict (only the fields shown; out-of-range values included)."""
        return {name: f.get() for name, f in self._fields.items()}

    def value(self, base=None):
        """A new dataclass instance: ``base`` (or the bound instance, or the defaults) with the edits.

        Raises :class:`FormError` (a ValueError) naming the field that is out of range or that
        the dataclass rejects.
        """
        problems = self.problems()
        if problems:
            name, why = next(iter(problems.items()))
            raise FormError(f"{self._labels[name]}: {why}", field=name)
        values = self.values()
        base = base if base is not None else self._base
        try:
            if base is not None:
                return dataclasses.replace(base, **values)
            return self._cls(**values)
        except (TypeError, ValueError) as exc:
            msg = str(exc)
            field = next((n for n in values if n in msg), None)
            raise FormError(msg, field=field) from None

    def set_value(self, instance_or_dict) -> None:
        """Show the values of an instance (or a dict of field values); an instance becomes the bound one.

        Emits ``changed`` once (not once per field)."""
        if dataclasses.is_dataclass(instance_or_dict):
            self._base = instance_or_dict
            data = {n: getattr(instance_or_dict, n) for n in self._fields}
        else:
            data = dict(instance_or_dict)
        self._set_quietly(data)

    def set_field(self, name: str, value) -> None:
        """Set one field (e.g. from a canvas); emits ``changed`` once."""
        self._set_quietly({name: value})

    def _set_quietly(self, data: dict) -> None:
        editors = []
        for name in data:
            if name in self._fields:
                f = self._fields[name]
                editors += [f.widget] + f.numbers + list(f.widget.findChildren(QWidget))
        editors = list(dict.fromkeys(editors))          # each once, or its old state is lost
        blocked = [(w, w.blockSignals(True)) for w in editors]
        try:
            for name, v in data.items():
                if name in self._fields:
                    self._fields[name].set(v)
        finally:
            for w, old in blocked:
                w.blockSignals(old)
        for name in data:
            for n in self._fields[name].numbers if name in self._fields else ():
                n._check()
        self._edited()


class _Multi:
    """Several signals seen as one (``connect`` connects the slot to all)."""

    def __init__(self, *signals):
        self._signals = signals

    def connect(self, slot):
        for s in self._signals:
            s.connect(slot)
