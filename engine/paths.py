"""Where the shipped data lives: ``resources/``, ``urdf/`` and the user guide in ``docs/``.

Looked up, in order: ``$LAGRANGE_DATA_DIR``; the PyInstaller bundle (``sys._MEIPASS``);
the source checkout (the folder above this package, also used by editable installs);
``<sys.prefix>/share/lagrange-studio`` (a wheel install).
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

__all__ = ["data_root", "resources_dir", "urdf_dir", "resource", "user_guide", "user_runs_dir"]


def _candidates():
    env = os.environ.get("LAGRANGE_DATA_DIR")
    if env:
        yield Path(env)
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass:
        yield Path(meipass)
    yield Path(__file__).resolve().parent.parent
    yield Path(sys.prefix) / "share" / "lagrange-studio"


@cache
def data_root() -> Path:
    """The folder that holds ``resources/`` and ``urdf/``."""
    for root in _candidates():
        if (root / "urdf").is_dir() and (root / "resources").is_dir():
            return root
    raise FileNotFoundError(
        "cannot find Lagrange Studio's data folders (resources/, urdf/); set LAGRANGE_DATA_DIR")


def resources_dir() -> Path:
    return data_root() / "resources"


def urdf_dir() -> Path:
    return data_root() / "urdf"


def user_guide() -> Path:
    """The user guide (``docs/user-guide.md``, its pictures in ``docs/images``), shipped beside
    ``resources/`` in every install (the PyInstaller spec's datas, the wheel's data files)."""
    return data_root() / "docs" / "user-guide.md"


def resource(*parts: str) -> Path:
    """Path of a file under ``resources/``."""
    return resources_dir().joinpath(*parts)


def user_runs_dir(kind: str) -> Path:
    """Where the app keeps the run folders of ``kind`` ("eigenmode", ...) that the user did not
    place: ``$LAGRANGE_RUNS_DIR/<kind>`` when set, else the user's data folder (platformdirs)."""
    root = os.environ.get("LAGRANGE_RUNS_DIR")
    if not root:
        import platformdirs

        root = str(Path(platformdirs.user_data_dir("lagrange-studio", "Lagrange Studio")) / "runs")
    return Path(root) / kind
