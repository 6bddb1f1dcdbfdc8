#!/usr/bin/env python3
"""Developer commands for Lagrange Studio (standard library only; Linux, macOS, Windows).

    python3 build_scripts/dev.py setup    create .venv, install torch first, then the project (editable, dev extra)
    python3 build_scripts/dev.py run      set up if needed, then launch the app (extra args go to the app)
    python3 build_scripts/dev.py test     set up if needed, then run the whole test suite (extra args go to pytest)
    python3 build_scripts/dev.py bench    run the engine's benchmarks and the 3D view benchmark
    python3 build_scripts/dev.py build    make a one-folder app in dist/ with PyInstaller, then self-test it

``setup`` is idempotent: it records a fingerprint of pyproject.toml and the Python version in
the venv and does nothing when they have not changed. ``LAGRANGE_TORCH`` overrides the
torch requirement installed first (default ``torch==2.13.0``, the CPU build of the brief's
machines; a range in pyproject.toml lets users elsewhere keep theirs).
"""

from __future__ import annotations

import hashlib
import os
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
    STAMP.write_text(fingerprint())
    say("setup complete")
    return python


def run(args: list[str]) -> int:
    python = setup()
    return subprocess.call([str(python), "-m", "app", *args], cwd=ROOT)


def test(args: list[str]) -> int:
    python = setup()
    env = dict(os.environ)
    env.setdefault("LAGRANGE_SETTINGS_FILE", str(ROOT / ".pytest_cache" / "settings.ini"))
    say("ruff check (the rule set in pyproject.toml)")
    code = subprocess.call([str(python), "-m", "ruff", "check", "--quiet", "."], cwd=ROOT)
    if code:
        say("ruff found problems (above); fix them, or run `.venv/bin/ruff check --fix .`")
        return code
    return subprocess.call([str(python), "-m", "pytest", *args], cwd=ROOT, env=env)


def bench(args: list[str]) -> int:
    """Every engine benchmark, then the 3D view's frame rate; extra args go to each."""
    python = setup()
    names = subprocess.run([str(python), "-c", "from engine.cli.bench import bench_names; print(*bench_names())"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    code = 0
    for name in names:
        say(f"bench {name}")
        code |= subprocess.call([str(python), "-m", "engine", "bench", name, *args], cwd=ROOT)
    say("bench view (3D viewer frame rate)")
    code |= subprocess.call([str(python), "-m", "app", "--benchmark-view", "panda-erd", "--json"], cwd=ROOT)
    return code


def build(args: list[str]) -> int:
    python = setup()
    spec = ROOT / "build_scripts" / "lagrange_studio.spec"
    call([python, "-m", "PyInstaller", "--noconfirm", "--clean", "--distpath", ROOT / "dist",
          "--workpath", ROOT / "build" / "pyinstaller", spec])
    exe = ROOT / "dist" / "LagrangeStudio" / ("LagrangeStudio.exe" if os.name == "nt" else "LagrangeStudio")
    if "--no-self-test" in args:
        return 0
    say(f"self-test of {exe}")
    return subprocess.call([str(exe), "--self-test"], cwd=ROOT)


COMMANDS = {"setup": lambda a: (setup(force="--force" in a), 0)[1], "run": run, "test": test,
            "bench": bench, "build": build}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except subprocess.CalledProcessError as exc:
        say(f"failed: {exc}")
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
