"""Every job kind, idle and with another program holding a core, with torch's default threads
and with the thread policy (engine/threads.py): the measurement behind ``auto``
(``python -m engine bench jobs``; the table is results/benchmarks/jobs.md).

Each run is one ``python -m engine ...`` process with short settings, timed wall-clock from
start to exit (what a user waits for, imports included), bounded by ``timeout`` seconds. The
"old" policy is ``--threads <cores>`` (torch's default: one thread per core); the new one is
``--threads auto``. The load is ``yes`` writing to /dev/null (one process, one core), started
before and killed after each loaded run by this module. The UI heartbeat is a 10 ms tick on the
main thread of a process that runs ``car mpc`` on a worker thread, as the app runs jobs; its
lateness stands for the Qt event loop's (both need the interpreter between the job's torch calls).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["JOBS", "JobBenchConfig", "cpu_model", "heartbeat", "markdown_table", "run_job_bench"]

_ROOT = Path(__file__).resolve().parent.parent
_LOGS = _ROOT / "resources" / "logs"


def _env() -> dict[str, str]:
    """This process's environment without thread-count variables, importing this engine."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env

# job name -> the command's arguments (short settings); "{out}" is a fresh temporary folder
JOBS: dict[str, list[str]] = {
    "learn train": ["learn", "train", "--system", "pendulum", "--model", "node-rk4", "--trajectories", "4",
                    "--epochs", "10", "--out", "{out}/run"],
    "learn compare": ["learn", "compare", "--log", str(_LOGS / "pendulum_friction.csv"),
                      "--mapping", str(_LOGS / "pendulum_friction.mapping.json"), "--models", "node-rk4,mlp",
                      "--epochs", "5", "--out", "{out}/compare"],
    "identify log": ["identify", "log", str(_LOGS / "panda_joints.csv"),
                     "--mapping", str(_LOGS / "panda_joints.mapping.json"), "--epochs", "5",
                     "--blackbox-steps", "100"],
    "robot identify": ["robot", "identify", "--epochs", "10"],
    "car train": ["car", "train", "--minutes", "1", "--epochs", "3", "--out", "{out}/car"],
    "car plan": ["car", "plan", "--scenario", "drifting-turn"],
    "car mpc": ["car", "mpc", "--max-seconds", "4"],
    "eigenmode learn": ["eigenmode", "learn", "--epochs", "20", "--out", "{out}/mode"],
    "robot ik": ["robot", "ik", "panda", "--link", "panda_link8", "--target", "0.4", "0.1", "0.5"],
    "robot simulate": ["robot", "simulate", "panda", "--duration", "1.0"],
}


@dataclass
class JobBenchConfig:
    jobs: list[str] = field(default_factory=lambda: list(JOBS))
    repeats: int = 1            # runs per cell; the best is kept
    timeout: float = 180.0      # seconds per run; a run that takes longer is reported as ">timeout"
    old_threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    heartbeat: bool = True


def cpu_model() -> str:
    """The processor's name (lscpu's "Model name") and the number of cores."""
    name = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        name = next(
            (line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
            name,
        )
    except (OSError, subprocess.SubprocessError):
        pass
    return f"{name}, {os.cpu_count()} cores"


class _BusyCore:
    """``yes > /dev/null`` for the duration of a ``with`` block (one process holding one core)."""

    def __enter__(self):
        exe = shutil.which("yes")
        if exe is None:
            self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        else:
            self.proc = subprocess.Popen([exe], stdout=subprocess.DEVNULL)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(timeout=10)
        return False


def _time_command(argv: list[str], timeout: float) -> float | None:
    """Seconds ``python -m engine *argv`` took, or None when it failed or ran past ``timeout``."""
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as out:
        args = [a.replace("{out}", out) for a in argv]
        env = _env()
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True,
                                  timeout=timeout, env=env, cwd=out)
        except subprocess.TimeoutExpired:
            return None
        took = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"`python -m engine {' '.join(args)}` failed: {proc.stderr.strip()[-300:]}")
        return took


_HEARTBEAT = r"""
import json, sys, threading, time
from engine.cli import main
threads, seconds = sys.argv[1], float(sys.argv[2])
import engine.car.mpc  # imports outside the measured span
done = threading.Event()
def job():
    try:
        main(["car", "mpc", "--max-seconds", str(seconds), "--json", "--threads", threads])
    finally:
        done.set()
worker = threading.Thread(target=job); worker.start()
late = []
next_tick = time.perf_counter() + 0.010
while not done.is_set():
    time.sleep(max(0.0, next_tick - time.perf_counter()))
    now = time.perf_counter()
    late.append(now - next_tick)
    next_tick = max(next_tick + 0.010, now)
worker.join()
late.sort()
p = lambda q: 1000 * late[min(len(late) - 1, int(q * len(late)))]
print("HEARTBEAT " + json.dumps({"ticks": len(late), "p50_ms": p(0.5), "p99_ms": p(0.99), "max_ms": 1000 * late[-1]}))
"""


def heartbeat(threads: int | str, seconds: float = 4.0, timeout: float = 180.0) -> dict | None:
    """Lateness (ms) of a 10 ms tick on the main thread while ``car mpc`` runs on a worker thread."""
    env = _env()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _HEARTBEAT, str(threads), str(seconds)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return None
    line = next((x for x in proc.stdout.splitlines() if x.startswith("HEARTBEAT ")), None)
    if line is None:
        raise RuntimeError(f"the heartbeat run failed: {proc.stderr.strip()[-300:]}")
    return json.loads(line[len("HEARTBEAT "):])


def run_job_bench(cfg: JobBenchConfig, on_row=None) -> dict:
    """Time each job in ``cfg.jobs``: idle and loaded, old (``--threads cfg.old_threads``) and new
    (``--threads auto``) policy. Returns ``{"machine", "rows": [...], "heartbeat": {...}}``; each row
    holds seconds (None past the timeout or failed, with ``error``) and the ratios loaded/idle."""
    unknown = [j for j in cfg.jobs if j not in JOBS]
    if unknown:
        raise ValueError(f"--jobs {','.join(unknown)}: not a job here; choose from {', '.join(JOBS)}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = []
    for name in cfg.jobs:
        row: dict[str, Any] = {"job": name}
        for loaded in (False, True):
            for policy, threads in (("old", str(cfg.old_threads)), ("new", "auto")):
                argv = [*JOBS[name], "--threads", threads]
                times = []
                for _ in range(max(1, cfg.repeats)):
                    try:
                        with _BusyCore() if loaded else contextlib.nullcontext():
                            times.append(_time_command(argv, cfg.timeout))
                    except RuntimeError as exc:   # a job that fails is reported, the others still run
                        row["error"] = str(exc)
                        times.append(None)
                finite = [t for t in times if t is not None]
                row[f"{policy}_{'loaded' if loaded else 'idle'}"] = min(finite) if finite else None
        for policy in ("old", "new"):
            idle, busy = row[f"{policy}_idle"], row[f"{policy}_loaded"]
            row[f"{policy}_ratio"] = None if idle is None or busy is None else busy / idle
        rows.append(row)
        if on_row is not None:
            on_row(row)
    beats: dict[str, dict | None] = {}
    if cfg.heartbeat:
        for policy, threads in (("old", str(cfg.old_threads)), ("new", "auto")):
            beats[f"{policy}_idle"] = heartbeat(threads, timeout=cfg.timeout)
            with _BusyCore():
                beats[f"{policy}_loaded"] = heartbeat(threads, timeout=cfg.timeout)
    return {"machine": cpu_model(), "load_average_at_start": load, "old_threads": cfg.old_threads,
            "timeout": cfg.timeout, "repeats": cfg.repeats, "rows": rows, "heartbeat": beats}


def _s(x: float | None, timeout: float) -> str:
    return f">{timeout:.0f}" if x is None else f"{x:.1f}"


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def markdown_table(result: dict) -> str:
    """The result as the Markdown table of results/benchmarks/jobs.md."""
    t, n = result["timeout"], result["old_threads"]
    lines = [
        "| job | old idle (s) | old, core busy (s) | old ratio | new idle (s) | new, core busy (s) | new ratio "
        "| new idle vs old idle |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        vs = (
            "-" if r["old_idle"] is None or r["new_idle"] is None else f"{r['new_idle'] / r['old_idle']:.2f}x"
        )
        lines.append(
            f"| `{r['job']}` | {_s(r['old_idle'], t)} | {_s(r['old_loaded'], t)} | {_r(r['old_ratio'])} "
            f"| {_s(r['new_idle'], t)} | {_s(r['new_loaded'], t)} | {_r(r['new_ratio'])} | {vs} |"
        )
    hb = result.get("heartbeat") or {}
    if hb:
        lines += [
            "",
            f"UI heartbeat (10 ms tick on the main thread while `car mpc` runs on a worker thread), "
            f"lateness in ms; old = {n} threads, new = auto:",
            "",
            "| policy | idle p50 | idle p99 | core busy p50 | core busy p99 | core busy max |",
            "|---|---|---|---|---|---|",
        ]
        for policy in ("old", "new"):
            i, b = hb.get(f"{policy}_idle"), hb.get(f"{policy}_loaded")
            f = (lambda d, k: "-" if d is None else f"{d[k]:.1f}")
            lines.append(
                f"| {policy} | {f(i, 'p50_ms')} | {f(i, 'p99_ms')} | {f(b, 'p50_ms')} | {f(b, 'p99_ms')} "
                f"| {f(b, 'max_ms')} |"
            )
    return "\n".join(lines) + "\n"
