"""Robot files of every format -> :class:`RobotDescription`: the loader picked from the file.

- URDF (``.urdf``, or ``.xml`` whose root element is ``<robot>``): :func:`engine.robots.urdf.load_urdf`.
- xacro (``.xacro``, ``.urdf.xacro``): expanded by the ``xacro`` package with ``name:=value``
  arguments, then read as URDF (:mod:`engine.robots.xacro_loader`).
- MJCF (``.xml`` or ``.mjcf`` whose root element is ``<mujoco>``): compiled by MuJoCo, then
  read from the compiled model (:mod:`engine.robots.mjcf`).

``RobotModel.from_file(path, ...)`` calls :func:`load_description`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TypedDict, cast

from engine.robots.description import RobotDescription
from engine.robots.urdf import URDFError, load_urdf

__all__ = ["ROBOT_FILE_SUFFIXES", "file_format", "load_description", "parse_xacro_args"]

# what the app's open dialog and drag-and-drop accept
ROBOT_FILE_SUFFIXES = (".urdf", ".xacro", ".xml", ".mjcf")


def file_format(path: str | Path) -> str:
    """"urdf", "xacro" or "mjcf" for a robot file: by its name, and for ``.xml`` by its root element."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".xacro"):
        return "xacro"
    if name.endswith(".urdf"):
        return "urdf"
    if name.endswith(".mjcf"):
        return "mjcf"
    try:
        head = path.read_bytes()[:4096]
    except OSError as exc:
        raise URDFError(f"cannot read the file: {exc.strerror or exc}", file=str(path)) from None
    head = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>", b"", head, flags=re.S)
    match = re.search(rb"<\s*([A-Za-z_][\w:.-]*)", head)
    root = match.group(1).decode() if match else ""
    if root == "mujoco":
        return "mjcf"
    if root == "robot":
        return "urdf"
    raise URDFError(f"not a robot file: the root element is <{root or '?'}>; expected <robot> (URDF, "
                    f"xacro) or <mujoco> (MJCF)", file=str(path))


def parse_xacro_args(items) -> dict[str, str]:
    """``["name:=value", ...]`` (the command line's and the open dialog's form) -> a dict."""
    out = {}
    for item in items or ():
        item = item.strip()
        if not item:
            continue
        if ":=" not in item:
            raise ValueError(f"xacro argument {item!r} must look like name:=value")
        name, value = item.split(":=", 1)
        if not name.strip():
            raise ValueError(f"xacro argument {item!r} has no name before ':='")
        out[name.strip()] = value.strip()
    return out


class _URDFOptions(TypedDict, total=False):
    strict: bool | None
    mimic: str


def load_description(
    path: str | Path,
    mimic: str | None = None,
    strict: bool | None = None,
    xacro_args: Mapping[str, str] | None = None,
    floating_base: bool = False,
    tree: str | None = None,
) -> RobotDescription:
    """Load a URDF, xacro or MJCF file (see the module docstring); raises URDFError (a ValueError)
    naming the file. ``mimic`` (None: the loader's default, coupled) applies to URDF, xacro and MJCF
    (``<equality joint>`` couplings); ``strict`` to URDF and xacro; ``xacro_args`` to xacro;
    ``floating_base=True`` attaches the root link by a free-flyer joint (an MJCF file says so itself
    with a free joint on its root body); ``tree`` to MJCF: the kinematic tree to load from a file
    with several (see :func:`engine.robots.mjcf.load_mjcf`)."""
    path = Path(path)
    kind = file_format(path)
    if xacro_args and kind != "xacro":
        raise ValueError(f"{path}: xacro arguments given, but the file is {kind.upper()}, not xacro")
    if tree is not None and kind != "mjcf":
        raise ValueError(f"{path}: a tree ({tree!r}) is chosen in MJCF files; this file is {kind.upper()}, "
                         "one tree")
    urdf_options = cast(_URDFOptions, {"strict": strict} | ({"mimic": mimic} if mimic is not None else {}))
    if kind == "urdf":
        desc = load_urdf(path, **urdf_options)
    elif kind == "xacro":
        from engine.robots.xacro_loader import load_xacro

        desc = load_xacro(path, args=xacro_args, **urdf_options)
    else:
        from engine.robots.mjcf import load_mjcf

        desc = load_mjcf(path, tree=tree, **({"mimic": mimic} if mimic is not None else {}))
    return replace(desc, floating_base=True) if floating_base and not desc.floating_base else desc
