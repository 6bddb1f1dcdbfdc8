"""Job bodies shared by the CLI and the GUI: learn a mode, stabilise it (with cycle multipliers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from engine.eigenmodes.config import DesignConfig, StabiliseConfig
from engine.eigenmodes.multipliers import stabilised_cycle_multipliers
from engine.eigenmodes.stabilise import StabilisingController, simulate_stabilised
from engine.eigenmodes.train import learn_mode
from engine.jobs import JobContext, NullJobContext

__all__ = ["LearnJob", "StabiliseJob", "learn_summary", "stabilise_summary"]


class LearnJob:
    """``job(ctx) -> DesignedMode`` for a snapshot of ``design`` (copied at construction)."""

    def __init__(self, design: DesignConfig, preview: Callable[[dict], None] | None = None,
                 run_dir: str | Path | None = None):
        self.design = DesignConfig.from_dict(design.to_dict())
        self.design.validate()
        self.preview = preview
        self.run_dir = run_dir      # a run folder (engine.runs: config, metrics, checkpoints; resumable)

    def __call__(self, ctx: JobContext):
        if self.run_dir is not None:
            from engine.eigenmodes.storage import learn_into

            return learn_into(self.design, self.run_dir, ctx, preview=self.preview)
        return learn_mode(self.design, ctx, preview=self.preview)


class StabiliseJob:
    """``job(ctx) -> StabiliseResult`` (with ``result.cycle`` filled when ``multipliers``)."""

    def __init__(
        self, mode, config: StabiliseConfig, x0=None, multipliers: bool = True, check_fd: bool = False
    ):
        config.validate()
        self.controller = StabilisingController.for_mode(mode, config)
        self.x0 = None if x0 is None else torch.as_tensor(np.asarray(x0, dtype=float), dtype=torch.float64)
        self.multipliers = multipliers
        self.check_fd = check_fd

    def __call__(self, ctx: JobContext | None = None):
        ctx = ctx or NullJobContext()
        result = simulate_stabilised(self.controller, self.x0, ctx)
        if self.multipliers:
            ctx.progress(None, "cycle multipliers (monodromy by autodiff)")
            ctx.check_cancelled()
            cfg = self.controller.config
            result.cycle = stabilised_cycle_multipliers(self.controller, settle_periods=cfg.settle_periods,
                                                        steps_per_period=cfg.multiplier_steps,
                                                        check_fd=self.check_fd)
        return result


def learn_summary(mode) -> dict:
    """The CLI's JSON for a learned mode."""
    c = mode.checks
    return {"tip_error": c["tip_error"], "periodicity_error": c["periodicity_error"],
            "p_half_norm": c["p_half_norm"], "line_shaped": bool(c["line_shaped"]),
            "control_effort": c["control_effort"], "period": mode.period, "seconds": mode.seconds}


def stabilise_summary(result) -> dict:
    """The CLI's JSON for a stabilised run."""
    m = result.metrics
    out = {
        "energy_error_final": m["energy_error_final"],
        "position_distance_final": m["position_distance_final"],
        "momentum_distance_final": m["momentum_distance_final"],
        "position_distance_final_mean": m["position_distance_final_mean"],
        "momentum_distance_final_mean": m["momentum_distance_final_mean"],
    }
    if result.cycle:
        vals = result.cycle["nontrivial"]
        out["cycle_multipliers"] = [[float(v.real), float(v.imag)] for v in vals]
        out["trivial_multiplier"] = [float(result.cycle["multipliers"][result.cycle["trivial_index"]].real),
                                     float(result.cycle["multipliers"][result.cycle["trivial_index"]].imag)]
        out["max_multiplier_modulus"] = result.cycle["max_nontrivial_modulus"]
        if "fd_max_abs_error" in result.cycle:
            out["monodromy_fd_error"] = result.cycle["fd_max_abs_error"]
    else:
        out["cycle_multipliers"] = []
    return out
