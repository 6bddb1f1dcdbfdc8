"""Python's cyclic garbage collector runs on the GUI thread only.

Left automatic, a collection can start in whichever thread happens to allocate, for instance
a job's worker thread in the middle of training; if it then frees Qt objects (a closed
plot's items, a page's widgets) that thread deletes them while the GUI thread uses Qt, and
the two can deadlock (seen in the test suite: a collection in a training job's thread
freeing an earlier window's pyqtgraph items). pyqtgraph's ``GarbageCollector`` turns the
automatic collector off and collects on a GUI-thread timer instead, with the same
generation thresholds. Reference counting still frees everything without cycles at once.
"""

from __future__ import annotations

import gc

__all__ = ["MainThreadGarbageCollector"]


class MainThreadGarbageCollector:
    """Collect cycles every ``interval_s`` on the thread that creates this (the GUI thread).

    Create it after the QApplication; :meth:`stop` gives collection back to Python.
    """

    def __init__(self, interval_s: float = 0.5):
        from pyqtgraph.util.garbage_collector import GarbageCollector

        gc.collect()
        self._collector = GarbageCollector(interval=interval_s)

    def stop(self) -> None:
        self._collector.timer.stop()
        gc.enable()
        gc.collect()
