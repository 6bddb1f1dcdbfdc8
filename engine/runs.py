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

A run folder has one writer at a time: a run (new or resumed) holds ``.run.lock`` in the folder it
writes to for as long as it runs (:class:`RunLock`: an OS file lock, so a killed run's lock is
free at once); a second run into the same folder is refused with the holder's process, host,
command and start time.

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
import logging
import math
import os
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from engine.io import (
    CheckpointError,
    DiskFullError,
    atomic_write_text,
    csv_text,
    finite_or_none,
    flatten_state,
    is_disk_full,
    json_default,
    load_tensors,
    move_entries,
    read_json,
    save_tensors,
    staged_files,
    unflatten_state,
    write_json,
)
from engine.jobs import JobCancelled

__all__ = [
    "RUN_FORMAT",
    "Run",
    "RunError",
    "RunLock",
    "RunLocked",
    "config_diff",
    "ema",
    "fingerprint",
    "flatten_config",
    "list_runs",
    "interrupts_as_keyboard",
    "read_metrics",
    "restore_training_state",
    "training_state",
]

RUN_FORMAT = "lagrange-studio/run/1"
CONFIG, INFO, METRICS = "config.json", "run.json", "metrics.csv"
LAST, LAST_FINITE = Path("checkpoints") / "last", Path("checkpoints") / "last-finite"
STATUSES = ("running", "done", "diverged", "cancelled", "failed")
LOCK = ".run.lock"

_log = logging.getLogger(__name__)


class RunError(ValueError):
    """A run folder that cannot be created, read or resumed; the message names the folder or file."""


class RunLocked(RunError):
    """Another process (or another run of this one) is writing into the run folder; ``owner``
    is what it recorded (pid, host, command, started), possibly empty."""

    def __init__(self, folder: Path, owner: dict):
        self.folder, self.owner = folder, owner
        if owner:
            who = (f"process {owner.get('pid', '?')} on {owner.get('host', '?')}, started "
                   f"{owner.get('started', '?')}: {owner.get('command', '?')}")
        else:
            who = "a process that is just starting"
        super().__init__(f"{folder}: another run is writing into this folder ({who}); wait for it to end, "
                         "stop it, or choose another folder")


def _lock_fd(fd: int) -> bool:
    """Take the exclusive lock on the open file ``fd`` without waiting; False if it is held."""
    try:
        import fcntl
    except ImportError:  # Windows: lock one byte far past the owner's text
        import msvcrt

        os.lseek(fd, 1 << 30, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return False
    return True


def _process_command() -> str:
    """This process's command line, as the user typed it (``python -m engine learn train ...``)."""
    argv = list(sys.argv) if sys.argv and sys.argv[0] else []
    if argv:
        head = Path(argv[0])
        argv[0] = f"python -m {head.parent.name}" if head.name == "__main__.py" else head.name
    text = " ".join(argv) or "python"
    return text if len(text) <= 300 else text[:297] + "..."


class RunLock:
    """The one-writer lock of a run folder: ``.run.lock`` inside it, locked with the OS's file
    lock (``flock``; ``msvcrt.locking`` on Windows) for as long as this object holds it, and
    holding the owner's pid, host, command and start time as JSON for the refusal message.

    The OS drops the lock when the process ends, however it ends (``kill -9`` included), so a
    lock left by a dead run is free; the next run takes it over and logs whose it was. Works
    between processes and between two runs of one process (the app's Model lab).
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.path = self.folder / LOCK
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock (making the folder if needed); :class:`RunLocked` if another run holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for _ in range(20):   # the holder may remove the file between our open and our lock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            if not _lock_fd(fd):
                os.close(fd)
                raise RunLocked(self.folder, self._owner())
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        else:  # pragma: no cover - a storm of runs taking and dropping the lock
            raise RunLocked(self.folder, {})
        previous = self._owner()
        if previous:
            _log.warning("run folder %s: taking over the lock of process %s on %s (%s), which ended without "
                         "releasing it", self.folder, previous.get("pid", "?"), previous.get("host", "?"),
                         previous.get("command", "?"))
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "command": _process_command(),
                 "started": _now()}
        data = (json.dumps(owner) + "\n").encode("utf-8")
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, data)
        self._fd = fd
        return self

    def _owner(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as fh:
                owner = json.loads(fh.read(4096) or "{}")
        except (OSError, ValueError):
            return {}
        return owner if isinstance(owner, dict) else {}

    def check(self) -> None:
        """Refuse now (:class:`RunLocked`) if another run holds the folder; takes nothing (a
        command's check before its work; the run itself takes the lock when it starts)."""
        if not self.path.exists():
            return
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:
            return
        try:
            if not _lock_fd(fd):
                raise RunLocked(self.folder, self._owner())
        finally:
            os.close(fd)   # closing drops a lock taken here

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file and let the lock go (safe to call twice)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.unlink(self.path)   # while still holding it: the next run makes a fresh file
        except OSError:
            pass
        os.close(fd)

    def __del__(self):  # a run object dropped without end/finish (an error before recording)
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _take_lock(folder: Path, message_folder: Path | None = None) -> RunLock:
    try:
        return RunLock(folder).acquire()
    except RunLocked:
        raise
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(folder) from exc
        raise RunError(f"{message_folder or folder}: cannot write the run folder there "
                       f"({exc.strerror or exc})") from exc


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


def failure_text(exc: BaseException) -> str:
    """How run.json records a failure: the plain message of the project's own errors (a full disk,
    a run folder's problem), the class name in front of anything else (it says what broke)."""
    return str(exc) if isinstance(exc, (DiskFullError, RunError)) else f"{type(exc).__name__}: {exc}"


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
        if not dest.name or dest.name in (".", ".."):
            dest = Path(os.path.abspath(dest))
        lock = _take_lock(dest)  # one writer per folder, from here to the run's end
        try:
            here = dest
            if any(p.name != LOCK for p in dest.iterdir()):
                here = dest.with_name(f".{dest.name}.run-{os.getpid()}-{int(time.time())}")
            try:
                here.mkdir(parents=True, exist_ok=True)
                probe = here / ".write-test"
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as exc:
                if is_disk_full(exc):
                    raise DiskFullError(here) from exc
                raise RunError(f"{dest}: cannot write the run folder there ({exc.strerror or exc})") from exc
            info = {"format": RUN_FORMAT, "kind": kind, "status": "running", "message": "training",
                    "epoch": 0, "created": _now(), "updated": _now(), "fingerprints": dict(fingerprints),
                    "destination": str(dest.resolve()), "metrics": {}}
            write_json(here / CONFIG, {"format": RUN_FORMAT, "kind": kind, **config})
            write_json(here / INFO, info)
        except BaseException:
            lock.release()
            raise
        run = cls(here, {"format": RUN_FORMAT, "kind": kind, **config}, info, [])
        run._lock = lock
        return run

    @classmethod
    def open(cls, path: str | os.PathLike, kind: str | None = None, *, write: bool = False) -> Run:
        """The run in ``path`` to read, or with ``write`` to resume: then this run holds the
        folder's lock (:class:`RunLock`, on the folder it will end in) until it ends, and
        :class:`RunLocked` says which process holds it if another does. :class:`RunError`
        names what is missing."""
        run = cls._read(path, kind)
        if write:
            lock = _take_lock(run.destination if run.destination.is_dir() else run.path, run.path)
            run._lock = lock
            try:   # read again under the lock: the holder may have written since
                run = cls._read(path, kind, lock=lock)
            except BaseException:
                lock.release()
                raise
        return run

    @classmethod
    def _read(cls, path: str | os.PathLike, kind: str | None, lock: RunLock | None = None) -> Run:
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
        if not isinstance(info, dict):
            raise RunError(f"{path / INFO}: expected a JSON object")
        run = cls(path, config, info, read_metrics(path))
        run._lock = lock
        return run

    def section(self, name: str, kind: type = dict):
        """``config.json``'s entry ``name`` (a dict unless ``kind`` says otherwise); RunError
        naming the file and the field when it is missing or of the wrong type (an edited file)."""
        value = self.config.get(name)
        if not isinstance(value, kind):
            what = "is missing" if value is None else f"is a {type(value).__name__}, not a {kind.__name__}"
            raise RunError(
                f"{self.path / CONFIG}: field {name!r} {what}; this file was edited or is not from "
                f"a {self.config.get('kind')!r} run: restore it or start a new run"
            )
        return value

    _lock: RunLock | None = None

    def release(self) -> None:
        """Let the folder's lock go (done by :meth:`end` and :meth:`finish`)."""
        if self._lock is not None:
            self._lock.release()

    @contextlib.contextmanager
    def released_on_error(self):
        """Release the folder's lock if the block raises (a resume refused while planning)."""
        try:
            yield self
        except BaseException:
            self.release()
            raise

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

    def save_files(self, folder: str | os.PathLike, write: Callable[[Path], object]) -> Path:
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
        try:
            try:
                write_json(self.path / INFO, self.info)
            except DiskFullError:   # no room for a new file: overwrite the record in place
                _overwrite(self.path / INFO, json.dumps(self.info, indent=2, default=json_default) + "\n")
        finally:
            self.release()

    def finish(self, write_final: Callable[[Path], object], metrics: Mapping[str, Any], message: str = "done",
               **info) -> Path:
        """The run ended well: ``write_final(tmp)`` writes the final files (the model); they go in
        with run.json (status ``done``, ``metrics``) and metrics.csv as one save. A staged run is
        then swapped in whole for its destination. Returns the run's final folder."""
        self.info.update(
            status="done",
            message=message,
            updated=_now(),
            metrics=finite_or_none(dict(metrics)),
            **finite_or_none(info),
        )
        try:
            with staged_files(self.path) as tmp:
                write_final(tmp)
                atomic_write_text(tmp / METRICS, metrics_csv(self.metrics))
                write_json(tmp / INFO, self.info)
                write_json(tmp / CONFIG, self.config)
        except Exception as exc:   # nothing of the final save went in: the record says why
            self.end("failed", failure_text(exc))
            raise
        except BaseException:
            self.release()
            raise
        if self.staged:   # into the folder the user named: the run's entries replace their namesakes
            move_entries(self.path, self.destination)
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = self.destination
        self.release()
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
            self.end("failed", failure_text(exc))
            raise

    def where(self) -> str:
        """How a message names this run's folder (and that it is staged, when it is)."""
        if self.staged:
            return f"{self.path} (staged beside {self.destination}, which was not changed)"
        return str(self.path)


def _overwrite(path: Path, text: str) -> None:
    """Rewrite a small file in place (its blocks are reused): the last resort for recording a
    run's end when the disk has no room for a new file. Leaves the file as it was when even
    that fails."""
    data = text.encode("utf-8")
    try:
        with open(path, "r+b") as fh:
            old = fh.read()
            if len(data) < len(old):
                data += b" " * (len(old) - len(data))   # JSON allows trailing spaces: no truncate
            fh.seek(0)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        _log.warning("%s: could not record the run's end (%s)", path, exc.strerror or exc)


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
            row: dict[str, Any] = {}
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
        same = va == vb or (
            isinstance(va, float) and isinstance(vb, float) and math.isnan(va) and math.isnan(vb)
        )
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
