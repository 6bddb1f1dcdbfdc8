"""The main window: a sidebar of workspaces, menus, the job status bar and the log console."""

from __future__ import annotations

import importlib
import json
import logging
import traceback
from pathlib import Path

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app import settings as app_settings
from app.context import AppContext
from app.errors import describe_exception, dialog_title, plain_message, show_error_dialog
from app.jobs import JobRunner
from app.logging_setup import QtLogRelay
from app.viewer.constraints_layer import add_show_constraints_action
from app.viewer.orbit_speed import add_orbit_speed_menu
from app.widgets.device_menu import add_device_menu
from app.widgets.file_dialogs import example_folder, open_file_name
from app.widgets.job_status import JobStatusWidget
from app.widgets.log_console import LogConsole
from app.workspaces import WORKSPACES, WorkspaceSpec
from engine import __version__
from engine.io import atomic_write_text

log = logging.getLogger(__name__)

SESSION_FILTER = "Lagrange Studio session (*.lagrange.json *.json)"
SESSION_VERSION = 1
MAX_SESSION_FILE_BYTES = 16 << 20   # a session holds settings and loss histories, never data


def is_session_file(path: str) -> bool:
    """A saved session: ``*.lagrange.json``, or a small ``.json`` whose ``format`` says so."""
    p = Path(path)
    name = p.name.lower()
    if name.endswith(".lagrange.json"):
        return True
    if not name.endswith(".json"):
        return False
    try:
        if not p.is_file() or p.stat().st_size > MAX_SESSION_FILE_BYTES:
            return False
        head = p.read_bytes()[:65536].decode("utf-8", errors="replace")
    except OSError:
        return False
    return '"lagrange-studio-session"' in head and '"format"' in head


def read_session(path: str) -> dict:
    """The JSON object of a session file; ValueError naming the file otherwise."""
    from engine.io import read_json
    from engine.validation import check_file_size

    check_file_size(path, MAX_SESSION_FILE_BYTES, "a session")  # before it is parsed
    state = read_json(path)  # missing, not a regular file, not JSON: a message naming the file
    if not isinstance(state, dict) or state.get("format") != "lagrange-studio-session":
        raise ValueError(f"{path}: not a Lagrange Studio session file (its 'format' field is missing)")
    version = state.get("version", SESSION_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"{path}: field 'version' is {version!r}, not a session format version")
    if version > SESSION_VERSION:
        raise ValueError(f"{path}: session format version {version!r} is newer than this app reads "
                         f"({SESSION_VERSION}); update Lagrange Studio")
    return state


def ask_unsaved(parent: QWidget, lines: list[str]) -> str:
    """Ask what to do with work a quit would lose: ``"save"``, ``"discard"`` or ``"cancel"``
    (a module function, so tests answer it)."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Quit Lagrange Studio",
                      "Quitting now loses this work:", parent=parent)
    box.setInformativeText("\n".join(f"• {line}" for line in lines)
                           + "\n\nSave keeps the Model lab's models in its folder (listed again at the next "
                             "start) and asks for a folder for an eigenmode design.")
    box.setStandardButtons(QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                           | QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Save)
    answer = box.exec()
    return {QMessageBox.StandardButton.Save: "save",
            QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")


def _robot_named_like(stem: str) -> str | None:
    """A shipped robot whose name starts the log's file name ("panda_joints" -> "panda"), or None."""
    from engine.models.robot import SYSTEM_URDFS, urdf_for_system
    from engine.robots.library import list_robots

    stem = stem.lower()
    for system in SYSTEM_URDFS:
        if stem.startswith(system):
            return str(urdf_for_system(system))
    names = sorted((entry.name for entry in list_robots()), key=len, reverse=True)
    return next((n for n in names if stem.startswith(n.lower())), None)


class _BrokenPage(QWidget):
    """Shown in place of a workspace whose page failed to build; the rest of the app works."""

    def __init__(self, spec: WorkspaceSpec, error: str, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        label = QLabel(f"The {spec.title} workspace could not start:\n\n{error}")
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(label)
        layout.addStretch(1)


class MainWindow(QMainWindow):
    workspace_changed = Signal(str)

    def __init__(self, *, settings=None, log_relay: QtLogRelay | None = None,
                 options: dict | None = None, runner: JobRunner | None = None):
        super().__init__()
        self.setWindowTitle("Lagrange Studio")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else app_settings.open_settings()
        self.jobs = runner or JobRunner(self)
        self.jobs.job_ended.connect(self._report_unhandled_failure)
        self.options = dict(options or {})
        self.ask_before_quit = True     # closing asks Save / Discard / Cancel when work would be lost
        self.error_dialogs: list[QMessageBox] = []
        self._errors_shown = 0
        self.ctx = AppContext(jobs=self.jobs, settings=self.settings, status=self.show_status,
                              add_recent_file=self.add_recent_file, show_error=self.show_error,
                              options=self.options)
        self.pages: dict[str, QWidget] = {}
        self._workspace_actions: list[QAction] = []
        self._build_central()
        self._build_status_bar()
        self.log_console = LogConsole(log_relay or QtLogRelay(), self)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.log_console)
        self._build_menus()
        # 1400 x 900, or the screen's available size when that is smaller (a 1366 x 768 laptop)
        available = (self.screen() or QApplication.primaryScreen()).availableGeometry()
        self.resize(min(1400, available.width()), min(900, available.height()))
        self._restore_settings()

    # ----- layout -----------------------------------------------------------------------
    def _build_central(self) -> None:
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.sidebar = QListWidget()
        self.sidebar.setObjectName("workspaceSidebar")
        self.sidebar.setFixedWidth(200)
        self.sidebar.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.sidebar.setIconSize(QSize(20, 20))
        self.stack = QStackedWidget()
        self.stack.setObjectName("workspaceStack")
        for spec in WORKSPACES:
            item = QListWidgetItem(spec.title)
            item.setToolTip(f"{spec.description}  ({spec.shortcut})")
            item.setData(Qt.ItemDataRole.UserRole, spec.key)
            self.sidebar.addItem(item)
            holder = QWidget()  # replaced by the page on first show (pages build lazily)
            holder.setObjectName(f"holder_{spec.key}")
            self.stack.addWidget(holder)
        self.sidebar.currentRowChanged.connect(self._on_sidebar_row)
        layout.addWidget(self.sidebar)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        bar.setObjectName("statusBar")
        self.job_status = JobStatusWidget(self.jobs, self)
        bar.addPermanentWidget(self.job_status)

    def _build_menus(self) -> None:
        menubar = self.menuBar()
        file_menu = menubar.addMenu("&File")
        self._add_action(
            file_menu, "Open &URDF…", "Ctrl+O", lambda: self._open_dialog("robot", "Open URDF", "robot")
        )
        self._add_action(file_menu, "Open &Log…", "Ctrl+Shift+L",
                         lambda: self._open_dialog("model_lab", "Open log", "log"))
        self._add_action(file_menu, "Open &Model…", "Ctrl+Shift+M",
                         lambda: self._open_dialog("model_lab", "Open model", "model"))
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addSeparator()
        self._add_action(file_menu, "&Save Session…", "Ctrl+S", self._save_session_dialog)
        self._add_action(file_menu, "Open Sess&ion…", "Ctrl+Shift+O", self._open_session_dialog)
        file_menu.addSeparator()
        self._add_action(file_menu, "&Export Screenshot…", "Ctrl+E", self._export_dialog)
        file_menu.addSeparator()
        self._add_action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, self.close)

        view_menu = menubar.addMenu("&View")
        for index, spec in enumerate(WORKSPACES):
            action = self._add_action(view_menu, spec.title, spec.shortcut,
                                      lambda i=index: self.sidebar.setCurrentRow(i))
            self._workspace_actions.append(action)
        view_menu.addSeparator()
        toggle = self.log_console.toggleViewAction()
        toggle.setText("&Log Console")
        toggle.setShortcut(QKeySequence("Ctrl+L"))
        view_menu.addAction(toggle)
        self._add_action(view_menu, "&Full Screen", "F11", self._toggle_full_screen)
        view_menu.addSeparator()
        self.device_menu = add_device_menu(view_menu, self.settings, self.show_status)  # cpu / auto / cuda
        self.orbit_menu = add_orbit_speed_menu(view_menu, self.settings, self.show_status)
        self.constraints_action = add_show_constraints_action(view_menu, self.settings, self.show_status)

        self.workspace_menu = menubar.addMenu("&Workspace")
        self.workspace_menu.aboutToShow.connect(self._fill_workspace_menu)

        help_menu = menubar.addMenu("&Help")
        self._add_action(help_menu, "&Keyboard Shortcuts", "Ctrl+/", self.show_shortcuts)
        self._add_action(help_menu, "&About Lagrange Studio", None, self.show_about)

    def _add_action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda checked=False: slot())
        menu.addAction(action)
        return action

    # ----- workspaces -------------------------------------------------------------------
    def workspace_keys(self) -> list[str]:
        return [spec.key for spec in WORKSPACES]

    def page(self, key: str) -> QWidget:
        """The workspace page for ``key``, built on first use."""
        if key in self.pages:
            return self.pages[key]
        index = self.workspace_keys().index(key)
        spec = WORKSPACES[index]
        try:
            module = importlib.import_module(spec.module)
            page = getattr(module, spec.class_name)(self.ctx, None)
        except Exception as exc:  # noqa: BLE001 - a broken workspace must not take the app down
            details = traceback.format_exc()
            log.error("workspace %s failed to start:\n%s", spec.title, details)
            page = _BrokenPage(spec, describe_exception(exc))
        page.setObjectName(f"page_{key}")
        holder = self.stack.widget(index)
        self.stack.insertWidget(index, page)
        self.stack.removeWidget(holder)
        holder.deleteLater()
        self.pages[key] = page
        request = getattr(page, "show_on_robot_requested", None)
        if request is not None:
            request.connect(self.show_log_on_robot)
        use = getattr(page, "use_robot_requested", None)
        if use is not None:
            use.connect(self.use_robot)
        loaded = getattr(page, "robot_loaded", None)
        if loaded is not None:      # the Model lab takes the robot shown as its logs' robot
            loaded.connect(lambda robot: self._tell_shown_robot(robot.source))
        shown = getattr(self.pages.get("robot"), "robot", None)
        if hasattr(page, "set_shown_robot") and shown is not None:
            page.set_shown_robot(shown.source)
        return page

    def _tell_shown_robot(self, source: str) -> None:
        for page in self.pages.values():
            if hasattr(page, "set_shown_robot"):
                page.set_shown_robot(source)

    def use_robot(self, path: str) -> None:
        """The Model lab's "Use identified robot": the robot file (URDF, its actuation JSON beside it)
        loaded in the Robot workspace, whose simulation and torque readouts then use it."""
        robot_page = self.show_workspace("robot")
        robot_page.load_robot(str(path))

    def show_log_on_robot(self, source: dict, model=None, name: str = "") -> None:
        """The Model lab's "Show on robot": its log played in the Robot workspace (with ``model``'s
        prediction as a ghost). The robot shown is kept when it has as many joints as the log has
        position columns; else a shipped robot named like the log (pendulum_friction -> pendulum)."""
        from engine.logs.mapping import LogMapping

        robot_page = self.show_workspace("robot")
        mapping = LogMapping.from_dict(source["mapping"]) if source.get("mapping") else None
        n_q = len(mapping.q) if mapping is not None else None
        shown = getattr(robot_page, "robot", None)

        def show(*_args):
            robot_page.replay.show_log(source["path"], mapping, model=model, model_name=name)

        named = source.get("robot")       # the robot a comparison on the log named
        if shown is not None and (shown.source == named if named else n_q is not None and shown.model.dof == n_q):
            show()
            return
        candidate = named or _robot_named_like(Path(source["path"]).stem)
        if candidate is None:
            show()          # the replay panel says plainly why the log does not fit
            return

        def once(*_args):
            robot_page.robot_loaded.disconnect(once)
            show()

        robot_page.robot_loaded.connect(once)
        robot_page.load_robot(candidate)

    def current_workspace(self) -> str:
        return WORKSPACES[max(self.sidebar.currentRow(), 0)].key

    def show_workspace(self, key: str) -> QWidget:
        index = self.workspace_keys().index(key)
        page = self.page(key)
        self.sidebar.setCurrentRow(index)
        self.stack.setCurrentIndex(index)
        return page

    def _on_sidebar_row(self, row: int) -> None:
        if row < 0:
            return
        key = WORKSPACES[row].key
        self.page(key)
        self.stack.setCurrentIndex(row)
        self.workspace_changed.emit(key)

    def _fill_workspace_menu(self) -> None:
        self.workspace_menu.clear()
        page = self.page(self.current_workspace())
        actions = page.menu_actions() if hasattr(page, "menu_actions") else []
        if not actions:
            none = self.workspace_menu.addAction("(no actions)")
            none.setEnabled(False)
        for action in actions:
            self.workspace_menu.addAction(action)

    # ----- services for pages -----------------------------------------------------------
    def show_status(self, message: str, timeout_ms: int = 5000) -> None:
        self.statusBar().showMessage(message, timeout_ms)

    def show_error(self, title: str, message: str) -> None:
        self._errors_shown = getattr(self, "_errors_shown", 0) + 1
        # a user's mistake is a warning in the log (the traceback of an internal error is logged
        # where it was caught); the dialog says it in plain words
        log.warning("%s: %s", dialog_title(title), plain_message(message))
        box = show_error_dialog(self, title, message)
        self.error_dialogs = [b for b in self.error_dialogs if b.isVisible()] + [box]

    def _report_unhandled_failure(self, handle) -> None:
        """A failed job whose submitter gave no ``on_error`` gets an error dialog here."""
        if handle.state == "failed" and not handle.error_handled:
            self.show_error(f"Job failed: {handle.name}", handle.error or "unknown error")

    def add_recent_file(self, path: str) -> None:
        app_settings.add_recent_file(self.settings, path)

    # ----- files ------------------------------------------------------------------------
    def open_file(self, path: str, prefer: str | None = None) -> bool:
        """Give ``path`` to the workspace that takes it (``prefer`` first, then the current);
        a saved session (``--open``, File > Recent, drag-and-drop, any Open dialog) reopens as one."""
        if not Path(path).exists():
            app_settings.remove_recent_file(self.settings, path)
            self.show_error("Cannot open file", f"{path}: file not found (it was moved or deleted); "
                                                "removed from File > Open Recent.")
            return False
        if is_session_file(path):
            return self.open_session(path)
        order = [k for k in (prefer, self.current_workspace()) if k] + self.workspace_keys()
        seen = set()
        for key in order:
            if key in seen:
                continue
            seen.add(key)
            page = self.page(key)
            if hasattr(page, "open_file") and self._accepts(page, path):
                errors_before = self._errors_shown
                if page.open_file(path):
                    self.show_workspace(key)
                    self.add_recent_file(path)
                    return True
                if self._errors_shown > errors_before:
                    return False  # the workspace took the file and said what is wrong with it
        self.show_error(
            "Cannot open file",
            f"{path}: no workspace opens files of this kind (robots: .urdf; "
            "logs: .csv, .tsv, .npz, .parquet, bags; models and eigenmodes: their "
            ".json; car plans and tracks; sessions: .lagrange.json).",
        )
        return False

    @staticmethod
    def _accepts(page, path: str) -> bool:
        import fnmatch
        import re

        filters = page.file_filters() if hasattr(page, "file_filters") else []
        if not filters:
            return True
        name = Path(path).name.lower()
        for flt in filters:
            for pattern in re.findall(r"\*[^\s)]*", flt):
                if fnmatch.fnmatch(name, pattern.lower()):
                    return True
        return False

    def _open_dialog(self, key: str, title: str, kind: str = "") -> None:
        """The first time in the shipped examples' folder (urdf/, resources/logs/), then where the
        last file of this kind was opened."""
        page = self.page(key)
        filters = page.file_filters() if hasattr(page, "file_filters") else []
        kind = kind or key
        path = open_file_name(self, title, ";;".join(filters + ["All files (*)"]), self.settings, kind,
                              example_folder(kind, self.settings))
        if path:
            self.open_file(path, prefer=key)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = app_settings.recent_files(self.settings)
        if not files:
            empty = self.recent_menu.addAction("(none)")
            empty.setEnabled(False)
        for path in files:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda checked=False, p=path: self.open_file(p))

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt API
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_file(url.toLocalFile())
        event.acceptProposedAction()

    # ----- sessions ---------------------------------------------------------------------
    def session_state(self) -> dict:
        pages = {}
        for key, page in self.pages.items():
            if hasattr(page, "session_state"):
                try:
                    pages[key] = page.session_state()
                except Exception:  # noqa: BLE001
                    log.exception("workspace %s could not save its state", key)
        return {"format": "lagrange-studio-session", "version": SESSION_VERSION,
                "workspace": self.current_workspace(), "pages": pages}

    def save_session(self, path: str) -> None:
        atomic_write_text(path, json.dumps(self.session_state(), indent=2) + "\n")
        self.add_recent_file(path)
        self.show_status(f"Session saved to {path}")

    def open_session(self, path: str) -> bool:
        """Restore a saved session; each workspace's part is restored on its own, and a damaged
        part is named in one message while the rest is restored."""
        try:
            state = read_session(path)
        except ValueError as exc:
            self.show_error("Cannot open session", str(exc))
            return False
        titles = {spec.key: spec.title for spec in WORKSPACES}
        damaged = []
        pages = state.get("pages") or {}
        if not isinstance(pages, dict):
            damaged.append("the list of workspaces ('pages' is not an object)")
            pages = {}
        for key, page_state in pages.items():
            if key not in titles:
                damaged.append(f"an unknown workspace {key!r}")
                continue
            page = self.page(key)
            if not hasattr(page, "restore_session_state"):
                continue
            if not isinstance(page_state, dict):
                damaged.append(f"the {titles[key]} workspace (its part is not an object)")
                continue
            try:
                page.restore_session_state(page_state)
            except Exception as exc:  # noqa: BLE001 - one damaged part must not stop the others
                log.warning("session %s: workspace %s:\n%s", path, key, traceback.format_exc())
                damaged.append(f"the {titles[key]} workspace ({exc})")
        if state.get("workspace") in self.workspace_keys():
            self.show_workspace(state["workspace"])
        self.add_recent_file(path)
        if damaged:
            self.show_error("Session partly restored",
                            f"{path}: could not restore " + "; ".join(damaged) + ". The rest was restored.")
        else:
            self.show_status(f"Session restored from {path}")
        return True

    def _save_session_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save session", "session.lagrange.json", SESSION_FILTER)
        if path:
            self.save_session(path)

    def _open_session_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", "", SESSION_FILTER)
        if path:
            self.open_session(path)

    # ----- export and help --------------------------------------------------------------
    def screenshot(self, path: str, widget: QWidget | None = None) -> bool:
        image = (widget or self).grab()
        ok = image.save(path, "PNG")
        log.info("screenshot %s: %s", "written" if ok else "FAILED", path)
        return ok

    def _export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export screenshot", "lagrange.png", "PNG image (*.png)")
        if path:
            if not self.screenshot(path, self.stack.currentWidget()):
                self.show_error("Export failed", f"{path}: could not write the image")

    def shortcut_table(self) -> list[tuple[str, str]]:
        """(action, keys) for every action with a shortcut, once each: the workspaces' Undo and
        Redo, whose text names the step ("Undo Load parallel-parking"), are listed as "Undo"."""
        rows = set()
        for action in self.findChildren(QAction):
            if not action.shortcut().isEmpty() and action.text():
                name = action.text().replace("&", "")
                for plain in ("Undo", "Redo"):
                    if name.startswith(plain + " "):
                        name = plain
                rows.add((name, action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)))
        return sorted(rows, key=lambda r: r[0])

    def show_shortcuts(self) -> QDialog:
        dialog = QDialog(self)
        dialog.setWindowTitle("Keyboard shortcuts")
        dialog.setObjectName("shortcutsDialog")
        rows = self.shortcut_table()
        table = QTableWidget(len(rows), 2)
        table.setHorizontalHeaderLabels(["Action", "Shortcut"])
        for r, (name, key) in enumerate(rows):
            table.setItem(r, 0, QTableWidgetItem(name))
            table.setItem(r, 1, QTableWidgetItem(key))
        table.resizeColumnsToContents()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dialog.reject)
        layout = QVBoxLayout(dialog)
        layout.addWidget(table)
        layout.addWidget(buttons)
        dialog.resize(420, 480)
        dialog.open()
        return dialog

    def show_about(self) -> None:
        import torch

        QMessageBox.about(
            self,
            "About Lagrange Studio",
            f"<b>Lagrange Studio</b> {__version__}<br>Model, learn and control mechanical "
            f"systems.<br><br>torch {torch.__version__}, Qt {QApplication.instance().applicationVersion() or ''}",
        )

    def _toggle_full_screen(self) -> None:
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    # ----- settings and shutdown --------------------------------------------------------
    def _restore_settings(self) -> None:
        geometry = self.settings.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        state = self.settings.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        else:  # first start: a short log console under the workspace
            QTimer.singleShot(0, lambda: self.resizeDocks([self.log_console], [130], Qt.Orientation.Vertical))
        start = self.options.get("workspace") or self.settings.value("window/workspace", "robot")
        if start not in self.workspace_keys():
            start = "robot"
        # build the first page after the window is up, so the window appears at once
        QTimer.singleShot(0, lambda: self.show_workspace(start))
        self.sidebar.blockSignals(True)
        self.sidebar.setCurrentRow(self.workspace_keys().index(start))
        self.sidebar.blockSignals(False)

    def save_settings(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.setValue("window/workspace", self.current_workspace())
        self.settings.sync()

    def unsaved_work(self) -> dict[str, list[str]]:
        """Workspace key -> the lines of work a quit would lose there (each page's ``unsaved_work``)."""
        out = {}
        for key, page in self.pages.items():
            try:
                lines = page.unsaved_work() if hasattr(page, "unsaved_work") else []
            except Exception:  # noqa: BLE001 - a broken query must not block quitting
                log.exception("workspace %s: what is unsaved could not be read", key)
                lines = []
            if lines:
                out[key] = list(lines)
        return out

    def _confirm_quit(self) -> bool:
        """Ask Save / Discard / Cancel when a quit would lose work; True when the window may close."""
        unsaved = self.unsaved_work() if self.ask_before_quit else {}
        if not unsaved:
            return True
        answer = ask_unsaved(self, [line for lines in unsaved.values() for line in lines])
        if answer == "discard":
            return True
        if answer != "save":
            return False
        for key in unsaved:
            page = self.pages[key]
            try:
                if hasattr(page, "save_unsaved_work") and not page.save_unsaved_work():
                    return False
            except (OSError, ValueError, KeyError) as exc:
                self.show_error("Save before quitting", f"{exc}. Nothing was closed.")
                return False
        return True

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        if not self._confirm_quit():
            event.ignore()
            self.show_status("Quit cancelled: your work is still here.")
            return
        self.save_settings()
        for page in self.pages.values():
            if hasattr(page, "shutdown"):
                try:
                    page.shutdown()
                except Exception:  # noqa: BLE001
                    log.exception("workspace shutdown failed")
        self.jobs.cancel_all()
        self.jobs.wait_for_done(3000)
        super().closeEvent(event)
