"""The Car planner's Model tab: train a car model (settings bound to the engine's
``CarMLPConfig`` / ``DrivingConfig``) as a job with a live loss plot, on simulated driving or
on a loaded driving log; save and load models (safetensors + JSON); run the paper's model
selection (``SelectionConfig``) as a job and show its TVE table and box plots."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.device_preference import preferred_device
from app.widgets.forms import DataclassForm
from app.widgets.plots import LossPlot, color
from app.widgets.run_row import RunRow
from app.workspaces.car.jobs import load_log_job, save_selection_job, select_job, train_job
from app.workspaces.car.models import example_folder
from engine.car.data import DrivingConfig
from engine.car.model import ACTIVATIONS, LOSSES, CarMLPConfig
from engine.car.training import SelectionConfig

__all__ = ["ModelPanel", "SelectionGroup", "clean_error", "format_tve"]

SIMULATED = "sim"
LOG = "log"


def clean_error(message: str) -> str:
    """A job's failure message without the exception class prefix (``LogError: ...``)."""
    return re.sub(r"^\w*(Error|Exception): ", "", message)


class ModelPanel(QWidget):
    """Training settings, Train / Cancel, the live loss, Save / Load model, Load driving log.

    ``params()`` gives the car's parameters, ``models_dir()`` where new models go and
    ``current_model()`` the folder of the model chosen on the page (None for the simulator).
    Emits ``model_ready(folder)`` when a model was trained or loaded.
    """

    model_ready = Signal(str)
    log_loaded = Signal(object)

    def __init__(self, ctx, params, models_dir, current_model, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self._params, self._models_dir, self._current_model = params, models_dir, current_model
        self.log: dict | None = None
        self.last_training: dict | None = None
        self._job = None
        self._log_job = None
        self._epochs = 0
        self._build()

    # -- layout --------------------------------------------------------------------------
    def _build(self):
        lay = QVBoxLayout(self)
        box = QGroupBox("Training data")
        form = QFormLayout(box)
        self.source_combo = QComboBox()
        self.source_combo.setObjectName("carTrainSource")
        self.source_combo.addItem("Simulated human-like driving", SIMULATED)
        self.driving_form = DataclassForm(
            DrivingConfig,
            include=["minutes"],
            labels={"minutes": "Driving minutes"},
            ranges={"minutes": (0.05, 600.0)},
            tooltips={"minutes": "Minutes of simulated driving (the paper: 15)"},
        )
        self.log_button = QPushButton("Load driving log…")
        self.log_button.setObjectName("carLoadLog")
        self.log_button.setToolTip(
            "CSV (or any log the model lab reads) with t, x, y, yaw, throttle, steering"
        )
        self.log_button.clicked.connect(self._load_log_dialog)
        self.log_label = QLabel("No log loaded.")
        self.log_label.setObjectName("carLogInfo")
        self.log_label.setWordWrap(True)
        form.addRow("Data", self.source_combo)
        form.addRow(self.driving_form)
        form.addRow(self.log_button)
        form.addRow(self.log_label)
        lay.addWidget(box)

        box = QGroupBox("Network and training")
        bl = QVBoxLayout(box)
        self.net_form = DataclassForm(
            CarMLPConfig, include=["activation", "hidden", "layers", "loss", "epochs", "seed"],
            choices={"activation": list(ACTIVATIONS), "loss": list(LOSSES)},
            labels={"hidden": "Hidden size", "layers": "Hidden layers"},
            ranges={"hidden": (1, 1024), "layers": (1, 32), "epochs": (1, 100000), "seed": (0, 2 ** 31 - 1)},
            tooltips={"loss": "relative: |v' - f|_1 / (|v'|_1 + eps); l1; l2",
                      "seed": "Seeds the network's initialisation and the simulated driving"})
        bl.addWidget(self.net_form)
        row = QFormLayout()
        self.name_edit = QLineEdit()
        self.name_edit.setObjectName("carModelName")
        self.name_edit.setPlaceholderText("automatic (activation-size-loss-time)")
        row.addRow("Name", self.name_edit)
        bl.addLayout(row)
        lay.addWidget(box)

        self.run_row = RunRow("Train", run_name="carTrain")
        self.train_button = self.run_row.run_button
        self.cancel_button = self.run_row.cancel_button
        self.run_row.run_clicked.connect(self.train)
        self.run_row.cancel_clicked.connect(self.cancel)
        lay.addWidget(self.run_row)
        self.train_label = QLabel("")
        self.train_label.setObjectName("carTrainStatus")
        self.train_label.setWordWrap(True)
        lay.addWidget(self.train_label)

        row = QHBoxLayout()
        self.save_button = QPushButton("Save model…")
        self.save_button.setToolTip("Copy the model chosen under 'Plan on' to a folder (safetensors + JSON)")
        self.save_button.clicked.connect(self._save_model_dialog)
        self.load_button = QPushButton("Load model…")
        self.load_button.setToolTip("A folder with car_model.safetensors and car_model.json")
        self.load_button.clicked.connect(self._load_model_dialog)
        row.addWidget(self.save_button)
        row.addWidget(self.load_button)
        lay.addLayout(row)
        self.loss_plot = LossPlot("Training loss")
        self.loss_plot.setObjectName("carLossPlot")
        self.loss_plot.setMinimumHeight(220)
        self.loss_plot.setMaximumHeight(320)     # the model selection follows below
        lay.addWidget(self.loss_plot)
        self.selection = SelectionGroup(self.ctx, self._params)
        lay.addWidget(self.selection)
        lay.addStretch(1)

    # -- training ------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._job is not None

    def train_config(self):
        """The ``CarTrainConfig`` the form describes (raises FormError naming a bad field)."""
        from engine.car.training import CarTrainConfig

        model = self.net_form.value()
        driving = replace(self.driving_form.value(), seed=model.seed)
        return CarTrainConfig(model=model, driving=driving, params=self._params(),
                              device=preferred_device())  # View > Compute Device

    def _out_dir(self, model: CarMLPConfig) -> Path:
        name = re.sub(r"[^\w.-]+", "_", self.name_edit.text().strip()).strip("._")
        if not name:
            name = f"{model.activation}-{model.layers}x{model.hidden}-{model.loss}-" + \
                   datetime.now().strftime("%Y%m%d-%H%M%S")
        out = self._models_dir() / name
        k = 2
        while out.exists():
            out = self._models_dir() / f"{name}-{k}"
            k += 1
        return out

    def train(self) -> bool:
        if self._job is not None:
            return False
        try:
            config = self.train_config()
        except ValueError as exc:
            self.train_label.setText(str(exc))
            self.ctx.show_error("Train car model", str(exc))
            return False
        dataset = None
        source = self.source_combo.currentData()
        if source == LOG:
            import torch

            dataset = {"inputs": torch.from_numpy(self.log["inputs"]).float(),
                       "targets": torch.from_numpy(self.log["targets"]).float()}
            what = f"the log {Path(self.log['path']).name} ({len(self.log['inputs'])} samples)"
        else:
            what = f"{config.driving.minutes:g} minutes of simulated driving"
        out = self._out_dir(config.model)
        # reuse the two curves (dropped Qt items would be garbage a worker thread might collect)
        self.loss_plot.set_losses("train", [], "train")
        self.loss_plot.set_losses("val", [], "validation")
        self._epochs = config.model.epochs
        self.run_row.set_running(True)
        m = config.model
        self.train_label.setText(f"Training {m.activation.upper()} {m.layers}×{m.hidden} ({m.loss} loss) "
                                 f"on {what}…")
        self._job = self.ctx.jobs.submit(train_job(config, str(out), dataset), name="Train car model",
                                         on_result=self._on_trained, on_error=self._on_failed,
                                         on_progress=self._on_progress,
                                         on_cancelled=lambda: self.train_label.setText("Training cancelled."))
        self._job.ended.connect(self._on_ended)
        return True

    def _on_progress(self, update):
        metrics = update.metrics or {}
        m = re.match(r"epoch (\d+)/", update.message or "")
        if m and "train_loss" in metrics:
            epoch = int(m.group(1))
            self.loss_plot.append("train", epoch, float(metrics["train_loss"]))
            if metrics.get("val_loss") is not None:
                self.loss_plot.append("val", epoch, float(metrics["val_loss"]))
            self.train_label.setText(f"Epoch {epoch}/{self._epochs}: loss {metrics['train_loss']:.4g}")
        elif update.message:
            self.train_label.setText(f"Training: {update.message}")

    def _on_trained(self, res: dict):
        self.last_training = res
        hist = res.get("history") or {}
        if hist.get("train_loss"):
            self.loss_plot.set_losses("train", hist["train_loss"], "train")
        if hist.get("val_loss"):
            self.loss_plot.set_losses("val", hist["val_loss"], "validation")
        self.train_label.setText(f"Trained {Path(res['model_dir']).name}: loss {res['initial_loss']:.3g} → "
                                 f"{res['train_loss']:.3g}, TVE {res['tve']:.2f} ({res['seconds']:.1f} s).")
        self.model_ready.emit(res["model_dir"])

    def _on_failed(self, message, tb):
        msg = clean_error(message)
        self.train_label.setText(f"Training failed: {msg}")
        self.ctx.show_error("Train car model", msg)

    def _on_ended(self):
        self._job = None
        self.run_row.set_running(False)

    def cancel(self):
        if self._job is not None:
            self._job.cancel()

    # -- driving logs ----------------------------------------------------------------------
    def load_log(self, path: str):
        """Read and prepare a driving log as a job; on success it becomes the training data."""
        if self._log_job is not None:
            return None
        self.log_button.setEnabled(False)
        self.log_label.setText(f"Loading {Path(path).name}…")
        self._log_job = self.ctx.jobs.submit(
            load_log_job(path, self._params(), self.driving_form.value()),
            name=f"Load car log {Path(path).name}",
            on_result=self._on_log,
            on_error=self._on_log_failed,
            on_cancelled=lambda: self.log_label.setText("Loading cancelled."),
        )
        self._log_job.ended.connect(self._on_log_ended)
        return self._log_job

    def _on_log(self, prep: dict):
        self.log = prep
        name = Path(prep["path"]).name
        idx = self.source_combo.findData(LOG)
        if idx < 0:
            self.source_combo.addItem("", LOG)
            idx = self.source_combo.count() - 1
        self.source_combo.setItemText(idx, f"Log: {name}")
        self.source_combo.setCurrentIndex(idx)
        self.log_label.setText(f"{name}: {prep['rows']} rows, {prep['seconds']:.1f} s, "
                               f"{len(prep['inputs'])} training pairs at {prep['h'] * 1000:.0f} ms.")
        self.log_loaded.emit(prep)

    def _on_log_failed(self, message, tb):
        msg = clean_error(message)
        self.log_label.setText(f"Could not load the log: {msg}")
        self.ctx.show_error("Car driving log", msg)

    def _on_log_ended(self):
        self._log_job = None
        self.log_button.setEnabled(True)

    def _load_log_dialog(self):
        from engine.logs import LOG_FILE_FILTERS

        path, _ = QFileDialog.getOpenFileName(
            self, "Load driving log", example_folder("log"), ";;".join(LOG_FILE_FILTERS)
        )
        if path:
            self.load_log(path)

    # -- model files -----------------------------------------------------------------------
    def save_model(self, source: str, dest: str) -> bool:
        """Write the model in folder ``source`` to folder ``dest`` (safetensors + JSON, atomic files)."""
        from engine.car.model import load_car_model, save_car_model

        try:
            model, meta = load_car_model(source)
            meta = {k: v for k, v in meta.items() if k not in ("kind", "config")}
            save_car_model(dest, model, meta)
        except (ValueError, OSError) as exc:
            self.ctx.show_error("Save car model", str(exc))
            self.train_label.setText(str(exc))
            return False
        self.train_label.setText(f"Model saved to {dest}.")
        self.model_ready.emit(str(dest))
        return True

    def load_model(self, folder: str) -> bool:
        """Check that ``folder`` holds a car model (it loads), then offer it in the model chooser."""
        from engine.car.model import load_car_model

        try:
            load_car_model(folder)
        except (ValueError, OSError, KeyError) as exc:
            msg = str(exc) if str(folder) in str(exc) else f"{folder}: {exc}"
            self.ctx.show_error("Load car model", msg)
            self.train_label.setText(f"Could not load the model: {msg}")
            return False
        self.train_label.setText(f"Loaded {Path(folder).name}.")
        self.model_ready.emit(str(folder))
        return True

    def _save_model_dialog(self):
        source = self._current_model()
        if not source:
            self.ctx.show_error("Save car model", "Choose a trained model under 'Plan on' first "
                                                  "(the simulator is not a file).")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Save car model to a folder", Path(source).name, "Folder (*)"
        )
        if path:
            self.save_model(source, path)

    def _load_model_dialog(self):
        path = QFileDialog.getExistingDirectory(self, "Folder with car_model.safetensors and car_model.json")
        if path:
            self.load_model(path)

    def shutdown(self):
        for h in (self._job, self._log_job):
            if h is not None:
                h.cancel()
        self.selection.shutdown()


SELECT_COLUMNS = ("Act.", "Loss", "Mean", "Min", "Max", "Runs")
SELECT_TIPS = ("Activation", "Training loss", "Mean TVE over the seeds (m + rad)", "Lowest TVE (m + rad)",
               "Highest TVE (m + rad)", "Networks trained (one per seed)")
SELECT_STATS = ("tve_mean", "tve_min", "tve_max")     # the table's columns 2..4
BOX_WIDTH = 0.5                                       # of a group's unit slot on the x axis
VALUE_ROLE = Qt.ItemDataRole.UserRole                 # a TVE cell's full-precision value
RUN_DOT = "#F0E442"  # one run's TVE in the box plot (the best pair's: orange)


def format_tve(value: float) -> str:
    """A TVE (mean L1 end-pose error |dx| + |dy| + |dyaw|, m + rad) to 3 significant digits,
    trailing zeros kept: 4.80, 0.0312, 12.0."""
    return f"{value:#.3g}".rstrip(".")


class SelectionGroup(QGroupBox):
    """The paper's model selection: every chosen (activation, loss), several seeds each, trained
    on the same simulated driving and ranked by TVE (mean L1 end-pose error |dx| + |dy| + |dyaw|, m + rad; Eq. 10) on 40
    validation trajectories of 3 s. Settings bound to ``SelectionConfig``; Run / Cancel; a
    table (best row bold), box plots, and Save selection… (selection.json + selection.png).

    ``params()`` gives the car's parameters. ``result`` holds the last finished selection
    (the dict of :func:`engine.car.training.select_models_job`).
    """

    def __init__(self, ctx, params, parent: QWidget | None = None):
        super().__init__("Model selection", parent)
        self.ctx = ctx
        self._params = params
        self.result: dict | None = None
        self._job = None
        self._save_job = None
        self._runs: list[tuple[str, str, int]] = []     # (activation, loss, seed) in the job's order
        self.tick_labels: list[str] = []                # the plot's x ticks, "gelu / relative", ...
        self._build()

    # -- layout --------------------------------------------------------------------------
    def _build(self):
        lay = QVBoxLayout(self)
        defaults = SelectionConfig()
        self.form = DataclassForm(
            SelectionConfig, include=["seeds", "epochs", "minutes", "hidden", "layers"],
            labels={"seeds": "Seeds per pair", "minutes": "Driving minutes", "hidden": "Hidden size",
                    "layers": "Hidden layers"},
            ranges={"seeds": (1, 1000), "epochs": (1, 100000), "minutes": (0.05, 600.0), "hidden": (1, 1024),
                    "layers": (1, 32)},
            tooltips={"seeds": "Networks trained per (activation, loss), seeds 0, 1, ...",
                      "epochs": "Epochs per network (as `car train`: under-trained models rank misleadingly)",
                      "minutes": "Minutes of simulated driving shared by every run (the paper: 15)"})
        self.activation_checks = self._check_row("Activations", ACTIVATIONS, defaults.activations,
                                                 "carSelectAct")
        self.loss_checks = self._check_row("Losses", LOSSES, defaults.losses, "carSelectLoss")
        lay.addWidget(self.form)

        self.run_row = RunRow("Run model selection", run_name="carSelectRun",
                              run_tooltip="Train every (activation, loss, seed) and rank them by TVE on 40 "
                                          "validation trajectories of 3 s")
        self.run_button = self.run_row.run_button
        self.cancel_button = self.run_row.cancel_button
        self.cancel_button.setObjectName("carSelectCancel")
        self.run_row.run_clicked.connect(self.run)
        self.run_row.cancel_clicked.connect(self.cancel)
        lay.addWidget(self.run_row)
        self.progress = QProgressBar()
        self.progress.setObjectName("carSelectProgress")
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)
        lay.addWidget(self.progress)
        self.status = QLabel("")
        self.status.setObjectName("carSelectStatus")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)

        self.table = QTableWidget(0, len(SELECT_COLUMNS))
        self.table.setObjectName("carSelectTable")
        for j, (name, tip) in enumerate(zip(SELECT_COLUMNS, SELECT_TIPS)):
            header = QTableWidgetItem(name)
            header.setToolTip(tip)
            self.table.setHorizontalHeaderItem(j, header)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        for j in range(2, 2 + len(SELECT_STATS)):                  # the TVE columns share the spare width
            self.table.horizontalHeader().setSectionResizeMode(j, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setToolTip(
            "TVE (mean L1 end-pose error, m + rad) over the seeds of each pair; best mean in bold"
        )
        self.table.setVisible(False)
        lay.addWidget(self.table)

        self.plot = pg.PlotWidget()
        self.plot.setObjectName("carSelectPlot")
        self.plot.setMinimumHeight(260)
        self.plot.setMaximumHeight(340)
        self.plot.setToolTip("Per pair: box Q1–Q3, median line, whiskers to min and max, one dot per run")
        item = self.plot.getPlotItem()
        item.setLabel("left", "TVE (L1 end-pose error, m + rad)")
        item.showGrid(x=False, y=True, alpha=0.25)
        item.getAxis("left").enableAutoSIPrefix(False)
        item.setMouseEnabled(x=False, y=True)
        # room for two-line tick labels ("gelu /", "relative") from the first paint on
        item.getAxis("bottom").setHeight(2 * self.plot.fontMetrics().lineSpacing() + 14)
        self.boxes = pg.BarGraphItem(x=[], y0=[], height=[], width=BOX_WIDTH,
                                     pen=pg.mkPen(color(0), width=1.5), brush=pg.mkBrush(color(0)))
        self.whiskers = pg.PlotDataItem(pen=pg.mkPen("#bbbbbb", width=1.5))
        self.medians = pg.PlotDataItem(pen=pg.mkPen("w", width=2.5))
        self.points = pg.ScatterPlotItem(size=7, pen=pg.mkPen("k"), brush=pg.mkBrush(RUN_DOT))
        for it in (self.whiskers, self.boxes, self.medians, self.points):
            item.addItem(it)
        self.plot.setVisible(False)
        lay.addWidget(self.plot)

        self.save_button = QPushButton("Save selection…")
        self.save_button.setObjectName("carSelectSave")
        self.save_button.setToolTip("Write selection.json and the box plot selection.png into a folder")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self._save_dialog)
        lay.addWidget(self.save_button)

    def _check_row(self, label: str, names, checked, prefix: str) -> dict[str, QCheckBox]:
        """One check box per name (object name ``{prefix}_{name}``) in a row of the form."""
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        checks = {}
        for name in names:
            check = QCheckBox(name)
            check.setObjectName(f"{prefix}_{name}")
            check.setChecked(name in checked)
            row.addWidget(check)
            checks[name] = check
        row.addStretch(1)
        self.form.layout_.addRow(label, box)
        return checks

    # -- running ---------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._job is not None

    def selection_config(self) -> SelectionConfig:
        """The ``SelectionConfig`` the form and check boxes describe (ValueError naming what is wrong)."""
        config = self.form.value()
        activations = tuple(n for n, c in self.activation_checks.items() if c.isChecked())
        losses = tuple(n for n, c in self.loss_checks.items() if c.isChecked())
        if not activations:
            raise ValueError("Model selection: tick at least one activation.")
        if not losses:
            raise ValueError("Model selection: tick at least one loss.")
        return replace(config, activations=activations, losses=losses)

    def run(self) -> bool:
        """Submit the selection as a job (False when one is running or the settings are invalid)."""
        if self._job is not None:
            return False
        try:
            config = self.selection_config()
        except ValueError as exc:
            self.status.setText(str(exc))
            self.ctx.show_error("Model selection", str(exc))
            return False
        self._runs = [(a, loss, s) for a in config.activations for loss in config.losses
                      for s in range(config.seeds)]
        self.run_row.set_running(True)
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.status.setText(f"{len(self._runs)} runs ({len(config.activations)} activations × "
                            f"{len(config.losses)} losses × {config.seeds} seeds), {config.epochs} epochs "
                            f"each; simulating {config.minutes:g} minutes of driving…")
        self._job = self.ctx.jobs.submit(
            select_job(config, self._params()),
            name="Car model selection",
            on_result=self._on_result,
            on_error=self._on_failed,
            on_progress=self._on_progress,
            on_cancelled=lambda: self.status.setText("Model selection cancelled."),
        )
        self._job.ended.connect(self._on_ended)
        return True

    def _on_progress(self, update):
        if update.fraction is None or not self._runs:
            return
        self.progress.setValue(round(1000 * update.fraction))
        message, metrics = update.message or "", update.metrics or {}
        if not message.startswith("epoch") and "tve" not in metrics:
            return                                  # data generation: keep the "simulating" line
        n = len(self._runs)
        # run i reports fractions in (i/n, (i+1)/n]
        i = min(n - 1, max(0, math.ceil(update.fraction * n - 1e-6) - 1))
        act, loss, seed = self._runs[i]
        text = f"Run {i + 1}/{n}: {act} / {loss}, seed {seed}"
        if "tve" in metrics:
            text += f": TVE {metrics['tve']:.3g}"
        elif message:
            text += f", {message}"
        self.status.setText(text)

    def _on_result(self, res: dict):
        self.result = res
        self._fill_table(res)
        self._draw(res)
        best = res["best"]
        runs = f"{best['runs']} run" + ("s" if best["runs"] != 1 else "")
        self.status.setText(f"Best: {best['activation']} / {best['loss']}, mean TVE {best['tve_mean']:.3g} "
                            f"over {runs} ({res['validation_trajectories']} validation trajectories).")
        self.save_button.setEnabled(self._save_job is None)

    def _on_failed(self, message, tb):
        msg = clean_error(message)
        self.status.setText(f"Model selection failed: {msg}")
        self.ctx.show_error("Model selection", msg)

    def _on_ended(self):
        self._job = None
        self.run_row.set_running(False)
        self.progress.setVisible(False)

    def cancel(self):
        if self._job is not None:
            self._job.cancel()

    # -- results -----------------------------------------------------------------------------
    @staticmethod
    def _is_best(row: dict, best: dict) -> bool:
        return (row["activation"], row["loss"]) == (best["activation"], best["loss"])

    def _fill_table(self, res: dict):
        """One row per (activation, loss): TVE mean / min / max (m, 3 significant digits), runs."""
        table = self.table
        table.setRowCount(len(res["table"]))
        for i, row in enumerate(res["table"]):
            bold = self._is_best(row, res["best"])
            cells = [QTableWidgetItem(row["activation"]), QTableWidgetItem(row["loss"])]
            for key in SELECT_STATS:
                cell = QTableWidgetItem(format_tve(row[key]))
                cell.setData(VALUE_ROLE, float(row[key]))
                cells.append(cell)
            cells.append(QTableWidgetItem(str(row["runs"])))
            for j, cell in enumerate(cells):
                if j >= 2:
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if bold:
                    font = cell.font()
                    font.setBold(True)
                    cell.setFont(font)
                table.setItem(i, j, cell)
        table.setVisible(True)
        rows = sum(table.rowHeight(i) for i in range(table.rowCount()))
        table.setFixedHeight(table.horizontalHeader().sizeHint().height() + rows + 2 * table.frameWidth())

    def _draw(self, res: dict):
        """Box plots per (activation, loss): box Q1–Q3, median, whiskers to min / max, the runs as dots."""
        groups = [(r["activation"], r["loss"]) for r in res["table"]]
        tves = [np.asarray([r["tve"] for r in res["runs"] if (r["activation"], r["loss"]) == g], dtype=float)
                for g in groups]
        every = np.concatenate(tves)                               # all runs, group by group
        x = np.arange(len(groups), dtype=float)
        q1, med, q3 = np.array([np.percentile(v, [25, 50, 75]) for v in tves]).T
        lo = np.array([v.min() for v in tves])
        hi = np.array([v.max() for v in tves])
        best = [self._is_best(r, res["best"]) for r in res["table"]]
        self.boxes.setOpts(x=x, y0=q1, height=q3 - q1, width=BOX_WIDTH,
                           brushes=[pg.mkBrush(color(1) if b else color(0)) for b in best])
        half, cap = BOX_WIDTH / 2, BOX_WIDTH / 4
        self.medians.setData(
            np.repeat(x, 2) + np.tile([-half, half], len(x)), np.repeat(med, 2), connect="pairs"
        )
        # per group: lower whisker, upper whisker, lower cap, upper cap (segments as point pairs)
        wx = np.stack([x, x, x, x, x - cap, x + cap, x - cap, x + cap], axis=1).ravel()
        wy = np.stack([lo, q1, q3, hi, lo, lo, hi, hi], axis=1).ravel()
        self.whiskers.setData(wx, wy, connect="pairs")
        # the runs spread across the middle of their box so equal TVEs stay visible
        px = np.concatenate([k + np.linspace(-0.6, 0.6, len(v)) * half if len(v) > 1
                             else np.full(len(v), float(k)) for k, v in enumerate(tves)])
        dots = [pg.mkBrush(color(1) if b else RUN_DOT) for b, v in zip(best, tves) for _ in v]
        self.points.setData(x=px, y=every, brush=dots)
        self.tick_labels = [f"{act} / {loss}" for act, loss in groups]
        # two lines each: six "gelu / relative" side by side do not fit the side panel
        self.plot.getAxis("bottom").setTicks([[(k, label.replace(" / ", " /\n"))
                                               for k, label in enumerate(self.tick_labels)]])
        self.plot.setXRange(-0.6, len(groups) - 0.4, padding=0)
        finite = every[np.isfinite(every)]
        if finite.size:
            pad = 0.1 * (finite.max() - finite.min()) or 0.05 * abs(finite.max()) or 1.0
            self.plot.setYRange(finite.min() - pad, finite.max() + pad, padding=0)
        self.plot.setVisible(True)

    # -- saving ----------------------------------------------------------------------------
    def save(self, folder: str):
        """Write the last selection into ``folder`` (selection.json + selection.png) as a job."""
        if self.result is None or self._save_job is not None:
            return None
        self.save_button.setEnabled(False)
        self._save_job = self.ctx.jobs.submit(save_selection_job(self.result, folder),
                                              name="Save car model selection",
                                              on_result=self._on_saved, on_error=self._on_save_failed)
        self._save_job.ended.connect(self._on_save_ended)
        return self._save_job

    def _on_saved(self, paths: dict):
        self.status.setText(f"Saved {paths['json']} and {Path(paths['png']).name}.")

    def _on_save_failed(self, message, tb):
        msg = clean_error(message)
        self.status.setText(f"Could not save the selection: {msg}")
        self.ctx.show_error("Save model selection", msg)

    def _on_save_ended(self):
        self._save_job = None
        self.save_button.setEnabled(self.result is not None)

    def _save_dialog(self):
        folder = QFileDialog.getExistingDirectory(self, "Folder for selection.json and selection.png")
        if folder:
            self.save(folder)

    def shutdown(self):
        for h in (self._job, self._save_job):
            if h is not None:
                h.cancel()
