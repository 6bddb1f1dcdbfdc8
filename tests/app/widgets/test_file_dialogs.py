"""Open dialogs start where the files are (the shipped examples' folders the first time, then the
last folder used, per kind of file, kept in QSettings), and the main window's first size fits
the screen it opens on."""

from __future__ import annotations

import shutil

from PySide6.QtCore import QRect, QSettings
from PySide6.QtGui import QScreen

from engine.paths import resources_dir, urdf_dir


def _fake_dialog(monkeypatch, answers):
    """Replace the open dialog: record the folder it starts in, answer the next path."""
    import app.widgets.file_dialogs as fd

    asked = []

    def get_open_file_name(parent, title, folder, filters):
        asked.append(folder)
        return answers.pop(0), filters
    monkeypatch.setattr(fd.QFileDialog, "getOpenFileName", staticmethod(get_open_file_name))
    return asked


def test_open_dialogs_start_in_the_examples_then_where_the_last_file_was(monkeypatch, tmp_path):
    from app.widgets.file_dialogs import example_folder, open_file_name

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    assert example_folder("robot") == urdf_dir()
    assert example_folder("log") == resources_dir() / "logs"
    (tmp_path / "mine").mkdir()
    asked = _fake_dialog(monkeypatch, [str(tmp_path / "mine" / "run.csv"), "", ""])
    assert open_file_name(None, "Open log", "*.csv", settings, "log", example_folder("log")) \
        == str(tmp_path / "mine" / "run.csv")
    assert open_file_name(None, "Open log", "*.csv", settings, "log", example_folder("log")) == ""
    # robots have their own folder: still the shipped one
    assert open_file_name(None, "Open robot", "*.urdf", settings, "robot", example_folder("robot")) == ""
    assert asked == [str(resources_dir() / "logs"), str(tmp_path / "mine"), str(urdf_dir())]
    # a remembered folder that is gone: the examples again
    shutil.rmtree(tmp_path / "mine")
    asked = _fake_dialog(monkeypatch, [""])
    open_file_name(None, "Open log", "*.csv", settings, "log", example_folder("log"))
    assert asked == [str(resources_dir() / "logs")]


def test_file_open_urdf_starts_in_urdf_then_remembers(make_window, qtbot, monkeypatch, tmp_path):
    window = make_window()
    folder = tmp_path / "robots"
    folder.mkdir()
    copy = folder / "my_acrobot.urdf"
    shutil.copy(urdf_dir() / "acrobot.urdf", copy)
    asked = _fake_dialog(monkeypatch, [str(copy), ""])
    window._open_dialog("robot", "Open URDF", "robot")
    page = window.page("robot")
    qtbot.waitUntil(lambda: page.robot is not None and page.robot.path is not None
                    and str(page.robot.path).endswith("my_acrobot.urdf"), timeout=90_000)
    window._open_dialog("robot", "Open URDF", "robot")
    assert asked == [str(urdf_dir()), str(folder)]
    # the page's own "Open robot…" button shares the remembered folder
    asked = _fake_dialog(monkeypatch, [""])
    page.open_button.click()
    assert asked == [str(folder)]


def test_the_first_window_fits_a_small_screen(make_window, monkeypatch):
    monkeypatch.setattr(QScreen, "availableGeometry", lambda self: QRect(0, 0, 1366, 740))
    window = make_window()
    assert window.width() <= 1366 and window.height() <= 740
    monkeypatch.undo()
    big = make_window(path=None)
    assert big.screen().availableGeometry().width() >= 1400          # pytest-xvfb's 1600 x 1000 screen
    assert (big.width(), big.height()) == (1400, 900)
