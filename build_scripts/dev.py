#!/usr/bin/env python3
"""Developer commands for Lagrange Studio (standard library only; Linux, macOS, Windows).

    python3 build_scripts/dev.py setup    create .venv, install torch first, then the project (editable, dev extra)
    python3 build_scripts/dev.py run      set up if needed, then launch the app (extra args go to the app)
    python3 build_scripts/dev.py test     set up if needed, then ruff, mypy (engine/) and the whole test suite
                                          (extra args go to pytest)
    python3 build_scripts/dev.py bench    run the engine's benchmarks and the 3D view benchmark
    python3 build_scripts/dev.py build    make a one-folder app in dist/ with PyInstaller, then self-test it
    python3 build_scripts/dev.py check    only the system check below

Before ``run``, ``test`` and ``build``, dev.py checks that Qt can load its platform plugin here
(``app/display.py``: ``ldd`` on PySide6's plugin and modules, then a real start in a child
process) and, for the tests, that there is a display or Xvfb. On Debian/Ubuntu it installs what is
missing with apt-get when it can (as root, or with ``sudo`` that needs no password); otherwise it
stops with exit code 2 and prints the exact command to run. ``LAGRANGE_NO_APT=1`` never installs
(only prints the command).

``setup`` is idempotent: it records a fingerprint of pyproject.toml and the Python version in
the venv and does nothing when they have not changed. ``LAGRANGE_TORCH`` overrides the
torch requirement installed first (default ``torch==2.13.0``, the CPU build of the brief's
machines; a range in pyproject.toml lets users elsewhere keep theirs).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".lagrange-setup-stamp"
TORCH_REQUIREMENT = os.environ.get("LAGRANGE_TORCH", "torch==2.13.0")
# differentiable-robot-model (a benchmark reference) pins old releases of its dependencies,
# so it is installed without them; its real needs (urdf-parser-py, pyquaternion) are in the dev extra.
NO_DEPS_REFERENCES = ["differentiable-robot-model"]


def venv_python() -> Path:
    if os.name == "nt":
        return VENV / "Scripts" / "python.exe"
    return VENV / "bin" / "python"


def say(message: str) -> None:
    print(f"[dev] {message}", flush=True)


def call(cmd: list, **kw) -> None:
    say(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def fingerprint() -> str:
    h = hashlib.sha256()
    h.update((ROOT / "pyproject.toml").read_bytes())
    h.update(TORCH_REQUIREMENT.encode())
    h.update(sys.version.encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def setup(force: bool = False) -> Path:
    python = venv_python()
    if not force and python.exists() and STAMP.exists() and STAMP.read_text().strip() == fingerprint():
        return python
    if not python.exists():
        say(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True, clear=False, upgrade_deps=False).create(VENV)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    # torch first, from the requirement the brief names, so that the project's range
    # (torch>=2.2) is already met and no other build is pulled in.
    call(pip + [TORCH_REQUIREMENT])
    call(pip + ["-e", f"{ROOT}[dev]"])
    call(pip + ["--no-deps"] + NO_DEPS_REFERENCES)
    # compile the rigid-body kernels once (numba caches them next to their source), so that the
    # first dynamics call of the app or the tests does not wait about ten seconds for the compiler
    call([python, "-c", "from engine.robots.kernel_warm_up import warm_up; warm_up()"])
    STAMP.write_text(fingerprint())
    say("setup complete")
    return python


def _system_report(python: Path) -> dict:
    out = subprocess.run([str(python), str(ROOT / "app" / "display.py"), "--json"], cwd=ROOT,
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise SystemCheckError(f"the system check failed to run:\n{out.stderr.strip()}") from None


class SystemCheckError(Exception):
    """What stops dev.py before it runs Qt (printed, exit code 2)."""


def _can_install() -> tuple[bool, list[str]]:
    """(whether dev.py may run apt-get itself, the prefix to run it with)."""
    if os.environ.get("LAGRANGE_NO_APT") or not shutil.which("apt-get"):
        return False, []
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return True, []
    if shutil.which("sudo") and subprocess.call(["sudo", "-n", "true"], stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL) == 0:
        return True, ["sudo", "-n"]
    return False, ["sudo"]


def packages_needed(report: dict, need_display: bool) -> list[str]:
    """The Debian packages the report says are missing (Xvfb too when tests need a screen)."""
    packages = list(report.get("packages") or [])
    if need_display and report.get("display") == "none":
        packages += [p for p in ("xvfb", "xauth") if p not in packages]
    return packages


def system_check(python: Path, need_display: bool) -> None:
    """Make sure Qt can start here, installing missing Debian/Ubuntu packages when allowed;
    raise SystemCheckError with the exact command to run otherwise."""
    if sys.platform != "linux":
        return
    report = _system_report(python)
    packages = packages_needed(report, need_display)
    if packages and report.get("debian"):
        allowed, prefix = _can_install()
        if allowed:
            say("installing the system libraries Qt needs: " + " ".join(packages))
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            try:
                call([*prefix, "apt-get", "update", "-qq"], env=env)
                call(
                    [*prefix, "apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
                    env=env,
                )
            except subprocess.CalledProcessError as exc:
                raise SystemCheckError(
                    f"apt-get failed ({exc}); install the packages yourself:\n  " + _install_command(packages)
                ) from None
            report = _system_report(python)
            packages = packages_needed(report, need_display)
    no_screen = need_display and report.get("display") == "none"
    if report.get("missing_libraries") or report.get("unknown_libraries") or no_screen:
        lines = []
        if report.get("missing_libraries") or report.get("unknown_libraries"):
            lines.append(report["message"].splitlines()[0])
        if no_screen:
            lines.append(
                "There is no display and Xvfb is not installed: the GUI tests need a (virtual) screen."
            )
        if report.get("debian") and packages:
            lines.append("Install what is missing with:\n  " + _install_command(packages))
        if report.get("unknown_libraries"):
            lines.append("No known package provides " + ", ".join(report["unknown_libraries"])
                         + "; `apt-file search NAME` finds it.")
        if not report.get("debian"):
            lines.append("Install the packages that provide them with your system's package manager"
                         + (f" (on Debian/Ubuntu: {' '.join(packages)})." if packages else "."))
        raise SystemCheckError("\n".join(lines))
    if not need_display and report.get("display") == "none":
        say("no display and no Xvfb: the app will use Qt's offscreen platform (3D views disabled); "
            "install Xvfb for a virtual screen: " + _install_command(["xvfb", "xauth"]))
    probe = report.get("probe")
    if probe and not probe.get("ok"):
        raise SystemCheckError(
            f"Qt could not start on its {report.get('platform')} platform here. Qt said:\n{probe.get('said')}\n"
            f"Run `QT_DEBUG_PLUGINS=1 {python} {ROOT / 'app' / 'display.py'}` to see which library it tried."
        )


def _install_command(packages: list[str]) -> str:
    sudo = "" if hasattr(os, "geteuid") and os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get update && {sudo}apt-get install -y --no-install-recommends " + " ".join(packages)


def check(args: list[str]) -> int:
    system_check(setup(), need_display=True)
    say("system check passed: Qt loads its platform plugin here")
    return 0


def run(args: list[str]) -> int:
    python = setup()
    system_check(python, need_display=False)
    return subprocess.call([str(python), "-m", "app", *args], cwd=ROOT)


def test(args: list[str]) -> int:
    python = setup()
    system_check(python, need_display=True)
    env = dict(os.environ)
    env.setdefault("LAGRANGE_SETTINGS_FILE", str(ROOT / ".pytest_cache" / "settings.ini"))
    say("ruff check (the rule set in pyproject.toml)")
    code = subprocess.call([str(python), "-m", "ruff", "check", "--quiet", "."], cwd=ROOT)
    if code:
        say("ruff found problems (above); fix them, or run `.venv/bin/ruff check --fix .`")
        return code
    say("mypy (engine/, the settings in pyproject.toml)")
    code = subprocess.call([str(python), "-m", "mypy"], cwd=ROOT)
    if code:
        say("mypy found type errors (above); fix them, or annotate what it cannot infer")
        return code
    return subprocess.call([str(python), "-m", "pytest", *args], cwd=ROOT, env=env)


def bench(args: list[str]) -> int:
    """Every engine benchmark, then the 3D view's frame rate; extra args go to each."""
    python = setup()
    system_check(python, need_display=False)
    names = subprocess.run(
        [str(python), "-c", "from engine.cli.bench import bench_names; print(*bench_names())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    code = 0
    for name in names:
        say(f"bench {name}")
        code |= subprocess.call([str(python), "-m", "engine", "bench", name, *args], cwd=ROOT)
    say("bench view (3D viewer frame rate)")
    code |= subprocess.call([str(python), "-m", "app", "--benchmark-view", "panda-erd", "--json"], cwd=ROOT)
    return code


def build(args: list[str]) -> int:
    python = setup()
    system_check(python, need_display=False)
    spec = ROOT / "build_scripts" / "lagrange_studio.spec"
    dist = Path(os.environ.get("LAGRANGE_DIST", ROOT / "dist"))
    call([python, "-m", "PyInstaller", "--noconfirm", "--clean", "--distpath", dist,
          "--workpath", ROOT / "build" / "pyinstaller", spec])
    exe = dist / "LagrangeStudio" / ("LagrangeStudio.exe" if os.name == "nt" else "LagrangeStudio")
    if "--no-self-test" in args:
        return 0
    say(f"self-test of {exe}")
    return subprocess.call([str(exe), "--self-test"], cwd=ROOT)


COMMANDS = {"setup": lambda a: (setup(force="--force" in a), 0)[1], "run": run, "test": test,
            "bench": bench, "build": build, "check": check}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except SystemCheckError as exc:
        print(f"[dev] {exc}", file=sys.stderr, flush=True)
        return 2
    except subprocess.CalledProcessError as exc:
        say(f"failed: {exc}")
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
