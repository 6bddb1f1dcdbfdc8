"""The log mapping dialog: which columns are time, q, qd and u, their units, preparation and split.

One row per log column with a role (time, q, qd, u or ignored) and a unit; a preview of the
first rows in SI units; the preparation form (the engine's ``PrepareConfig``) with a live
raw-against-smoothed plot; the validation range picked on a plot of the first configuration
with a ``LinearRegionItem``. Problems show in red under the table; OK stays disabled until the
mapping is valid. Open it with ``.open()`` (never ``exec()``); read :meth:`mapping`,
:meth:`prepare_config` and :meth:`compare_config` once accepted. ``show_preparation=False``
shows the roles, units and preview only (the Robot workspace's log replay).

Shared by the Model lab and the Robot workspace (moved here from app/workspaces/model_lab).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.widgets.plots import make_plot
from engine import logs as engine_logs
from engine.logs.units import UNIT_KINDS
from engine.training import compare as learning_compare

__all__ = ["ROLES", "LogMappingDialog"]

ROLES = ("—", "time", "q", "qd", "u")
UNIT_CHOICES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in UNIT_KINDS.items()}
PREVIEW_ROWS = 50_000   # larger logs are previewed on a part (head or stride) to keep the dialog responsive
PREPARE_FIELDS = [
    "dt",
    "interpolation",
    "smooth",
    "window",
    "polyorder",
    "derivative",
    "use_logged_velocities",
    "unwrap_angles",
    "smooth_controls",
    "val_fraction",
]


def _unit_choices(role: str) -> tuple[str, ...]:
    kind = {"time": "time", "q": "position", "qd": "velocity", "u": "control"}.get(role)
    if kind is None:
        return ("",)
    return UNIT_CHOICES[kind]


def _sub_table(table, rows: slice):
    """A LogTable of some rows of ``table`` (fast previews of large logs); every other field
    (notes, repeated and skipped columns, sparse) is kept, so the preview refuses what the log does."""
    lines = table.row_lines[rows] if table.row_lines is not None else None
    return dataclasses.replace(table, data={c: table.data[c][rows] for c in table.columns}, row_lines=lines)


def _save_mapping_for(mapping, table, folder):
    return engine_logs.save_mapping(mapping, table.columns, folder)


class LogMappingDialog(QDialog):
    """Map a loaded ``LogTable``; ``mapping_folder`` remembers mappings per column signature."""

    def __init__(self, table, mapping=None, prepare=None, compare=None, mapping_folder=None,
                 origin: str = "", parent: QWidget | None = None, show_preparation: bool = True):
        super().__init__(parent)
        self.setObjectName("logMappingDialog")
        self.setWindowTitle(f"Map log columns: {table.name or 'log'}")
        self.table = table
        # previews of large logs: the first rows for smoothing, every k-th row for the split plot
        n = table.n_rows
        self._head = table if n <= PREVIEW_ROWS else _sub_table(table, slice(0, PREVIEW_ROWS))
        self._strided = table if n <= PREVIEW_ROWS else _sub_table(table, slice(0, n, -(-n // PREVIEW_ROWS)))
        self.mapping_folder = mapping_folder
        self._mapping = None
        self._timer = QTimer(self, singleShot=True, interval=120)
        self._timer.timeout.connect(self.refresh)
        self.resize(1100, 760)

        layout = QVBoxLayout(self)
        info = QLabel(f"<b>{table.name}</b>: {table.n_rows} rows, {len(table.columns)} columns, format "
                      f"{table.format or '?'}" + (f". Mapping: {origin}" if origin else "")
                      + ("".join(f"<br><i>{n}</i>" for n in table.notes[:3])))
        info.setWordWrap(True)
        layout.addWidget(info)
        split = QSplitter(Qt.Orientation.Horizontal)
        layout.addWidget(split, 1)

        # left: roles and units, sample period, preview
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        self.roles = QTableWidget(len(table.columns), 3)
        self.roles.setObjectName("rolesTable")
        self.roles.setHorizontalHeaderLabels(["column", "role", "unit"])
        self.roles.verticalHeader().setVisible(False)
        self.roles.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self._role_boxes: list[QComboBox] = []
        self._unit_boxes: list[QComboBox] = []
        for i, col in enumerate(table.columns):
            item = QTableWidgetItem(col)
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.roles.setItem(i, 0, item)
            role = QComboBox()
            role.addItems(ROLES)
            unit = QComboBox()
            unit.setEditable(False)
            role.currentTextChanged.connect(lambda text, i=i: self._role_changed(i, text))
            unit.currentTextChanged.connect(lambda *_: self._schedule())
            self.roles.setCellWidget(i, 1, role)
            self.roles.setCellWidget(i, 2, unit)
            self._role_boxes.append(role)
            self._unit_boxes.append(unit)
        lv.addWidget(QLabel("Roles and units (q and qd columns pair up in table order)"))
        lv.addWidget(self.roles, 2)
        row = QHBoxLayout()
        row.addWidget(QLabel("Sample period without a time column (s)"))
        self.sample_period = QDoubleSpinBox(decimals=6, minimum=1e-6, maximum=1e3, value=0.01)
        self.sample_period.valueChanged.connect(lambda *_: self._schedule())
        row.addWidget(self.sample_period)
        lv.addLayout(row)
        self.remember = QCheckBox("Remember this mapping for files with these columns")
        self.remember.setChecked(mapping_folder is not None)
        self.remember.setEnabled(mapping_folder is not None)
        lv.addWidget(self.remember)
        self.problem = QLabel("")
        self.problem.setObjectName("mappingProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #d9534f;")
        lv.addWidget(self.problem)
        lv.addWidget(QLabel("Preview (SI units)"))
        self.preview = QTableWidget(0, 0)
        self.preview.setObjectName("previewTable")
        self.preview.verticalHeader().setVisible(False)
        self.preview.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        lv.addWidget(self.preview, 2)
        split.addWidget(left)

        # right: preparation form, smoothing preview, split picker
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        forms = QHBoxLayout()
        box = QGroupBox("Preparation")
        bl = QVBoxLayout(box)
        self.prepare_form = DataclassForm(
            prepare or engine_logs.PrepareConfig(),
            include=PREPARE_FIELDS,
            choices={"interpolation": ["linear", "cubic"], "derivative": ["finite_difference", "savgol"]},
            labels={"dt": "Resample step dt (s)", "val_fraction": "Validation fraction"},
        )
        self.prepare_form.changed.connect(self._schedule)
        bl.addWidget(self.prepare_form)
        forms.addWidget(box)
        box2 = QGroupBox("Training chunks")
        bl2 = QVBoxLayout(box2)
        self.compare_form = DataclassForm(
            compare or learning_compare.LogCompareConfig(),
            include=["steps", "horizon"],
            labels={"steps": "Steps per chunk", "horizon": "k (rollout horizon)"},
            ranges={"steps": (1, 100000), "horizon": (1, 100000)},
        )
        self.compare_form.changed.connect(self._schedule)
        bl2.addWidget(self.compare_form)
        bl2.addStretch(1)
        forms.addWidget(box2)
        rv.addLayout(forms)
        tabs = QTabWidget()
        sm = QWidget()
        sv = QVBoxLayout(sm)
        srow = QHBoxLayout()
        srow.addWidget(QLabel("Signal"))
        self.signal = QComboBox()
        self.signal.currentIndexChanged.connect(lambda *_: self._schedule())
        srow.addWidget(self.signal, 1)
        sv.addLayout(srow)
        self.smooth_plot = make_plot("Raw against smoothed", "t [s]", "value (SI)")
        self.smooth_plot.setObjectName("smoothPlot")
        self.raw_curve = self.smooth_plot.plot([], [], name="raw", pen=pg.mkPen("#999999", width=1))
        self.smooth_curve = self.smooth_plot.plot([], [], name="smoothed", pen=pg.mkPen("#0072B2", width=2))
        sv.addWidget(self.smooth_plot)
        tabs.addTab(sm, "Smoothing preview")
        sp = QWidget()
        spv = QVBoxLayout(sp)
        self.use_region = QCheckBox("Validate on the picked range (drag the shaded band); train on the rest")
        self.use_region.setChecked(bool((prepare or engine_logs.PrepareConfig()).val_ranges))
        spv.addWidget(self.use_region)
        self.split_plot = make_plot("Train / validation split", "t [s]", "q[0] (SI)", legend=False)
        self.split_plot.setObjectName("splitPlot")
        self.split_curve = self.split_plot.plot([], [], pen=pg.mkPen("#0072B2", width=1))
        self.region = pg.LinearRegionItem(values=(0, 1), brush=pg.mkBrush(255, 170, 0, 50))
        self.region.sigRegionChangeFinished.connect(lambda *_: self.use_region.setChecked(True))
        self.split_plot.addItem(self.region)
        spv.addWidget(self.split_plot)
        tabs.addTab(sp, "Split")
        rv.addWidget(tabs, 1)
        self.tabs = tabs
        split.addWidget(right)
        split.setSizes([450, 650])
        right.setVisible(show_preparation)  # a replay maps columns only: no preparation or split

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)

        self._region_initialised = False
        if prepare is not None and prepare.val_ranges:
            a, b = prepare.val_ranges[0]
            self.region.setRegion((a, b))
            self._region_initialised = True
        self.set_mapping(mapping)
        self.refresh()

    # -- roles ---------------------------------------------------------------------------
    def _role_changed(self, i: int, role: str) -> None:
        unit = self._unit_boxes[i]
        current = unit.currentText()
        unit.blockSignals(True)
        unit.clear()
        unit.addItems(list(_unit_choices(role)))
        if current in _unit_choices(role):
            unit.setCurrentText(current)
        unit.blockSignals(False)
        if role == "time":  # one time column
            for j, box in enumerate(self._role_boxes):
                if j != i and box.currentText() == "time":
                    box.setCurrentText("—")
        self._schedule()

    def set_role(self, column: str, role: str, unit: str | None = None) -> None:
        """Set a column's role (and unit): what a user does with the combo boxes."""
        i = self.table.columns.index(column)
        self._role_boxes[i].setCurrentText(role)
        if unit is not None:
            self._unit_boxes[i].setCurrentText(unit)

    def set_mapping(self, mapping) -> None:
        for box in self._role_boxes:
            box.setCurrentText("—")
        if mapping is None:
            return
        if mapping.time:
            self.set_role(mapping.time, "time", mapping.unit(mapping.time) or "s")
        elif mapping.sample_period:
            self.sample_period.setValue(mapping.sample_period)
        for role in ("q", "qd", "u"):
            for col in getattr(mapping, role):
                if col in self.table.columns:
                    default = {"q": "rad", "qd": "rad/s", "u": "N m"}[role]
                    self.set_role(col, role, mapping.unit(col) or default)

    def _collect(self):
        cols = self.table.columns
        role_of = [b.currentText() for b in self._role_boxes]
        units = {c: self._unit_boxes[i].currentText() for i, c in enumerate(cols) if role_of[i] != "—"}
        time = next((c for c, r in zip(cols, role_of) if r == "time"), None)
        return engine_logs.LogMapping(time=time, q=[c for c, r in zip(cols, role_of) if r == "q"],
                             qd=[c for c, r in zip(cols, role_of) if r == "qd"],
                             u=[c for c, r in zip(cols, role_of) if r == "u"], units=units,
                             sample_period=None if time else float(self.sample_period.value()),
                             name=self.table.name)

    # -- live refresh ------------------------------------------------------------------
    def _schedule(self, *_):
        self._timer.start()

    def _set_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not text)

    def refresh(self) -> None:
        """Rebuild the mapping, the preview table and both plots (errors go to the red label)."""
        try:
            mapping = self._collect()
            config = self.prepare_form.value()
            self.compare_form.value()          # a value out of range keeps OK disabled, the reason shown
            rows = engine_logs.preview_mapping(self.table, mapping, 12)
        except (engine_logs.LogError, ValueError) as exc:
            self._mapping = None
            self._set_problem(str(exc))
            return
        self._mapping = mapping
        self._fill_preview(rows)
        labels = (
            [f"q[{i}] {c}" for i, c in enumerate(mapping.q)]
            + [f"qd[{i}] {c}" for i, c in enumerate(mapping.qd)]
            + [f"u[{i}] {c}" for i, c in enumerate(mapping.u)]
        )
        if [self.signal.itemText(i) for i in range(self.signal.count())] != labels:
            self.signal.blockSignals(True)
            self.signal.clear()
            self.signal.addItems(labels)
            self.signal.blockSignals(False)
        try:
            label = self.signal.currentText() or labels[0]
            sig = label.split("[")[0]
            idx = int(label.split("[")[1].split("]")[0])
            sm = engine_logs.smoothing_preview(self._head, mapping, config, sig, idx)
            if self._strided is self._head and (sig, idx) == ("q", 0):
                split = sm
            else:
                split = engine_logs.smoothing_preview(self._strided, mapping, config, "q", 0)
        except (engine_logs.LogError, ValueError) as exc:
            self._set_problem(str(exc))
            return
        self._set_problem("")
        self.raw_curve.setData(sm["t"], sm["raw"])
        self.smooth_curve.setData(sm["t"], sm["smoothed"])
        t = split["t"]
        self.split_curve.setData(t, split["raw"])
        if not self._region_initialised and len(t) > 1:
            cut = t[0] + (1 - config.val_fraction) * (t[-1] - t[0])
            self.region.blockSignals(True)
            self.region.setRegion((cut, t[-1]))
            self.region.blockSignals(False)
            self._region_initialised = True
        self.region.setBounds((t[0], t[-1]))

    def _fill_preview(self, rows: dict) -> None:
        labels = list(rows)
        n = len(next(iter(rows.values()))) if rows else 0
        self.preview.setColumnCount(len(labels))
        self.preview.setRowCount(n)
        self.preview.setHorizontalHeaderLabels(labels)
        for j, key in enumerate(labels):
            for i, v in enumerate(np.asarray(rows[key])):
                self.preview.setItem(i, j, QTableWidgetItem(f"{v:.6g}"))

    # -- results -----------------------------------------------------------------------
    def validation_range(self) -> tuple[float, float]:
        a, b = self.region.getRegion()
        return float(a), float(b)

    def set_validation_range(self, start: float, end: float) -> None:
        """Pick the validation range as a drag on the plot would."""
        self.region.setRegion((start, end))
        self.use_region.setChecked(True)

    def mapping(self):
        """The mapping (``LogMapping``) or None while invalid."""
        self.refresh()
        return self._mapping

    def prepare_config(self):
        config = self.prepare_form.value()
        if self.use_region.isChecked():
            a, b = self.validation_range()
            config.val_ranges = [[a, b]]
            config.train_ranges = []
        else:
            config.val_ranges = []
            config.train_ranges = []
        config.validate()
        return config

    def compare_config(self):
        return self.compare_form.value()

    def accept(self) -> None:
        try:
            mapping = self.mapping()
            if mapping is None:
                return
            self.prepare_config()
            self.compare_config()
        except (engine_logs.LogError, ValueError) as exc:
            self._set_problem(str(exc))
            return
        if self.remember.isChecked() and self.mapping_folder is not None:
            try:
                _save_mapping_for(mapping, self.table, self.mapping_folder)
            except (engine_logs.LogError, OSError) as exc:
                self._set_problem(f"could not remember the mapping: {exc}")
                return
        super().accept()
