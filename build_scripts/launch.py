"""Entry script of the frozen app (PyInstaller): the same as `lagrange-studio`."""

import multiprocessing
import sys

from app.main import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
