"""Regenerate the user guide's screenshots (docs/images/*.png, 1366 x 768):

    xvfb-run -a -s "-screen 0 1366x768x24" python docs/make_screenshots.py [--robots-only]

Each workspace is shown in a window of a laptop screen's size; the Robot, Car planner and
Model lab start their guided example (Help > Getting started) first, so the pictures show
them at work. Then the robots as published (``--robots-only``: these alone): a quadruped
standing with its support polygon, a humanoid reaching with a hand while its feet stay
(whole-body IK), a gripper with coupled mimic fingers open and closed.
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


def robot_pictures(window, settle, idle, shoot) -> None:
    """robot-quadruped, robot-humanoid-reach, robot-gripper-open / -closed (see the docstring)."""
    import numpy as np
    from pyqtgraph import Vector

    page = window.show_workspace("robot")

    def load(name: str) -> None:
        loaded = []
        page.robot_loaded.connect(lambda *_: loaded.append(1))
        page.load_robot(name)
        settle(180, lambda: bool(loaded))
        settle(60, idle)
        settle(1.5)

    load("go2")
    shoot("robot-quadruped")

    load("talos")
    state = page.state
    hand = "wrist_right_ft_tool_link"
    page.targets.set_end_effector(hand)
    goal = state.link_pose(hand).copy()
    goal[:3, 3] += [0.18, -0.05, 0.12]              # forward and up: the arm rises, the feet stay
    page.targets.add_target(hand, goal, position_only=True)     # the feet are held, the base free (defaults)
    page.optimise()
    settle(60, lambda: idle() and not page.animating)
    settle(1.5)
    shoot("robot-humanoid-reach")

    load("panda-erd")
    finger = page.robot.model.joint_names.index("panda_finger_joint1")
    view = page.view
    page.tabs.setCurrentIndex(0)  # the Joints tab: one slider for both fingers
    for name, value in (
        ("robot-gripper-open", state.upper[finger]),
        ("robot-gripper-closed", state.lower[finger]),
    ):
        q = np.array(page.q, float)
        q[finger] = value
        page.set_q(q.tolist())
        settle(0.5)
        tcp = state.link_pose("panda_hand")[:3, 3]
        view.setCameraPosition(pos=Vector(*tcp), distance=0.55, elevation=15, azimuth=60)
        view._auto_fit = False                          # the close-up stays (no refit on resize)
        settle(1.0)
        shoot(name)
    page.tabs.setCurrentIndex(1)


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
    if "--robots-only" in sys.argv[1:]:
        robot_pictures(window, settle, idle, shoot)
        window.close()
        return 0
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

    robot_pictures(window, settle, idle, shoot)

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
