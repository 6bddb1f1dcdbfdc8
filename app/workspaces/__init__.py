"""The four workspaces, in the order the main window shows them.

Each workspace is a package ``app/workspaces/<key>/`` whose ``page.py`` defines a
``QWidget`` subclass constructed as ``Page(ctx: AppContext, parent=None)``. A page may
also define (all optional):

- ``open_file(path: str) -> bool``: File menu and drag-and-drop; True when it took the file.
- ``file_filters() -> list[str]``: Qt name filters it accepts (e.g. "URDF (*.urdf)").
- ``session_state() -> dict`` / ``restore_session_state(state: dict)``: JSON-able state
  for File > Save / Open Session.
- ``menu_actions() -> list[QAction]``: put in the Workspace menu when the page is shown.
- ``shutdown()``: called before the window closes.

A workspace never imports another workspace.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkspaceSpec:
    key: str
    title: str
    module: str
    class_name: str
    shortcut: str
    description: str


WORKSPACES: tuple[WorkspaceSpec, ...] = (
    WorkspaceSpec("robot", "Robot", "app.workspaces.robot.page", "RobotPage", "Ctrl+1",
                  "3D URDF viewer, target poses optimised by IK, live dynamics"),
    WorkspaceSpec("model_lab", "Model lab", "app.workspaces.model_lab.page", "ModelLabPage", "Ctrl+2",
                  "train and compare learned dynamics models; load hardware logs"),
    WorkspaceSpec("eigenmode", "Eigenmode designer", "app.workspaces.eigenmode.page", "EigenmodePage",
                  "Ctrl+3", "learn an efficient oscillation of the double pendulum, then stabilise it"),
    WorkspaceSpec("car", "Car planner", "app.workspaces.car.page", "CarPlannerPage", "Ctrl+4",
                  "learn an RC car's dynamics, draw target poses, optimise trajectories, MPC"),
)
