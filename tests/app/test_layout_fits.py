"""The Model lab and the Eigenmode designer fit a laptop screen and grow to a large one: shown in the
main window at 1366 x 768, 1400 x 900 and 1920 x 1080, every visible widget lies inside the window,
none is cut off, and no page asks for more width than the screen has (the shared check of
tests/app/geometry.py)."""

from __future__ import annotations

import pytest

from tests.app.geometry import SCREENS, layout_problems, settle


@pytest.mark.parametrize("workspace", ["model_lab", "eigenmode"])
def test_workspace_fits_every_screen(make_window, workspace):
    from app.main import _make_application

    _make_application([])           # the app's style and style sheet: they change every size
    window = make_window()
    settle()                      # the window restores its last workspace after it is shown
    window.show_workspace(workspace)
    # a page shown once must not keep the window wide on the others
    window.show_workspace("model_lab")
    window.show_workspace(workspace)
    settle()
    assert window.current_workspace() == workspace and window.page(workspace).isVisible()
    page = window.page(workspace)
    for width, height in SCREENS:
        assert layout_problems(window, width, height, page=page) == [], f"at {width} x {height}"
    if workspace == "model_lab":      # with data the compare view replaces the empty state: it fits too
        from engine.data import DatasetConfig, generate_dataset

        config = DatasetConfig(system="pendulum", train_trajectories=2, test_trajectories=2,
                                  long_term_trajectories=2, long_term_steps=20)
        page.data_panel.set_dataset(
            generate_dataset(config), {"kind": "generated", "config": config.to_dict()}
        )
        assert page.compare_stack.currentWidget() is page.compare_panel
        for width, height in SCREENS:
            assert layout_problems(window, width, height, page=page) == [], (
                f"with data, at {width} x {height}"
            )


def test_the_eigenmode_result_tabs_all_show_at_1366(make_window):
    """The six result tabs fit side by side on a laptop screen (no scroll arrows hiding one)."""
    from app.main import _make_application

    _make_application([])
    window = make_window()
    settle()
    window.show_workspace("eigenmode")
    assert layout_problems(window, 1366, 768) == []
    settle()
    tabs = window.page("eigenmode").tabs
    bar = tabs.tabBar()
    last = bar.tabRect(bar.count() - 1)
    assert bar.count() == 6 and last.right() <= bar.width(), (last.right(), bar.width())
