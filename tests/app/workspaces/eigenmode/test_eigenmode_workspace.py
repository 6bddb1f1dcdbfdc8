"""The Eigenmode designer page: drag the start, click the target, learn, animate, stabilise."""

import numpy as np
import pytest
from PySide6.QtCore import QSettings, Qt

from app.context import AppContext
from app.jobs import JobRunner
from app.workspaces.eigenmode.canvas import fk
from app.workspaces.eigenmode.page import EigenmodePage


@pytest.fixture
def page(qtbot, tmp_path):
    errors = []
    ctx = AppContext(
        jobs=JobRunner(),
        settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
        show_error=lambda title, msg: errors.append((title, msg)),
    )
    w = EigenmodePage(ctx)
    w.errors = errors
    qtbot.addWidget(w)
    w.resize(1400, 850)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.shutdown()
    ctx.jobs.wait_for_done(60000)


def _drag(qtbot, canvas, start_xy, end_xy, steps=6):
    vp = canvas.viewport()
    a = canvas.view_to_widget(*start_xy)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=a)
    for i in range(1, steps + 1):
        f = i / steps
        p = canvas.view_to_widget(start_xy[0] + f * (end_xy[0] - start_xy[0]),
                                  start_xy[1] + f * (end_xy[1] - start_xy[1]))
        qtbot.mouseMove(vp, pos=p)
        qtbot.wait(10)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=p)


def test_drag_click_learn_animate_and_stabilise(page, qtbot, tmp_path):
    canvas = page.canvas
    # drag link 1 (grab it half-way) to about -0.3 rad
    q0 = np.array(page.task_form.value().q0)
    elbow, tip = fk(q0, page.plant)
    _drag(qtbot, canvas, 0.5 * elbow, (np.sin(-0.3) * 0.9, -np.cos(-0.3) * 0.9))
    q_after = np.array(page.task_form.value().q0)
    assert abs(q_after[0] - (-0.3)) < 0.08
    assert abs(q_after[1] - q0[1]) < 1e-9            # link 2's relative angle unchanged
    # drag link 2 (grab it near the tip) so that it hangs at 0.4 rad absolute
    elbow, tip = fk(q_after, page.plant)
    end = elbow + np.array([np.sin(0.4), -np.cos(0.4)]) * 0.9
    _drag(qtbot, canvas, elbow + 0.8 * (tip - elbow), end)
    q_new = np.array(page.task_form.value().q0)
    assert abs(q_new[0] - q_after[0]) < 1e-9
    assert abs((q_new[0] + q_new[1]) - 0.4) < 0.08
    np.testing.assert_allclose(canvas.q, q_new)
    # click a target for the tip
    qtbot.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, pos=canvas.view_to_widget(1.1, -1.4))
    target = np.array(page.task_form.value().target)
    np.testing.assert_allclose(target, [1.1, -1.4], atol=0.03)

    page.train_form.set_field("epochs", 4)
    page.train_form.set_field("dt", 0.1)
    qtbot.mouseClick(page.learn_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.mode is not None, timeout=300000)
    qtbot.waitUntil(lambda: page.learn_handle is None, timeout=10000)
    assert page.errors == []
    mode = page.mode
    np.testing.assert_allclose(mode.design.task.q0, q_new)
    assert len(mode.history["total"]) == 4
    assert len(page.loss_plot.curves["total"].getData()[0]) == 4

    # heatmap shows the learned potential (varies) with the orbit on it
    assert page.potential_maps.has_data()
    img = page.potential_maps.images[0].image
    assert img.shape == (101, 101) and np.ptp(img) > 0
    xs, _ = page.potential_maps.orbits[0][0].getData()
    assert len(xs) == len(mode.trajectory["t"])

    # the animation plays: time advances and the canvas shows the trajectory's configuration
    t0 = page.animation_frame()[0]
    qtbot.mouseClick(page.play_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.animation_frame()[0] > t0 + 0.05, timeout=10000)
    qtbot.mouseClick(page.play_button, Qt.MouseButton.LeftButton)   # pause
    _, q = page.animation_frame()
    np.testing.assert_allclose(canvas.q, q)
    page.scrub.setValue(500)
    assert abs(page.animation_frame()[0] - mode.period / 2) < 0.05

    # stabilise a short run (small settings) and show multipliers
    page.stab_form.set_field("periods", 1.0)
    page.stab_form.set_field("dt", 0.02)
    page.stab_form.set_field("multiplier_steps", 60)
    page.stab_form.set_field("settle_periods", 0.0)
    qtbot.mouseClick(page.stabilise_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.stab_result is not None, timeout=300000)
    assert len(page.stab_plots.energy.getData()[0]) == len(page.stab_result.t)
    assert len(page.stab_plots.mults.getData()[0]) == 3

    # save / load / export
    page.save_mode_to(str(tmp_path / "mode"))
    page.load_mode_from(str(tmp_path / "mode"))
    files = page.export_csv_to(str(tmp_path / "traj.csv"))
    assert len(files) == 1 and (tmp_path / "traj.csv").read_text().startswith("t,q1")
    page.export_png_to(str(tmp_path / "page.png"))
    assert (tmp_path / "page.png").stat().st_size > 1000


def test_an_out_of_range_value_is_rejected_and_learn_disabled(page, qtbot):
    period = page.task_form.editor("period")
    period.lineEdit().selectAll()
    qtbot.keyClicks(period.lineEdit(), "30")
    qtbot.keyClick(period.lineEdit(), Qt.Key.Key_Return)
    assert period.value() == 30.0                                    # not clamped to 20
    assert not page.learn_button.isEnabled()
    assert "above the maximum 20" in page.task_form.problem_label.text()
    assert page.state.design.task.period == 2.5                      # the design keeps its last valid value
    period.lineEdit().selectAll()
    qtbot.keyClicks(period.lineEdit(), "3")
    qtbot.keyClick(period.lineEdit(), Qt.Key.Key_Return)
    assert page.learn_button.isEnabled() and page.state.design.task.period == 3.0


def test_playing_keeps_the_window_and_the_result_tabs_at_1366(make_window, qtbot):
    """Play's "Pause" and a long time label must not widen the middle pane: the window stays
    within a 1366 px screen and the result tabs keep their width (no "Stabil…")."""
    from PySide6.QtWidgets import QApplication

    window = make_window()
    window.resize(1366, 768)
    page = window.show_workspace("eigenmode")
    QApplication.processEvents()
    tabs_width, row_min = page.tabs.width(), page.play_button.parentWidget().minimumSizeHint().width()
    page.play_button.setChecked(True)                       # "Pause"
    page.time_label.setText("t = 123.45 s")
    QApplication.processEvents()
    assert page.play_button.text() == "Pause"
    assert page.play_button.parentWidget().minimumSizeHint().width() == row_min
    assert window.width() <= 1366 and page.tabs.width() == tabs_width
    page.play_button.setChecked(False)
