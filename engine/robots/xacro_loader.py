"""xacro files (``.xacro``, ``.urdf.xacro``): expanded by the ``xacro`` package, then read as URDF.

``expand_xacro(path, args)`` returns the URDF text (macros, properties, conditionals and
``<xacro:include>`` of files beside it resolved; ``args`` are the ``name:=value`` arguments,
``<xacro:arg>`` defaults apply to the others). ``load_xacro(path, args, ...)`` parses that
text with :func:`engine.robots.urdf.parse_urdf_string`, relative mesh names resolving from
the xacro file's folder. Errors are :class:`URDFError` naming the file and what xacro said.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from engine.robots.description import RobotDescription
from engine.robots.urdf import URDFError, parse_urdf_string

__all__ = ["expand_xacro", "load_xacro"]

# xacro keeps its include stack and arguments in module globals: one expansion at a time
_LOCK = threading.Lock()


def expand_xacro(path: str | Path, args: Mapping[str, str] | None = None) -> str:
    """The URDF text of a xacro file with ``args`` ({name: value}) substituted."""
    path = Path(path)
    if not path.is_file():
        raise URDFError("no such xacro file", file=str(path))
    try:
        import xacro
    except ImportError:  # pragma: no cover - a declared dependency
        raise URDFError("reading xacro files needs the 'xacro' package: pip install xacro", file=str(path)) from None
    mappings = {str(k): str(v) for k, v in (args or {}).items()}
    with _LOCK:
        try:
            doc = xacro.process_file(str(path), mappings=mappings)
            return doc.toxml()
        except xacro.XacroException as exc:
            raise URDFError(f"xacro could not expand the file: {exc}", file=str(path)) from None
        except Exception as exc:  # xacro raises assorted types (XML, eval, missing includes)
            raise URDFError(f"xacro could not expand the file: {type(exc).__name__}: {exc}", file=str(path)) from None


def load_xacro(path: str | Path, args: Mapping[str, str] | None = None, **urdf_options) -> RobotDescription:
    """Expand a xacro file and load the result as URDF (``urdf_options``: mimic, strict, as for URDF)."""
    path = Path(path)
    text = expand_xacro(path, args)
    return parse_urdf_string(text, base_dir=path.resolve().parent, source=str(path), **urdf_options)
