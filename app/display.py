"""Make sure Qt can open a window here: the system libraries its platform plugin loads, and a screen.

Standard library only. Three users:

- ``build_scripts/dev.py`` runs this file with the venv's python (``python app/display.py --json``)
  before it runs the app or the tests, installs what is missing on Debian/Ubuntu when it can, and
  otherwise stops with the exact command to run (never Qt's "Fatal Python error: Aborted");
- the app (from source or frozen) calls :func:`check_platform` and :func:`ensure_display` before
  Qt starts: a missing library is one message naming the package to install, and a machine with no
  display gets a virtual screen (Xvfb) or Qt's offscreen platform;
- ``--self-test`` reports missing libraries with the same message.

``LAGRANGE_SIMULATE_MISSING_LIBS=libfoo.so.1,libbar.so.2`` makes the check report those libraries
as missing (to try the messages and dev.py's behaviour on a machine that has everything).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_xvfb: subprocess.Popen | None = None
_pipe_fds: list[int] = []

SIMULATE_ENV = "LAGRANGE_SIMULATE_MISSING_LIBS"

# The shared libraries PySide6's Qt loads from the system, and the Debian/Ubuntu package of each
# (the same names on Debian 11-13 and Ubuntu 20.04-24.04; apt picks the t64 successors by itself).
DEBIAN_PACKAGES = {
    "libxcb-icccm.so.4": "libxcb-icccm4", "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0", "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0", "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0", "libxkbcommon.so.0": "libxkbcommon0",
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-util.so.1": "libxcb-util1",
    "libxcb-shm.so.0": "libxcb-shm0", "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0", "libxcb-render.so.0": "libxcb-render0",
    "libxcb-xinput.so.0": "libxcb-xinput0", "libxcb-glx.so.0": "libxcb-glx0",
    "libxcb.so.1": "libxcb1", "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6", "libXext.so.6": "libxext6", "libXrender.so.1": "libxrender1",
    "libXi.so.6": "libxi6", "libSM.so.6": "libsm6", "libICE.so.6": "libice6",
    "libXau.so.6": "libxau6", "libXdmcp.so.6": "libxdmcp6",
    "libGL.so.1": "libgl1", "libEGL.so.1": "libegl1", "libOpenGL.so.0": "libopengl0",
    "libGLX.so.0": "libglx0", "libGLdispatch.so.0": "libglvnd0",
    "libfontconfig.so.1": "libfontconfig1", "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
    "libgobject-2.0.so.0": "libglib2.0-0", "libgio-2.0.so.0": "libglib2.0-0",
    "libdbus-1.so.3": "libdbus-1-3", "libpng16.so.16": "libpng16-16", "libz.so.1": "zlib1g",
    "libzstd.so.1": "libzstd1", "libexpat.so.1": "libexpat1", "libbrotlidec.so.1": "libbrotli1",
    "libbrotlicommon.so.1": "libbrotli1", "libpcre2-8.so.0": "libpcre2-8-0",
    "libwayland-client.so.0": "libwayland-client0", "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}
# What a machine with no display needs for the tests (pytest-xvfb) and the app's virtual screen.
DISPLAY_PACKAGES = ["xvfb", "xauth"]

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)
_CANNOT_OPEN = re.compile(r"(\S+\.so[.\d]*): cannot open shared object file")


# ----------------------------------------------------------------------------- the screen


def has_display() -> bool:
    if sys.platform != "linux":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM"))


def external_env() -> dict:
    """The environment for system programs (Xvfb): a frozen app's bootloader points
    LD_LIBRARY_PATH at the bundle, whose libraries must not replace the system's in Xvfb."""
    env = dict(os.environ)
    if getattr(sys, "frozen", False):
        original = env.pop("LD_LIBRARY_PATH_ORIG", None)
        if original:
            env["LD_LIBRARY_PATH"] = original
        else:
            env.pop("LD_LIBRARY_PATH", None)
    return env


# Xvfb runs under a small shell that kills it when its stdin closes, i.e. when this process has
# ended (however it ends): stopping Xvfb from an atexit handler instead would break the X
# connection while Qt is still up, and Qt then aborts with "The X11 connection broke".
_WATCHDOG = '"$@" & pid=$!; read _line; kill "$pid" 2>/dev/null; wait "$pid"'


def start_xvfb(size: str = "1600x1000x24", timeout: float = 10.0) -> str | None:
    """Start ``Xvfb`` on a free display number; return ``":N"`` or None if it cannot.

    It lives until this process ends (or :func:`stop_xvfb`)."""
    global _xvfb
    exe = shutil.which("Xvfb")
    shell = shutil.which("sh") or "/bin/sh"
    if not exe:
        return None
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen([shell, "-c", _WATCHDOG, "xvfb-watchdog", exe, "-displayfd", str(write_fd),
                                 "-screen", "0", size, "-nolisten", "tcp"],
                                pass_fds=(write_fd,), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=external_env())
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    os.close(write_fd)
    import select

    ready, _, _ = select.select([read_fd], [], [], timeout)
    number = os.read(read_fd, 32).decode().strip() if ready else ""
    # keep our end of the pipe open while Xvfb runs: Xvfb exits when it is closed early
    _pipe_fds.append(read_fd)
    if not number:
        proc.stdin.close()
        proc.kill()
        return None
    _xvfb = proc
    return f":{number}"


def stop_xvfb() -> None:
    """Stop the Xvfb this process started (only once nothing is connected to it any more)."""
    global _xvfb
    if _xvfb is not None:
        try:
            _xvfb.stdin.close()  # the watchdog kills Xvfb and exits
            _xvfb.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            _xvfb.kill()
        _xvfb = None


def ensure_display(stream=sys.stderr) -> str:
    """Return how the app will be shown: 'native', 'xvfb' or 'offscreen'."""
    if has_display():
        return "native"
    display = start_xvfb()
    if display:
        os.environ["DISPLAY"] = display
        print(f"No display found: starting Lagrange Studio on a virtual screen (Xvfb {display}).",
              file=stream)
        return "xvfb"
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    print("No display found and Xvfb is not installed: using Qt's offscreen platform "
          "(3D views are disabled there).", file=stream)
    return "offscreen"


# ----------------------------------------------------------------------------- system libraries


def pyside_dir() -> Path | None:
    """PySide6's folder (in a frozen app, inside the bundle), found without importing Qt."""
    if getattr(sys, "frozen", False):
        folder = Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent)) / "PySide6"
        return folder if folder.is_dir() else None
    import importlib.util

    try:
        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def platform_name() -> str:
    """The Qt platform plugin this process will use (Qt's own default order on Linux)."""
    chosen = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if chosen:
        return chosen
    if os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("DISPLAY"):
        return "wayland"
    return "xcb"


def qt_binaries(pyside: Path, platform: str = "xcb", full: bool = True) -> list[Path]:
    """The Qt files whose system libraries matter: the platform plugin (and, ``full``, the
    xcb GL integrations and the Qt modules the app imports)."""
    plugins = pyside / "Qt" / "plugins"
    files = sorted((plugins / "platforms").glob(f"libq{platform}*.so"))
    if full:
        if platform == "xcb":
            files += sorted((plugins / "xcbglintegrations").glob("*.so"))
        for module in ("QtCore", "QtGui", "QtWidgets", "QtOpenGL", "QtOpenGLWidgets", "QtSvg"):
            files += sorted(pyside.glob(f"{module}.*so"))
    return [f for f in files if f.is_file()]


def parse_ldd(text: str) -> list[str]:
    """The libraries ``ldd`` reports as ``not found`` (in order, once each)."""
    return list(dict.fromkeys(_NOT_FOUND.findall(text)))


def missing_libraries(files: list[Path]) -> list[str]:
    """Shared libraries that ``files`` need and the dynamic loader cannot find here."""
    missing: list[str] = []
    if files and shutil.which("ldd"):
        try:
            out = subprocess.run(["ldd", *map(str, files)], capture_output=True, text=True, timeout=60)
            missing = parse_ldd(out.stdout + out.stderr)
        except (OSError, subprocess.TimeoutExpired):
            missing = []
    elif files:  # no ldd (a minimal image): the loader's own error names the first missing one
        import ctypes

        for file in files:
            try:
                ctypes.CDLL(str(file))
            except OSError as exc:
                missing += [m for m in _CANNOT_OPEN.findall(str(exc)) if m not in missing]
    simulated = [n.strip() for n in os.environ.get(SIMULATE_ENV, "").split(",") if n.strip()]
    return list(dict.fromkeys(missing + simulated))


def packages_for(libraries: list[str]) -> tuple[list[str], list[str]]:
    """(Debian packages providing ``libraries``, libraries with no known package)."""
    packages, unknown = [], []
    for lib in libraries:
        package = DEBIAN_PACKAGES.get(lib)
        if package is None:
            unknown.append(lib)
        elif package not in packages:
            packages.append(package)
    return packages, unknown


def is_debian_like(os_release: str | None = None) -> bool:
    if os_release is None:
        try:
            os_release = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    ids = " ".join(re.findall(r"^ID(?:_LIKE)?=\"?([^\"\n]*)", os_release, re.MULTILINE)).lower().split()
    return any(i in ("debian", "ubuntu") for i in ids)


def install_command(packages: list[str], root: bool | None = None) -> str:
    """The exact command that installs ``packages`` with apt-get."""
    if root is None:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
    sudo = "" if root else "sudo "
    return (f"{sudo}apt-get update && {sudo}apt-get install -y --no-install-recommends "
            + " ".join(packages))


def describe_missing(libraries: list[str], platform: str = "xcb", debian: bool | None = None,
                     root: bool | None = None) -> str:
    """The message for missing system libraries (dev.py, the app and its self-test print it)."""
    packages, unknown = packages_for(libraries)
    if debian is None:
        debian = is_debian_like()
    lines = [f"Qt cannot load its {platform} platform plugin: these system libraries are missing: "
             + ", ".join(libraries) + "."]
    if debian and packages:
        lines.append("Install them with:\n  " + install_command(packages, root))
    if unknown:
        lines.append("No known package provides " + ", ".join(unknown)
                     + ("; `apt-file search NAME` finds it." if debian else "."))
    if not debian:
        lines.append("Install the packages that provide them with your system's package manager"
                     + (f" (on Debian/Ubuntu: {' '.join(packages)})." if packages else "."))
    return "\n".join(lines)


def check_platform(platform: str | None = None, full: bool = False) -> str | None:
    """None when Qt's platform plugin can load its system libraries here (or this is not
    Linux, or the plugin is not there to check); else the message naming what to install."""
    if sys.platform != "linux":
        return None
    platform = platform or platform_name()
    pyside = pyside_dir()
    if pyside is None:
        return None
    missing = missing_libraries(qt_binaries(pyside, platform, full=full))
    return describe_missing(missing, platform) if missing else None


# ----------------------------------------------------------------------------- dev.py's check


_PROBE = ("import sys\nfrom PySide6.QtGui import QGuiApplication\n"
          "app = QGuiApplication(sys.argv[:1])\nprint(app.platformName())\n")


def probe_qt(platform: str, timeout: float = 120.0) -> tuple[bool, str]:
    """Start a QGuiApplication on ``platform`` in a child process (an abort stays there);
    (True, "") when it starts, else (False, what Qt said)."""
    env = dict(os.environ, QT_QPA_PLATFORM=platform)
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                             env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"starting Qt on the {platform} platform did not finish in {timeout:.0f} s"
    if out.returncode == 0:
        return True, ""
    noise = (
        "Fatal Python error",
        "  File ",
        "Current thread",
        "Thread 0x",
        "Extension modules",
        "Python runtime",
    )
    said = [line for line in out.stderr.splitlines() if line.strip() and not line.startswith(noise)]
    return False, "\n".join(said[-8:]) or f"exit status {out.returncode}"


def system_report(probe: bool = True) -> dict:
    """What dev.py needs to know: missing libraries and their packages, the display, a real start."""
    pyside = pyside_dir()
    platform = platform_name()
    if platform in ("offscreen", "minimal"):
        platform = "xcb"  # dev.py checks what a desktop run needs
    report = {"platform": platform, "pyside": str(pyside) if pyside else None, "missing_libraries": [],
              "packages": [], "unknown_libraries": [], "display": "native", "probe": None,
              "debian": is_debian_like(), "message": None}
    if sys.platform != "linux" or pyside is None:
        return report
    missing = missing_libraries(qt_binaries(pyside, platform, full=True))
    report["missing_libraries"] = missing
    report["packages"], report["unknown_libraries"] = packages_for(missing)
    if missing:
        report["message"] = describe_missing(missing, platform, report["debian"])
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        report["display"] = "xvfb" if shutil.which("Xvfb") else "none"
    if probe and not missing and report["display"] != "none":
        started = None
        if report["display"] == "xvfb":
            started = start_xvfb()
            if started:
                os.environ["DISPLAY"] = started
        ok, said = probe_qt(platform)
        report["probe"] = {"ok": ok, "said": said}
        if started:
            stop_xvfb()
    return report


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Check that Qt can open a window here.")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-probe", action="store_true", help="skip starting Qt in a child process")
    options = parser.parse_args()
    result = system_report(probe=not options.no_probe)
    if options.json:
        print(json.dumps(result))
    else:
        print(result["message"] or "Qt's platform plugin loads its system libraries here.")
    sys.exit(0)
