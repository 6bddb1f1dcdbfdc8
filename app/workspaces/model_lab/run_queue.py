"""The Model lab's training runs without Qt: the runs, the queue that starts them as parallel
slots free up, their progress and ETA, cancel and resume (napari's ``components`` layer for the
Models panel, which observes it and lays out the table and curves).

``RunQueue(submit)`` takes the app's job runner's ``submit`` (``submit(job, name=...,
on_result=..., on_error=..., on_progress=..., on_cancelled=...) -> handle``); tests pass a
runner that runs jobs at once. Events (``queue.events.<name>.connect(callback)``):

- ``changed(run)``: a run's state, progress, ETA, loss or message changed (its table row).
- ``curve(run)``: a run's loss history changed (cleared when it is queued afresh).
- ``started(run)``: a run's job was submitted.
- ``finished(run)``: a run's results arrived (metrics row, curves, trained model).
- ``error(title, message)``: something to tell the user (a run failed, cannot start or resume).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.widgets.events import Events
from app.workspaces.model_lab import lab_jobs

__all__ = ["Run", "RunQueue", "eta_seconds"]


# what a run keeps when a training cannot start or fails (Run.keep_results)
KEPT_FIELDS = ("state", "fraction", "eta", "loss", "losses", "history", "row", "curves", "model", "model_path",
               "data_hash", "data_source", "message", "train_config")
MODEL_FILE = "model.json"          # a run folder's final model (engine.training writes it)
REMOVED_MARK = "removed-from-lab"  # a run folder the user removed from the table: not listed again
COMPARE_PREFIX = "robot_compare_"  # a robot comparison's folder in the lab's folder (state.py names it)


@dataclass
class Run:
    """One model of the lab: its type and hyperparameters, and once trained its results."""

    key: str
    name: str
    model_type: str
    train_config: object             # engine TrainConfig
    spec: object | None              # engine ModelSpec (only the SPEC_FIELDS matter)
    index: int = 0                   # colour index
    state: str = "ready"             # ready, queued, running, finished, failed, cancelled, loaded
    fraction: float = 0.0
    eta: float | None = None
    loss: float | None = None
    losses: list = field(default_factory=list)
    row: dict | None = None
    curves: dict | None = None
    model: object | None = None
    model_path: str | None = None
    data_hash: str | None = None     # of the data it was trained on
    data_source: dict | None = None
    message: str = ""
    handle: object | None = None
    started: float | None = None
    run_dir: str | None = None       # the run folder (config, metrics, checkpoints, final model)
    resume: bool = False             # the next training continues the run folder's last checkpoint
    history: list = field(default_factory=list)   # per-epoch rows: epoch, step, wall_time, loss
    kept: dict | None = None         # what the run had before it was queued (see keep_results)

    @property
    def has_results(self) -> bool:
        return self.row is not None

    def keep_results(self) -> None:
        """Remember the run's state and results before a training that may not happen (its folder
        in use) or may fail: :meth:`restore_results` brings them back, nothing is lost."""
        self.kept = {f: getattr(self, f) for f in KEPT_FIELDS}

    def restore_results(self) -> None:
        for f, value in (self.kept or {}).items():
            setattr(self, f, value)

    def to_state(self) -> dict:
        return lab_jobs.jsonable(
            {
                "key": self.key,
                "name": self.name,
                "type": self.model_type,
                "train_config": self.train_config.to_dict(),
                "spec": {f: getattr(self.spec, f) for f in lab_jobs.SPEC_FIELDS} if self.spec else None,
                "state": self.state if self.state in ("finished", "loaded") else "ready",
                "losses": self.losses,
                "row": self.row,
                "model_path": self.model_path,
                "message": self.message,
                "run_dir": self.run_dir,
            }
        )


def eta_seconds(elapsed: float, fraction: float) -> float | None:
    """Seconds left of a job ``fraction`` (0..1) done after ``elapsed`` seconds, at the pace so
    far; None before any measurable progress."""
    return elapsed * (1 - fraction) / fraction if fraction > 1e-6 else None


class RunQueue:
    """The runs and their training queue (see the module docstring)."""

    def __init__(self, submit: Callable, model_folder: str | Path | None = None, parallel: int = 2,
                 clock: Callable[[], float] = time.monotonic):
        self.events = Events("changed", "curve", "started", "finished", "error")
        self.submit = submit
        self.model_folder = Path(model_folder) if model_folder else None
        self.clock = clock
        self.runs: dict[str, Run] = {}
        self.queue: list[str] = []          # keys waiting for a slot, in order
        self.dataset = None
        self.source: dict | None = None
        self._parallel = max(1, int(parallel))

    # -- the queue ---------------------------------------------------------------------
    @property
    def parallel(self) -> int:
        """How many runs train at once (the others wait in the queue)."""
        return self._parallel

    @parallel.setter
    def parallel(self, n: int) -> None:
        self._parallel = max(1, int(n))
        self.pump()

    def running(self) -> int:
        return sum(1 for r in self.runs.values() if r.state == "running")

    @property
    def busy(self) -> bool:
        return bool(self.queue) or self.running() > 0

    def add(self, run: Run) -> Run:
        self.runs[run.key] = run
        return run

    def _enqueue(self, run: Run, resume: bool) -> None:
        run.state, run.fraction, run.eta, run.message, run.resume = "queued", 0.0, None, "", resume
        self.queue.append(run.key)
        self.events.curve.emit(run)
        self.events.changed.emit(run)

    def train(self, keys) -> None:
        """Queue these runs for training from scratch (they start as parallel slots free up);
        ValueError when there is no data."""
        if self.dataset is None:
            raise ValueError("There is no data yet: generate a data set or open a log first.")
        for key in keys:
            run = self.runs.get(key)
            if run is None or run.state in ("queued", "running"):
                continue
            run.keep_results()
            run.losses, run.history = [], []
            self._enqueue(run, resume=False)
        self.pump()

    def resume(self, keys, epochs: int) -> None:
        """Queue these runs to continue from their last checkpoint, up to the larger of their own
        epochs and ``epochs`` (so a finished run can be extended); ValueError without data, a run
        that cannot resume is reported (``error``) and skipped."""
        if self.dataset is None:
            raise ValueError("Open the data the runs trained on first.")
        for key in keys:
            run = self.runs.get(key)
            if run is None or run.state in ("queued", "running"):
                continue
            target = max(run.train_config.epochs, int(epochs))
            try:
                done = lab_jobs.resumable(run.run_dir, target)
            except ValueError as exc:
                self.events.error.emit(f"Resume {run.name}", str(exc))
                continue
            run.keep_results()
            run.train_config = lab_jobs.with_changes(run.train_config, epochs=target)
            run.history = [r for r in lab_jobs.run_history(run.run_dir) if r["epoch"] <= done]
            run.losses = [r["loss"] for r in run.history]
            self._enqueue(run, resume=True)
        self.pump()

    def pump(self) -> None:
        """Start queued runs while slots are free."""
        while self.queue and self.running() < self.parallel:
            self._start(self.runs[self.queue.pop(0)])

    def cancel(self, keys) -> None:
        """A queued run leaves the queue (cancelled); a running one is asked to stop."""
        for key in keys:
            run = self.runs.get(key)
            if run is None:
                continue
            if key in self.queue:
                self.queue.remove(key)
                run.state = "cancelled"
                self.events.changed.emit(run)
            elif run.handle is not None:
                run.handle.cancel()

    def cancel_all(self) -> None:
        self.cancel(list(self.runs))

    def remove(self, keys) -> list[Run]:
        """Forget these runs (a running one is cancelled); returns the removed runs."""
        removed = []
        for key in keys:
            run = self.runs.pop(key, None)
            if run is None:
                continue
            if run.handle is not None and run.handle.is_running:
                run.handle.cancel()
            if key in self.queue:
                self.queue.remove(key)
            removed.append(run)
        return removed

    # -- what a quit would lose ---------------------------------------------------------
    def unsaved_work(self) -> list[str]:
        """One line per run a quit would lose: trained models kept nowhere on disk, and runs still
        training (stopped by a quit; their last checkpoint stays in the run folder)."""
        out = []
        for run in self.runs.values():
            if run.state in ("running", "queued"):
                out.append(f"Model lab: {run.name} is {run.state} ({100 * run.fraction:.0f} % done)")
            elif run.model is not None and not run.model_path:
                out.append(f"Model lab: the trained model {run.name} is not saved")
        return out

    def saved_models(self) -> list[Path]:
        """The final models (``<run folder>/model.json``) kept in the lab's folder, oldest first,
        then those of its robot comparisons (``robot_compare_<time>/runs/<model>/model.json``, one
        per trained model, oldest comparison first); folders marked removed (:meth:`forget`) are
        left out."""
        if self.model_folder is None or not self.model_folder.is_dir():
            return []
        known = {str(Path(r.run_dir)) for r in self.runs.values() if r.run_dir}
        found = sorted(self.model_folder.glob(f"*/{MODEL_FILE}")) + sorted(
            self.model_folder.glob(f"{COMPARE_PREFIX}*/runs/*/{MODEL_FILE}"))
        return [p for p in found if not (p.parent / REMOVED_MARK).exists() and str(p.parent) not in known]

    @staticmethod
    def saved_name(path: Path) -> str | None:
        """The table's name of a saved model found by :meth:`saved_models`: ``"<model> (<comparison
        folder>)"`` for a robot comparison's, else None (the model's own name)."""
        parts = Path(path).parts
        if len(parts) >= 4 and parts[-3] == "runs" and parts[-4].startswith(COMPARE_PREFIX):
            return f"{parts[-2]} ({parts[-4]})"
        return None

    def keep_folder(self, run: Run) -> Path:
        """A new folder in the lab's folder for ``run``'s model (KeyError without a lab folder)."""
        if self.model_folder is None:
            raise KeyError("the Model lab has no folder to keep models in")
        slug = "".join(c if c.isalnum() or c in "-_" else "_" for c in run.name).strip("_") or run.model_type
        return self.model_folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}"

    def forget(self, run: Run) -> None:
        """A run removed from the table is not listed again at the next start: its folder in the lab's
        folder is marked (nothing is deleted; delete the marker file to list it again)."""
        if self.model_folder is None or not run.run_dir:
            return
        folder = Path(run.run_dir)
        inside = folder.parent == self.model_folder or (
            folder.parent.name == "runs" and folder.parent.parent.parent == self.model_folder
            and folder.parent.parent.name.startswith(COMPARE_PREFIX))
        if inside and folder.is_dir():
            try:
                (folder / REMOVED_MARK).write_text("removed from the Model lab's table\n", encoding="utf-8")
            except OSError:
                pass

    # -- one run's job -----------------------------------------------------------------
    def meta(self, run: Run, source: dict | None, with_results: bool = True) -> dict:
        """What a saved model carries beside its weights: data description and hash, metrics, losses."""
        meta = {"name": run.name, "train_config": run.train_config.to_dict(), "data_source": source,
                "data_hash": run.data_hash if with_results else lab_jobs.data_hash_of(self.dataset)}
        if with_results:
            meta.update(metrics=run.row, losses=run.losses)
        return lab_jobs.jsonable(meta)

    def _refuse(self, run: Run, title: str, reason: str, what: str) -> None:
        """``run`` did not train (``reason``): it is as it was before it was queued, with ``what``
        happened as its message, and the user is told."""
        had_results = bool(run.kept and run.kept.get("row") is not None)
        run.restore_results()
        run.message = what
        run.handle = None
        self.events.curve.emit(run)
        self.events.changed.emit(run)
        kept = " Its earlier results and model are kept." if had_results else ""
        self.events.error.emit(title, f"{reason}\n\n{run.name} {what}.{kept}")

    def _start(self, run: Run) -> None:
        if self.model_folder is not None and run.run_dir is None:
            run.run_dir = str(
                self.model_folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{run.model_type}-{run.key}"
            )
        busy = lab_jobs.folder_in_use(run.run_dir)
        if busy is not None:        # another run writes there: this one waits for the user, as it was
            self._refuse(run, f"Train {run.name}", busy, "was not started: its folder is in use by another run")
            return
        try:
            job = lab_jobs.train_job(
                run.model_type,
                self.dataset,
                run.train_config,
                run.spec,
                run_dir=run.run_dir,
                resume=run.resume,
                model_meta=self.meta(run, self.source, with_results=False),
            )
        except ValueError as exc:
            run.state, run.message = "failed", str(exc)
            self.events.changed.emit(run)
            self.events.error.emit(f"Train {run.name}", str(exc))
            return
        run.state = "running"
        run.started = self.clock()
        run.model = None
        dataset, source = self.dataset, self.source

        def on_progress(update, run=run):
            if run.key not in self.runs:
                return
            if update.fraction is not None:
                run.fraction = update.fraction
                run.eta = eta_seconds(self.clock() - run.started, update.fraction)
            m = update.metrics or {}
            if "loss" in m and "epoch" in m:
                run.loss = float(m["loss"])
                run.history.append({k: m.get(k) for k in ("epoch", "step", "wall_time", "loss")})
                self.events.curve.emit(run)
            self.events.changed.emit(run)

        def on_result(result, run=run):
            run.handle = None
            if run.key not in self.runs:
                return
            run.state, run.fraction, run.eta = "finished", 1.0, 0.0
            run.model, run.row, run.curves = result["model"], dict(result["row"]), result["curves"]
            run.data_hash, run.data_source = lab_jobs.data_hash_of(dataset), source
            run.row["model"] = run.name
            run.row["type"] = run.model_type
            run.losses = list(result["losses"])
            run.loss = run.losses[-1] if run.losses else None
            run.run_dir = result.get("run_dir") or run.run_dir
            run.history = lab_jobs.run_history(run.run_dir) or run.history
            self.events.curve.emit(run)
            final = Path(run.run_dir or "", "model.json")
            run.model_path = str(final) if run.run_dir and final.is_file() else None
            if run.row.get("error"):
                run.message = "diverged: no model saved"
            self.events.changed.emit(run)
            self.events.finished.emit(run)
            self.pump()

        def on_error(message, tb, run=run):
            run.handle = None
            if run.key not in self.runs:
                self.pump()
                return
            if run.kept and run.kept.get("row") is not None:   # a failed extension keeps the earlier model
                self._refuse(run, f"Train {run.name}", message, "was not extended (the training failed)")
            else:
                run.state, run.message = "failed", message
                self.events.changed.emit(run)
                self.events.error.emit(f"Train {run.name}", message)
            self.pump()

        def on_cancelled(run=run):
            run.handle = None
            run.state = "cancelled"
            run.message = "resumable" if run.run_dir and lab_jobs.run_history(run.run_dir) else ""
            self.events.changed.emit(run)
            self.pump()

        self.events.changed.emit(run)
        self.events.started.emit(run)
        handle = self.submit(job, name=f"train {run.name}", on_result=on_result, on_error=on_error,
                             on_progress=on_progress, on_cancelled=on_cancelled)
        run.handle = handle if run.state == "running" else None     # a runner may finish it at once
