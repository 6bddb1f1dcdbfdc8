"""TensorBoard export of run folders (the optional ``tensorboard`` extra).

:func:`export_run` writes a run's metrics (one scalar per column of ``metrics.csv`` against the
epoch, with the wall time of each point) and its hyperparameters with the final metrics (the
HPARAMS tab) as a TensorBoard event file under ``logdir/<run name>``. Runs already on disk export
at any time; nothing in training depends on TensorBoard.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from engine.runs import Run, flatten_config

__all__ = ["export_run", "import_summary_writer"]


def import_summary_writer():
    """``torch.utils.tensorboard.SummaryWriter``, or an ImportError that says how to install it."""
    try:
        import tensorboard  # noqa: F401  (SummaryWriter needs the package)
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise ImportError("TensorBoard export needs the 'tensorboard' package, which is not installed: "
                          "pip install 'lagrange-studio[tensorboard]' (or pip install tensorboard)") from exc
    return SummaryWriter


def _hparam(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return "" if v is None else v
    return str(v)


def export_run(run_dir: str | os.PathLike, logdir: str | os.PathLike, name: str | None = None) -> Path:
    """Write the run in ``run_dir`` for TensorBoard under ``logdir/<name>`` (default: the run
    folder's name); returns that folder. Scalars: ``train/<column>`` per epoch; hyperparameters:
    the run's flattened config with its final metrics as ``final/<metric>``."""
    SummaryWriter = import_summary_writer()
    run = Run.open(run_dir)
    out = Path(logdir) / (name or run.path.name)
    start = time.time()
    with SummaryWriter(log_dir=str(out)) as writer:
        for row in run.metrics:
            for key, value in row.items():
                if key in ("epoch", "step", "wall_time") or not isinstance(value, (int, float)):
                    continue
                writer.add_scalar(f"train/{key}", value, global_step=int(row["epoch"]),
                                  walltime=start + float(row.get("wall_time") or 0.0))
        cfg = {k: v for k, v in run.config.items() if k not in ("format", "kind", "system")}
        hparams = {k: _hparam(v) for k, v in flatten_config(cfg).items()}
        final = {f"final/{k}": float(v) for k, v in (run.info.get("metrics") or {}).items()
                 if isinstance(v, (int, float))}
        if run.metrics and "loss" in run.metrics[-1] and isinstance(run.metrics[-1]["loss"], (int, float)):
            final.setdefault("final/loss", float(run.metrics[-1]["loss"]))
        writer.add_hparams(hparams, final, run_name=".")
    return out
