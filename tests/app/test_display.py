"""The system check before Qt starts (app/display.py) and dev.py's use of it: missing libraries
are found with the real ldd on real ELF files, named with their Debian packages, installed when
dev.py may, and otherwise reported with the exact command (exit code 2), never Qt's abort."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app import display

ROOT = Path(__file__).resolve().parents[2]

LDD_SAMPLE = """\
/x/PySide6/Qt/plugins/platforms/libqxcb.so:
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /x/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f88)
\tlibxcb-cursor.so.0 => not found
\tlibxkbcommon-x11.so.0 => not found
/x/PySide6/QtGui.abi3.so:
\tlibxcb-cursor.so.0 => not found
\tlibEGL.so.1 => /lib/x86_64-linux-gnu/libEGL.so.1 (0x00007f88)
"""


def load_dev():
    spec = importlib.util.spec_from_file_location("dev_under_test", ROOT / "build_scripts" / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parse_ldd_lists_each_missing_library_once():
    assert display.parse_ldd(LDD_SAMPLE) == ["libxcb-cursor.so.0", "libxkbcommon-x11.so.0"]
    assert display.parse_ldd("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n") == []


def test_libraries_map_to_debian_packages_and_unknown_ones_are_named():
    packages, unknown = display.packages_for(["libxcb-cursor.so.0", "libxcb-image.so.0", "libGL.so.1",
                                              "libglib-2.0.so.0", "libgthread-2.0.so.0", "libnosuch.so.7"])
    assert packages == ["libxcb-cursor0", "libxcb-image0", "libgl1", "libglib2.0-0"]
    assert unknown == ["libnosuch.so.7"]


def test_every_package_of_the_old_apt_line_is_known():
    for package in [
        "libxcb-icccm4",
        "libxcb-image0",
        "libxcb-keysyms1",
        "libxcb-randr0",
        "libxcb-render-util0",
        "libxcb-shape0",
        "libxcb-xkb1",
        "libxkbcommon-x11-0",
        "libxcb-cursor0",
        "libgl1",
        "libegl1",
        "libglib2.0-0",
        "libfontconfig1",
        "libdbus-1-3",
    ]:
        assert package in display.DEBIAN_PACKAGES.values()


@pytest.mark.parametrize("text, expected", [
    ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n', True),
    ('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n', True),
    ('NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\n', True),
    ('NAME="Fedora Linux"\nID=fedora\n', False),
    ('NAME="Arch Linux"\nID=arch\n', False),
])
def test_debian_like_systems_are_recognised(text, expected):
    assert display.is_debian_like(text) is expected


def test_message_names_libraries_packages_and_the_exact_command():
    message = display.describe_missing(["libxcb-cursor.so.0", "libnosuch.so.7"], debian=True, root=False)
    assert "libxcb-cursor.so.0" in message and "libnosuch.so.7" in message
    assert "sudo apt-get update && sudo apt-get install -y --no-install-recommends libxcb-cursor0" in message
    assert "apt-file search" in message
    as_root = display.describe_missing(["libxcb-cursor.so.0"], debian=True, root=True)
    assert "\n  apt-get update && apt-get install" in as_root and "sudo" not in as_root
    elsewhere = display.describe_missing(["libxcb-cursor.so.0"], debian=False)
    assert "apt-get" not in elsewhere and "package manager" in elsewhere and "libxcb-cursor0" in elsewhere
    assert "Error" not in message and "Traceback" not in message


def _real_library_with_a_missing_dependency(tmp_path: Path) -> Path:
    """A copy of a real system library whose first NEEDED entry is renamed (same length) to a
    library that exists nowhere: the dynamic loader (and ldd) cannot resolve it."""
    plugin = display.qt_binaries(display.pyside_dir(), "xcb", full=False)[0]
    out = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=True).stdout
    source = next(Path(line.split("=>")[1].split("(")[0].strip()) for line in out.splitlines()
                  if "libxcb-cursor.so.0 =>" in line)
    data = source.read_bytes()
    needed = subprocess.run(["ldd", str(source)], capture_output=True, text=True, check=True).stdout
    name = next(line.split()[0] for line in needed.splitlines() if line.strip().startswith("libxcb-"))
    fake = ("libzz" + name[5:]).encode()
    assert len(fake) == len(name) and name.encode() + b"\0" in data
    folder = tmp_path / "PySide6" / "Qt" / "plugins" / "platforms"
    folder.mkdir(parents=True)
    target = folder / "libqxcb.so"
    target.write_bytes(data.replace(name.encode() + b"\0", fake + b"\0", 1))
    return target


def test_a_plugin_with_a_missing_library_is_reported_by_the_real_loader(tmp_path, monkeypatch):
    fake_plugin = _real_library_with_a_missing_dependency(tmp_path)
    missing = display.missing_libraries([fake_plugin])
    assert len(missing) == 1 and missing[0].startswith("libzz")
    monkeypatch.setattr(display, "pyside_dir", lambda: tmp_path / "PySide6")
    message = display.check_platform("xcb")
    assert message is not None and missing[0] in message and "No known package provides" in message


def test_this_machine_has_what_qt_needs_and_simulated_gaps_are_reported(monkeypatch):
    monkeypatch.delenv(display.SIMULATE_ENV, raising=False)
    assert display.missing_libraries(display.qt_binaries(display.pyside_dir(), "xcb")) == []
    assert display.check_platform("xcb") is None
    monkeypatch.setenv(display.SIMULATE_ENV, "libxcb-cursor.so.0, libxkbcommon-x11.so.0")
    message = display.check_platform("xcb")
    assert "libxcb-cursor0 libxkbcommon-x11-0" in message


def test_qt_that_cannot_start_is_reported_not_aborted():
    ok, said = display.probe_qt("nosuchplatform")
    assert not ok and 'Could not find the Qt platform plugin "nosuchplatform"' in said
    assert "Fatal Python error" not in said
    assert display.probe_qt("offscreen") == (True, "")


def test_system_programs_of_a_frozen_app_get_the_system_library_path(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/bundle/_internal")
    monkeypatch.setenv("LD_LIBRARY_PATH_ORIG", "/usr/local/lib")
    assert display.external_env()["LD_LIBRARY_PATH"] == "/usr/local/lib"
    monkeypatch.delenv("LD_LIBRARY_PATH_ORIG")
    assert "LD_LIBRARY_PATH" not in display.external_env()


def test_the_report_script_runs_with_a_bare_interpreter(monkeypatch):
    env = dict(os.environ, **{display.SIMULATE_ENV: "libxcb-cursor.so.0"})
    out = subprocess.run([sys.executable, str(ROOT / "app" / "display.py"), "--json", "--no-probe"],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    report = json.loads(out.stdout)
    assert report["missing_libraries"] == ["libxcb-cursor.so.0"] and report["packages"] == ["libxcb-cursor0"]


# ----------------------------------------------------------------------------- dev.py


def _fake_reports(dev, monkeypatch, reports: list[dict]):
    calls: list[list[str]] = []
    seen = iter(reports)
    monkeypatch.setattr(dev, "_system_report", lambda python: next(seen))
    monkeypatch.setattr(dev, "call", lambda cmd, **kw: calls.append([str(c) for c in cmd]))
    return calls


MISSING = {"platform": "xcb", "missing_libraries": ["libxcb-cursor.so.0"], "packages": ["libxcb-cursor0"],
           "unknown_libraries": [], "display": "xvfb", "probe": None, "debian": True,
           "message": display.describe_missing(["libxcb-cursor.so.0"], debian=True, root=False)}
FINE = {
    "platform": "xcb",
    "missing_libraries": [],
    "packages": [],
    "unknown_libraries": [],
    "display": "xvfb",
    "probe": {"ok": True, "said": ""},
    "debian": True,
    "message": None,
}


def test_dev_installs_missing_packages_when_it_may_then_checks_again(monkeypatch):
    dev = load_dev()
    monkeypatch.setattr(dev, "_can_install", lambda: (True, ["sudo", "-n"]))
    calls = _fake_reports(dev, monkeypatch, [MISSING, FINE])
    dev.system_check(Path(sys.executable), need_display=True)
    assert calls[0] == ["sudo", "-n", "apt-get", "update", "-qq"]
    assert calls[1][:3] == ["sudo", "-n", "apt-get"] and calls[1][-1] == "libxcb-cursor0"


def test_dev_stops_with_the_command_when_it_may_not_install(monkeypatch, capsys):
    dev = load_dev()
    monkeypatch.setattr(dev, "_can_install", lambda: (False, ["sudo"]))
    monkeypatch.setattr(dev, "setup", lambda force=False: Path(sys.executable))
    calls = _fake_reports(dev, monkeypatch, [MISSING])
    assert dev.main(["test"]) == 2
    assert calls == []
    err = capsys.readouterr().err
    assert "apt-get install -y --no-install-recommends libxcb-cursor0" in err and "Aborted" not in err


def test_dev_asks_for_xvfb_when_tests_have_no_screen(monkeypatch):
    dev = load_dev()
    monkeypatch.setattr(dev, "_can_install", lambda: (False, ["sudo"]))
    _fake_reports(dev, monkeypatch, [dict(FINE, display="none", probe=None)] * 2)
    with pytest.raises(dev.SystemCheckError, match="install -y --no-install-recommends xvfb xauth"):
        dev.system_check(Path(sys.executable), need_display=True)
    dev.system_check(Path(sys.executable), need_display=False)  # the app falls back to offscreen


def test_dev_reports_what_qt_said_when_it_cannot_start(monkeypatch):
    dev = load_dev()
    _fake_reports(
        dev, monkeypatch, [dict(FINE, probe={"ok": False, "said": "qt.qpa.xcb: could not connect"})]
    )
    with pytest.raises(dev.SystemCheckError, match="could not connect") as info:
        dev.system_check(Path(sys.executable), need_display=True)
    assert "QT_DEBUG_PLUGINS=1" in str(info.value)


def test_dev_failing_apt_get_still_ends_in_the_command(monkeypatch):
    dev = load_dev()
    monkeypatch.setattr(dev, "_can_install", lambda: (True, []))
    monkeypatch.setattr(dev, "_system_report", lambda python: MISSING)

    def fail(cmd, **kw):
        raise subprocess.CalledProcessError(100, cmd)

    monkeypatch.setattr(dev, "call", fail)
    with pytest.raises(
        dev.SystemCheckError, match="apt-get install -y --no-install-recommends libxcb-cursor0"
    ):
        dev.system_check(Path(sys.executable), need_display=True)


def test_dev_check_for_real_passes_here_and_stops_on_simulated_gaps(monkeypatch, capsys):
    dev = load_dev()
    monkeypatch.setattr(dev, "setup", lambda force=False: Path(sys.executable))
    monkeypatch.delenv(display.SIMULATE_ENV, raising=False)
    assert dev.main(["check"]) == 0
    monkeypatch.setenv(display.SIMULATE_ENV, "libxcb-cursor.so.0")
    monkeypatch.setenv("LAGRANGE_NO_APT", "1")
    assert dev.main(["check"]) == 2
    assert "libxcb-cursor0" in capsys.readouterr().err


def test_the_app_and_its_self_test_report_missing_libraries_instead_of_aborting(subprocess_env):
    env = dict(subprocess_env, **{display.SIMULATE_ENV: "libxcb-cursor.so.0"})
    env.pop("DISPLAY", None)
    out = subprocess.run([sys.executable, "-m", "app", "--self-test"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 2, out.stderr
    report = json.loads(out.stdout)
    assert not report["ok"] and "libxcb-cursor0" in report["failures"][0]
    assert "Aborted" not in out.stderr and "Traceback" not in out.stderr
    assert shutil.which("Xvfb") is None or "virtual screen" in out.stderr


def test_dev_names_one_command_for_missing_libraries_and_a_missing_screen(monkeypatch):
    dev = load_dev()
    monkeypatch.setattr(dev, "_can_install", lambda: (False, ["sudo"]))
    _fake_reports(dev, monkeypatch, [dict(MISSING, display="none")])
    with pytest.raises(dev.SystemCheckError) as info:
        dev.system_check(Path(sys.executable), need_display=True)
    message = str(info.value)
    assert "libxcb-cursor.so.0" in message and "no display" in message
    assert message.count("apt-get install") == 1
    assert "install -y --no-install-recommends libxcb-cursor0 xvfb xauth" in message
