"""The Car planner's Optimise: one trajectory optimisation as a job (on the chosen model, or on
each compared model), its live iterate handed to the state, its outcome said in the status line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject

from app.workspaces.car.jobs import Latest, optimise_job
from app.workspaces.car.model_panel import clean_error
from app.workspaces.car.models import SIM
from app.workspaces.car.plan_panel import PlanPanel
from app.workspaces.car.state import CarPlannerState, PlanResult

__all__ = ["PlanOptimiser"]


class PlanOptimiser(QObject):
    """Submits and follows the optimisation job; ``say(text)`` writes the page's status line."""

    def __init__(self, ctx, state: CarPlannerState, panel: PlanPanel, catalogue: Callable,
                 current_model: Callable[[], str | None], say: Callable[[str], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self.ctx, self.state, self.panel = ctx, state, panel
        self._catalogue, self._current_model, self.say = catalogue, current_model, say
        self.job = None
        self._live = Latest()
        self._variant_count = 1
        self._max_iterations = 0
        self._plan = None

    def optimise(self):
        """Start optimising the state's plan; returns the job's handle (None when nothing started:
        one is running, or the problem is refused, with its reason said)."""
        if self.job is not None:
            return None
        p = self.panel
        try:
            cfg = p.opt_form.value()
            if not self.state.targets:
                raise ValueError("Place at least one target first (click and drag on the canvas).")
        except ValueError as exc:
            if self.state.targets:
                self.ctx.show_error("Car planner", str(exc))
            self.say(str(exc))
            return None
        if p.compare_models.isEnabled() and p.compare_models.isChecked():
            variants = self._catalogue().compared_variants(self._current_model())
            compare = None
            what = " and ".join(f"{label} ({Path(spec).name})" for label, spec in variants)
        else:
            variants = [("plan", p.model_combo.currentData() or SIM)]
            compare = p.compare_combo.currentData() or None
            what = p.model_combo.currentText()
        self._variant_count = len(variants)
        self._max_iterations = cfg.max_iterations
        self._plan = plan = self.state.begin_optimise()
        self.say(f"Optimising on {what}…")
        self.job = self.ctx.jobs.submit(
            optimise_job(plan, variants, compare, self.state.params, cfg, self._live),
            name="Optimise car trajectory", on_result=self._on_result, on_error=self._on_failed,
            on_progress=self._on_progress, on_cancelled=lambda: self.say("Cancelled."))
        self.job.ended.connect(self._on_ended)
        return self.job

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _on_progress(self, update) -> None:
        """The engine's words (the iteration of the budget, its time, the most time left) and the
        cost; the job's bar in the status bar shows the fraction."""
        live = self._live.take()
        message = update.message or ""
        if live is None:
            if message:
                self.say(f"Optimising: {message}")
            return
        self.state.update_live(live)
        if "iteration" not in message:        # a report of another part of the job
            who = f"{live['label']}: " if self._variant_count > 1 else ""
            message = f"{who}iteration {live['iteration']} of at most {self._max_iterations}"
        self.say(f"{message}; cost {live['costs'][-1]:.4g}")

    def _on_result(self, res: dict) -> None:
        result = PlanResult.from_job(self._plan, res)
        self.state.finish_optimise(result)
        if result.compared:
            rows = "; ".join(f"{v.label}: {v.executed_position_error:.2f} m / "
                             f"{v.executed_heading_error:.2f} rad" for v in result.variants)
            self.say(f"Planned on {len(result.variants)} models. Executed on the simulator: {rows}.")
            return
        m = result.main
        errs = ", ".join(f"step {e['step']}: {e['position_error']:.2f} m / {e['heading_error']:.2f} rad"
                         for e in m.target_errors)
        self.say(f"{'Converged' if m.converged else 'Stopped'} after {m.iterations} iterations "
                  f"({m.seconds:.2f} s) on {m.model}. Targets: {errs}. Executed on the simulator: "
                  f"{m.executed_position_error:.2f} m, {m.executed_heading_error:.2f} rad.")

    def _on_failed(self, message, tb) -> None:
        message = clean_error(message)
        self.say(f"Failed: {message}")
        self.ctx.show_error("Car planner", message)

    def _on_ended(self) -> None:
        self.job = None
        self.state.end_optimise()

