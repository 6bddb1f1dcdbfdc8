"""The Car planner's Model tab: train a car model (settings bound to the engine's
``CarMLPConfig`` / ``DrivingConfig``) as a job with a live loss plot, on simulated driving or
on a loaded driving log; save and load models (safetensors + JSON)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.widgets.plots import LossPlot
from app.workspaces.car.jobs import load_log_job, train_job
from engine.models.car_mlp import ACTIVATIONS, LOSSES, CarMLPConfig
from engine.planning.car_data import DrivingConfig

__all__ = ["ModelPanel", "clean_error"]

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
        self.driving_form = DataclassForm(DrivingConfig, include=["minutes"], labels={"minutes": "Driving minutes"},
                                          ranges={"minutes": (0.05, 600.0)},
                                          tooltips={"minutes": "Minutes of simulated driving (the paper: 15)"})
        self.log_button = QPushButton("Load driving log…")
        self.log_button.setObjectName("carLoadLog")
        self.log_button.setToolTip("CSV (or any log the model lab reads) with t, x, y, yaw, throttle, steering")
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

        row = QHBoxLayout()
        self.train_button = QPushButton("Train")
        self.train_button.setObjectName("carTrain")
        self.train_button.clicked.connect(self.train)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.train_button)
        row.addWidget(self.cancel_button)
        lay.addLayout(row)
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
        lay.addWidget(self.loss_plot)
        lay.addStretch(1)

    # -- training ------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._job is not None

    def train_config(self):
        """The ``TrainConfig`` the form describes (raises FormError naming a bad field)."""
        from engine.planning.training import TrainConfig

        model = self.net_form.value()
        driving = replace(self.driving_form.value(), seed=model.seed)
        return TrainConfig(model=model, driving=driving, params=self._params())

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
        self.train_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
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
        self.train_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

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
            load_log_job(path, self._params(), self.driving_form.value()), name=f"Load car log {Path(path).name}",
            on_result=self._on_log, on_error=self._on_log_failed,
            on_cancelled=lambda: self.log_label.setText("Loading cancelled."))
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

        path, _ = QFileDialog.getOpenFileName(self, "Load driving log", "", ";;".join(LOG_FILE_FILTERS))
        if path:
            self.load_log(path)

    # -- model files -----------------------------------------------------------------------
    def save_model(self, source: str, dest: str) -> bool:
        """Write the model in folder ``source`` to folder ``dest`` (safetensors + JSON, atomic files)."""
        from engine.models.car_mlp import load_car_model, save_car_model

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
        from engine.models.car_mlp import load_car_model

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
        path, _ = QFileDialog.getSaveFileName(self, "Save car model to a folder", Path(source).name, "Folder (*)")
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
