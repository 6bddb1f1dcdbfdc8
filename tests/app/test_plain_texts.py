"""What the app says matches what it has (issue 32, item 9): plain titles instead of class names,
the menu item the Model lab names, the user guide inside the app (shipped with it), the example
logs' folder in ``logs replay --help``, and the robot picker showing whole names on a wide screen."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QDialog, QLabel, QToolBox

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

ROOT = Path(__file__).resolve().parents[2]


def _menu_texts(window, menu_title: str) -> list[str]:
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    return [a.text().replace("&", "") for a in menus[menu_title].actions() if not a.isSeparator()]


def test_model_lab_titles_are_plain_and_name_the_real_menu_item(make_window):
    window = make_window({"workspace": "model_lab"})
    page = window.show_workspace("model_lab")
    titles = [box.itemText(i) for box in page.runs_panel.findChildren(QToolBox) for i in range(box.count())]
    assert "Training" in titles and "Model" in titles
    assert not [t for t in titles if re.search(r"Config|Spec|\(", t)], titles
    from app.workspaces.model_lab.empty_state import STEPS

    said = " ".join(STEPS).replace("&gt;", ">")
    named = re.findall(r"File > ([^(]+?) \(", said)
    assert named and all(n in _menu_texts(window, "File") for n in named), (
        named,
        _menu_texts(window, "File"),
    )


def test_the_user_guide_opens_inside_the_app_with_its_pictures(make_window, qtbot):
    from engine.paths import user_guide

    window = make_window()
    assert "User Guide" in _menu_texts(window, "Help")
    window.getting_started_action.trigger()
    qtbot.waitUntil(lambda: window.findChild(QDialog, "gettingStartedDialog") is not None)
    getting_started = window.getting_started_dialog
    texts = " ".join(label.text() for label in getting_started.findChildren(QLabel))
    assert "docs/" not in texts and "user-guide.md" not in texts     # no repository path
    getting_started.guide_button.click()
    qtbot.waitUntil(lambda: getattr(window, "user_guide_dialog", None) is not None)
    dialog = window.user_guide_dialog
    qtbot.waitUntil(dialog.isVisible)
    assert not getting_started.isVisible()
    text = dialog.browser.toPlainText()
    guide = user_guide().read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", guide, flags=re.M)
    assert headings and all(h in text for h in headings)            # rendered, not shown as source
    assert "## " not in text
    image = dialog.browser.document().resource(
        QTextDocument.ResourceType.ImageResource, "images/model_lab.png"
    )
    assert image is not None and not image.isNull()                 # its pictures resolve beside it
    screen = dialog.screen().availableGeometry()
    assert dialog.width() <= min(900, screen.width() - 80) and dialog.height() <= min(
        700, screen.height() - 100
    )


def test_the_guide_ships_with_the_app():
    from engine.paths import data_root, user_guide

    assert user_guide() == data_root() / "docs" / "user-guide.md" and user_guide().is_file()
    spec = (ROOT / "build_scripts" / "lagrange_studio.spec").read_text(encoding="utf-8")
    assert '"user-guide.md"), "docs")' in spec and '"images"), "docs/images")' in spec
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"share/lagrange-studio/docs" = ["docs/user-guide.md"]' in pyproject
    for picture in re.findall(r"\]\((images/[^)]+)\)", user_guide().read_text(encoding="utf-8")):
        assert (user_guide().parent / picture).is_file(), picture


def test_logs_replay_help_says_where_the_example_logs_are():
    from engine.cli import main
    from engine.paths import resources_dir

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["logs", "replay", "--help"])
    folder = resources_dir() / "logs"
    assert f"example logs (each with a README and a mapping): {folder}" in out.getvalue()
    example = re.search(r"e\.g\. python -m engine logs replay (\S+) --robot", out.getvalue()).group(1)
    assert Path(example).is_file() and Path(example).parent == folder


def test_the_robot_picker_shows_the_whole_name_on_a_wide_screen(make_window, qtbot):
    from tests.app.geometry import settle

    window = make_window()
    window.show_workspace("robot")
    page = window.page("robot")
    qtbot.waitUntil(lambda: page.robot is not None, timeout=90_000)
    window.resize(1920, 1050)
    settle()
    name = page.picker.currentText()
    assert page.picker.width() >= page.picker.fontMetrics().horizontalAdvance(name) + 24
    label = page.status_label
    assert label.width() >= label.fontMetrics().horizontalAdvance(label.full_text())
    window.resize(1366, 740)
    settle()
    assert window.width() == 1366 and page.picker.width() >= 260
