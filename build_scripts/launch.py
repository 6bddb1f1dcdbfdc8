"""Entry script of the frozen app (PyInstaller): the same as `lagrange-studio`.

``--xacro-worker`` runs the sandboxed xacro expansion instead (engine.robots.xacro_loader starts
the bundled app that way, as a frozen app has no separate Python interpreter)."""

import multiprocessing
import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["--xacro-worker"]:
        from engine.robots.xacro_worker import main as xacro_worker

        sys.exit(xacro_worker())
    from app.main import main

    multiprocessing.freeze_support()
    sys.exit(main())
