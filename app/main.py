"""Start Lagrange Studio: ``lagrange-studio`` / ``python -m app``.

Options for headless checks: ``--screenshot PATH`` writes a PNG of the main window once it
has drawn (and keeps running), ``--quit-after SECONDS`` quits (not before a requested
screenshot is written), ``--self-test`` opens the window, runs a small engine job through
the job runner and exits 0 (or prints what failed), ``--benchmark-view NAME --json``
measures the 3D view's frame rate.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback

log = logging.getLogger("app")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lagrange-studio", description="Lagrange Studio desktop app")
    p.add_argument("--robot", metavar="NAME_OR_PATH", help="open this robot (library name or URDF file)")
    p.add_argument("--workspace", choices=["robot", "model_lab", "eigenmode", "car"],
                   help="workspace to show first")
    p.add_argument(
        "--open", metavar="FILE", action="append", default=[], help="open a file (URDF, log, model, session)"
    )
    p.add_argument("--screenshot", metavar="PATH", help="write a PNG of the main window once it has drawn")
    p.add_argument("--quit-after", type=float, metavar="SECONDS", help="quit after this many seconds")
    p.add_argument("--self-test", action="store_true", help="check the installation and exit")
    p.add_argument("--warm-up-kernels", action="store_true",
                   help="build the compiled rigid-body kernels into the cache and exit (a packaged app "
                        "starts this itself on its first run)")
    p.add_argument("--benchmark-view", metavar="NAME_OR_PATH", help="measure the 3D view's frame rate")
    p.add_argument("--seconds", type=float, default=3.0, help="duration of --benchmark-view")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.add_argument("--settings", metavar="INI", help="use this settings file instead of the user's")
    return p


def dark_palette():
    """The palette behind the style sheet: widgets the sheet does not name (scroll areas,
    form backgrounds, disabled text) follow it, so nothing is drawn light-on-light."""
    from PySide6.QtGui import QColor, QPalette

    colours = {
        QPalette.ColorRole.Window: "#1f232a", QPalette.ColorRole.WindowText: "#d8dee9",
        QPalette.ColorRole.Base: "#171a1f", QPalette.ColorRole.AlternateBase: "#22262e",
        QPalette.ColorRole.Text: "#d8dee9", QPalette.ColorRole.Button: "#2e3440",
        QPalette.ColorRole.ButtonText: "#d8dee9", QPalette.ColorRole.Highlight: "#5e81ac",
        QPalette.ColorRole.HighlightedText: "#eceff4", QPalette.ColorRole.ToolTipBase: "#2e3440",
        QPalette.ColorRole.ToolTipText: "#eceff4", QPalette.ColorRole.PlaceholderText: "#7b88a1",
        QPalette.ColorRole.Link: "#88c0d0", QPalette.ColorRole.BrightText: "#ff5555",
    }
    palette = QPalette()
    for role, colour in colours.items():
        palette.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor("#616e88"))
    return palette


def _make_application(argv: list[str]):
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    from engine.paths import resource

    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(argv[:1])
    app.setApplicationName("Lagrange Studio")
    app.setOrganizationName("Lagrange Studio")
    app.setStyle("Fusion")
    app.setPalette(dark_palette())
    if not hasattr(app, "_gc_policy"):
        from app.gc_policy import MainThreadGarbageCollector

        app._gc_policy = MainThreadGarbageCollector()  # cycles collected on the GUI thread only
    try:
        app.setStyleSheet(resource("style.qss").read_text(encoding="utf-8"))
    except OSError as exc:
        log.warning("style sheet not loaded: %s", exc)
    _build_kernels_in_background(warm_up_elsewhere="--self-test" not in argv)
    return app


def _build_kernels_in_background(warm_up_elsewhere: bool = True) -> None:
    """Load (or, without numba's cache, compile: about ten seconds) the rigid-body kernels on a
    thread of their own, so that the first forward kinematics the viewer draws on the GUI thread
    does not wait for them (engine.robots.compiled_dynamics.available builds them once). A
    packaged app's first run of a build also starts :func:`start_kernel_warm_up`."""
    import threading

    from engine.robots.compiled_dynamics import available

    def build():
        if available() and warm_up_elsewhere and getattr(sys, "frozen", False):
            start_kernel_warm_up()

    threading.Thread(target=build, name="rigid-body kernels", daemon=True).start()


def start_kernel_warm_up(command: list[str] | None = None):
    """Unless this build's kernels are all cached (engine.robots.kernel_warm_up.warmed): build the
    derivative and backward kernels (minutes of CPU on a first run) in a process of its own at a low
    priority, ``command`` (default: this executable with ``--warm-up-kernels``), so that the first
    training or optimisation does not wait for the compiler and the window stays responsive.
    Returns the process, or None."""
    import os
    import subprocess

    from engine.robots.kernel_warm_up import warmed

    if warmed():
        return None
    nice = {"preexec_fn": lambda: os.nice(10)} if os.name == "posix" else {
        "creationflags": getattr(subprocess, "BELOW_NORMAL_PRIORITY_CLASS", 0)}
    try:
        return subprocess.Popen(command or [sys.executable, "--warm-up-kernels"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **nice)
    except OSError as exc:
        log.info("the kernels' warm-up did not start (%s): they compile on first use", exc)
        return None


def create_main_window(options: dict, settings=None):
    """Build the main window with logging and the exception hook wired (used by tests too)."""
    from app.errors import ExceptionHook
    from app.help import install_help
    from app.logging_setup import configure_logging
    from app.main_window import MainWindow

    _, relay = configure_logging()
    window = MainWindow(settings=settings, log_relay=relay, options=options)
    window.exception_hook = ExceptionHook(lambda: window).install()
    window.log_console.install(window)  # hidden; its badge on the status bar counts warnings
    install_help(window)                 # Help > Getting started, the shortcuts that fit the screen
    return window


def _schedule_screenshot(window, path: str, settle_s: float = 1.5, max_wait_s: float = 30.0):
    """Write the PNG once the window has drawn and the jobs started with it (e.g. loading
    the robot) have ended, or after ``max_wait_s`` at the latest. Returns ``written()``, True
    once the PNG is written (``--quit-after`` waits for it on a slow, busy machine)."""
    from PySide6.QtCore import QTimer

    started = time.monotonic()
    state = {"written": False}

    def shoot():
        busy = bool(window.jobs.active_jobs())
        if busy and time.monotonic() - started < max_wait_s:
            QTimer.singleShot(250, shoot)
            return
        QTimer.singleShot(300, lambda: _write(busy))  # let the last results paint

    def _write(busy: bool):
        ok = window.screenshot(path)
        state["written"] = True
        note = " (jobs still running)" if busy else ""
        print(f"screenshot {'written to' if ok else 'FAILED:'} {path}{note}", file=sys.stderr, flush=True)

    QTimer.singleShot(int(settle_s * 1000), shoot)
    return lambda: state["written"]


def _schedule_quit(window, seconds: float, ready=lambda: True) -> None:
    """Close ``window`` after ``seconds``, or as soon after as ``ready()`` (a pending screenshot)."""
    from PySide6.QtCore import QTimer

    def close_when_ready():
        if ready():
            window.ask_before_quit = False      # a scripted quit: nobody is there to answer
            window.close()
        else:
            QTimer.singleShot(250, close_when_ready)

    QTimer.singleShot(int(seconds * 1000), close_when_ready)


def run_self_test(window, app) -> int:
    """Open the window, run a real engine job through the runner, check every workspace builds."""
    from PySide6.QtCore import QEventLoop, QTimer

    from engine.selftest import selftest_job

    failures: list[str] = []
    outcome: dict = {}
    loop = QEventLoop()
    handle = window.jobs.submit(selftest_job, name="self-test")
    handle.finished.connect(lambda r: outcome.update(result=r))
    handle.failed.connect(lambda m, tb: outcome.update(error=m + "\n" + tb))
    handle.ended.connect(loop.quit)
    QTimer.singleShot(300_000, loop.quit)    # a first run compiles the kernels: a minute or two
    loop.exec()
    if "result" not in outcome:
        failures.append(f"engine job: {outcome.get('error', 'did not finish in 300 s')}")
    elif not outcome["result"].get("ok"):
        failures.append(f"engine job returned {outcome['result']}")
    elif getattr(sys, "frozen", False) and not outcome["result"].get("compiled_kernels"):
        failures.append("the compiled rigid-body kernels (numba) did not load in the packaged app: see the log")
    for key in window.workspace_keys():
        page = window.page(key)
        if type(page).__name__ == "_BrokenPage":
            failures.append(f"workspace {key} failed to start (see the log)")
        app.processEvents()
    screen = window.screen()
    report = {"ok": not failures, "failures": failures, "job": outcome.get("result"),
              "screen": screen.name() if screen else None, "platform": app.platformName()}
    print(json.dumps(report, indent=2, default=str))
    return 0 if not failures else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else [sys.argv[0], *argv])
    args = build_parser().parse_args(argv[1:])

    from app.display import check_platform, ensure_display
    from engine.runtime import tune_malloc

    tune_malloc()  # see engine/runtime.py: large tensors reuse memory instead of faulting pages in
    if args.warm_up_kernels:
        from engine.robots.kernel_warm_up import warm_up

        return 0 if warm_up() else 1
    ensure_display()
    problem = check_platform()  # missing system libraries: a message, not Qt's abort
    if problem:
        if args.self_test:
            print(json.dumps({"ok": False, "failures": [problem]}, indent=2))
        print(problem, file=sys.stderr)
        return 2
    app = _make_application(argv)

    if args.benchmark_view:
        from app.viewer.benchmark import run_view_benchmark

        result = run_view_benchmark(args.benchmark_view, seconds=args.seconds)
        print(json.dumps(result) if args.json else
              "\n".join(f"{k}: {v}" for k, v in result.items()))
        return 0

    from app.settings import open_settings

    options = {"robot": args.robot, "workspace": args.workspace}
    window = create_main_window(options, settings=open_settings(args.settings))
    window.show()

    if args.self_test:
        try:
            return run_self_test(window, app)
        except Exception:  # noqa: BLE001
            print(json.dumps({"ok": False, "failures": [traceback.format_exc()]}, indent=2))
            return 1
        finally:
            window.ask_before_quit = False
            window.close()

    from PySide6.QtCore import QTimer

    for path in args.open:
        QTimer.singleShot(0, lambda p=path: window.open_file(p))
    screenshot_written = lambda: True  # noqa: E731
    if args.screenshot:
        screenshot_written = _schedule_screenshot(window, args.screenshot)
    if args.quit_after is not None:
        _schedule_quit(window, args.quit_after, screenshot_written)
    started = time.monotonic()
    code = app.exec()
    log.info("exited after %.1f s", time.monotonic() - started)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
