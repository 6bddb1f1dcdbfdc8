"""Car planner, track mode: draw a track, Drive with MPC at real-time pace, lap time, speed
profile and the control-rate readout."""

import math

import pytest
from PySide6.QtCore import Qt

from app.workspaces.car.jobs import Pacer


@pytest.fixture
def page(car_page):
    return car_page

class FakeClock:
    """A wall clock that moves only when slept on or told to (work of a known length)."""

    def __init__(self):
        self.now = 100.0
        self.slept = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.slept += seconds

    def work(self, seconds):
        self.now += seconds


def test_pacer_holds_a_fast_loop_to_real_time():
    dt, clock = 0.01, FakeClock()
    pacer = Pacer(dt, real_time=True, clock=clock, sleep=clock.sleep)
    start = clock.now
    for k in range(1, 16):
        clock.work(0.002)               # 2 ms of work per 10 ms cycle: the rest is slept
        info = pacer.cycle(k)
    assert clock.now - start == pytest.approx(0.002 + 14 * dt)      # the first cycle sets the schedule
    assert clock.slept == pytest.approx(14 * (dt - 0.002))
    assert info["achieved_hz"] == pytest.approx(1.0 / dt)
    assert info["compute_ms"] == pytest.approx(2.0)
    assert info["target_hz"] == pytest.approx(100.0)


def test_pacer_reports_a_slow_loop_without_sleeping_or_catching_up():
    dt, clock = 0.01, FakeClock()
    free = Pacer(dt, real_time=True, clock=clock, sleep=clock.sleep)
    for k in range(1, 6):
        clock.work(2 * dt)              # work slower than real time: no sleeping, the rate shows it
        info = free.cycle(k)
    assert clock.slept == 0.0
    assert info["achieved_hz"] == pytest.approx(0.5 / dt)
    assert info["compute_ms"] == pytest.approx(2 * dt * 1000)
    clock.work(0.001)                   # fast again: the schedule restarted from the slow cycles, no burst
    free.cycle(6)
    assert clock.slept == pytest.approx(dt - 0.001)


def test_pacer_off_real_time_never_sleeps():
    dt, clock = 0.01, FakeClock()
    free = Pacer(dt, real_time=False, clock=clock, sleep=clock.sleep)
    for k in range(1, 6):
        clock.work(0.001)
        info = free.cycle(k)
    assert clock.slept == 0.0 and info["achieved_hz"] == pytest.approx(1000.0)


def test_drive_a_drawn_track_at_real_time_pace(page, qtbot, ctx):
    page.tabs.setCurrentIndex(1)
    qtbot.mouseClick(page.track_panel.draw_button, Qt.MouseButton.LeftButton)
    assert page.track_panel.draw_button.isChecked()
    page.canvas.setXRange(-3, 3)
    page.canvas.setYRange(-2.5, 2.5)
    for k in range(12):
        th = 2 * math.pi * k / 12
        qtbot.mouseClick(page.canvas.viewport(), Qt.MouseButton.LeftButton,
                         pos=page.canvas.to_pixels(1.95 * math.cos(th), 1.5 * math.sin(th)))
    qtbot.mouseClick(page.track_panel.finish_button, Qt.MouseButton.LeftButton)
    assert page.state.track is not None and page.state.track.name == "drawn"
    form = page.track_panel.mpc_form
    form.editor("horizon").setValue(8)
    form.editor("candidates").setValue(16)
    form.editor("iterations").setValue(1)
    form.editor("target_speed").setValue(2.0)
    assert page.track_panel.real_time_check.isChecked()
    qtbot.mouseClick(page.track_panel.drive_button, Qt.MouseButton.LeftButton)
    assert not page.track_panel.drive_button.isEnabled() and page.track_panel.stop_button.isEnabled()
    qtbot.waitUntil(lambda: "achieved" in page.track_panel.rate_label.text(), timeout=60000)
    assert "driving" in page.track_panel.lap_label.text()
    qtbot.waitUntil(lambda: page.state.drive.result is not None and not page.state.driving, timeout=240000)
    assert ctx.errors == []
    res = page.state.drive.result
    assert res["completed"] and res["real_time"]
    assert page.track_panel.lap_label.text() == f"Lap time: {res['lap_time']:.2f} s"
    # real time: the lap took at least its simulated time on the wall clock
    assert res["wall_seconds"] >= (res["steps"] - 1) * page.params.dt * 0.98
    assert res["achieved_hz"] <= 1.0 / page.params.dt * 1.1
    rate = page.track_panel.rate_label.text()
    assert "Hz achieved" in rate and "ms/cycle" in rate and "iteration per cycle" in rate
    t, v = page.speed_curve.xData, page.speed_curve.yData
    assert len(t) == res["steps"] + 1 and max(v) > 1.0
    assert len(page.canvas.driven.xData) == res["steps"] + 1
    assert page.canvas.legend_names() == ["track edges", "centre line", "driven", "MPC plan", "car"]
    assert page.speed_plot.isVisible() and not page.cost_plot.isVisible()    # only the plots that apply
    page.tabs.setCurrentIndex(0)                 # the plan layer hides the drive
    assert not page.canvas.driven.isVisible() and page.canvas.nominal.isVisible()
    assert not page.speed_plot.isVisible() and page.cost_plot.isVisible() and page.steer_plot.isVisible()


def test_stop_a_drive(page, qtbot):
    assert page.load_track("default")
    page.track_panel.mpc_form.editor("horizon").setValue(6)
    page.track_panel.mpc_form.editor("candidates").setValue(8)
    page.track_panel.mpc_form.editor("iterations").setValue(1)
    qtbot.mouseClick(page.track_panel.drive_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.state.drive is not None and len(page.state.drive.path) >= 3, timeout=60000)
    qtbot.mouseClick(page.track_panel.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not page.state.driving, timeout=30000)
    assert page.track_panel.lap_label.text() == "Lap time: stopped"
    assert page.track_panel.drive_button.isEnabled()
    assert len(page.speed_curve.xData) >= 3
