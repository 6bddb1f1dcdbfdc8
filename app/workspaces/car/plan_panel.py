"""The Car planner's Plan tab: model choice, problem, targets, weights, Optimise / Play.

Lays out widgets, shows :class:`.state.CarPlannerState` (it observes ``targets``,
``selection``, ``problem``, ``plan`` and ``history``) and forwards edits to it; the page
connects the buttons that start jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm, FieldSpec
from app.widgets.run_row import RunRow
from app.workspaces.car.models import SIM, ModelCatalogue
from app.workspaces.car.state import CUSTOM, CarPlannerState, PlanVariant
from engine.car.costs import PlanWeights
from engine.car.optimiser import DIRECTIONS, OptimiserConfig
from engine.car.scenarios import MAX_HORIZON, MAX_START_SPEED, MIN_HORIZON, SCENARIOS

__all__ = ["PLAN_COLOURS", "PlanPanel"]

PLAN_COLOURS = ("#ff8c00", "#9467bd")      # first and second compared plan (GELU, ReLU)


@dataclass(frozen=True)
class PlanProblem:
    """The Problem box's numbers: ``horizon`` (steps of 0.05 s) and ``start_speed`` (m/s), in the
    plan's own limits (the form shows a value outside them red, with the reason, and Optimise waits)."""

    horizon: int = 30
    start_speed: float = 0.0


PROBLEM_SPECS = {
    "horizon": FieldSpec("Horizon (steps)", MIN_HORIZON, MAX_HORIZON, step=1),
    "start_speed": FieldSpec("Start speed (m/s)", -MAX_START_SPEED, MAX_START_SPEED, step=0.5),
}


def targets_beyond_horizon(steps, horizon: int) -> str:
    """A plain warning when any target step lies beyond ``horizon`` (``""`` when none does)."""
    late = [(i + 1, s) for i, s in enumerate(steps) if s > horizon]
    if not late:
        return ""
    which = ", ".join(f"{i} (step {s})" for i, s in late)
    return (
        f"Target{'s' if len(late) > 1 else ''} {which} lie{'' if len(late) > 1 else 's'} beyond the "
        f"horizon of {horizon} steps: raise the horizon or move the target{'s' if len(late) > 1 else ''}."
    )


class PlanPanel(QWidget):
    """The Plan tab's widgets bound to ``state``."""

    def __init__(self, state: CarPlannerState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._buttons())
        lay.addWidget(self._model_box())
        lay.addWidget(self._compare_table())
        lay.addWidget(self._problem_box())
        lay.addWidget(self._targets_box())
        lay.addWidget(self._weights_box())
        row = QHBoxLayout()
        self.save_button = QPushButton("Save plan…")
        self.load_button = QPushButton("Load plan…")
        row.addWidget(self.save_button)
        row.addWidget(self.load_button)
        lay.addLayout(row)
        lay.addStretch(1)
        for event, slot in (("targets", self.show_targets), ("selection", self.show_targets),
                            ("problem", self.show_problem), ("plan", self.show_plan)):
            state.connect(event, slot)
        self.show_problem()
        self.show_plan()

    # -- layout ------------------------------------------------------------------------------
    def _buttons(self) -> RunRow:
        """Optimise / Cancel (the widget kit's run row; the page connects the buttons) and Play."""
        self.run_row = RunRow("Optimise", run_name="carOptimise")
        self.optimise_button = self.run_row.run_button
        self.cancel_button = self.run_row.cancel_button
        self.play_button = QPushButton("Play on simulator")
        self.play_button.setObjectName("carPlay")
        self.play_button.setEnabled(False)
        self.play_button.setToolTip("Plays the finished plan for the current targets and settings")
        self.run_row.add_widget(self.play_button)
        return self.run_row

    def _model_box(self) -> QGroupBox:
        box = QGroupBox("Model")
        form = QFormLayout(box)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("carModel")
        self.compare_combo = QComboBox()
        self.compare_combo.setObjectName("carCompare")
        for combo in (self.model_combo, self.compare_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(12)
        self.compare_models = QCheckBox("Compare ReLU and GELU")
        self.compare_models.setObjectName("carCompareActivations")
        self.compare_models.setEnabled(False)
        self.compare_models.setToolTip(
            "Needs a trained GELU and a trained ReLU model: Optimise plans on both and overlays them"
        )
        row = QHBoxLayout()
        self.train_button = QPushButton("Train model…")
        self.train_button.setToolTip("Training settings, live loss, save and load: the Model tab")
        self.add_model_button = QPushButton("Load model…")
        row.addWidget(self.train_button)
        row.addWidget(self.add_model_button)
        form.addRow("Plan on", self.model_combo)
        form.addRow("Compare with", self.compare_combo)
        form.addRow(self.compare_models)
        form.addRow(row)
        return box

    def _compare_table(self) -> QTableWidget:
        t = self.compare_table = QTableWidget(0, 6)
        t.setObjectName("carCompareTable")
        t.setHorizontalHeaderLabels(["model", "act.", "iter.", "cost", "exec. m", "exec. rad"])
        t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        t.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        t.verticalHeader().setVisible(False)
        t.setToolTip("Each plan executed open loop on the simulator: end position and "
                     "heading errors against the last target")
        t.setMaximumHeight(90)
        t.setVisible(False)
        return t

    def _problem_box(self) -> QGroupBox:
        box = QGroupBox("Problem")
        form = QFormLayout(box)
        self.scenario_combo = QComboBox()
        self.scenario_combo.addItem("(custom)", CUSTOM)
        for name in SCENARIOS:
            self.scenario_combo.addItem(name, name)
        self.scenario_combo.currentIndexChanged.connect(self._on_scenario_chosen)
        # the one form rule: a value outside the plan's limits (engine) stays as typed, red, with
        # the reason under it, and Optimise waits; the state keeps the last good value
        self.problem_form = DataclassForm(PlanProblem(self.state.horizon, self.state.start_speed),
                                          specs=PROBLEM_SPECS)
        self.horizon_spin = self.problem_form.editor("horizon")
        self.horizon_spin.setObjectName("carHorizon")
        self.start_speed = self.problem_form.editor("start_speed")
        self.problem_form.changed.connect(self._on_problem_edited)
        self.horizon_warning = QLabel("")
        self.horizon_warning.setObjectName("carHorizonWarning")
        self.horizon_warning.setWordWrap(True)
        self.horizon_warning.setStyleSheet("color: #d9534f;")
        self.horizon_warning.hide()
        form.addRow("Scenario", self.scenario_combo)
        form.addRow(self.problem_form)
        form.addRow(self.horizon_warning)
        return box

    def _targets_box(self) -> QGroupBox:
        box = QGroupBox("Targets")
        tl = QVBoxLayout(box)
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("carTargets")
        self.table.setHorizontalHeaderLabels(["step", "x (m)", "y (m)", "yaw (°)"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.itemChanged.connect(self._on_table_edit)
        self.table.itemSelectionChanged.connect(self._on_table_selection)
        self.table.setMinimumHeight(110)
        tl.addWidget(self.table)
        row = QHBoxLayout()
        for text, slot in (("Delete", self.state.delete_selected), ("Undo", self.state.undo),
                           ("Redo", self.state.redo)):
            b = QPushButton(text)
            b.clicked.connect(slot)
            row.addWidget(b)
        tl.addLayout(row)
        return box

    def _weights_box(self) -> QGroupBox:
        box = QGroupBox("Weights and optimiser")
        bl = QVBoxLayout(box)
        self.weights_form = DataclassForm(PlanWeights)
        self.weights_form.changed.connect(self._on_weights_edited)
        self.opt_form = DataclassForm(OptimiserConfig, include=["candidates", "max_iterations", "direction"],
                                      choices={"direction": list(DIRECTIONS)})
        bl.addWidget(self.weights_form)
        bl.addWidget(self.opt_form)
        self.run_row.watch_forms(self.problem_form, self.weights_form, self.opt_form)
        return box

    def _on_problem_edited(self):
        try:
            problem = self.problem_form.value()
        except ValueError:
            self.check_targets()
            return                              # the form shows the field; the state keeps the last good one
        self.state.set_horizon(problem.horizon)
        self.state.set_start_speed(problem.start_speed)
        self.check_targets()

    def check_targets(self):
        """Warn (inline, and Optimise waits) while a target lies beyond the horizon."""
        warning = targets_beyond_horizon([t.step for t in self.state.targets], self.state.horizon)
        self.horizon_warning.setText(warning)
        self.horizon_warning.setVisible(bool(warning))
        self.run_row.set_ready(not warning, warning)

    # -- forwarding ----------------------------------------------------------------------------
    def _on_scenario_chosen(self, index: int):
        name = self.scenario_combo.itemData(index)
        if name in SCENARIOS:
            self.state.load_scenario(name)

    def _on_weights_edited(self):
        try:
            self.state.set_weights(self.weights_form.value())
        except ValueError:
            pass                                # the form shows the field; the state keeps the last good one

    def _on_table_selection(self):
        rows = {i.row() for i in self.table.selectedIndexes()}
        if rows:
            self.state.select(min(rows))

    def _on_table_edit(self, item: QTableWidgetItem):
        i, col = item.row(), item.column()
        if i >= len(self.state.targets):
            return
        try:
            value = float(item.text())
        except ValueError:
            self.show_targets()
            return
        key, value = (("step", value), ("x", value), ("y", value), ("yaw", math.radians(value)))[col]
        # after Qt has finished with the edited item: the state's echo rebuilds the table
        QTimer.singleShot(0, lambda: self.state.edit_target(i, **{key: value}))

    # -- showing the state ---------------------------------------------------------------------
    def show_targets(self):
        s = self.state
        self.check_targets()
        self.table.blockSignals(True)
        self.table.setRowCount(len(s.targets))
        for i, t in enumerate(s.targets):
            values = [str(t.step), f"{t.x:.2f}", f"{t.y:.2f}", f"{math.degrees(t.yaw):.0f}"]
            for j, v in enumerate(values):
                self.table.setItem(i, j, QTableWidgetItem(v))
        if 0 <= s.selected < len(s.targets):
            self.table.selectRow(s.selected)
        else:
            self.table.clearSelection()
        self.table.blockSignals(False)

    def show_problem(self):
        s = self.state
        for w in (self.scenario_combo, self.problem_form, self.weights_form):
            w.blockSignals(True)
        self.scenario_combo.setCurrentIndex(max(0, self.scenario_combo.findData(s.scenario)))
        shown = PlanProblem(s.horizon, s.start_speed)
        try:
            current = self.problem_form.value()
        except ValueError:
            current = None
        if current != shown:
            self.problem_form.set_value(shown)
        try:
            current = self.weights_form.value()
        except ValueError:
            current = None
        if current != s.weights:
            self.weights_form.set_value(s.weights)
        for w in (self.scenario_combo, self.problem_form, self.weights_form):
            w.blockSignals(False)
        self.check_targets()

    def show_plan(self):
        s = self.state
        self.run_row.set_running(s.optimising)
        self.play_button.setEnabled(s.can_play)
        plan = s.plan
        self.fill_compare_table(list(plan.variants) if plan is not None and plan.compared else [])

    def fill_compare_table(self, variants: list[PlanVariant]):
        self.compare_table.setRowCount(len(variants))
        for i, v in enumerate(variants):
            cells = [v.model, v.label, str(v.iterations), f"{v.final_cost:.3g}",
                     f"{v.executed_position_error:.2f}", f"{v.executed_heading_error:.2f}"]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                item.setToolTip(
                    f"{v.spec}: {v.iterations} iterations, {'converged' if v.converged else 'stopped'}"
                )
                if j == 1:
                    item.setForeground(pg.mkColor(PLAN_COLOURS[i % 2]))
                self.compare_table.setItem(i, j, item)
        self.compare_table.setVisible(bool(variants))

    # -- models -----------------------------------------------------------------------------------
    def show_models(
        self, catalogue: ModelCatalogue, select: str | None = None, sim_label="Simulator (reference)"
    ):
        """Fill both model choosers from ``catalogue`` (``select``: choose this one under "Plan on")."""
        for combo, first in ((self.model_combo, (sim_label, SIM)), (self.compare_combo, ("(none)", ""))):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(*first)
            if combo is self.compare_combo:
                combo.addItem(sim_label, SIM)
            for path in catalogue.paths:
                combo.addItem(catalogue.describe(path), path)
            target = select if (select and combo is self.model_combo) else current
            combo.setCurrentIndex(max(0, combo.findData(target)))
            combo.blockSignals(False)
        both = catalogue.can_compare_activations()
        if both and not self.compare_models.isEnabled():
            self.compare_models.setChecked(True)       # the paper's comparison, once it is possible
        self.compare_models.setEnabled(both)
        if not both:
            self.compare_models.setChecked(False)
