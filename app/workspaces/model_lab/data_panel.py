"""The Data source panel: generate a data set from a system, or open a hardware log.

Both run as jobs. Generating uses a form bound to the engine's ``DatasetConfig``; opening a
log reads it in a job (progress, cancel), then shows the :class:`LogMappingDialog`; accepting
the dialog prepares the log in a second job. :attr:`dataset_ready` carries the new data set
(a ``TrajectoryDataset`` or a ``LogDataset``) with a JSON-able description of its source.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.widgets.forms import DataclassForm
from app.widgets.job_progress import PanelJob
from app.widgets.run_row import RunRow
from app.widgets.text import error_html
from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.mapping_dialog import LogMappingDialog
from engine.data import DatasetConfig
from engine.logs import LogMapping, PrepareConfig
from engine.training.compare import LogCompareConfig

__all__ = ["DataSourcePanel"]

DATASET_FIELDS = ["system", "h", "train_trajectories", "test_trajectories", "steps", "long_term_trajectories",
                  "long_term_steps", "control_low", "control_high", "seed", "long_term_seed"]


class DataSourcePanel(QGroupBox):
    """Where the data come from. Signals: ``dataset_ready(dataset, source: dict)``, ``busy(bool)``."""

    dataset_ready = Signal(object, object)
    busy = Signal(bool)

    def __init__(self, ctx, mapping_folder: str | None = None, parent: QWidget | None = None):
        super().__init__("Data source", parent)
        self.ctx = ctx
        self.mapping_folder = mapping_folder
        self.dataset = None
        self.source: dict | None = None          # JSON-able: how to rebuild the data set
        self.table = None                        # the LogTable of an opened log
        self.prepared = None                     # its PreparedLog
        self.mapping_dialog: LogMappingDialog | None = None
        self._pending_log: dict | None = None    # mapping/prepare to apply without the dialog (sessions)

        layout = QVBoxLayout(self)
        self.tabs = QTabWidget()
        gen = QWidget()
        gv = QVBoxLayout(gen)
        gv.setContentsMargins(4, 4, 4, 4)
        self.dataset_form = DataclassForm(DatasetConfig,
                                          include=DATASET_FIELDS, choices={"system": lab_jobs.SYSTEMS},
                                          labels={"h": "Time step h (s)"})
        gv.addWidget(self.dataset_form)
        self.generate_button = QPushButton("Generate")
        self.generate_button.setObjectName("generateButton")
        self.generate_button.clicked.connect(self.generate)
        self.dataset_form.validity_changed.connect(self.generate_button.setEnabled)
        gv.addWidget(self.generate_button)
        gv.addStretch(1)
        self.tabs.addTab(gen, "Generate")
        logw = QWidget()
        lv = QVBoxLayout(logw)
        self.open_button = QPushButton("Open log…")
        self.open_button.setObjectName("openLogButton")
        self.open_button.clicked.connect(self._browse)
        self.remap_button = QPushButton("Edit mapping…")
        self.remap_button.setEnabled(False)
        self.remap_button.clicked.connect(lambda: self.show_mapping_dialog())
        row = QHBoxLayout()
        row.addWidget(self.open_button)
        row.addWidget(self.remap_button)
        lv.addLayout(row)
        hint = QLabel("CSV, TSV, NPZ, Parquet, ROS bags and MCAP. Columns are mapped to time, q, qd "
                      "and u in the next dialog.")
        hint.setWordWrap(True)
        lv.addWidget(hint)
        self.log_layout = lv          # the page adds the comparison on a robot below the hint
        lv.addStretch(1)
        self.tabs.addTab(logw, "Hardware log")
        layout.addWidget(self.tabs)
        self.job_row = RunRow(None, progress=True)
        self.job_row.cancel_clicked.connect(self.cancel)
        self.progress, self.cancel_button = self.job_row.progress, self.job_row.cancel_button
        layout.addWidget(self.job_row)
        self.summary = QLabel("No data yet: generate a data set or open a log.")
        self.summary.setObjectName("dataSummary")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self._job = PanelJob(self.ctx, self.progress, self.cancel_button, self.summary, self)
        self._job.busy.connect(self.busy)

    # -- jobs -----------------------------------------------------------------------------
    def _run(self, job, name: str, on_result) -> None:
        self._job.start(job, name, on_result)

    def cancel(self) -> None:
        self._job.cancel()

    @property
    def is_busy(self) -> bool:
        return self._job.is_running

    # -- generate -------------------------------------------------------------------------
    def generate(self, config=None) -> None:
        """Simulate a data set (the form's ``DatasetConfig``, or ``config``) in a job."""
        try:
            config = config or self.dataset_form.value()
        except ValueError as exc:
            self.summary.setText(error_html(exc))
            return
        self.dataset_form.set_value(config)
        source = {"kind": "generated", "config": config.to_dict()}

        def on_result(dataset):
            self._set_dataset(dataset, source)

        self._run(lab_jobs.generate_job(config), f"generate {config.system}", on_result)

    # -- logs -----------------------------------------------------------------------------
    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open log", "", ";;".join(lab_jobs.LOG_FILTERS + ("All files (*)",))
        )
        if path:
            self.open_log(path)

    def open_log(self, path: str, mapping=None, prepare=None, compare=None) -> None:
        """Read ``path`` in a job; then show the mapping dialog (or, with ``mapping``, prepare at once)."""
        self.tabs.setCurrentIndex(1)
        self._pending_log = None if mapping is None else {"mapping": mapping, "prepare": prepare,
                                                          "compare": compare}

        def on_result(table):
            self.table = table
            self.remap_button.setEnabled(True)
            self.ctx.add_recent_file(str(path))
            pending, self._pending_log = self._pending_log, None
            if pending is not None:
                self.prepare(pending["mapping"], pending["prepare"] or PrepareConfig(),
                             pending["compare"] or LogCompareConfig())
            else:
                self.show_mapping_dialog()

        self._run(lab_jobs.read_log_job(path), f"load {Path(path).name}", on_result)

    def show_mapping_dialog(self, mapping=None) -> LogMappingDialog | None:
        """Open (non-blocking) the mapping dialog for the loaded log; accepted -> prepare."""
        if self.table is None:
            return None
        origin = ""
        prepare = compare = None
        if mapping is None and self.source and self.source.get("kind") == "log" \
                and self.source.get("path") == self.table.source:
            mapping = LogMapping.from_dict(self.source["mapping"])
            prepare = PrepareConfig.from_dict(self.source["prepare"])
            compare = LogCompareConfig(**self.source["compare"])
            origin = "current"
        if mapping is None:
            mapping, origin = lab_jobs.initial_mapping(self.table, self.mapping_folder)
        dialog = LogMappingDialog(
            self.table, mapping, prepare, compare, self.mapping_folder, origin, parent=self
        )
        dialog.accepted.connect(lambda d=dialog: self._dialog_accepted(d))
        dialog.finished.connect(lambda *_: dialog.deleteLater())
        self.mapping_dialog = dialog
        dialog.open()
        return dialog

    def _dialog_accepted(self, dialog: LogMappingDialog) -> None:
        self.prepare(dialog.mapping(), dialog.prepare_config(), dialog.compare_config())

    def prepare(self, mapping, config, compare) -> None:
        """Prepare the loaded log in a job with this mapping and configuration."""
        table = self.table
        source = {
            "kind": "log",
            "path": table.source,
            "mapping": mapping.to_dict(),
            "prepare": config.to_dict(),
            "compare": compare.to_dict(),
        }

        def on_result(result):
            prepared, dataset = result
            self.prepared = prepared
            self._set_dataset(dataset, source)

        self._run(lab_jobs.prepare_job(table, mapping, config, compare), f"prepare {table.name}", on_result)

    def set_dataset(self, dataset, source: dict, prepared=None) -> None:
        """Data made elsewhere (the one-click example): shown and announced as if made here."""
        if prepared is not None:
            self.prepared = prepared
        self._set_dataset(dataset, source)

    def _set_dataset(self, dataset, source: dict) -> None:
        self.dataset = dataset
        self.source = source
        self.summary.setText(lab_jobs.data_summary(dataset))
        self.ctx.status(lab_jobs.data_summary(dataset))
        self.dataset_ready.emit(dataset, source)

    # -- sessions -------------------------------------------------------------------------
    def restore(self, source: dict | None) -> None:
        """Rebuild the data set a session describes (jobs; no dialog)."""
        if not source:
            return
        if source.get("kind") == "generated":
            config = DatasetConfig.from_dict(source["config"])
            self.dataset_form.set_value(config)
            self.tabs.setCurrentIndex(0)
            self.generate(config)
        elif source.get("kind") == "log":
            self.open_log(source["path"], LogMapping.from_dict(source["mapping"]),
                          PrepareConfig.from_dict(source["prepare"]), LogCompareConfig(**source["compare"]))
