"""Where numba keeps the compiled kernels (:mod:`engine.robots.kernel_cache`): from sources, its
own places; in a frozen app, the user's cache folder whatever the current folder, stamped with
the executable (a rebuilt app compiles afresh). The frozen app is simulated in a subprocess
(``sys.frozen`` set, ``sys.executable`` a file of ours, ``XDG_CACHE_HOME`` a temporary folder)
and numba's own cache log (``NUMBA_DEBUG_CACHE``) says what it loaded and saved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = '''
import sys
sys.frozen = True
sys.executable = {exe!r}
from engine.robots.kernel_cache import can_cache
from numba import njit

assert can_cache()


@njit(cache=True)
def twice(x):
    return 2.0 * x


print("result", twice(21.0))
'''


def _run(script: Path, cwd: Path, env: dict) -> str:
    out = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "result 42.0" in out.stdout
    return out.stdout


def test_a_frozen_app_caches_in_the_user_cache_folder(tmp_path, subprocess_env):
    exe = tmp_path / "LagrangeStudio"
    exe.write_bytes(b"build one")
    script = tmp_path / "app" / "kernels.py"
    script.parent.mkdir()
    script.write_text(SCRIPT.format(exe=str(exe)))
    cache = tmp_path / "cache"
    env = {**subprocess_env, "XDG_CACHE_HOME": str(cache), "NUMBA_DEBUG_CACHE": "1"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = _run(script, tmp_path, env)
    folder = cache / "lagrange-studio" / "kernels"
    assert "data saved" in first and str(folder) in first
    assert not (script.parent / "__pycache__").exists()          # not next to the "source"
    again = _run(script, elsewhere, env)                           # another current folder: the same cache
    assert "data loaded" in again and "data saved" not in again
    exe.write_bytes(b"build two")                                  # a rebuilt app: compiled afresh
    rebuilt = _run(script, elsewhere, env)
    assert "data saved" in rebuilt and "data loaded" not in rebuilt


def test_from_sources_numba_keeps_its_own_places():
    from numba.core import config

    from engine.robots.kernel_cache import FrozenAppCacheLocator, can_cache

    assert can_cache()
    assert not config.CACHE_LOCATOR_CLASSES
    assert FrozenAppCacheLocator.from_function(can_cache, __file__) is None


def test_a_frozen_build_is_warmed_once(tmp_path, monkeypatch):
    """kernel_warm_up.warmed: False from sources; in a frozen app, True once warm_up has left this
    build's marker, and False again for a rebuilt executable."""
    from engine.robots import kernel_cache, kernel_warm_up

    assert not kernel_warm_up.warmed()
    exe = tmp_path / "LagrangeStudio"
    exe.write_bytes(b"build one")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(exe))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert not kernel_warm_up.warmed()
    marker = Path(kernel_cache.warmed_marker())
    assert marker.parent == tmp_path / "cache" / "lagrange-studio" / "kernels"
    marker.parent.mkdir(parents=True)
    marker.touch()
    assert kernel_warm_up.warmed()
    exe.write_bytes(b"build two, rebuilt")
    assert not kernel_warm_up.warmed()
