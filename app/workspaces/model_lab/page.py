"""The Model lab workspace: bring data, train several learned models side by side, see which to trust.

Left: the data source (generate from a system, or open a hardware log through the mapping
dialog) and the models (types, hyperparameters, training runs with live loss curves). Right:
the compare view (metrics table, rollouts, phase portrait, energy, error against horizon,
reports). The engine is imported directly; the workspace's jobs and app-side helpers are in
:mod:`app.workspaces.model_lab.lab_jobs`, the training queue in :mod:`~app.workspaces.model_lab.run_queue`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QHBoxLayout,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolBox,
    QVBoxLayout,
    QWidget,
)

from app.widgets.layout import SidePanel, collapse_button, remember_splitter
from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.compare_panel import ComparePanel, rows_height
from app.workspaces.model_lab.data_panel import DataSourcePanel
from app.workspaces.model_lab.empty_state import EmptyState
from app.workspaces.model_lab.robot_compare_panel import RobotComparePanel
from app.workspaces.model_lab.robot_panel import RobotIdentificationPanel
from app.workspaces.model_lab.runs_panel import RunsPanel
from app.workspaces.model_lab.state import ModelLabState
from engine.paths import user_runs_dir

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


def lab_folder() -> Path:
    """Where the lab keeps its run folders and models (listed again at the next start): the user's
    data folder (``$LAGRANGE_RUNS_DIR/model_lab`` when set; engine.paths.user_runs_dir)."""
    return user_runs_dir("model_lab")


RUNS_FOLDER_KEY = "model_lab/runs_folder"


def runs_folder(settings: QSettings | None) -> Path:
    """The folder the user chose for the lab's runs (Workspace > Keep runs in folder…) when it still
    exists, else :func:`lab_folder` (the user's data folder)."""
    chosen = settings.value(RUNS_FOLDER_KEY) if settings is not None else None
    if chosen and Path(str(chosen)).is_dir():
        return Path(str(chosen))
    return lab_folder()


class ModelLabPage(QWidget):
    """The Model lab page, constructed as ``ModelLabPage(ctx, parent=None)``; its state is
    :attr:`state` (a Qt-free :class:`ModelLabState`)."""

    def __init__(self, ctx, parent: QWidget | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("modelLabPage")
        settings = getattr(ctx, "settings", None)
        self.state = ModelLabState(ctx.jobs)
        self.data_panel = DataSourcePanel(ctx, mapping_folder=_user_folder(settings, "mappings"))
        self.runs_panel = RunsPanel(ctx, model_folder=str(runs_folder(settings)))
        self.compare_panel = ComparePanel(ctx, state=self.state)
        # the shell plays the log on the Robot workspace (a workspace never imports another)
        self.show_on_robot_requested = self.compare_panel.show_on_robot
        self.robot_panel = RobotIdentificationPanel(ctx)
        self.empty_state = EmptyState()
        # the hardware-log tab compares models on the log's robot; the shell loads the identified robot
        self.state.compare_folder = runs_folder(settings)
        self.robot_compare = RobotComparePanel(self.state)
        self.data_panel.log_layout.insertWidget(self.data_panel.log_layout.count() - 1, self.robot_compare)
        self.use_robot_requested = self.robot_compare.use_robot_requested

        # the runs panel's table shows five rows and its loss plot a usable height; the whole
        # left column scrolls vertically when the window is shorter than that
        self.runs_panel.table.setMinimumHeight(rows_height(self.runs_panel.table, 5))
        self.runs_panel.loss_plot.setMinimumHeight(200)
        for tool in self.runs_panel.findChildren(QToolBox):
            tool.setMinimumHeight(240)

        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 4, 0)
        lv.addWidget(self.data_panel)
        lv.addWidget(self.runs_panel, 1)
        self.side_panel = SidePanel(left, preferred_width=470)
        self.compare_stack = QStackedWidget()
        self.compare_stack.addWidget(self.empty_state)
        self.compare_stack.addWidget(self.compare_panel)
        self.right_tabs = QTabWidget()
        self.right_tabs.addTab(self.compare_stack, "Compare")
        self.right_tabs.addTab(self.robot_panel, "Robot identification")
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.side_panel)
        split.addWidget(self.right_tabs)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        remember_splitter(split, settings, "model_lab/splitter")
        layout.addWidget(split)
        self.splitter = split
        self.collapse_button = collapse_button(split, 0, "data and models")
        self.right_tabs.setCornerWidget(self.collapse_button, Qt.Corner.TopLeftCorner)

        self.data_panel.dataset_ready.connect(self._on_dataset)
        self.runs_panel.run_finished.connect(lambda run: self._refresh_compare())
        self.runs_panel.run_updated.connect(lambda run: self._refresh_compare())
        self.runs_panel.runs_removed.connect(self._refresh_compare)
        ev = self.state.events
        ev.data.connect(lambda *_: self._show_empty_or_compare())
        ev.runs.connect(lambda *_: self._show_empty_or_compare())
        ev.example_busy.connect(self.empty_state.row.set_running)
        ev.example_progress.connect(self.empty_state.show_progress)
        ev.example.connect(self._on_example)
        ev.message.connect(self.ctx.status)
        ev.error.connect(self.ctx.show_error)
        self.empty_state.row.run_clicked.connect(self.run_example)
        self.empty_state.row.cancel_clicked.connect(self.state.cancel_example)
        self._actions: list[QAction] | None = None
        problems = self.runs_panel.list_saved_runs()     # the runs of earlier sessions, listed again
        self._refresh_compare()
        self._show_empty_or_compare()
        if problems:
            self.ctx.status(f"Model lab: {len(problems)} kept run(s) could not be read ({problems[0]})")

    def set_shown_robot(self, source: str | None) -> None:
        """The robot the Robot workspace shows (the shell calls this): the log's robot by default."""
        self.state.set_shown_robot(source)

    def _show_empty_or_compare(self) -> None:
        self.compare_stack.setCurrentWidget(self.empty_state if self.state.is_empty else self.compare_panel)

    # -- the one-click example ------------------------------------------------------------
    def run_example(self) -> None:
        """Compare models on the shipped example log (a job; progress and cancel on the empty state)."""
        self.state.run_example()

    def _on_example(self, result) -> None:
        """The example's data and models join the lab as if made here (the runs table lists them)."""
        self.data_panel.set_dataset(result.data.dataset, result.data.source, result.data.prepared)
        for m in result.models:
            run = self.runs_panel.add_run(m.model_type, m.train_config, name=f"{m.name} (example)")
            run.model, run.row, run.curves, run.losses = m.model, dict(m.row), m.curves, list(m.losses)
            run.row["model"] = run.name
            run.state, run.fraction, run.eta = "finished", 1.0, 0.0
            run.loss = run.losses[-1] if run.losses else None
            run.data_source = result.data.source
            self.runs_panel.loss_plot.set_losses(run.key, run.losses, run.name)
            refresh = getattr(self.runs_panel, "_refresh_row", None)
            if refresh is not None:
                refresh(run)
        self._refresh_compare()

    # -- wiring -------------------------------------------------------------------------
    @property
    def mapping_dialog(self):
        """The mapping dialog last opened (for the File menu flow and tests)."""
        return self.data_panel.mapping_dialog

    def _on_dataset(self, dataset, source) -> None:
        self.state.set_data(
            dataset, source, self.data_panel.prepared if source.get("kind") == "log" else None
        )
        self.runs_panel.set_dataset(dataset, source)
        self._refresh_compare()

    def _refresh_compare(self) -> None:
        self.state.set_runs(list(self.runs_panel.runs.values()))

    # -- page interface -----------------------------------------------------------------
    def file_filters(self) -> list[str]:
        return list(lab_jobs.LOG_FILTERS) + [lab_jobs.MODEL_FILTER]

    def open_file(self, path: str) -> bool:
        """A log opens the mapping dialog (after a loading job); a model ``.json`` is loaded."""
        p = Path(path)
        if lab_jobs.is_model_file(p):
            try:
                self.runs_panel.load_model_file(p)
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Open model", str(exc))
                return False
            self.ctx.add_recent_file(str(p))
            return True
        if lab_jobs.is_log_file(p):
            self.data_panel.open_log(str(p))
            return True
        return False

    def session_state(self) -> dict:
        return lab_jobs.jsonable({"version": SESSION_VERSION, "source": self.data_panel.source,
                            "runs": self.runs_panel.session_state(),
                            "parallel": self.runs_panel.parallel.value(),
                            "signal": self.compare_panel.signal.currentIndex(),
                            "robot": self.state.robot,
                            "splitter": list(self.splitter.sizes())})

    def restore_session_state(self, state: dict) -> None:
        """Restore each part of the session on its own: a part whose values are out of range or
        malformed is skipped and named in one message, the rest is restored."""
        from app.session_fields import session_int, splitter_sizes

        if not isinstance(state, dict):
            return
        where = "model lab session"
        spin = self.runs_panel.parallel
        skipped = []
        parts = [
            (
                "parallel runs",
                lambda: spin.setValue(
                    session_int(state, "parallel", spin.minimum(), spin.maximum(), spin.value(), where)
                ),
            ),
            ("models", lambda: self.runs_panel.restore(_runs_list(state.get("runs")))),
            (
                "pane sizes",
                lambda: self._restore_splitter(
                    splitter_sizes(state, "splitter", self.splitter.count(), where)
                ),
            ),
            ("data source", lambda: self.data_panel.restore(state.get("source"))),
            ("robot", lambda: self._restore_robot(state.get("robot"))),
        ]
        for what, restore in parts:
            try:
                restore()
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
                skipped.append(f"{what} ({exc})")
        self._refresh_compare()
        if skipped:
            self.ctx.show_error("Session partly restored",
                                "Model lab: skipped " + "; ".join(skipped) + ". The rest was restored.")

    def _restore_robot(self, robot) -> None:
        if robot is not None and not isinstance(robot, str):
            raise ValueError(f"field 'robot' must be a robot name or file, got {type(robot).__name__}")
        if robot:
            self.state.set_robot(robot)

    def _restore_splitter(self, sizes: list[int] | None) -> None:
        if sizes is not None:
            self.splitter.setSizes(sizes)

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
            folder = QAction("Keep runs in folder…", self)
            folder.setToolTip("A project folder for the lab's runs (default: your data folder)")
            folder.triggered.connect(self._runs_folder_dialog)
            self._actions = [gen, train, cancel, report, folder]
        return self._actions

    # -- where runs are kept ----------------------------------------------------------------
    def set_runs_folder(self, folder: str | Path) -> list[str]:
        """Keep new runs in ``folder`` (remembered) and list the runs already there instead of the
        previous folder's (runs still training keep their folders). Returns the unreadable ones."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        settings = getattr(self.ctx, "settings", None)
        if settings is not None:
            settings.setValue(RUNS_FOLDER_KEY, str(folder))
        panel = self.runs_panel
        idle = [k for k, r in panel.runs.items()
                if r.state not in ("running", "queued") and r.model_path and r.run_dir]
        panel.remove(idle, forget=False)
        panel.queue.model_folder = folder
        problems = panel.list_saved_runs()
        self._refresh_compare()
        self.ctx.status(f"Model lab: runs are kept in {folder}")
        return problems

    def _runs_folder_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self, "Keep the Model lab's runs in folder",
                                                  str(self.runs_panel.model_folder or ""))
        if folder:
            try:
                self.set_runs_folder(folder)
            except OSError as exc:
                self.ctx.show_error("Keep runs in folder", f"{folder}: {exc.strerror or exc}")

    # -- what a quit would lose ----------------------------------------------------------
    def unsaved_work(self) -> list[str]:
        """One line per result a quit would lose (the main window asks before quitting)."""
        return self.runs_panel.queue.unsaved_work()

    def save_unsaved_work(self) -> bool:
        """Keep the trained models that are on no disk in the lab's folder (listed at the next start).
        Runs still training keep their last checkpoint in their run folder (Resume continues them)."""
        written = self.runs_panel.keep_unsaved()
        if written:
            self.ctx.status(f"Model lab: {len(written)} model(s) kept in {lab_folder()}")
        return True

    def shutdown(self) -> None:
        self.state.cancel_example()
        self.state.cancel_compare()
        self.runs_panel.cancel_all()
        self.data_panel.cancel()
        self.robot_panel.cancel()


def _runs_list(runs) -> list:
    """The session's list of model entries (each checked by the runs panel)."""
    if runs is None:
        return []
    if not isinstance(runs, list):
        raise ValueError(f"field 'runs' must be a list of model entries, got {type(runs).__name__}")
    return runs
