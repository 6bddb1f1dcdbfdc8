"""The Models panel: add model types with their hyperparameters, train them as jobs, watch the losses.

Every trained run lives in a run folder under the model folder (``runs/``: config, metrics over
epochs, steps and wall time, checkpoints, the final model); a cancelled or finished run resumes
from its last checkpoint (Resume; raise Epochs to extend a finished one). The table shows the
hyperparameters and final metrics as sortable columns with a filter (``lr<0.01 seed=1 symo``),
Diff shows what two selected runs' configurations disagree on, and the curves can be smoothed
(EMA) and drawn against epochs, optimiser steps or wall time (the logic: ``runs_table.py``).

Hyperparameters come from forms bound to the engine's ``TrainConfig`` and ``ModelSpec``. Each
run trains in its own job (up to "parallel" at once, the rest queued: the Qt-free
:class:`~app.workspaces.model_lab.run_queue.RunQueue`, which this panel observes) with a live loss curve
(log scale), progress, an ETA and cancel. A finished run keeps its trained model (the job
hands it back; the UI never touches a model a job is changing), its metrics row and its plot
curves, and is written to the model folder (safetensors + JSON) so a session can reopen it.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolBox,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.widgets.plots import LossPlot, color
from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.run_queue import Run, RunQueue
from app.workspaces.model_lab.runs_table import (
    TABLE_COLUMNS,
    X_AXES,
    cell_text,
    curve_points,
    diff_text,
    format_eta,
    matches,
    parse_sizes,
    row_values,
    sort_key,
)
from engine.models import ModelSpec
from engine.training.evaluation import check_compatible, metrics_row

__all__ = ["Run", "RunsPanel", "format_eta", "parse_sizes"]
class RunCurves(LossPlot):
    """The loss plot of the runs: curves against epochs, optimiser steps or wall time."""

    def set_points(self, key: str, xs, ys, name: str | None = None, index: int | None = None) -> None:
        self.curve(key, name, index)
        self._data[key] = (list(xs), list(ys))
        self._curves[key].setData(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))

    def set_x_label(self, text: str) -> None:
        self.getPlotItem().setLabel("bottom", text)


def _column() -> tuple[QWidget, QVBoxLayout]:
    w = QWidget()
    v = QVBoxLayout(w)
    v.setContentsMargins(0, 0, 0, 0)
    return w, v


class SortableItem(QTableWidgetItem):
    """A cell that sorts by its value (numbers as numbers, empty cells last), not its text."""

    def __lt__(self, other):
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        if mine is None or theirs is None:
            return super().__lt__(other)
        return mine < theirs


SORT_ROLE = Qt.ItemDataRole.UserRole + 1


class RunsPanel(QWidget):
    """Signals: ``run_updated(Run)`` on any change, ``run_finished(Run)`` when results arrive."""

    run_updated = Signal(object)
    run_finished = Signal(object)
    runs_removed = Signal()

    def __init__(self, ctx, model_folder: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.queue = RunQueue(ctx.jobs.submit, model_folder)      # the runs and their training, Qt-free
        self.runs: dict[str, Run] = self.queue.runs
        self._ids = itertools.count(1)
        ev = self.queue.events
        ev.changed.connect(self._refresh_row)
        ev.curve.connect(self._on_curve)
        ev.started.connect(self.run_updated.emit)
        ev.finished.connect(self.run_finished.emit)
        ev.error.connect(self.ctx.show_error)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        box = QGroupBox("Models")
        bv = QVBoxLayout(box)
        row = QHBoxLayout()
        row.addWidget(QLabel("Type"))
        self.type_combo = QComboBox()
        self.type_combo.setObjectName("modelType")
        self.type_combo.addItems(lab_jobs.MODEL_TYPES())
        row.addWidget(self.type_combo, 1)
        self.add_button = QPushButton("Add")
        self.add_button.setObjectName("addModelButton")
        self.add_button.clicked.connect(self._add_clicked)
        row.addWidget(self.add_button)
        bv.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Sweep N"))
        self.sweep_edit = QLineEdit("8,16,32")
        self.sweep_edit.setToolTip("Training-set sizes: one run of this type per N (the paper's Fig. 3)")
        row.addWidget(self.sweep_edit, 1)
        self.sweep_button = QPushButton("Add sweep")
        self.sweep_button.clicked.connect(self._sweep_clicked)
        row.addWidget(self.sweep_button)
        bv.addLayout(row)
        tool = QToolBox()
        self.train_form = DataclassForm(
            lab_jobs.default_train_config(),
            include=["trajectories"] + lab_jobs.TRAIN_FIELDS,
            labels={
                "trajectories": "Trajectories N",
                "hidden": "Hidden width",
                "learning_rate": "Learning rate",
                "factor": "LR factor",
            },
            ranges={"trajectories": (1, 10**7), "epochs": (1, 10**7)},
        )
        tool.addItem(self.train_form, "Training")
        self.spec_form = DataclassForm(ModelSpec(), include=lab_jobs.SPEC_FIELDS, labels=lab_jobs.SPEC_LABELS,
                                       tooltips=lab_jobs.SPEC_TOOLTIPS, ranges={"robot_perturb": (0.0, 0.99)})
        tool.addItem(self.spec_form, "Model")
        bv.addWidget(tool)
        layout.addWidget(box)

        split = QSplitter(Qt.Orientation.Vertical)
        tw, tv = _column()
        row = QHBoxLayout()
        row.addWidget(QLabel("Filter"))
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("e.g. symo seed=1 learning_rate<0.01")
        self.filter_edit.textChanged.connect(lambda *_: self._apply_filter())
        row.addWidget(self.filter_edit, 1)
        tv.addLayout(row)
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setObjectName("runsTable")
        self.table.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        self.table.setSortingEnabled(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        tv.addWidget(self.table)
        row = QHBoxLayout()
        self.train_button = QPushButton("Train selected")
        self.train_button.clicked.connect(lambda: self.train(self.selected_keys()))
        self.train_all_button = QPushButton("Train all")
        self.train_all_button.setObjectName("trainAllButton")
        self.train_all_button.clicked.connect(lambda: self.train(list(self.runs)))
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(lambda: self.cancel(self.selected_keys() or list(self.runs)))
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(lambda: self.remove(self.selected_keys()))
        self.save_button = QPushButton("Save…")
        self.save_button.clicked.connect(self._save_dialog)
        self.load_button = QPushButton("Load…")
        self.load_button.clicked.connect(self._load_dialog)
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Continue the selected runs from their last checkpoint (raise Epochs "
                                      "in the Training form to extend a finished run)")
        self.resume_button.clicked.connect(lambda: self.resume(self.selected_keys()))
        self.diff_button = QPushButton("Diff")
        self.diff_button.setToolTip("What the configurations of the two selected runs disagree on")
        self.diff_button.clicked.connect(self._diff_clicked)
        # two rows of buttons: one row of eight would make the side column (and the window) wider
        # than a 1366 px screen
        for b in (self.train_button, self.train_all_button, self.cancel_button, self.resume_button):
            row.addWidget(b)
        tv.addLayout(row)
        row = QHBoxLayout()
        for b in (self.remove_button, self.save_button, self.load_button, self.diff_button):
            row.addWidget(b)
        row.addStretch(1)
        row.addWidget(QLabel("parallel"))
        # runs are threads sharing the interpreter: one per two cores pays, more only contend
        self.parallel = QSpinBox(minimum=1, maximum=16, value=max(1, min(4, (os.cpu_count() or 2) // 2)))
        self.parallel.setToolTip("How many runs train at once (threads); the others wait in a queue")
        self.queue.parallel = self.parallel.value()
        self.parallel.valueChanged.connect(lambda n: setattr(self.queue, "parallel", n))
        row.addWidget(self.parallel)
        tv.addLayout(row)
        self.diff_view = QLabel("")
        self.diff_view.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff_view.setVisible(False)
        tv.addWidget(self.diff_view)
        split.addWidget(tw)
        pw, pv = _column()
        row = QHBoxLayout()
        row.addWidget(QLabel("x axis"))
        self.x_axis = QComboBox()
        for key, label in X_AXES.items():
            self.x_axis.addItem(label, key)
        self.x_axis.currentIndexChanged.connect(lambda *_: self._redraw_all())
        row.addWidget(self.x_axis)
        row.addWidget(QLabel("smoothing"))
        self.smoothing = QSlider(Qt.Orientation.Horizontal, minimum=0, maximum=99, value=0)
        self.smoothing.setToolTip("Exponential moving average of the loss curves (0: raw, as TensorBoard's)")
        self.smoothing.valueChanged.connect(lambda *_: self._redraw_all())
        row.addWidget(self.smoothing, 1)
        pv.addLayout(row)
        self.loss_plot = RunCurves()
        self.loss_plot.setObjectName("lossPlot")
        pv.addWidget(self.loss_plot, 1)
        split.addWidget(pw)
        split.setSizes([160, 260])
        layout.addWidget(split, 1)

    # -- data --------------------------------------------------------------------------
    @property
    def model_folder(self) -> Path | None:
        return self.queue.model_folder

    @property
    def dataset(self):
        return self.queue.dataset

    @property
    def source(self) -> dict | None:
        return self.queue.source

    def set_dataset(self, dataset, source: dict) -> None:
        """New data: defaults follow it; trained models are re-evaluated on it where they fit."""
        self.queue.dataset, self.queue.source = dataset, source
        n = len(dataset.train_x)
        if source.get("kind") == "log":
            base = lab_jobs.default_train_config(dataset)
            self.train_form.set_value({"trajectories": n, "learning_rate": base.learning_rate,
                                       "hidden": base.hidden, "epochs": base.epochs})
        else:
            current = self.train_form.values()["trajectories"]
            self.train_form.set_value({"trajectories": min(max(1, current), n)})
        for run in self.runs.values():
            if run.model is not None and run.state in ("finished", "loaded"):
                self.evaluate(run)

    # -- runs --------------------------------------------------------------------------
    def add_run(
        self, model_type: str | None = None, train_config=None, spec=None, name: str | None = None
    ) -> Run:
        """Add a model (the forms' values unless given); returns the new run."""
        model_type = model_type or self.type_combo.currentText()
        if model_type not in lab_jobs.MODEL_TYPES():
            raise ValueError(f"unknown model type {model_type!r}")
        tc = train_config or self.train_form.value()
        tc = lab_jobs.with_changes(tc, model=model_type)
        sp = spec or self.spec_form.value()
        i = next(self._ids)
        key = f"run{i}"
        run = Run(key=key, name=name or f"{model_type} #{i}", model_type=model_type, train_config=tc, spec=sp,
                  index=i - 1)
        self.queue.add(run)
        self._add_row(run)
        self.run_updated.emit(run)
        return run

    def add_sweep(self, model_type: str | None = None, sizes: list[int] | None = None) -> list[Run]:
        """One run per training-set size N (other hyperparameters from the forms)."""
        model_type = model_type or self.type_combo.currentText()
        sizes = sizes if sizes is not None else parse_sizes(self.sweep_edit.text())
        if self.dataset is not None:
            too_big = [n for n in sizes if n > len(self.dataset.train_x)]
            if too_big:
                raise ValueError(
                    f"sweep N: {too_big} exceed the {len(self.dataset.train_x)} training trajectories"
                )
        base = self.train_form.value()
        return [
            self.add_run(
                model_type, lab_jobs.with_changes(base, trajectories=int(n)), name=f"{model_type} N={n}"
            )
            for n in sizes
        ]

    def _add_clicked(self) -> None:
        try:
            self.add_run()
        except ValueError as exc:
            self.ctx.show_error("Add model", str(exc))

    def _sweep_clicked(self) -> None:
        try:
            self.add_sweep()
        except ValueError as exc:
            self.ctx.show_error("Add sweep", str(exc))

    def _add_row(self, run: Run) -> None:
        self.table.setSortingEnabled(False)
        r = self.table.rowCount()
        self.table.insertRow(r)
        for c in range(len(TABLE_COLUMNS)):
            item = SortableItem("")
            item.setData(Qt.ItemDataRole.UserRole, run.key)
            self.table.setItem(r, c, item)
        self.table.item(r, 0).setForeground(QColor(color(run.index)))
        self._refresh_row(run)
        self.table.setSortingEnabled(True)

    def _row_of(self, key: str) -> int:
        for r in range(self.table.rowCount()):
            if self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) == key:
                return r
        return -1

    def _refresh_row(self, run: Run) -> None:
        r = self._row_of(run.key)
        if r < 0:
            return
        sorting = self.table.isSortingEnabled()
        self.table.setSortingEnabled(False)   # a re-sort in the middle would move the row
        values = row_values(run)
        for c, column in enumerate(TABLE_COLUMNS):
            item = self.table.item(r, c)
            item.setText(cell_text(column, values[column]))
            item.setData(SORT_ROLE, sort_key(values[column]))
        self.table.setRowHidden(r, not matches(values, self.filter_edit.text()))
        self.table.setSortingEnabled(sorting)

    def _apply_filter(self) -> None:
        for run in self.runs.values():
            r = self._row_of(run.key)
            if r >= 0:
                self.table.setRowHidden(r, not matches(row_values(run), self.filter_edit.text()))

    def visible_keys(self) -> list[str]:
        """The runs the filter shows, in the table's (sorted) order."""
        return [self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) for r in range(self.table.rowCount())
                if not self.table.isRowHidden(r)]

    def diff(self, key_a: str, key_b: str) -> str:
        """Show (and return) what the configurations of two runs disagree on."""
        text = diff_text(self.runs[key_a], self.runs[key_b])
        self.diff_view.setText(text)
        self.diff_view.setVisible(True)
        return text

    def _diff_clicked(self) -> None:
        keys = self.selected_keys()
        if len(keys) != 2:
            self.ctx.show_error(
                "Diff runs", "Select exactly two runs in the table to compare their settings."
            )
            return
        self.diff(*keys)

    # -- curves --------------------------------------------------------------------------
    def _draw(self, run: Run) -> None:
        xs, ys = curve_points(run.history, self.x_axis.currentData(), self.smoothing.value() / 100)
        self.loss_plot.set_points(run.key, xs, ys, run.name, run.index)

    def _on_curve(self, run: Run) -> None:
        if run.history:
            self._draw(run)
        else:                       # queued afresh: an empty curve until its first epoch
            self.loss_plot.remove(run.key)
            self.loss_plot.curve(run.key, run.name, run.index)

    def _redraw_all(self) -> None:
        self.loss_plot.set_x_label(X_AXES[self.x_axis.currentData()])
        for run in self.runs.values():
            if run.history:
                self._draw(run)

    def selected_keys(self) -> list[str]:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        return [self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) for r in rows]

    def remove(self, keys: list[str], forget: bool = True) -> None:
        """Remove runs from the table; with ``forget`` (the Remove button) their folders in the lab's
        folder are not listed again at the next start (nothing is deleted)."""
        for run in self.queue.remove(keys):
            if forget:
                self.queue.forget(run)
            r = self._row_of(run.key)
            if r >= 0:
                self.table.removeRow(r)
            self.loss_plot.remove(run.key)
        self.runs_removed.emit()

    # -- training (the queue: run_queue.py) ----------------------------------------------
    def train(self, keys: list[str]) -> None:
        """Queue these runs for training (they start as parallel slots free up)."""
        try:
            self.queue.train(keys)
        except ValueError as exc:
            self.ctx.show_error("Model lab", str(exc))

    def resume(self, keys: list[str]) -> None:
        """Queue these runs to continue from their last checkpoint, up to the larger of their own
        epochs and the Training form's (so raising Epochs extends a finished run)."""
        try:
            self.queue.resume(keys, int(self.train_form.values()["epochs"]))
        except ValueError as exc:
            self.ctx.show_error("Model lab", str(exc))

    def cancel(self, keys: list[str]) -> None:
        self.queue.cancel(keys)

    def cancel_all(self) -> None:
        self.queue.cancel_all()

    @property
    def busy(self) -> bool:
        return self.queue.busy

    # -- evaluation of loaded / restored models -----------------------------------------
    def evaluate(self, run: Run) -> None:
        if self.dataset is None or run.model is None:
            return
        try:
            check_compatible(run.model, self.dataset)
        except ValueError as exc:
            run.message = f"does not fit the data: {exc}"
            run.curves = None
            run.row = None          # its metrics were on other data: not comparable here
            self._refresh_row(run)
            self.run_updated.emit(run)
            return
        dataset = self.dataset
        job = lab_jobs.evaluate_job(run.model, dataset, run.train_config.trajectories)
        previous = run.row or {}

        def on_result(result, run=run):
            metrics, curves = result
            if run.key not in self.runs:
                return
            row = metrics_row(run.model_type, dataset, run.train_config, metrics, previous.get("seconds"))
            row["model"], row["type"] = run.name, run.model_type
            run.row, run.curves, run.message = row, curves, ""
            self._refresh_row(run)
            self.run_finished.emit(run)

        def on_error(message, tb, run=run):
            run.message = message
            self._refresh_row(run)

        self.ctx.jobs.submit(job, name=f"evaluate {run.name}", on_result=on_result, on_error=on_error)

    # -- save / load ---------------------------------------------------------------------
    def save_run(self, key: str, path: str | Path) -> Path:
        """Write a trained run as ``<path>.safetensors`` + ``<path>.json``."""
        run = self.runs[key]
        if run.model is None:
            raise ValueError(f"{run.name} has no trained model to save")
        return lab_jobs.save_trained(path, run.model, self.queue.meta(run, run.data_source))

    def load_model_file(self, path: str | Path, name: str | None = None) -> Run:
        """Add a saved model (``.json`` beside its ``.safetensors``) as a run (``name``: the table's,
        default the model's own or the file's stem); evaluates it on the data."""
        model, meta = lab_jobs.load_trained(path)
        tc_dict = dict(meta.get("train_config") or {})
        try:
            tc = lab_jobs.train_config_from_dict(tc_dict)
        except (ValueError, TypeError):
            tc = lab_jobs.default_train_config(model=model.name)
        run = self.add_run(
            model.name,
            tc,
            dataclasses.replace(ModelSpec(), **{f: getattr(model.spec, f) for f in lab_jobs.SPEC_FIELDS}),
            name=name or meta.get("name") or Path(path).stem,
        )
        run.model, run.state, run.model_path = model, "loaded", str(path)
        run.data_hash, run.data_source = meta.get("data_hash"), meta.get("data_source")
        run.losses = list(meta.get("losses") or [])
        run.row = meta.get("metrics")
        if Path(path).name == "model.json" and (Path(path).parent / "config.json").is_file():
            run.run_dir = str(Path(path).parent)     # a run folder's final model: its run comes along
        self._set_history(run)
        self._refresh_row(run)
        self.evaluate(run)
        return run

    def list_saved_runs(self) -> list[str]:
        """Add the models kept in the lab's folder (the runs of earlier sessions) as runs, with their
        loss curves (metrics.csv) and models; returns one line per folder that could not be read."""
        problems = []
        for path in self.queue.saved_models():
            try:
                run = self.load_model_file(path, self.queue.saved_name(path))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                problems.append(f"{self.queue.saved_name(path) or path.parent.name}: {exc}")
                continue
            if run.state == "loaded":
                run.state = "finished"
        return problems

    def keep_unsaved(self) -> list[Path]:
        """Write every trained model that is kept nowhere on disk into the lab's folder (listed again
        at the next start); returns the model files written."""
        written = []
        for run in list(self.runs.values()):
            if run.model is None or run.model_path:
                continue
            folder = self.queue.keep_folder(run)
            path = self.save_run(run.key, folder / "model.json")
            run.model_path, run.run_dir = str(path), str(folder)
            written.append(path)
        return written

    def _set_history(self, run: Run) -> None:
        """The run's curve from its run folder, else from the per-epoch losses it carries."""
        run.history = lab_jobs.run_history(run.run_dir) or [
            {"epoch": i + 1, "loss": v} for i, v in enumerate(run.losses)
        ]
        if run.losses:
            run.loss = run.losses[-1]
        if run.history:
            self._draw(run)

    def _save_dialog(self) -> None:
        keys = self.selected_keys()
        if not keys:
            self.ctx.show_error("Save model", "Select a trained model in the table first.")
            return
        run = self.runs[keys[0]]
        path, _ = QFileDialog.getSaveFileName(
            self, "Save model", f"{run.model_type}.json", lab_jobs.MODEL_FILTER
        )
        if path:
            try:
                self.save_run(run.key, path)
                self.ctx.status(f"saved {path}")
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Save model", str(exc))

    def _load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load model", "", lab_jobs.MODEL_FILTER)
        if path:
            try:
                self.load_model_file(path)
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Load model", str(exc))

    # -- sessions ------------------------------------------------------------------------
    def session_state(self) -> list[dict]:
        return [run.to_state() for run in self.runs.values()]

    def restore(self, states: list[dict]) -> None:
        from app.session_fields import finite_list

        self.remove(list(self.runs), forget=False)
        for s in states or []:
            try:
                if not isinstance(s, dict):
                    raise TypeError(f"a model entry must be an object, got {str(s)[:40]}")
                tc_dict = dict(s["train_config"])
                tc = lab_jobs.train_config_from_dict(tc_dict)
                spec = dataclasses.replace(ModelSpec(), **(s.get("spec") or {}))
                run = self.add_run(s["type"], tc, spec, name=s.get("name"))
            except (KeyError, ValueError, TypeError) as exc:
                self.ctx.show_error("Restore model lab session", f"a model entry is malformed: {exc}")
                continue
            try:
                run.losses = finite_list(s, "losses", 1_000_000, "model lab session")
            except ValueError as exc:
                self.ctx.show_error(
                    "Restore model lab session", f"the loss history of {run.name} was skipped: {exc}"
                )
            run.row = s.get("row")
            run.run_dir = s.get("run_dir")
            self._set_history(run)
            path = s.get("model_path")
            if path and Path(path).exists():
                try:
                    run.model, meta = lab_jobs.load_trained(path)
                    run.model_path = path
                    run.data_hash, run.data_source = meta.get("data_hash"), meta.get("data_source")
                    run.state = s.get("state") or "loaded"
                except (OSError, ValueError) as exc:
                    run.message = f"model file unreadable: {exc}"
            self._refresh_row(run)
            if run.model is not None:
                self.evaluate(run)
