"""Regenerate the user guide's screenshots (docs/images/*.png, 1366 x 768):

    xvfb-run -a -s "-screen 0 1366x768x24" python docs/make_screenshots.py

Each workspace is shown in a window of a laptop screen's size; the Robot, Car planner and
Model lab start their guided example (Help > Getting started) first, so the pictures show
them at work.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
IMAGES = ROOT / "docs" / "images"
SIZE = (1366, 768)


def main() -> int:
    os.environ.setdefault("LAGRANGE_SETTINGS_FILE", str(Path(tempfile.mkdtemp()) / "settings.ini"))
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.help import run_example
    from app.main import _make_application, create_main_window

    app = _make_application([sys.argv[0]])
    settings = QSettings(os.environ["LAGRANGE_SETTINGS_FILE"], QSettings.Format.IniFormat)
    window = create_main_window({}, settings=settings)
    window.resize(*SIZE)
    window.show()
    IMAGES.mkdir(parents=True, exist_ok=True)

    def settle(seconds: float, until=lambda: False) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            app.processEvents()
            time.sleep(0.02)

    def idle() -> bool:
        return not window.jobs.active_jobs()

    def shoot(name: str) -> None:
        window.resize(*SIZE)
        settle(0.8)
        image = window.grab().toImage()
        image.save(str(IMAGES / f"{name}.png"), "PNG")
        print(f"{IMAGES / (name + '.png')}: {image.width()} x {image.height()}")

    settle(2.0)
    settle(120, idle)                                  # the robot loads
    run_example(window, "robot")
    settle(60, idle)
    settle(2.0)
    shoot("robot")

    run_example(window, "model_lab")
    settle(90, lambda: any(h.name.startswith("train") for h in window.jobs.active_jobs()))
    settle(25)                                         # some epochs of the two models
    shoot("model_lab")
    window.jobs.cancel_all()
    settle(10, idle)

    window.show_workspace("eigenmode")
    settle(3.0)
    shoot("eigenmode")

    run_example(window, "car")
    settle(20)                                         # a few iterations of the optimiser
    shoot("car")
    window.jobs.cancel_all()
    settle(10, idle)

    from app.help import open_getting_started

    dialog = open_getting_started(window)
    settle(1.0)
    dialog.grab().toImage().save(str(IMAGES / "getting-started.png"), "PNG")
    dialog.close()
    window.close()
    QApplication.processEvents()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
