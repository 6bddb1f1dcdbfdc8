"""Linked plots never squeezed out of sight (issue 32's walk: with the ghost shown at 1366 x 768,
the fourth plot, "ghost − log", had no room and the third lost its time axis): short of room,
the stack scrolls and each plot keeps its least height; the time label stays under the lowest."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QApplication

from app.widgets.linked_plots import PLOT_MIN_HEIGHT, LinkedPlots


def test_a_short_panel_scrolls_its_plots_instead_of_squeezing_them(qtbot):
    plots = LinkedPlots()
    qtbot.addWidget(plots)
    plots.resize(600, 260)
    plots.show()
    t = np.linspace(0.0, 1.0, 20)
    for key, title in (("q", "position"), ("qd", "velocity"), ("tau", "torque"), ("error", "ghost − log")):
        plots.add_plot(key, title, "rad")
        plots.set_curves(key, t, np.zeros((20, 1)), ["joint"])
    QApplication.processEvents()
    assert plots.height() <= 260                                       # it did not grow
    assert plots.layout_widget.height() >= 4 * PLOT_MIN_HEIGHT
    assert plots.scroll.verticalScrollBar().maximum() > 0              # the rest is a scroll away
    for item in plots.plots.values():
        assert item.geometry().height() >= PLOT_MIN_HEIGHT - 1
    assert plots.plots["error"].getAxis("bottom").labelText == "t [s]"
    plots.remove_plot("error")                                         # the ghost hidden again
    QApplication.processEvents()
    assert plots.plots["tau"].getAxis("bottom").labelText == "t [s]"
    assert plots.layout_widget.minimumHeight() < 4 * PLOT_MIN_HEIGHT
    plots.resize(600, 600)                                             # room enough: no scrolling
    QApplication.processEvents()
    assert plots.scroll.verticalScrollBar().maximum() == 0
