"""Training runs as experiments: one folder per run, resumable, comparable.

A run folder holds

- ``config.json``: the full configuration (what was trained, on which data, every
  hyperparameter), enough to rebuild the model and the data and to resume;
- ``run.json``: status (``running``, ``done``, ``diverged``, ``cancelled``, ``failed``), a
  truthful one-line message, epochs done, final metrics, and the fingerprints (sha256) of the
  system and of the data the run trained on;
- ``metrics.csv``: one row per epoch: ``epoch``, ``step`` (optimiser steps so far),
  ``wall_time`` (s of training so far, over every resume) and the run's values (loss, lr, ...);
- ``checkpoints/last/``: the whole training state at the last checkpoint (weights, optimiser and
  scheduler state, random streams), written as one save; ``checkpoints/last-finite/`` after a
  divergence: the last weights that were finite;
- the final model (e.g. ``model.safetensors`` + ``model.json``), written only when the run ends
  well, in one save with ``run.json`` and ``metrics.csv``.

A run never writes its final file names before it ends well, so a folder that holds a finished
model keeps it through a cancelled, diverged or killed extension. A new run asked to go into a
folder that already holds files is staged in a hidden sibling folder and moved in as one change at
the end (:func:`engine.io.move_entries`; the folder's other files stay).

The API is generic (any model, any optimiser): :class:`Run` for the folder, :func:`training_state`
/ :func:`restore_training_state` for the state, :func:`list_runs`, :func:`config_diff` and
:func:`ema` for the runs table. ``learn train``, ``eigenmode learn`` and the model lab use it.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from engine.io import (CheckpointError, atomic_write_text, csv_text, finite_or_none, flatten_state, json_default,
                       load_tensors, move_entries, read_json, save_tensors, staged_files, unflatten_state,
                       write_json)
from engine.jobs import JobCancelled

__all__ = ["RUN_FORMAT", "Run", "RunError", "config_diff", "ema", "fingerprint", "flatten_config", "list_runs",
           "interrupts_as_keyboard", "read_metrics", "restore_training_state", "training_state"]

RUN_FORMAT = "lagrange-studio/run/1"
CONFIG, INFO, METRICS = "config.json", "run.json", "metrics.csv"
LAST, LAST_FINITE = Path("checkpoints") / "last", Path("checkpoints") / "last-finite"
STATUSES = ("running", "done", "diverged", "cancelled", "failed")


class RunError(ValueError):
    """A run folder that cannot be created, read or resumed; the message names the folder or file."""


@contextlib.contextmanager
def interrupts_as_keyboard():
    """In the main thread, SIGTERM raises KeyboardInterrupt (as Ctrl+C does) for the block, so a
    run ends through its cancel path (recorded, nothing half-written); elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def fingerprint(obj: Any) -> str:
    """sha256 of a JSON-able description (sorted keys): a system's or a configuration's identity."""
    text = json.dumps(obj, sort_keys=True, default=json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Run:
    """A run folder (see the module doc). Build with :meth:`create` or :meth:`open`.

    ``path``: where the run lives while it trains; ``destination``: where it goes when it ends
    well (the same folder, or the folder the user named when the run was staged beside it).
    """

    def __init__(self, path: Path, config: dict, info: dict, metrics: list[dict]):
        self.path = Path(path)
        self.config = config
        self.info = info
        self.metrics = metrics

    # -- creating and opening ---------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, kind: str, config: dict, fingerprints: dict) -> Run:
        """A new run of ``kind`` (``"learn"``, ``"eigenmode"``, ...) into ``path``.

        An empty or missing ``path`` is used as it is; a folder that already holds files is left
        as it is until the run ends well (the run trains in a hidden sibling folder).
        """
        dest = Path(path)
        if dest.exists() and not dest.is_dir():
            raise RunError(f"{dest}: is a file; give a folder for the run")
        here = dest
        if dest.is_dir() and any(dest.iterdir()):
            here = dest.with_name(f".{dest.name}.run-{os.getpid()}-{int(time.time())}")
        try:
            here.mkdir(parents=True, exist_ok=True)
            probe = here / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise RunError(f"{dest}: cannot write the run folder there ({exc.strerror or exc})") from exc
        info = {"format": RUN_FORMAT, "kind": kind, "status": "running", "message": "training",
                "epoch": 0, "created": _now(), "updated": _now(), "fingerprints": dict(fingerprints),
                "destination": str(dest.resolve()), "metrics": {}}
        write_json(here / CONFIG, {"format": RUN_FORMAT, "kind": kind, **config})
        write_json(here / INFO, info)
        return cls(here, {"format": RUN_FORMAT, "kind": kind, **config}, info, [])

    @classmethod
    def open(cls, path: str | os.PathLike, kind: str | None = None) -> Run:
        """The run in ``path`` (to resume or to read); :class:`RunError` names what is missing."""
        path = Path(path)
        if not (path / CONFIG).is_file():
            raise RunError(f"{path}: not a run folder (no {CONFIG}); give a folder written by a training run")
        try:
            config, info = read_json(path / CONFIG), read_json(path / INFO)
        except CheckpointError as exc:
            raise RunError(str(exc)) from exc
        if not isinstance(config, dict) or config.get("format") != RUN_FORMAT:
            raise RunError(f"{path / CONFIG}: field 'format' is not {RUN_FORMAT!r}")
        if kind is not None and config.get("kind") != kind:
            raise RunError(f"{path}: a {config.get('kind')!r} run, not a {kind!r} run")
        return cls(path, config, info, read_metrics(path))

    @property
    def destination(self) -> Path:
        return Path(self.info.get("destination") or self.path)

    @property
    def staged(self) -> bool:
        return self.destination.resolve() != self.path.resolve()

    @property
    def epoch(self) -> int:
        return int(self.info.get("epoch", 0))

    # -- while training -------------------------------------------------------------------
    def log(self, epoch: int, step: int, wall_time: float, **values) -> dict:
        """Add the metrics row of ``epoch`` (kept in memory; written with each checkpoint)."""
        row = {"epoch": int(epoch), "step": int(step), "wall_time": float(wall_time), **values}
        self.metrics = [r for r in self.metrics if int(r["epoch"]) < epoch] + [row]
        return row

    def save_state(self, epoch: int, state: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> Path:
        """Write ``state`` (nested dicts of tensors and numbers: weights, optimiser, RNG) as the
        last checkpoint, with metrics.csv and run.json up to ``epoch``, all in one save."""
        skeleton, tensors = flatten_state(dict(state))
        folder = self.path / LAST
        with staged_files(folder) as tmp:
            save_tensors(tmp / "state.safetensors", tensors)
            write_json(tmp / "state.json", {"format": RUN_FORMAT, "epoch": int(epoch), "state": skeleton,
                                            **dict(meta or {})})
        self.metrics = [r for r in self.metrics if int(r["epoch"]) <= epoch]
        self.info.update(epoch=int(epoch), updated=_now())
        with staged_files(self.path) as tmp:
            atomic_write_text(tmp / METRICS, metrics_csv(self.metrics))
            write_json(tmp / INFO, self.info)
        return folder

    def load_state(self) -> tuple[dict, dict]:
        """``(state, meta)`` of the last checkpoint (what :meth:`save_state` wrote)."""
        folder = self.path / LAST
        if not (folder / "state.json").is_file():
            raise RunError(f"{self.path}: the run has no checkpoint yet (nothing in {LAST}); start it again")
        meta = read_json(folder / "state.json")
        tensors = load_tensors(folder / "state.safetensors")
        state = unflatten_state(meta.pop("state"), tensors)
        self.metrics = [r for r in self.metrics if int(r["epoch"]) <= int(meta["epoch"])]
        return state, meta

    def save_files(self, folder: str | os.PathLike, write: Callable[[Path], None]) -> Path:
        """``write(tmp)`` puts files into a temporary folder; they replace ``self.path / folder`` as one save."""
        target = self.path / folder
        with staged_files(target) as tmp:
            write(tmp)
        return target

    def end(self, status: str, message: str, **info) -> None:
        """Record a run that did not end well (cancelled, diverged, failed): run.json only."""
        if status not in STATUSES:
            raise ValueError(f"run status {status!r}: expected one of {', '.join(STATUSES)}")
        self.info.update(status=status, message=message, updated=_now(), **finite_or_none(info))
        write_json(self.path / INFO, self.info)

    def finish(self, write_final: Callable[[Path], None], metrics: Mapping[str, Any], message: str = "done",
               **info) -> Path:
        """The run ended well: ``write_final(tmp)`` writes the final files (the model); they go in
        with run.json (status ``done``, ``metrics``) and metrics.csv as one save. A staged run is
        then swapped in whole for its destination. Returns the run's final folder."""
        self.info.update(status="done", message=message, updated=_now(), metrics=finite_or_none(dict(metrics)),
                         **finite_or_none(info))
        with staged_files(self.path) as tmp:
            write_final(tmp)
            atomic_write_text(tmp / METRICS, metrics_csv(self.metrics))
            write_json(tmp / INFO, self.info)
            write_json(tmp / CONFIG, self.config)
        if self.staged:   # into the folder the user named: the run's entries replace their namesakes
            move_entries(self.path, self.destination)
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = self.destination
        return self.path

    @contextlib.contextmanager
    def recording(self, cancelled: Callable[[], str], passthrough: tuple = ()):
        """Record how the block ends when it does not end well: a cancel or an interrupt as
        ``cancelled`` (``cancelled()`` gives the message), any other error as ``failed``, except
        the ``passthrough`` types (which record themselves, e.g. a divergence). Re-raises."""
        try:
            yield self
        except (JobCancelled, KeyboardInterrupt):
            self.end("cancelled", cancelled())
            raise
        except passthrough:
            raise
        except Exception as exc:
            self.end("failed", f"{type(exc).__name__}: {exc}")
            raise

    def where(self) -> str:
        """How a message names this run's folder (and that it is staged, when it is)."""
        if self.staged:
            return f"{self.path} (staged beside {self.destination}, which was not changed)"
        return str(self.path)


# -- training state -----------------------------------------------------------------------
def training_state(model: torch.nn.Module, optimizer=None, scheduler=None,
                   generators: Mapping[str, torch.Generator] | None = None, **extra) -> dict:
    """Everything a resume needs: weights, optimiser and scheduler state, the random streams
    (torch's global one and the named ``generators``), and ``extra`` tensors or numbers."""
    state = {"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
             "rng": {"torch": torch.get_rng_state(),
                     **{f"gen.{k}": g.get_state() for k, g in (generators or {}).items()}}}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    state.update(extra)
    return state


def restore_training_state(state: Mapping[str, Any], model: torch.nn.Module, optimizer=None, scheduler=None,
                           generators: Mapping[str, torch.Generator] | None = None) -> None:
    """Put ``state`` (from :func:`training_state`) back into the objects, in place."""
    model.load_state_dict(state["model"], strict=True)
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    rng = state.get("rng", {})
    if "torch" in rng:
        torch.set_rng_state(rng["torch"].to(torch.uint8))
    for k, g in (generators or {}).items():
        if f"gen.{k}" in rng:
            g.set_state(rng[f"gen.{k}"].to(torch.uint8))


# -- reading runs (the runs table) ----------------------------------------------------------
def metrics_csv(rows: list[dict]) -> str:
    """Metrics rows as CSV (``epoch, step, wall_time`` first; NaN as ``nan``)."""
    columns = ["epoch", "step", "wall_time"]
    for r in rows:
        columns += [k for k in r if k not in columns]
    return csv_text(rows, columns)


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The rows of ``metrics.csv`` in a run folder (numbers as int / float; [] when none)."""
    path = Path(path)
    file = path / METRICS if path.is_dir() else path
    if not file.is_file():
        return []
    rows = []
    with open(file, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            row = {}
            for k, v in r.items():
                if v in ("", None):
                    row[k] = None
                    continue
                try:
                    row[k] = int(v) if k in ("epoch", "step") else float(v)
                except ValueError:
                    row[k] = v
            rows.append(row)
    return rows


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict:
    """A nested configuration as ``{"a.b": value}`` (lists as JSON text), for columns and diffs."""
    out = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten_config(v, key + "."))
        elif isinstance(v, (list, tuple)):
            out[key] = json.dumps(list(v), default=json_default)
        else:
            out[key] = v
    return out


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The settings two runs' configurations disagree on: ``[(key, value in a, value in b)]``,
    sorted by key (``None`` where one run lacks the key)."""
    fa, fb = flatten_config(a), flatten_config(b)
    out = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key), fb.get(key)
        same = va == vb or (isinstance(va, float) and isinstance(vb, float) and math.isnan(va) and math.isnan(vb))
        if not same:
            out.append((key, va, vb))
    return out


def ema(values, weight: float) -> list:
    """Exponential moving average of a curve (TensorBoard's smoothing, debiased): ``weight`` in
    [0, 1), 0 leaves the curve as it is. Non-finite points are carried through unsmoothed."""
    if not 0 <= weight < 1:
        raise ValueError(f"smoothing weight: expected a value in [0, 1), got {weight!r}")
    out, last, n = [], 0.0, 0
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        n += 1
        out.append(last / (1 - weight ** n))
    return out


def list_runs(root: str | os.PathLike) -> list[dict]:
    """Every run folder under ``root`` (``root`` itself included): one summary per run with
    ``path``, ``kind``, ``status``, ``epoch``, ``message``, ``config`` (flattened), ``metrics``
    (final) and ``fingerprints``. Hidden (staged) folders are included with their status."""
    root = Path(root)
    found = [root] if (root / CONFIG).is_file() else []
    if root.is_dir():
        found += sorted(p.parent for p in root.rglob(CONFIG) if p.parent != root)
    out = []
    for p in found:
        try:
            run = Run.open(p)
        except (RunError, CheckpointError):
            continue
        cfg = {k: v for k, v in run.config.items() if k not in ("format", "kind")}
        out.append({"path": str(p), "kind": run.config.get("kind"), "status": run.info.get("status"),
                    "epoch": run.epoch, "message": run.info.get("message", ""), "config": flatten_config(cfg),
                    "metrics": dict(run.info.get("metrics") or {}),
                    "fingerprints": dict(run.info.get("fingerprints") or {})})
    return out
