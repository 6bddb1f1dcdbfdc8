"""The Eigenmode designer's state, without Qt: what the user set, what was learned and simulated.

:class:`EigenmodeState` holds the design (plant, task, loss weights, training settings), the
stabiliser's settings, whether a canvas drag sets the perturbed start, the designed mode and
the stabilised run (engine dataclasses), the live loss history of a learning job and the
animation's time. Jobs go through a runner with ``submit(job, name=, on_result=, on_error=,
on_progress=, on_cancelled=)`` (the app's ``JobRunner``). Every change is announced through
plain callbacks in :attr:`EigenmodeState.events`; the page observes them and only lays out
widgets and forwards input. Tests drive this object directly.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from pathlib import Path

import numpy as np

from app.device_preference import preferred_device
from app.widgets.events import Events
from engine.eigenmodes.config import ConfigError, DesignConfig, StabiliseConfig, config_from_dict
from engine.eigenmodes.jobs import LearnJob, StabiliseJob, learn_summary, stabilise_summary
from engine.eigenmodes.storage import (
    load_mode,
    save_mode,
    stabilised_csv,
    trajectory_csv,
    write_trajectory_csv,
)
from engine.paths import user_runs_dir
from engine.systems.double_pendulum import DoublePendulumParams

__all__ = ["LOSS_TERMS", "SOURCES", "EigenmodeState", "LearnStatus", "fk"]

_PENDING = object()
LOSS_TERMS = ("total", "task", "constraint", "effort")
SOURCES = ("mode", "stabilised run")


def fk(q, P: DoublePendulumParams):
    """(elbow, tip) as numpy arrays for one configuration (the engine's convention)."""
    q1, q2 = float(q[0]), float(q[1])
    elbow = np.array([P.l1 * math.sin(q1), -P.l1 * math.cos(q1)])
    tip = elbow + np.array([P.l2 * math.sin(q1 + q2), -P.l2 * math.cos(q1 + q2)])
    return elbow, tip


@dataclasses.dataclass
class LearnStatus:
    """The last progress report of a learning job."""

    epoch: int
    total: float
    tip_error: float       # m
    constraint: float
    period: float          # s


class EigenmodeState:
    """Events (each a plain callback list):

    - ``design(DesignConfig)``: the design changed (forms and canvas follow it);
    - ``stabilise_config(StabiliseConfig)``, ``drag_perturbed(bool)``;
    - ``ghost(q or None)``: the perturbed start to draw;
    - ``busy()``: learning / stabilising started or ended (read :attr:`learning`, :attr:`stabilising`);
    - ``progress(LearnStatus)``, ``preview(tip (n, 2), elbow (n, 2), epoch)`` during learning;
    - ``mode(mode or None)``: a new designed mode (learned or loaded);
    - ``stabilised(result or None)``;
    - ``message(html)``: the summary line; ``error(title, message)``: something failed;
    - ``frame(t, q)``: the animation moved.
    """

    def __init__(self, runner=None, design: DesignConfig | None = None):
        self.events = Events("design", "stabilise_config", "drag_perturbed", "ghost", "busy", "progress",
                             "preview", "mode", "stabilised", "message", "error", "frame")
        self.runner = runner
        self.design = design or DesignConfig()
        self.stabilise_config = StabiliseConfig()
        self.drag_perturbed = False
        self.mode = None                     # DesignedMode of the last learn / load
        self.mode_saved_to: Path | None = None   # where the user saved (or loaded) it; None: unsaved
        self.stab_result = None              # StabiliseResult of the last stabilise run
        self.history: dict[str, list[float]] = {k: [] for k in LOSS_TERMS}
        self.status: LearnStatus | None = None
        self.message = "Drag the links to set the start, click to set the target, then Learn."
        self.source = SOURCES[0]
        self.t = 0.0
        self.learn_handle = None
        self.stab_handle = None
        self._preview_lock = threading.Lock()
        self._preview = None

    # ------------------------------------------------------------------ design
    @property
    def plant(self) -> DoublePendulumParams:
        return self.design.plant

    @property
    def learning(self) -> bool:
        return self.learn_handle is not None

    @property
    def stabilising(self) -> bool:
        return self.stab_handle is not None

    def set_design(self, design: DesignConfig) -> None:
        self.design = design
        self.events.design.emit(design)
        self._emit_ghost()

    def update_design(self, **parts) -> None:
        """Replace parts of the design: ``task=``, ``weights=``, ``train=``, ``plant=``."""
        self.set_design(dataclasses.replace(self.design, **parts))

    def set_q0(self, q) -> None:
        self.update_design(task=dataclasses.replace(self.design.task, q0=(float(q[0]), float(q[1]))))

    def set_target(self, xy) -> None:
        self.update_design(task=dataclasses.replace(self.design.task, target=(float(xy[0]), float(xy[1]))))

    def set_stabilise_config(self, config: StabiliseConfig) -> None:
        self.stabilise_config = config
        self.events.stabilise_config.emit(config)
        self._emit_ghost()

    def set_drag_perturbed(self, on: bool) -> None:
        self.drag_perturbed = bool(on)
        self.events.drag_perturbed.emit(self.drag_perturbed)
        self._emit_ghost()

    def drag_to(self, q) -> None:
        """A canvas drag reached configuration ``q``: the start, or the perturbed start."""
        if self.drag_perturbed:
            q0 = np.asarray(self.design.task.q0)
            dq = (float(q[0] - q0[0]), float(q[1] - q0[1]))
            self.set_stabilise_config(dataclasses.replace(self.stabilise_config, perturb_q=dq))
        else:
            self.set_q0(q)

    def ghost(self):
        """The perturbed start ``q0 + perturb_q`` when it is shown, else None."""
        if self.drag_perturbed or self.stab_result is not None:
            return np.asarray(self.design.task.q0) + np.asarray(self.stabilise_config.perturb_q)
        return None

    def _emit_ghost(self) -> None:
        self.events.ghost.emit(self.ghost())

    def _say(self, text: str) -> None:
        self.message = text
        self.events.message.emit(text)

    # ------------------------------------------------------------------ learning
    def _preview_sink(self, orbit: dict) -> None:     # called from the worker thread
        with self._preview_lock:
            self._preview = orbit

    def learn(self) -> bool:
        """Start learning the current design (False when it is invalid or a job runs)."""
        if self.learning:
            return False
        try:
            design = dataclasses.replace(self.design, train=dataclasses.replace(self.design.train,
                                                                               device=preferred_device()))
            run_dir = user_runs_dir("eigenmode") / time.strftime("%Y%m%d-%H%M%S")
            job = LearnJob(
                design, preview=self._preview_sink, run_dir=run_dir
            )  # resumable: eigenmode learn --resume
        except ValueError as exc:
            self._say(f"<b>Cannot learn:</b> {exc}")
            self.events.error.emit("Eigenmode design", str(exc))
            return False
        self.history = {k: [] for k in LOSS_TERMS}
        self.status = None
        self._say("Learning…")
        self.learn_handle = _PENDING        # a runner may finish the job inside submit()
        handle = self.runner.submit(job, name="Learn eigenmode", on_result=self._on_learned,
                                    on_error=self._on_learn_error, on_progress=self._on_learn_progress,
                                    on_cancelled=self._on_learn_cancelled)
        if self.learn_handle is _PENDING:
            self.learn_handle = handle
            self.events.busy.emit()
        return True

    def cancel(self) -> None:
        for h in (self.learn_handle, self.stab_handle):
            if h is not None and h is not _PENDING:
                h.cancel()

    def _on_learn_progress(self, update) -> None:
        m = update.metrics or {}
        if "epoch" in m:
            epoch = int(m["epoch"])
            for k in LOSS_TERMS:
                if k in m:
                    self.history[k].append(float(m[k]))
            self.status = LearnStatus(
                epoch,
                float(m.get("total", math.nan)),
                float(m.get("tip_error", math.nan)),
                float(m.get("constraint", math.nan)),
                float(m.get("period", math.nan)),
            )
            s = self.status
            self.events.progress.emit(s)
            self._say(f"epoch {s.epoch}: loss {s.total:.3g}, tip error {100 * s.tip_error:.1f} cm, "
                      f"constraint {s.constraint:.2g}, T = {s.period:.3f} s")
        with self._preview_lock:
            orbit, self._preview = self._preview, None
        if orbit is not None:
            elbow = np.array([fk(q, self.plant)[0] for q in orbit["q"]])
            self.events.preview.emit(np.asarray(orbit["tip"]), elbow, int(orbit["epoch"]))

    def _learn_ended(self) -> None:
        self.learn_handle = None
        self.events.busy.emit()

    def _on_learned(self, mode) -> None:
        self.learn_handle = None
        self.set_mode(mode)
        self.events.busy.emit()

    def _on_learn_error(self, message: str, _tb: str = "") -> None:
        self._learn_ended()
        self._say(f"<b>Learning failed:</b> {message}")
        self.events.error.emit("Eigenmode learning failed", message)

    def _on_learn_cancelled(self) -> None:
        self._learn_ended()
        self._say("Learning cancelled.")

    # ------------------------------------------------------------------ results
    def set_mode(self, mode) -> None:
        """Show a designed mode (learned or loaded); its design becomes the current one."""
        self.mode = mode
        self.mode_saved_to = None
        self.stab_result = None
        self.history = {k: [float(v) for v in mode.history.get(k, [])] for k in LOSS_TERMS}
        self.set_design(mode.design)
        self.source, self.t = SOURCES[0], 0.0
        self.events.mode.emit(mode)
        self.events.stabilised.emit(None)
        self._say(self.mode_summary())
        self.events.frame.emit(*self.frame())

    def mode_summary(self) -> str:
        if self.mode is None:
            return ""
        c = learn_summary(self.mode)
        return (f"<b>Mode</b>: tip error {100 * c['tip_error']:.2f} cm, periodicity error "
                f"{c['periodicity_error']:.2e}, |p(T/2)| {c['p_half_norm']:.2e}, line-shaped: "
                f"{'yes' if c['line_shaped'] else 'no'}, effort {c['control_effort']:.3g}, "
                f"T = {c['period']:.3f} s, learned in {c['seconds']:.1f} s")

    # ------------------------------------------------------------------ stabilise
    def stabilise(self) -> bool:
        if self.mode is None or self.stabilising:
            return False
        try:
            job = StabiliseJob(self.mode, self.stabilise_config)
        except ValueError as exc:
            self._say(f"<b>Cannot stabilise:</b> {exc}")
            self.events.error.emit("Stabilise", str(exc))
            return False
        self.stab_handle = _PENDING
        handle = self.runner.submit(job, name="Stabilise eigenmode", on_result=self._on_stabilised,
                                    on_error=self._on_stab_error, on_cancelled=self._stab_ended)
        if self.stab_handle is _PENDING:
            self.stab_handle = handle
            self.events.busy.emit()
        return True

    def _stab_ended(self) -> None:
        self.stab_handle = None
        self.events.busy.emit()

    def _on_stab_error(self, message: str, _tb: str = "") -> None:
        self._stab_ended()
        self._say(f"<b>Stabilise failed:</b> {message}")
        self.events.error.emit("Stabilise failed", message)

    def _on_stabilised(self, result) -> None:
        self.stab_handle = None
        self.set_stabilised(result)
        self.events.busy.emit()

    def set_stabilised(self, result) -> None:
        self.stab_result = result
        self.events.stabilised.emit(result)
        s = stabilise_summary(result)
        mults = ", ".join(f"{complex(*m):.3f}" for m in s["cycle_multipliers"])
        self._say(
            self.mode_summary() + f"<br><b>Stabilised</b>: energy error {s['energy_error_final']:.2e} J, "
            f"distance {s['position_distance_final']:.2e} rad / {s['momentum_distance_final']:.2e}; "
            f"multipliers {mults}"
        )
        self.source, self.t = SOURCES[1], 0.0
        self._emit_ghost()
        self.events.frame.emit(*self.frame())

    # ------------------------------------------------------------------ animation
    def series(self):
        """``(t, q)`` of the shown source (the mode's period or the stabilised run), or (None, None)."""
        if self.source == SOURCES[1] and self.stab_result is not None:
            return self.stab_result.t, self.stab_result.q
        if self.mode is not None:
            return self.mode.trajectory["t"], self.mode.trajectory["q"]
        return None, None

    def set_source(self, source: str) -> None:
        self.source = source if source in SOURCES else SOURCES[0]
        self._emit_frame()

    def frame(self):
        """``(t, q)`` the animation shows now (None, None before a mode exists)."""
        t, q = self.series()
        if t is None:
            return None, None
        i = int(np.clip(np.searchsorted(t, self.t), 0, len(t) - 1))
        return float(t[i]), q[i]

    def advance(self, seconds: float) -> None:
        """Move the animation on by ``seconds`` (the mode loops; the stabilised run restarts)."""
        t, _ = self.series()
        if t is None:
            return
        self.t += seconds
        if self.t > t[-1]:
            self.t = self.t % t[-1] if self.source == SOURCES[0] else 0.0
        self._emit_frame()

    def seek(self, fraction: float) -> None:
        t, _ = self.series()
        if t is None:
            return
        self.t = float(np.clip(fraction, 0.0, 1.0)) * float(t[-1])
        self._emit_frame()

    def fraction(self) -> float:
        t, _ = self.series()
        return float(self.t / t[-1]) if t is not None and t[-1] > 0 else 0.0

    def cursor_time(self, t: float) -> float:
        """The time on the mode's plots (one period) of animation time ``t``."""
        return t if self.source == SOURCES[0] or self.mode is None else t % self.mode.period

    def _emit_frame(self) -> None:
        t, q = self.frame()
        if t is not None:
            self.events.frame.emit(t, q)

    # ------------------------------------------------------------------ files
    def save_mode_to(self, directory: str) -> Path:
        if self.mode is None:
            raise ValueError("no designed mode to save: learn or load one first")
        save_mode(self.mode, directory)
        self.mode_saved_to = Path(directory)
        return Path(directory) / "mode.json"

    def load_mode_from(self, directory: str) -> Path:
        mode = load_mode(directory)   # raises a ValueError naming the file; nothing changes then
        self.set_mode(mode)
        self.mode_saved_to = Path(directory)
        return Path(directory) / "mode.json"

    def export_csv_to(self, path: str) -> list[str]:
        if self.mode is None:
            raise ValueError("no designed mode to export: learn or load one first")
        written = [str(write_trajectory_csv(trajectory_csv(self.mode), path))]
        if self.stab_result is not None:
            p = Path(path)
            written.append(str(write_trajectory_csv(stabilised_csv(self.stab_result),
                                                    p.with_name(p.stem + "_stabilised.csv"))))
        return written

    def unsaved_work(self) -> list[str]:
        """One line per result a quit would lose: a designed mode not saved to a folder, a running job."""
        out = []
        if self.learning:
            out.append("Eigenmode: learning is running (its last checkpoint stays in its run folder)")
        if self.mode is not None and self.mode_saved_to is None:
            where = getattr(self.mode, "run_dir", None)
            out.append(
                "Eigenmode: the designed mode is not saved" + (f" (its run folder: {where})" if where else "")
            )
        return out

    # ------------------------------------------------------------------ sessions
    def session_state(self) -> dict:
        return {"design": self.design.to_dict(), "stabilise": dataclasses.asdict(self.stabilise_config)}

    def restore_session_state(self, state: dict) -> None:
        """Raises ValueError (naming the part) when the session's values are malformed."""
        try:
            design = DesignConfig.from_dict(state["design"]) if "design" in state else None
            stab = (
                config_from_dict(StabiliseConfig, state["stabilise"], "stabilise")
                if "stabilise" in state
                else None
            )
        except (ConfigError, TypeError, KeyError) as exc:
            raise ValueError(str(exc)) from None
        if design is not None:
            self.set_design(design)
        if stab is not None:
            self.set_stabilise_config(stab)
