"""The Model lab's first screen in a real window: the empty state says what to do, and its one click
runs the example to a comparison that lists both models and hides the plots a log cannot have."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.workspaces.model_lab.state import ExampleSettings


def test_empty_state_and_one_click_example(ctx, qtbot):
    from app.workspaces.model_lab.page import ModelLabPage

    page = ModelLabPage(ctx)
    qtbot.addWidget(page)
    page.resize(1366, 700)
    page.show()
    qtbot.waitExposed(page)
    assert page.compare_stack.currentWidget() is page.empty_state
    button = page.empty_state.row.run_button
    assert button.isVisible() and button.text() == "Compare models on an example log"
    page.state.example_settings = ExampleSettings(epochs=2)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not button.isEnabled() and page.empty_state.row.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: page.compare_panel.table.rowCount() == 2, timeout=120000)
    assert not ctx.errors, ctx.errors
    assert page.compare_stack.currentWidget() is page.compare_panel
    runs = list(page.runs_panel.runs.values())
    assert [r.state for r in runs] == ["finished", "finished"]
    assert all(page.runs_panel.loss_plot.points(r.key) == 2 for r in runs)
    assert page.data_panel.dataset is page.state.data.dataset
    panel = page.compare_panel
    assert panel.plots["rollout"].isVisible() and panel.plots["horizon"].isVisible()
    assert not panel.plots["energy"].isVisible() and not panel.plots["inertia"].isVisible()
    assert not panel.plots["size"].isVisible()
    assert "no known energy" in panel.hidden_note.text()
    assert panel.signal.currentText() == "theta [rad]"
    assert panel.plots["rollout"].getPlotItem().getAxis("left").labelText == "theta [rad]"
    page.shutdown()
