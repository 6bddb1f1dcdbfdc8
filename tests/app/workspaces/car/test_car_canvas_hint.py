"""The Car planner's first screen says what to do: a hint over the empty canvas, gone once a target
is placed or the track layer is shown."""

from __future__ import annotations

from app.workspaces.car.canvas import CarCanvas


def test_the_empty_canvas_says_what_to_do(qtbot):
    canvas = CarCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(900, 600)
    canvas.show()
    qtbot.waitExposed(canvas)
    assert canvas.hint.isVisible() and "Optimise" in canvas.hint.text()
    assert canvas.rect().contains(canvas.hint.geometry())
    canvas.set_targets([(1.0, 0.5, 0.0, 20)])
    assert not canvas.hint.isVisible()
    canvas.set_targets([])
    assert canvas.hint.isVisible()
    canvas.set_layer("track")
    assert not canvas.hint.isVisible()
