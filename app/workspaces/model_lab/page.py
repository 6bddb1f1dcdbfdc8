"""The Model lab workspace: bring data, train several learned models side by side, see which to trust.

Left: the data source (generate from a system, or open a hardware log through the mapping
dialog) and the models (types, hyperparameters, training runs with live loss curves). Right:
the compare view (metrics table, rollouts, phase portrait, energy, error against horizon,
reports). Every engine call goes through :mod:`app.workspaces.model_lab.engine_bridge`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QSplitter, QTabWidget, QWidget

from app.workspaces.model_lab import engine_bridge as eb
from app.workspaces.model_lab.compare_panel import ComparePanel
from app.workspaces.model_lab.data_panel import DataSourcePanel
from app.workspaces.model_lab.robot_panel import RobotIdentificationPanel
from app.workspaces.model_lab.runs_panel import RunsPanel

__all__ = ["ModelLabPage"]


SESSION_VERSION = 1


def _user_folder(settings: QSettings | None, name: str) -> str | None:
    """A folder beside the settings file (saved mappings, trained models of sessions)."""
    if settings is None or not settings.fileName():
        return None
    base = Path(settings.fileName()).parent / "model_lab" / name
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(base)


class ModelLabPage(QWidget):
    """The Model lab page, constructed as ``ModelLabPage(ctx, parent=None)``."""

    def __init__(self, ctx, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("modelLabPage")
        settings = getattr(ctx, "settings", None)
        self.data_panel = DataSourcePanel(ctx, mapping_folder=_user_folder(settings, "mappings"))
        self.runs_panel = RunsPanel(ctx, model_folder=_user_folder(settings, "models"))
        self.compare_panel = ComparePanel(ctx)
        self.robot_panel = RobotIdentificationPanel(ctx)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        split = QSplitter(Qt.Orientation.Horizontal)
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.data_panel)
        left.addWidget(self.runs_panel)
        left.setStretchFactor(0, 0)
        left.setStretchFactor(1, 1)
        left.setSizes([260, 700])
        self.left_splitter = left
        split.addWidget(left)
        self.right_tabs = QTabWidget()
        self.right_tabs.addTab(self.compare_panel, "Compare")
        self.right_tabs.addTab(self.robot_panel, "Robot identification")
        split.addWidget(self.right_tabs)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([520, 780])
        layout.addWidget(split)
        self.splitter = split

        self.data_panel.dataset_ready.connect(self._on_dataset)
        self.runs_panel.run_finished.connect(lambda run: self._refresh_compare())
        self.runs_panel.run_updated.connect(lambda run: self._refresh_compare())
        self.runs_panel.runs_removed.connect(self._refresh_compare)
        self._actions: list[QAction] | None = None

    # -- wiring -------------------------------------------------------------------------
    @property
    def mapping_dialog(self):
        """The mapping dialog last opened (for the File menu flow and tests)."""
        return self.data_panel.mapping_dialog

    def _on_dataset(self, dataset, source) -> None:
        self.compare_panel.set_data(dataset, source, self.data_panel.prepared if source.get("kind") == "log" else None)
        self.runs_panel.set_dataset(dataset, source)
        self._refresh_compare()

    def _refresh_compare(self) -> None:
        self.compare_panel.set_runs(list(self.runs_panel.runs.values()))

    # -- page interface -----------------------------------------------------------------
    def file_filters(self) -> list[str]:
        return list(eb.LOG_FILTERS) + [eb.MODEL_FILTER]

    def open_file(self, path: str) -> bool:
        """A log opens the mapping dialog (after a loading job); a model ``.json`` is loaded."""
        p = Path(path)
        if eb.is_model_file(p):
            try:
                self.runs_panel.load_model_file(p)
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Open model", str(exc))
                return False
            self.ctx.add_recent_file(str(p))
            return True
        if eb.is_log_file(p):
            self.data_panel.open_log(str(p))
            return True
        return False

    def session_state(self) -> dict:
        return eb.jsonable({"version": SESSION_VERSION, "source": self.data_panel.source,
                            "runs": self.runs_panel.session_state(),
                            "parallel": self.runs_panel.parallel.value(),
                            "signal": self.compare_panel.signal.currentIndex(),
                            "splitter": list(self.splitter.sizes()),
                            "left_splitter": list(self.left_splitter.sizes())})

    def restore_session_state(self, state: dict) -> None:
        if not isinstance(state, dict):
            return
        self.runs_panel.parallel.setValue(int(state.get("parallel", 2)))
        self.runs_panel.restore(state.get("runs") or [])
        if state.get("splitter"):
            self.splitter.setSizes([int(s) for s in state["splitter"]])
        if state.get("left_splitter"):
            self.left_splitter.setSizes([int(s) for s in state["left_splitter"]])
        try:
            self.data_panel.restore(state.get("source"))
        except (ValueError, KeyError, TypeError) as exc:
            self.ctx.show_error("Restore model lab session", f"the data source could not be rebuilt: {exc}")
        self._refresh_compare()

    def menu_actions(self) -> list[QAction]:
        if self._actions is None:
            gen = QAction("Generate data set", self)
            gen.triggered.connect(lambda: self.data_panel.generate())
            train = QAction("Train all models", self)
            train.triggered.connect(lambda: self.runs_panel.train(list(self.runs_panel.runs)))
            cancel = QAction("Cancel training", self)
            cancel.triggered.connect(self.runs_panel.cancel_all)
            report = QAction("Write compare report…", self)
            report.triggered.connect(self.compare_panel._report_dialog)
            self._actions = [gen, train, cancel, report]
        return self._actions

    def shutdown(self) -> None:
        self.runs_panel.cancel_all()
        self.data_panel.cancel()
        self.robot_panel.cancel()
