"""Help > Getting started (the three things people come for, one click each), Help > User Guide
(the shipped guide rendered in the app) and the keyboard shortcuts dialog (every shortcut at
once, no scrolling, on a 1366 x 768 screen).

:func:`install_help` adds both to a main window's Help menu; the guided examples drive the
workspaces through their public methods only (``load_robot``, ``targets.add_target``,
``optimise``, ``open_file``...), as a script would.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCommandLinkButton,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGridLayout,
    QLabel,
    QMenu,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)

__all__ = ["GUIDED_EXAMPLES", "GettingStartedDialog", "ShortcutsDialog", "UserGuideDialog", "install_help",
           "open_user_guide", "run_example"]

EXAMPLE_ROBOT = "panda"
EXAMPLE_SCENARIO = "parallel-parking"
# the end effector's target: this far from where it is (metres, in the base frame)
TARGET_OFFSET = (0.10, 0.15, -0.10)


# ----------------------------------------------------------------------------- the three examples


def reach_targets(window) -> str:
    """Robot: the Panda's hand gets a target a few centimetres away, and IK reaches it."""
    page = window.show_workspace("robot")

    def place_and_solve(*_args):
        robot = getattr(page, "robot", None)
        link = page.targets.end_effector
        if robot is None or not link:
            return
        pose = np.array(page.link_pose(link), dtype=float)
        pose[:3, 3] += np.asarray(TARGET_OFFSET)
        page.targets.add_target(link, pose)
        page.optimise()

    robot = getattr(page, "robot", None)
    if robot is not None and page.targets.end_effector:
        place_and_solve()
        return f"Robot: a target for {page.targets.end_effector} is placed; Optimise moves the arm to it."

    def once(*args):
        page.robot_loaded.disconnect(once)
        place_and_solve(*args)

    page.robot_loaded.connect(once)
    if any(h.name.startswith("load robot") for h in window.jobs.active_jobs()):
        return "Robot: once the robot has loaded, a target is placed and reached by inverse kinematics."
    page.load_robot(EXAMPLE_ROBOT)
    return f"Robot: loading {EXAMPLE_ROBOT}, then a target is placed and reached by inverse kinematics."


def plan_car_manoeuvre(window) -> str:
    """Car planner: a shipped scenario (parallel parking), then Optimise."""
    page = window.show_workspace("car")
    page.state.load_scenario(EXAMPLE_SCENARIO)  # the scenario's targets; the page follows its state
    job = page.optimise()
    said = f"Car planner: the {EXAMPLE_SCENARIO} scenario is loaded and its trajectory is being optimised."
    if job is not None:               # the message goes when its cause does: the optimisation's end
        def clear(*_):
            if window.statusBar().currentMessage() == said:
                window.statusBar().clearMessage()
        job.ended.connect(clear)
    return said


def compare_models_on_a_log(window) -> str:
    """Model lab: its one-click example (the shipped pendulum log, two small models trained on it)."""
    page = window.show_workspace("model_lab")
    page.run_example()
    return "Model lab: the example log is loading and two models train on it."


GUIDED_EXAMPLES = [
    ("robot", "Reach targets with a robot",
     "Load the Panda arm, place a target for its hand and let inverse kinematics reach it. "
     "Then drag the target in the 3D view, add more, or switch on Follow.", reach_targets),
    ("car", "Plan a car manoeuvre",
     "Load the parallel-parking scenario and optimise the RC car's trajectory through its "
     "targets; Play runs it on the simulator.", plan_car_manoeuvre),
    ("model_lab", "Compare models on a log",
     "Open a pendulum log recorded with friction, train learned models on it and compare "
     "their predictions with what was measured. For a robot with friction and motor inertia, open "
     "resources/logs/panda_friction.csv (Panda, simulated by MuJoCo; robot: panda) in the hardware-log "
     "tab.", compare_models_on_a_log),
]


def run_example(window, key: str) -> str:
    """Start the guided example ``key`` (robot, car, model_lab); returns what it did."""
    for example_key, _title, _text, start in GUIDED_EXAMPLES:
        if example_key == key:
            try:
                said = start(window)
            except Exception as exc:  # noqa: BLE001 - an example must never take the app down
                log.exception("guided example %s failed", key)
                window.show_error("Getting started", f"the example could not start: {exc}")
                return ""
            window.show_status(said, 15000)
            log.info("%s", said)
            return said
    raise KeyError(key)


class GettingStartedDialog(QDialog):
    """Three buttons, one per guided example; a click closes the dialog and starts it."""

    def __init__(self, window, parent: QWidget | None = None):
        super().__init__(parent or window)
        self.setWindowTitle("Getting started")
        self.setObjectName("gettingStartedDialog")
        self.window_ = window
        layout = QVBoxLayout(self)
        intro = QLabel("Lagrange Studio models, learns and controls mechanical systems. "
                       "Pick one of these to see it work (one click each):")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.buttons: dict[str, QCommandLinkButton] = {}
        for key, title, text, _start in GUIDED_EXAMPLES:
            button = QCommandLinkButton(title, text)
            button.setObjectName(f"example_{key}")
            button.clicked.connect(lambda checked=False, k=key: self._start(k))
            self.buttons[key] = button
            layout.addWidget(button)
        more = QLabel("Also: the Eigenmode designer (Ctrl+3) learns an efficient oscillation of a double "
                      "pendulum. Help > User Guide explains every workspace; Help > Keyboard Shortcuts "
                      "lists every shortcut.")
        more.setWordWrap(True)
        layout.addWidget(more)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.guide_button = close.addButton("User Guide…", QDialogButtonBox.ButtonRole.HelpRole)
        self.guide_button.setObjectName("openUserGuide")
        self.guide_button.clicked.connect(lambda: (self.accept(), open_user_guide(self.window_)))
        close.rejected.connect(self.reject)
        layout.addWidget(close)
        self.resize(560, self.sizeHint().height())

    def _start(self, key: str) -> None:
        self.accept()
        run_example(self.window_, key)


# ----------------------------------------------------------------------------- the user guide


class UserGuideDialog(QDialog):
    """The user guide (docs/user-guide.md, shipped with the app) rendered in a window: headings,
    lists and its pictures; links to the web open in the browser."""

    def __init__(self, path: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Lagrange Studio user guide")
        self.setObjectName("userGuideDialog")
        self.path = path
        self.browser = QTextBrowser()
        self.browser.setObjectName("userGuideText")
        self.browser.setOpenExternalLinks(True)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            text = (f"# The user guide is missing\n\n`{path}` could not be read ({exc.strerror or exc}). "
                    "Reinstall Lagrange Studio to restore it.")
        self.browser.setSearchPaths([str(path.parent)])        # its images/ resolve beside it
        self.browser.setMarkdown(text)
        self._fit_pictures(path.parent, 820)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        layout.addWidget(buttons)
        screen = self.screen().availableGeometry() if self.screen() else None
        width, height = 900, 700
        if screen is not None:           # fits a 1366 x 768 laptop with room for the title bar
            width, height = min(width, screen.width() - 80), min(height, screen.height() - 100)
        self.resize(width, height)


    def _fit_pictures(self, folder: Path, max_width: int) -> None:
        """Pictures wider than ``max_width`` pixels are drawn at that width (no sideways scrolling)."""
        from PySide6.QtGui import QImageReader, QTextCursor

        block = self.browser.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                fmt = fragment.charFormat()
                if fmt.isImageFormat():
                    image = fmt.toImageFormat()
                    size = QImageReader(str(folder / image.name())).size()
                    if size.isValid() and size.width() > max_width:
                        image.setWidth(max_width)
                        image.setHeight(size.height() * max_width / size.width())
                        cursor = QTextCursor(self.browser.document())
                        cursor.setPosition(fragment.position())
                        cursor.setPosition(
                            fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor
                        )
                        cursor.setCharFormat(image)
                it += 1
            block = block.next()


def open_user_guide(window) -> UserGuideDialog:
    from engine.paths import user_guide

    dialog = UserGuideDialog(user_guide(), window)
    window.user_guide_dialog = dialog
    dialog.open()
    return dialog


# ----------------------------------------------------------------------------- shortcuts


# the 3D views' mouse (app/viewer/scene.py and gizmo.py) and the keys of the views that are no
# menu action (the view's arrow keys, the log replay's QShortcuts), listed after the actions
MOUSE_CONTROLS = (
    ("Orbit the 3D view", "Left drag"),
    ("Pan the 3D view", "Middle drag or Ctrl+Left drag"),
    ("Zoom the 3D view", "Wheel"),
    ("Make a link the end effector", "Click the link"),
    ("Move a target in the view plane", "Drag its centre dot"),
    ("Move a target along an axis", "Drag an arrow"),
    ("Turn a target about an axis", "Drag a ring"),
    ("Orbit the 3D view (keys)", "Arrow keys"),
    ("Play / pause a robot log", "Space"),
    ("Step a robot log by a sample", ". and ,"),
)


class ShortcutsDialog(QDialog):
    """Every shortcut in a grid of (action, keys) columns, as many as it takes to need no scrolling,
    then the mouse controls of the 3D views (``mouse``: (what, how) rows)."""

    ROWS_PER_COLUMN = 16

    def __init__(self, rows: list[tuple[str, str]], parent: QWidget | None = None,
                 mouse: tuple[tuple[str, str], ...] = MOUSE_CONTROLS):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("shortcutsDialog")
        self.rows = list(rows)
        self.mouse_rows = list(mouse)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Keyboard</b>"))
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(2)
        columns = max(1, math.ceil(len(self.rows) / self.ROWS_PER_COLUMN))
        per_column = max(1, math.ceil(len(self.rows) / columns))
        for i, (name, keys) in enumerate(self.rows):
            column, row = divmod(i, per_column)
            label = QLabel(name)
            key = QLabel(f"<b>{keys}</b>")
            key.setTextFormat(Qt.TextFormat.RichText)
            grid.addWidget(label, row, 3 * column)
            grid.addWidget(key, row, 3 * column + 1)
            if column:  # a thin rule between columns
                rule = QFrame()
                rule.setFrameShape(QFrame.Shape.VLine)
                grid.addWidget(rule, 0, 3 * column - 1, per_column, 1)
        layout.addLayout(grid)
        if self.mouse_rows:
            layout.addWidget(QLabel("<b>Mouse and keys in the views</b>"))
            mouse_grid = QGridLayout()
            mouse_grid.setHorizontalSpacing(10)
            mouse_grid.setVerticalSpacing(2)
            half = math.ceil(len(self.mouse_rows) / 2)       # two columns: the dialog stays short
            for i, (what, how) in enumerate(self.mouse_rows):
                column, row = divmod(i, half)
                mouse_grid.addWidget(QLabel(what), row, 2 * column)
                mouse_grid.addWidget(QLabel(f"<b>{how}</b>"), row, 2 * column + 1)
            layout.addLayout(mouse_grid)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.adjustSize()


def show_shortcuts(window) -> ShortcutsDialog:
    dialog = ShortcutsDialog(window.shortcut_table(), window)
    dialog.open()
    return dialog


def _help_menu(window) -> QMenu | None:
    for action in window.menuBar().actions():
        if action.text().replace("&", "") == "Help" and action.menu() is not None:
            return action.menu()
    return None


def install_help(window) -> None:
    """Add Help > Getting started (first entry, F1) and let Help > Keyboard Shortcuts open
    the dialog that fits a laptop screen."""
    menu = _help_menu(window) or window.menuBar().addMenu("&Help")
    action = QAction("&Getting Started…", window)
    action.setObjectName("gettingStartedAction")
    action.setShortcut(QKeySequence(QKeySequence.StandardKey.HelpContents))
    action.triggered.connect(lambda checked=False: open_getting_started(window))
    first = menu.actions()[0] if menu.actions() else None
    menu.insertAction(first, action)
    window.getting_started_action = action
    guide = QAction("&User Guide", window)
    guide.setObjectName("userGuideAction")
    guide.triggered.connect(lambda checked=False: open_user_guide(window))
    menu.insertAction(first, guide)
    window.user_guide_action = guide
    for existing in menu.actions():
        if existing.text().replace("&", "") == "Keyboard Shortcuts":
            existing.triggered.disconnect()
            existing.triggered.connect(lambda checked=False: show_shortcuts(window))


def open_getting_started(window) -> GettingStartedDialog:
    dialog = GettingStartedDialog(window)
    window.getting_started_dialog = dialog
    dialog.open()
    return dialog
