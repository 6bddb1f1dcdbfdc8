"""The Robot identification panel: fit a learnable robot model to a joint log, compare it with
the nominal URDF and a black-box MLP.

The user picks a joint log (q, optionally qd, and the joint torques), its mapping JSON
(found beside the log as ``<stem>.mapping.json`` when there), the robot, which parameter
kinds to learn, the held-out fraction and the black box's training steps; "Identify" runs
one background job (read, prepare with Savitzky-Golay derivatives, fit, evaluate). Results:
the parameters table (nominal against identified, and whether the log identifies each), the
validation torque RMSE of the three models with the estimated noise level, and a plot of
one joint's measured torque on the validation part against the three predictions.

The engine calls sit in the small adapter section below (``identification_job`` and the
config helpers), kept together so they can move to the workspace's engine bridge.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.widgets.job_progress import PanelJob
from app.widgets.plots import color, make_plot
from app.widgets.run_row import RunRow
from app.widgets.text import error_html, readonly_item
from engine.identification.from_log import (
    LEARNABLE_KINDS,
    LogIdentificationConfig,
    identify_from_log,
    robot_prepare_config,
)
from engine.io import atomic_write_text

__all__ = ["LEARNABLE_KINDS", "RobotIdentificationPanel", "default_config", "identification_job"]

# --------------------------------------------------------------------------- engine adapter


def default_config() -> LogIdentificationConfig:
    """The engine's defaults (one source of truth for the form)."""
    return LogIdentificationConfig()


def default_mapping_for(log_path: str) -> str:
    """``<stem>.mapping.json`` beside the log, or "" when there is none."""
    p = Path(log_path)
    candidate = p.with_name(p.stem + ".mapping.json")
    return str(candidate) if candidate.exists() else ""


def identification_job(log_path: str, mapping_path: str, config: LogIdentificationConfig,
                       val_fraction: float = 0.3):
    """A job ``job(ctx) -> LogIdentificationResult``: read the log, prepare it (Savitzky-Golay
    derivatives of q), load the robot, fit and compare."""

    def job(ctx):
        from engine.logs import LogMapping, prepare_log, read_log
        from engine.robots.library import load_robot

        mapping = LogMapping.load(mapping_path)
        table = read_log(log_path, ctx)
        prepared = prepare_log(table, mapping, robot_prepare_config(val_fraction=val_fraction), ctx)
        model = load_robot(config.robot)
        return identify_from_log(prepared, model, config, ctx)

    return job


# --------------------------------------------------------------------------- the panel

MODELS = ("learned", "nominal", "blackbox")
MODEL_TITLES = {"learned": "learned (identified)", "nominal": "nominal URDF", "blackbox": "black-box MLP"}


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.5g}"
    return json.dumps(np.round(np.asarray(v, dtype=float), 5).tolist())


_item = readonly_item


class RobotIdentificationPanel(QWidget):
    """Robot system identification from a joint log, as a Model lab tab."""

    finished = Signal(object)  # the LogIdentificationResult

    def __init__(self, ctx, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("robotIdentificationPanel")
        self.result = None
        d = default_config()

        self.log_edit = QLineEdit()
        self.log_edit.setPlaceholderText("joint log: q (qd), torques")
        self.log_edit.editingFinished.connect(self._guess_mapping)
        browse_log = QPushButton("…")
        browse_log.clicked.connect(self._browse_log)
        self.mapping_edit = QLineEdit()
        self.mapping_edit.setPlaceholderText("mapping JSON (time, q, u = joint torques)")
        browse_map = QPushButton("…")
        browse_map.clicked.connect(self._browse_mapping)
        self.robot = QComboBox()
        self.robot.setEditable(True)
        self.robot.addItems(["panda", "iiwa", "ur5"])
        self.robot.setCurrentText(d.robot)
        self.learn_boxes = {k: QCheckBox(k) for k in LEARNABLE_KINDS}
        for k, box in self.learn_boxes.items():
            box.setChecked(k in d.learn)
        self.settings_form = DataclassForm(
            d,
            include=["epochs", "blackbox_steps"],
            labels={"epochs": "Fit steps (L-BFGS)", "blackbox_steps": "Black-box steps"},
            ranges={"epochs": (1, 1000), "blackbox_steps": (0, 100000)},
        )
        self.prepare_form = DataclassForm(robot_prepare_config(), include=["val_fraction"],
                                          labels={"val_fraction": "Held-out fraction"},
                                          ranges={"val_fraction": (0.05, 0.9)})
        self.epochs = self.settings_form.editor("epochs")
        self.blackbox_steps = self.settings_form.editor("blackbox_steps")
        self.val_fraction = self.prepare_form.editor("val_fraction")

        form = QFormLayout()
        row = QHBoxLayout()
        row.addWidget(self.log_edit)
        row.addWidget(browse_log)
        form.addRow("Log", row)
        row = QHBoxLayout()
        row.addWidget(self.mapping_edit)
        row.addWidget(browse_map)
        form.addRow("Mapping", row)
        form.addRow("Robot", self.robot)
        row = QHBoxLayout()
        for box in self.learn_boxes.values():
            row.addWidget(box)
        form.addRow("Learn", row)
        form.addRow(self.prepare_form)
        form.addRow(self.settings_form)

        self.run_row = RunRow("Identify", progress=True)
        self.run_row.run_clicked.connect(self.run)
        self.run_row.watch_forms(self.settings_form, self.prepare_form)
        self.run_row.cancel_clicked.connect(self.cancel)
        self.run_button, self.cancel_button, self.progress = (
            self.run_row.run_button,
            self.run_row.cancel_button,
            self.run_row.progress,
        )
        self.save_button = QPushButton("Save result JSON…")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self._save_dialog)
        self.run_row.add_widget(self.save_button)
        buttons = self.run_row

        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self._job = PanelJob(self.ctx, self.progress, self.cancel_button, self.summary, self)
        self._job.busy.connect(self.run_row.set_running)
        self.param_table = QTableWidget(0, 5)
        self.param_table.setHorizontalHeaderLabels(["link", "kind", "nominal", "identified", "identifiable"])
        self.param_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.param_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.rmse_table = QTableWidget(0, 3)
        self.rmse_table.setHorizontalHeaderLabels(["model", "validation RMSE [N m]", "train RMSE [N m]"])
        self.rmse_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.rmse_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.joint = QComboBox()
        self.joint.currentIndexChanged.connect(self._plot)
        self.plot = make_plot("Validation torque", "t [s]", "torque [N m]")
        self.curves = {}

        tables = QWidget()
        tl = QVBoxLayout(tables)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.summary)
        tl.addWidget(self.rmse_table, 1)
        tl.addWidget(self.param_table, 3)
        plot_box = QWidget()
        pl = QVBoxLayout(plot_box)
        pl.setContentsMargins(0, 0, 0, 0)
        jrow = QHBoxLayout()
        jrow.addWidget(QLabel("Joint"))
        jrow.addWidget(self.joint, 1)
        pl.addLayout(jrow)
        pl.addWidget(self.plot, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(tables)
        split.addWidget(plot_box)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(form)
        layout.addWidget(buttons)
        layout.addWidget(split, 1)

    # -- inputs ------------------------------------------------------------------------
    def set_files(self, log_path: str, mapping_path: str | None = None) -> None:
        self.log_edit.setText(str(log_path))
        self.mapping_edit.setText(str(mapping_path) if mapping_path else default_mapping_for(str(log_path)))

    def _guess_mapping(self) -> None:
        if self.log_edit.text() and not self.mapping_edit.text():
            self.mapping_edit.setText(default_mapping_for(self.log_edit.text()))

    def _browse_log(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open joint log", "", "Logs (*.csv *.tsv *.txt *.npz *.parquet *.bag *.mcap);;All files (*)"
        )
        if path:
            self.set_files(path)

    def _browse_mapping(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open mapping", "", "Mapping (*.json)")
        if path:
            self.mapping_edit.setText(path)

    def config(self) -> LogIdentificationConfig:
        """The form's values over the engine's defaults."""
        learn = tuple(k for k, box in self.learn_boxes.items() if box.isChecked())
        steps = self.settings_form.value()     # a FormError (ValueError) naming a field out of range
        return replace(default_config(), robot=self.robot.currentText().strip(), learn=learn,
                       epochs=steps.epochs, blackbox_steps=steps.blackbox_steps)

    # -- the job -----------------------------------------------------------------------
    def run(self) -> None:
        log, mapping = self.log_edit.text().strip(), self.mapping_edit.text().strip()
        try:
            if not log or not mapping:
                raise ValueError("choose a joint log and its mapping JSON")
            config = self.config()
            config.validate()
            val_fraction = self.prepare_form.value().val_fraction
        except ValueError as exc:
            self.summary.setText(error_html(exc))
            self.ctx.show_error("Robot identification", str(exc))
            return
        job = identification_job(log, mapping, config, val_fraction)
        self._job.start(job, "Robot identification", self.show_result)

    def cancel(self) -> None:
        self._job.cancel()

    @property
    def is_busy(self) -> bool:
        return self._job.is_running

    # -- results -----------------------------------------------------------------------
    def show_result(self, result) -> None:
        self.result = result
        self.save_button.setEnabled(True)
        self.summary.setText(
            f"{result.robot}: {result.samples_train} training, {result.samples_validation} validation samples, "
            f"{result.seconds:.1f} s. Estimated torque noise {result.noise_level:.4g} N m (RMS over joints)."
        )
        self.rmse_table.setRowCount(0)
        for key in MODELS:
            v = result.torque_rmse_validation.get(key)
            r = self.rmse_table.rowCount()
            self.rmse_table.insertRow(r)
            self.rmse_table.setItem(r, 0, _item(MODEL_TITLES[key]))
            self.rmse_table.setItem(r, 1, _item(_fmt(v)))
            self.rmse_table.setItem(r, 2, _item(_fmt(result.torque_rmse_train.get(key))))
        self.param_table.setRowCount(0)
        for p in result.parameters:
            r = self.param_table.rowCount()
            self.param_table.insertRow(r)
            for c, text in enumerate((p.link, p.kind, _fmt(p.nominal), _fmt(p.identified),
                                      "yes" if p.identifiable else f"no: {p.reason}")):
                self.param_table.setItem(r, c, _item(text))
        self.joint.blockSignals(True)
        self.joint.clear()
        self.joint.addItems(list(result.joint_names))
        self.joint.blockSignals(False)
        self._plot()
        self.finished.emit(result)

    def _plot(self) -> None:
        item = self.plot.getPlotItem()
        item.clear()
        self.curves = {}
        if self.result is None or not self.result.validation:
            return
        v = self.result.validation
        j = max(self.joint.currentIndex(), 0)
        t = np.asarray(v["t"])
        self.curves["measured"] = item.plot(t, np.asarray(v["tau"])[:, j], pen=None, symbol="o", symbolSize=3,
                                            symbolPen=None, symbolBrush=(200, 200, 200, 160), name="measured")
        for i, key in enumerate(MODELS):
            if key in v:
                self.curves[key] = item.plot(t, np.asarray(v[key])[:, j], pen={"color": color(i), "width": 2},
                                             name=MODEL_TITLES[key])

    def save_result(self, path: str | Path) -> Path:
        """Write the result summary (parameters, RMSEs, noise level, config) as JSON."""
        if self.result is None:
            raise ValueError("nothing to save: run an identification first")
        path = Path(path)
        atomic_write_text(path, json.dumps(self.result.to_dict(), indent=2))
        return path

    def _save_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save identification result", "identification.json",
                                              "JSON (*.json)")
        if path:
            try:
                self.save_result(path)
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Save identification result", str(exc))

    def shutdown(self) -> None:
        self.cancel()
