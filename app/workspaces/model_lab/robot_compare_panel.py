"""The hardware-log tab's comparison on a robot: which robot the log is of, which models to compare
(the robot models listed with the learned ones), the training epochs, a run/cancel row with progress,
and "Use identified robot" (the identified URDF into the Robot workspace, through the shell).

It observes the lab's :class:`~app.workspaces.model_lab.state.ModelLabState`; the comparison itself
is :meth:`ModelLabState.compare_on_robot` (a job), its results join the compare view's table and plots.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.widgets.job_progress import show_fraction
from app.widgets.run_row import RunRow
from app.workspaces.model_lab.robot_compare import (
    DEFAULT_MODELS,
    ROBOT_MODELS,
    ROBOT_TITLES,
    compare_model_names,
    robot_choices,
)
from app.workspaces.model_lab.state import ModelLabState
from engine.training.compare import LogCompareConfig

__all__ = ["OPEN_ROBOT", "RobotComparePanel"]

OPEN_ROBOT = "Open robot file…"
ROBOT_FILTER = "Robots (*.urdf *.xacro *.xml *.mjcf);;All files (*)"


class RobotComparePanel(QWidget):
    """Signals: ``use_robot_requested(path)``: put the identified robot into the Robot workspace."""

    use_robot_requested = Signal(str)

    def __init__(self, state: ModelLabState, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("robotComparePanel")
        self.state = state
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        self.robot = QComboBox(objectName="compareRobot")
        self.robot.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.robot.setMinimumContentsLength(12)
        self.robot.setToolTip("The robot whose log this is: its joints are matched to the log's by name")
        self.robot.addItem("choose a robot", None)
        for title, name in robot_choices():
            self.robot.addItem(title, name)
        self.robot.addItem(OPEN_ROBOT, OPEN_ROBOT)
        self.robot.activated.connect(self._on_robot_chosen)
        form.addRow("Robot", self.robot)
        self.models = QListWidget(objectName="compareModels")
        for name in compare_model_names():
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name in DEFAULT_MODELS else Qt.CheckState.Unchecked)
            item.setToolTip(ROBOT_TITLES.get(name, "a learned model, trained on the log"))
            self.models.addItem(item)
        self.models.setMaximumHeight(5 * self.models.sizeHintForRow(0) + 6)
        form.addRow("Models", self.models)
        self.epochs = QSpinBox(objectName="compareEpochs")
        self.epochs.setRange(1, 100000)
        self.epochs.setValue(LogCompareConfig().epochs)
        self.epochs.setToolTip("Training epochs of the learned models (the robot file and the identified "
                               "rigid body train nothing)")
        form.addRow("Epochs", self.epochs)
        self.prior = QCheckBox("Lagrangian models on the identified robot", objectName="comparePrior")
        self.prior.setChecked(LogCompareConfig().lagrangian_prior == "robot")
        self.prior.setToolTip("L-NODE, SyMo and E2E-SyMo learn their mass matrix, potential and friction as "
                              "residuals on the rigid body identified from this log (they start as it); "
                              "unchecked: the papers' models, learned from scratch")
        form.addRow("Prior", self.prior)
        layout.addLayout(form)
        self.run_row = RunRow("Compare on robot", progress=True)
        self.run_row.run_button.setObjectName("compareOnRobot")
        self.run_row.run_clicked.connect(self.run)
        self.run_row.cancel_clicked.connect(self.state.cancel_compare)
        layout.addWidget(self.run_row)
        self.use_button = QPushButton("Use identified robot", objectName="useIdentifiedRobot", enabled=False)
        self.use_button.setToolTip("Load the robot identified from this log (URDF with its friction and motor "
                                   "inertia) in the Robot workspace: simulation and the torque readouts use it")
        self.use_button.clicked.connect(self.use_identified)
        layout.addWidget(self.use_button)
        self.summary = QLabel("", objectName="robotCompareSummary", wordWrap=True)
        layout.addWidget(self.summary)

        ev = self.state.events
        ev.robot.connect(self._show_robot)
        ev.robot.connect(lambda *_: self._update_ready())
        ev.data.connect(lambda *_: self._update_ready())
        ev.compare_busy.connect(self.run_row.set_running)
        ev.compare_progress.connect(self._progress)
        ev.robot_comparison.connect(self._on_comparison)
        self._show_robot(self.state.robot)
        self._update_ready()

    def _update_ready(self) -> None:
        data = self.state.data
        if data is None or not data.is_log:
            self.run_row.set_ready(False, "open a hardware log first")
        elif not self.state.robot:
            self.run_row.set_ready(False, "choose the robot whose log this is")
        else:
            self.run_row.set_ready(True)

    # -- robot -----------------------------------------------------------------------------
    def _show_robot(self, source: str | None) -> None:
        i = self.robot.findData(source) if source else 0
        if source and i < 0:        # a robot file: listed under its file name
            self.robot.insertItem(1, Path(source).name, source)
            i = 1
        self.robot.setCurrentIndex(max(i, 0))
        self.robot.setToolTip(source or "The robot whose log this is: its joints are matched to the log's by name")

    def _on_robot_chosen(self, index: int) -> None:
        data = self.robot.itemData(index)
        if data == OPEN_ROBOT:
            path, _ = QFileDialog.getOpenFileName(self, "Open robot file", "", ROBOT_FILTER)
            if not path:
                self._show_robot(self.state.robot)
                return
            data = path
        self.state.set_robot(data)

    # -- models and the job ----------------------------------------------------------------
    def checked_models(self) -> list[str]:
        return [self.models.item(i).text() for i in range(self.models.count())
                if self.models.item(i).checkState() == Qt.CheckState.Checked]

    def set_checked(self, names) -> None:
        for i in range(self.models.count()):
            item = self.models.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.text() in names else Qt.CheckState.Unchecked)

    def run(self) -> bool:
        return self.state.compare_on_robot(self.checked_models(), self.epochs.value(),
                                           "robot" if self.prior.isChecked() else "none")

    def _progress(self, fraction, message: str) -> None:
        show_fraction(self.run_row.progress, fraction, message or "working")

    def _on_comparison(self, result) -> None:
        self.use_button.setEnabled(result.identified is not None)
        robot_rows = [r for r in result.rows if r["model"] in ROBOT_MODELS and r.get("torque_rmse") is not None]
        best = min(robot_rows, key=lambda r: r["torque_rmse"], default=None)
        noise = next((r.get("noise_level") for r in result.rows if r.get("noise_level") is not None), None)
        text = f"{len(result.rows)} models compared on {Path(result.robot).name} in {result.seconds:.0f} s."
        if best is not None and noise:
            text += (f" Best torque RMSE: {best['model']}, {best['torque_rmse']:.3g} N m "
                     f"({best['torque_rmse'] / noise:.1f} x the noise level, {noise:.3g} N m).")
        warnings = [n for n in result.notes if n.startswith("warning")]
        if warnings:
            text += " " + " ".join(warnings)
        self.summary.setText(text)

    def use_identified(self) -> None:
        path = self.state.identified_robot()
        if path:
            self.use_robot_requested.emit(path)
