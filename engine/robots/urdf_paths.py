"""Where the files a URDF names are: ``package://``, ``file://``, absolute and relative names
resolved through the URDF's folder, ``ROS_PACKAGE_PATH``, ``AMENT_PREFIX_PATH`` and installed
description packages; and why a mesh file found there cannot be drawn. Part of
:func:`engine.robots.urdf.load_urdf`.
"""

from __future__ import annotations

import os
import site
import sys
from functools import lru_cache
from pathlib import Path


def _site_dirs() -> list[Path]:
    dirs = []
    try:
        dirs += [Path(p) for p in site.getsitepackages()]
    except AttributeError:  # some embedded interpreters
        pass
    dirs += [Path(p) for p in sys.path if p and p.endswith("site-packages")]
    seen, out = set(), []
    for d in dirs:
        if d not in seen and d.is_dir():
            seen.add(d)
            out.append(d)
    return out


@lru_cache(maxsize=1)
def description_package_roots() -> tuple[Path, ...]:
    """Folders that hold installed robot-description packages (searched by ``resolve_uri``)."""
    roots: list[Path] = []
    for d in _site_dirs():
        for sub in ("cmeel.prefix/share", "cmeel.prefix/share/example-robot-data/robots",
                    "pybullet_data", "diff_robot_data"):
            p = d / sub
            if p.is_dir():
                roots.append(p)
    for var in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):
        for entry in os.environ.get(var, "").split(os.pathsep):
            if entry and (Path(entry) / "share").is_dir():
                roots.append(Path(entry) / "share")
    return tuple(roots)


def _ros_package_path() -> list[Path]:
    return [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]


def _find_package(package: str, base_dir: Path | None) -> list[Path]:
    """Candidate folders for ``package``: base_dir's ancestors, ROS_PACKAGE_PATH, installed."""
    found: list[Path] = []
    if base_dir is not None:
        for anc in [base_dir, *base_dir.parents]:
            if anc.name == package:
                found.append(anc)
            if (anc / package).is_dir():
                found.append(anc / package)
    for entry in _ros_package_path():
        if entry.name == package:
            found.append(entry)
        if (entry / package).is_dir():
            found.append(entry / package)
        # one level of nesting, as catkin workspaces have (src/<repo>/<package>)
        if entry.is_dir():
            try:
                for child in entry.iterdir():
                    if (child / package).is_dir():
                        found.append(child / package)
            except OSError:
                pass
    for root in description_package_roots():
        if (root / package).is_dir():
            found.append(root / package)
    return found


def resolve_uri(uri: str, base_dir: str | Path | None = None) -> Path | None:
    """The file a URDF file name refers to, or None when it cannot be found.

    ``package://pkg/rest``: ``pkg`` is looked up as an ancestor folder of ``base_dir`` (or a
    sibling of one), in ``ROS_PACKAGE_PATH`` and in installed description packages; when
    no package folder holds ``rest``, ``rest`` is also tried relative to ``base_dir`` and
    its parents. ``file://`` and absolute paths are used as they are; relative paths are
    relative to ``base_dir`` (the URDF's folder).
    """
    if not uri:
        return None
    base = Path(base_dir).resolve() if base_dir is not None else None
    if uri.startswith("package://"):
        rest = uri[len("package://"):]
        package, _, relative = rest.partition("/")
        for folder in _find_package(package, base):
            candidate = folder / relative
            if candidate.is_file():
                return candidate
        if base is not None:
            for anc in [base, *base.parents]:
                for candidate in (anc / relative, anc / rest):
                    if candidate.is_file():
                        return candidate
        return None
    uri = uri.removeprefix("file://")
    path = Path(uri)
    if path.is_absolute():
        return path if path.is_file() else None
    if base is not None and (base / path).is_file():
        return base / path
    return None


def _plain_path(filename: str, base_dir: Path | None) -> Path | None:
    """Where a plain or ``file://`` mesh name points (package:// names: None), found or not."""
    if filename.startswith("package://"):
        return None
    p = Path(filename.removeprefix("file://"))
    if p.is_absolute():
        return p
    return base_dir / p if base_dir is not None else None


def _mesh_file_fault(path: Path | None) -> str | None:
    """Why the mesh file at ``path`` cannot be drawn (a folder, not a regular file, unreadable,
    empty), or None (fine, or missing: reported as not found)."""
    import stat

    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return f"is a folder ({path}), not a mesh file"
    if not stat.S_ISREG(st.st_mode):
        return f"is not a regular file ({path})"
    if not os.access(path, os.R_OK):
        return f"cannot be read ({path}: permission denied)"
    if st.st_size == 0:
        return f"is empty ({path}: 0 bytes)"
    return None
