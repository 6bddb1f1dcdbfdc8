"""The Car planner's Track tab at work: choosing, loading and drawing a track, and MPC laps on it
as a job whose every control cycle is handed to the state."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject

from app.workspaces.car.canvas import CarCanvas
from app.workspaces.car.files import guarded
from app.workspaces.car.jobs import Feed, drive_job
from app.workspaces.car.model_panel import clean_error
from app.workspaces.car.models import SIM
from app.workspaces.car.state import CarPlannerState
from app.workspaces.car.track_panel import TrackPanel

__all__ = ["TrackDriver"]


class TrackDriver(QObject):
    """Tracks and MPC laps; ``show_panel()`` brings the Track tab forward, ``model()`` is the
    model chosen under "Plan on", ``say(text)`` writes the page's status line."""

    def __init__(self, ctx, state: CarPlannerState, canvas: CarCanvas, panel: TrackPanel,
                 show_panel: Callable[[], None], model: Callable[[], str | None],
                 say: Callable[[str], None], parent: QObject | None = None):
        super().__init__(parent)
        self.ctx, self.state, self.canvas, self.panel = ctx, state, canvas, panel
        self._show_panel, self._model, self._say = show_panel, model, say
        self.job = None
        self._feed = Feed()
        panel.track_combo.currentTextChanged.connect(self._on_track_chosen)
        panel.draw_button.toggled.connect(self.toggle_draw)
        panel.finish_button.clicked.connect(self.finish_drawn_track)
        panel.drive_button.clicked.connect(self.drive)
        panel.stop_button.clicked.connect(self.stop)

    # -- tracks ------------------------------------------------------------------------------
    def refresh_tracks(self) -> None:
        from engine.car.tracks import track_names

        combo = self.panel.track_combo
        combo.blockSignals(True)
        combo.clear()
        for name in track_names():
            combo.addItem(name, name)
        combo.blockSignals(False)

    def _on_track_chosen(self, _name: str) -> None:
        data = self.panel.track_combo.currentData()
        if data:
            self.load_track(data)

    def load_track(self, path_or_name) -> bool:
        if not guarded(self.ctx, self._say, "Track", lambda: self.state.load_track(path_or_name)):
            return False
        t = self.state.track
        self._show_panel()
        if self.canvas.layer == "track":
            self.canvas.fit_view()
        self._say(f"Track {t.name}: {t.length:.1f} m, {t.width:.2f} m wide.")
        return True

    def toggle_draw(self, on: bool) -> None:
        self.canvas.set_mode("draw_track" if on else "targets")
        self.panel.finish_button.setEnabled(on)
        if on:
            self._say("Click the centre line's points in order; Finish closes the loop.")

    def finish_drawn_track(self) -> bool:
        """Close the drawn centre line into a track (at least 4 points)."""
        from engine.car.tracks import Track

        try:
            points = np.asarray(list(self.canvas.draw_points), dtype=float).reshape(-1, 2)
            track = Track("drawn", points, self.panel.width_spin.value())
        except ValueError as exc:
            self._say(str(exc))
            return False
        self.panel.draw_button.setChecked(False)
        self.state.set_track(track)
        self._show_panel()
        self._say(f"Drawn track: {track.length:.1f} m. Press Drive.")
        return True

    # -- MPC laps ------------------------------------------------------------------------------
    def drive(self) -> None:
        t = self.panel
        if self.state.track is None and (
            not t.track_combo.count() or not self.load_track(t.track_combo.currentData())
        ):
            return
        if self.job is not None:
            return
        try:
            cfg = t.mpc_form.value()
        except ValueError as exc:
            self.ctx.show_error("MPC", str(exc))
            return
        spec = self._model() or SIM
        self._feed.take_all()
        self.state.begin_drive()
        self.canvas.set_legend([(self.canvas.driven, "driven"), (self.canvas.mpc_plan, "MPC plan")], "track")
        self.job = self.ctx.jobs.submit(
            drive_job(self.state.track, spec, self.state.params, cfg, t.laps_spin.value(), self._feed,
                      t.real_time_check.isChecked()), name="MPC laps",
            on_result=self._on_driven, on_error=self._on_failed, on_progress=self._on_progress,
            on_cancelled=lambda: self.state.end_drive(stopped=True))
        self.job.ended.connect(self._on_ended)

    def stop(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _on_progress(self, update) -> None:
        cycles = self._feed.take_all()
        if cycles:
            self.state.add_cycles(cycles)
            info = cycles[-1]
            self._say(f"t = {info['time']:.1f} s, {info['speed']:.2f} m/s, "
                      f"off centre {info['deviation']:.2f} m")

    def _on_driven(self, res: dict) -> None:
        self._feed.take_all()
        self.state.finish_drive(res)
        lap = f"{res['lap_time']:.2f} s" if res["lap_time"] else "not completed"
        self._say(f"MPC: lap {lap}, max deviation {res['max_track_deviation']:.2f} m, "
                  f"{res['control_rate_hz']:.1f} Hz control rate, "
                  f"{res['iterations_per_cycle']} iterations/cycle.")

    def _on_failed(self, message, tb) -> None:
        message = clean_error(message)
        self._say(f"Failed: {message}")
        self.ctx.show_error("Car planner", message)

    def _on_ended(self) -> None:
        self.job = None
        self.state.end_drive()
