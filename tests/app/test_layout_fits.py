"""The Model lab and the Eigenmode designer fit a laptop screen and grow to a large one: shown in the
main window at 1366 x 768, 1400 x 900 and 1920 x 1080, every visible widget lies inside the window,
none is cut off, and no page asks for more width than the screen has (the shared check of
tests/app/geometry.py)."""

from __future__ import annotations

import pytest

from tests.app.geometry import SCREENS, layout_problems, settle


@pytest.mark.parametrize("workspace", ["model_lab", "eigenmode"])
def test_workspace_fits_every_screen(make_window, workspace):
    window = make_window()
    settle()                      # the window restores its last workspace after it is shown
    window.show_workspace(workspace)
    # a page shown once must not keep the window wide on the others
    window.show_workspace("model_lab")
    window.show_workspace(workspace)
    settle()
    assert window.current_workspace() == workspace and window.page(workspace).isVisible()
    for width, height in SCREENS:
        assert layout_problems(window, width, height) == [], f"at {width} x {height}"
