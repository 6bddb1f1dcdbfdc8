"""Where numba keeps the compiled rigid-body kernels on disk (their ``cache=True``).

- From sources (a checkout, an installed package): numba's own places, the package's
  ``__pycache__`` or, where that is read-only, numba's user cache (``~/.cache/numba``), each
  entry stamped with its source file.
- In a frozen app (PyInstaller) the modules have no source files, and their code paths are
  relative (``engine/robots/vjp_kernels.py``), so numba's own locators would look for them from
  the current folder (a source checkout there: its ``__pycache__``) and file their caches under a
  hash of that folder. :class:`FrozenAppCacheLocator`, which :func:`can_cache` names to numba
  (``numba.config.CACHE_LOCATOR_CLASSES``), keeps them in ``<user cache>/lagrange-studio/kernels/
  <module folder>`` whatever the current folder, stamped with a hash of the executable (which
  holds the app's modules), so a rebuilt app compiles afresh. Where that folder cannot be
  written, nothing is cached: the kernels compile in every session.

Importing this module imports numba.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys

from numba.core import config
from numba.core.caching import _CacheLocator
from numba.misc.appdirs import AppDirs

__all__ = ["FrozenAppCacheLocator", "can_cache", "frozen_cache_folder", "frozen_stamp", "warmed_marker"]


def _frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def frozen_cache_folder() -> str:
    """The frozen app's kernel cache: ``<user cache folder>/lagrange-studio/kernels``."""
    return os.path.join(AppDirs(appname="lagrange-studio", appauthor=False).user_cache_dir, "kernels")


@functools.cache
def _file_hash(path: str, mtime: float, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def frozen_stamp() -> str:
    """The frozen app's build: a hash of its executable (which holds its modules)."""
    st = os.stat(sys.executable)
    return _file_hash(sys.executable, st.st_mtime, st.st_size)


def warmed_marker() -> str:
    """The file :func:`engine.robots.kernel_warm_up.warm_up` writes in a frozen app once every kernel
    of this build is in the cache."""
    return os.path.join(frozen_cache_folder(), f"built-{frozen_stamp()[:16]}")


class FrozenAppCacheLocator(_CacheLocator):
    """numba's cache locator in a frozen app (the module docstring): one folder per module folder
    (``engine.robots``), entries told apart by the function's first line, stamped with the
    executable's hash."""

    def __init__(self, py_func, py_file: str):
        self._lineno = py_func.__code__.co_firstlineno
        folder = os.path.dirname(py_file).replace("\\", "/").strip("/")
        self._cache_path = os.path.join(frozen_cache_folder(), folder.replace("/", ".") or "_")

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return frozen_stamp()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _frozen():
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def can_cache() -> bool:
    """Whether to compile the kernels with ``cache=True``: always from sources; in a frozen app
    where :func:`frozen_cache_folder` is writable, and then with :class:`FrozenAppCacheLocator`."""
    if not _frozen():
        return True
    try:
        folder = frozen_cache_folder()
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK):
            return False
    except OSError:
        return False
    setattr(config, "CACHE_LOCATOR_CLASSES", f"{__name__}.{FrozenAppCacheLocator.__name__}")  # noqa: B010
    return True
