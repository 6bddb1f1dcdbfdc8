"""Make sure Qt has a screen: on a Linux machine with no display, start Xvfb (or go offscreen)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys

_xvfb: subprocess.Popen | None = None
_pipe_fds: list[int] = []


def has_display() -> bool:
    if sys.platform != "linux":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM"))


def start_xvfb(size: str = "1600x1000x24", timeout: float = 10.0) -> str | None:
    """Start ``Xvfb`` on a free display number; return ``":N"`` or None if it cannot."""
    global _xvfb
    exe = shutil.which("Xvfb")
    if not exe:
        return None
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen([exe, "-displayfd", str(write_fd), "-screen", "0", size, "-nolisten", "tcp"],
                                pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        proc.kill()
        return None
    _xvfb = proc
    atexit.register(stop_xvfb)
    return f":{number}"


def stop_xvfb() -> None:
    global _xvfb
    if _xvfb is not None:
        _xvfb.terminate()
        try:
            _xvfb.wait(5)
        except subprocess.TimeoutExpired:
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
