from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication


@pytest.fixture(autouse=True)
def _garbage_collected_on_the_gui_thread(qapp):
    """As in the app (app/gc_policy.py): no collection in a job's worker thread, where freeing an
    earlier test's Qt objects can deadlock with the GUI thread."""
    from app.gc_policy import MainThreadGarbageCollector

    collector = MainThreadGarbageCollector(interval_s=0.2)
    yield
    collector.stop()


@pytest.fixture(autouse=True)
def _quit_without_asking_and_own_runs_folder(monkeypatch, tmp_path_factory):
    """Windows closed at teardown discard unsaved work (the quit prompt's tests answer it
    themselves), and each test's Model lab lists only the runs that test made."""
    import app.main_window
    import app.workspaces.model_lab.page as lab_page

    monkeypatch.setattr(app.main_window, "ask_unsaved", lambda parent, lines: "discard")
    folder = tmp_path_factory.mktemp("runs") / "model_lab"
    monkeypatch.setattr(lab_page, "lab_folder", lambda: folder)


@pytest.fixture
def settings_path(tmp_path):
    return str(tmp_path / "settings.ini")


@pytest.fixture
def make_window(qtbot, settings_path):
    """Build (and show) main windows bound to one settings file; closed at teardown."""
    from app.main import create_main_window

    windows = []

    def make(options: dict | None = None, path: str | None = None):
        settings = QSettings(path or settings_path, QSettings.Format.IniFormat)
        window = create_main_window(options or {}, settings=settings)
        qtbot.addWidget(window)
        with qtbot.waitExposed(window):
            window.show()
        window.activateWindow()
        # keyboard shortcuts need the active window
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.exception_hook.uninstall()
        window.jobs.cancel_all()
        window.jobs.wait_for_done(5000)


@pytest.fixture
def ctx(tmp_path, qtbot):
    """An AppContext for a workspace page on its own; errors shown land in ``ctx.errors``."""
    from app.context import AppContext
    from app.jobs import JobRunner

    errors: list[tuple[str, str]] = []
    runner = JobRunner()
    context = AppContext(jobs=runner, settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
                         show_error=lambda title, message: errors.append((title, message)))
    context.errors = errors
    yield context
    runner.cancel_all()
    runner.wait_for_done(10000)


@pytest.fixture
def car_page(qtbot, ctx, tmp_path):
    """The Car planner page on its own, shown and active (keyboard shortcuts need that), with
    its trained models kept in ``tmp_path/models``; shut down (jobs stopped) at teardown."""
    from app.workspaces.car.page import CarPlannerPage

    ctx.settings.setValue("car/models_dir", str(tmp_path / "models"))
    page = CarPlannerPage(ctx)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    with qtbot.waitExposed(page):
        page.show()
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    yield page
    page.shutdown()
