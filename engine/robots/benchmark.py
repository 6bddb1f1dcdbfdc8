"""Speed of the rigid-body engine against Pinocchio, pytorch_kinematics and differentiable-robot-model.

``run_rbd_benchmark(RbdBenchConfig(robot="panda", batches=(1, 64, 1024, 4096)))`` times, in
this process and with ``threads`` torch threads:

- ``fk_jacobian``: forward kinematics of every link plus the world-frame Jacobian of the
  end link (ours: ``forward_kinematics`` + ``jacobian``; Pinocchio: ``framesForwardKinematics``
  + ``computeFrameJacobian`` per sample; pytorch_kinematics: ``forward_kinematics`` +
  ``jacobian`` of the serial chain; differentiable-robot-model: ``compute_forward_kinematics``
  + ``compute_endeffector_jacobian``);
- ``rnea``, ``crba``, ``aba``: inverse dynamics, mass matrix, forward dynamics (Pinocchio:
  ``rnea``, ``crba``, ``aba`` in a Python loop over the samples; differentiable-robot-model:
  ``compute_inverse_dynamics``, ``compute_lagrangian_inertia_matrix``,
  ``compute_forward_dynamics``).

Floating-base rows (``floating``: a quadruped and a humanoid of the library by default):
the same four algorithms in Pinocchio's free-flyer coordinates (random base poses), ours
against Pinocchio's Python loop (``framesForwardKinematics`` + ``computeFrameJacobian``,
``rnea``, ``crba``, ``aba``); ours computes forward dynamics as ``M^-1 (tau - h)``. At the
``derivative_batches`` also the analytic derivatives (:mod:`engine.robots.bench_derivatives`).

Ours is timed twice: as a plain call runs (inputs that need no derivative take the compiled
per-sample kernels, :mod:`engine.robots.backends.compiled`), and
through the torch algorithms that autograd differentiates (``ours_torch_ms``; what a training
step or a gradient-based optimiser runs).

Times are the median over repeats of one call on the whole batch (ms). A library that is
not installed, or cannot load the robot, gives None. Ours and Pinocchio run in float64,
pytorch_kinematics in float64, differentiable-robot-model in its own float32.

Memory: with glibc's default malloc every tensor above 128 KiB is a fresh ``mmap``, and
its page faults (about 1 us per 4 KiB page) cost more than the arithmetic at batches in
the thousands. ``tune_malloc=True`` (the default) first calls :func:`tune_malloc`, which
keeps freed memory for reuse (the effect of the jemalloc/tcmalloc that PyTorch recommends
for CPU work); it applies to every library in the process and is reported in the result.
"""

from __future__ import annotations

import contextlib
import io
import logging
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch

from engine.devices import resolve_device
from engine.robots.backends import torch_only
from engine.robots.end_effector import default_end_effector
from engine.robots.model import RobotModel
from engine.runtime import tune_malloc
from engine.validation import InputError, check_int, check_range

__all__ = ["ALGORITHMS", "RbdBenchConfig", "resolve_bench_robot", "run_rbd_benchmark", "tune_malloc"]

ALGORITHMS = ("fk_jacobian", "rnea", "crba", "aba")
log = logging.getLogger(__name__)


@dataclass
class RbdBenchConfig:
    robot: str = "panda"                      # library name or URDF path
    batches: tuple[int, ...] = (1, 64, 1024, 4096)
    threads: int = 2                          # torch.set_num_threads
    min_time_s: float = 0.2                   # per measurement, at least
    repeats: int = 5                          # medians over this many measurements
    max_calls: int = 2000                     # cap on calls per measurement
    seed: int = 0
    libraries: tuple[str, ...] = ("pinocchio", "pytorch_kinematics", "drm")
    tune_malloc: bool = True                  # see tune_malloc()
    floating: tuple[str, ...] = ("solo12", "talos")   # floating-base robots timed against Pinocchio
    device: str = "cpu"                       # where ours runs (cpu, cuda, auto); float64 everywhere
    derivative_batches: tuple[int, ...] = (1, 1024)   # rows of the analytic derivatives (bench_derivatives)
    batch1: bool = True                       # rows of one sample per call (bench_batch1)

    def __post_init__(self):
        who = "benchmark setting"
        batches = tuple(self.batches)
        if not batches:
            raise InputError("give at least one batch size, for example 1,64,1024", field="--batch")
        for b in batches:
            check_int(
                who,
                "batches (--batch)",
                b,
                1,
                1_000_000,
                hint="comma-separated batch sizes such as 1,64,1024",
            )
        for b in self.derivative_batches:
            check_int(who, "derivative_batches (--derivative-batch)", b, 1, 1_000_000,
                      hint="comma-separated batch sizes such as 1,1024, or none")
        check_int(who, "threads (--threads)", self.threads, 1, 1024, hint="torch CPU threads, for example 2")
        check_range(who, "min_time_s (--min-time)", self.min_time_s, 0.0, 60.0, lo_open=True, unit="s",
                    hint="seconds per measurement, for example 0.2")
        check_int(
            who, "repeats (--repeats)", self.repeats, 1, 1000, hint="measurements per cell, for example 5"
        )
        check_int(who, "max_calls (--max-calls)", self.max_calls, 1, 10_000_000)
        check_int(who, "seed (--seed)", self.seed, 0, 2**32 - 1)


def _erd_fallback(name: str) -> Path | None:
    from engine.robots.urdf import description_package_roots

    rel = {"panda": "panda_description/urdf/panda.urdf", "ur5": "ur_description/urdf/ur5_robot.urdf",
           "allegro": "allegro_hand_description/urdf/allegro_right_hand.urdf"}.get(name.lower())
    if rel is None:
        return None
    for root in description_package_roots():
        for c in (root / "example-robot-data" / "robots" / rel, root / rel):
            if c.is_file():
                return c
    return None


def resolve_bench_robot(name_or_path: str) -> Path:
    """A library name (engine.robots.library) or a URDF path -> the URDF file."""
    try:
        from engine.robots.library import resolve_robot
    except ImportError:
        resolve_robot = None  # type: ignore[assignment]  # the optional-import fallback
    if resolve_robot is not None:
        return Path(resolve_robot(name_or_path))
    p = Path(name_or_path)
    if p.is_file():
        return p
    found = _erd_fallback(str(name_or_path))
    if found is None:
        raise ValueError(f"unknown robot {name_or_path!r}: give a URDF path or panda, ur5, allegro")
    return found


def _time_interleaved(fns: dict, cfg: RbdBenchConfig) -> dict:
    """Median wall time of one call (ms) of each function, measured in turns.

    Each repeat times every library once, one after the other, so that a change of load
    on the machine affects all of them alike; a function that raises gives None.
    """
    calls: dict[str, tuple[int, float]] = {}
    out: dict[str, float | None] = {}
    for name, fn in fns.items():
        try:
            fn()
            t0 = time.perf_counter()
            fn()
            once = max(time.perf_counter() - t0, 1e-7)
        except Exception as exc:  # a library that cannot run this case is reported as null
            log.info("%s failed: %s", name, exc)
            out[name] = None
            continue
        calls[name] = (int(min(cfg.max_calls, max(1, cfg.min_time_s / cfg.repeats / once))), once)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(cfg.repeats):
        for name, (n, once) in calls.items():
            if r >= 2 and once >= 0.5:     # slow references: two measurements are enough
                continue
            fn = fns[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n * 1e3)
    out.update({name: statistics.median(v) for name, v in samples.items()})
    return out


def _synced(fns: dict, device) -> dict:
    """``fns`` that wait for their GPU kernels to finish (so the timings hold them); as is on the CPU."""
    if torch.device(device).type != "cuda":
        return fns
    # the tuple only sequences the two calls in one lambda
    return {k: (lambda f=f: (f(), torch.cuda.synchronize(device))) for k, f in fns.items()}  # type: ignore[func-returns-value]


class _Ours:
    def __init__(self, path: Path, end_link: str, device="cpu"):
        self.model = RobotModel.from_urdf(path, mimic="independent", strict=False, device=device)
        self.end = end_link

    def calls(self, q, qd, qdd):
        m, e = self.model, self.end
        q, qd, qdd = (torch.as_tensor(x, device=m.device) for x in (q, qd, qdd))
        return _synced({"fk_jacobian": lambda: (m.forward_kinematics(q), m.jacobian(q, e)),
                        "rnea": lambda: m.inverse_dynamics(q, qd, qdd),
                        "crba": lambda: m.mass_matrix(q),
                        "aba": lambda: m.forward_dynamics(q, qd, qdd, method="articulated")},  # ABA itself
                       m.device)


def _torch_path(fns: dict) -> dict:
    """The calls of ``fns`` through the torch algorithms (:func:`torch_only`)."""
    def wrapped(fn):
        def call():
            with torch_only():
                return fn()
        return call

    return {k: wrapped(f) for k, f in fns.items()}


def pinocchio_loops(pm, pd, fid, qs, vs, as_) -> dict:
    """Pinocchio's Python loop over the samples (``qs``, ``vs``, ``as_``: lists of its vectors), one
    function per algorithm: ``{"fk_jacobian", "rnea", "crba", "aba"}``."""
    import pinocchio as pin

    rf = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def fkj():
        for x in qs:
            pin.framesForwardKinematics(pm, pd, x)
            pin.computeFrameJacobian(pm, pd, x, fid, rf)

    def rnea():
        for x, v, a in zip(qs, vs, as_):
            pin.rnea(pm, pd, x, v, a)

    def crba():
        for x in qs:
            pin.crba(pm, pd, x)

    def aba():
        for x, v, a in zip(qs, vs, as_):
            pin.aba(pm, pd, x, v, a)

    return {"fk_jacobian": fkj, "rnea": rnea, "crba": crba, "aba": aba}


class _Pinocchio:
    def __init__(self, path: Path, model: RobotModel, end_link: str):
        import pinocchio as pin

        self.pin = pin
        self.pm = pin.buildModelFromUrdf(str(path))
        self.pd = self.pm.createData()
        names = [self.pm.names[i] for i in range(1, self.pm.njoints)]
        if sorted(names) != sorted(model.joint_names) or self.pm.nq != self.pm.nv:
            raise ValueError("Pinocchio reads a different joint set (or continuous joints)")
        self.perm = np.array([self.pm.joints[names.index(j) + 1].idx_v for j in model.joint_names])
        self.fid = self.pm.getFrameId(end_link, pin.BODY)

    def calls(self, q, qd, qdd):
        pm, pd, fid = self.pm, self.pd, self.fid

        def reorder(x):
            out = np.zeros_like(x)
            out[:, self.perm] = x
            return [np.ascontiguousarray(r) for r in out]

        return pinocchio_loops(pm, pd, fid, reorder(q), reorder(qd), reorder(qdd))


class _PytorchKinematics:
    def __init__(self, path: Path, end_link: str):
        import pytorch_kinematics as pk

        data = path.read_bytes()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.chain = pk.build_chain_from_urdf(data).to(dtype=torch.float64)
            self.serial = pk.build_serial_chain_from_urdf(data, end_link).to(dtype=torch.float64)
        self.names = self.chain.get_joint_parameter_names()

    def calls(self, q, qd, qdd, model: RobotModel):
        if (
            sorted(self.names) != sorted(model.joint_names)
            or len(self.serial.get_joint_parameter_names()) != model.dof
        ):
            return {}
        order = [model.joint_names.index(n) for n in self.names]
        qt = torch.as_tensor(q)[:, order].contiguous()
        serial_order = [model.joint_names.index(n) for n in self.serial.get_joint_parameter_names()]
        qs = torch.as_tensor(q)[:, serial_order].contiguous()
        return {"fk_jacobian": lambda: (self.chain.forward_kinematics(qt), self.serial.jacobian(qs))}


class _DRM:
    def __init__(self, path: Path, end_link: str):
        from differentiable_robot_model.robot_model import DifferentiableRobotModel

        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.robot = DifferentiableRobotModel(str(path), device="cpu")
        self.end = end_link

    def calls(self, q, qd, qdd, model: RobotModel):
        r, e = self.robot, self.end
        names = [r._bodies[i].joint_name if hasattr(r._bodies[i], "joint_name") else None
                 for i in getattr(r, "_controlled_joints", [])]
        if r._n_dofs != model.dof:
            return {}
        if all(names) and sorted(cast("list[str]", names)) == sorted(model.joint_names):
            order = [model.joint_names.index(n) for n in cast("list[str]", names)]
        else:
            order = list(range(model.dof))
        f = lambda x: torch.as_tensor(x, dtype=torch.float32)[:, order].contiguous()
        q32, qd32, qdd32 = f(q), f(qd), f(qdd)
        return {
            "fk_jacobian": lambda: (
                r.compute_forward_kinematics(q32, e),
                r.compute_endeffector_jacobian(q32, e),
            ),
            "rnea": lambda: r.compute_inverse_dynamics(q32, qd32, qdd32, include_gravity=True),
            "crba": lambda: r.compute_lagrangian_inertia_matrix(q32),
            "aba": lambda: r.compute_forward_dynamics(q32, qd32, qdd32, include_gravity=True),
        }


def run_rbd_benchmark(cfg: RbdBenchConfig, progress: Callable[[float, str], None] | None = None) -> dict:
    """Run the benchmark; returns ``{robot, dof, threads, rows: [{algorithm, batch, ours_ms, ...}]}``."""
    torch.set_num_threads(cfg.threads)
    malloc_tuned = tune_malloc() if cfg.tune_malloc else False
    path = resolve_bench_robot(cfg.robot)
    ours = _Ours(path, "", resolve_device(cfg.device))
    model = ours.model
    end = default_end_effector(model)
    ours.end = end
    others: dict[str, _Pinocchio | _PytorchKinematics | _DRM] = {}
    loaders: dict[str, Callable[[], _Pinocchio | _PytorchKinematics | _DRM]] = {
        "pinocchio": lambda: _Pinocchio(path, model, end),
        "pytorch_kinematics": lambda: _PytorchKinematics(path, end),
        "drm": lambda: _DRM(path, end)}
    for name in cfg.libraries:
        try:
            others[name] = loaders[name]()
        except Exception as exc:  # absent or unable to read this robot: reported as null
            log.info("%s unavailable for %s: %s", name, path, exc)
    rng = np.random.default_rng(cfg.seed)
    rows = []
    total = len(cfg.batches) * len(ALGORITHMS)
    done = 0
    for batch in cfg.batches:
        lo = np.maximum(model.joint_limits.lower.cpu().numpy(), -np.pi)
        hi = np.minimum(model.joint_limits.upper.cpu().numpy(), np.pi)
        q = rng.uniform(lo, hi, size=(batch, model.dof))
        qd = rng.normal(size=(batch, model.dof))
        qdd = rng.normal(size=(batch, model.dof))
        fns = {"ours": ours.calls(q, qd, qdd)}
        fns["ours_torch"] = _torch_path(fns["ours"])
        for name, lib in others.items():
            try:
                fns[name] = (cast(_Pinocchio, lib).calls(q, qd, qdd) if name == "pinocchio"
                             else cast("_PytorchKinematics | _DRM", lib).calls(q, qd, qdd, model))
            except Exception as exc:
                log.info("%s failed: %s", name, exc)
                fns[name] = {}
        for alg in ALGORITHMS:
            row = {"algorithm": alg, "batch": batch}
            keys = {"ours": "ours_ms", "ours_torch": "ours_torch_ms", "pinocchio": "pinocchio_ms",
                    "pytorch_kinematics": "pytorch_kinematics_ms", "drm": "drm_ms"}
            present = {name: fns[name][alg] for name in keys if alg in fns.get(name, {})}
            times = _time_interleaved(present, cfg)
            for name, key in keys.items():
                row[key] = times.get(name)
            rows.append(row)
            done += 1
            if progress is not None:
                progress(done / total, f"{alg} batch {batch}")
    derivative_rows = _derivative_rows(cfg, model, cast("_Pinocchio | None", others.get("pinocchio")), rng)
    batch1_rows = _batch1_rows(cfg, model, end, cast("_Pinocchio | None", others.get("pinocchio")), rng) \
        if cfg.batch1 else []
    floating_rows = []
    for name in cfg.floating:
        try:
            floating_rows += _floating_rows(name, cfg, rng)
        except Exception as exc:  # a robot this machine does not have: reported in the log only
            log.info("floating-base benchmark of %s failed: %s", name, exc)
    return {"robot": str(cfg.robot), "urdf": str(path), "dof": model.dof, "threads": cfg.threads,
            "device": str(model.device),
            "end_link": end, "malloc_tuned": malloc_tuned, "rows": rows, "floating_rows": floating_rows,
            "derivative_rows": derivative_rows, "batch1_rows": batch1_rows}


def _derivative_rows(cfg: RbdBenchConfig, model: RobotModel, pin_: _Pinocchio | None, rng) -> list[dict]:
    """Rows ``{algorithm, batch, ours_ms, ours_torch_ms, pinocchio_ms}`` of the analytic derivatives
    (:mod:`engine.robots.bench_derivatives`)."""
    from engine.robots import bench_derivatives as bd

    rows = []
    for batch in cfg.derivative_batches:
        lo = np.maximum(model.joint_limits.lower.cpu().numpy(), -np.pi)
        hi = np.minimum(model.joint_limits.upper.cpu().numpy(), np.pi)
        q = rng.uniform(lo, hi, size=(batch, model.dof))
        qd, qdd = rng.normal(size=(2, batch, model.dof))
        ours = _synced(bd.derivative_calls(model, q, qd, qdd), model.device)
        fns = {"ours": ours, "ours_torch": _torch_path(ours)}
        if pin_ is not None:
            def reorder(x, perm=pin_.perm):
                out = np.zeros_like(x)
                out[:, perm] = x
                return [np.ascontiguousarray(r) for r in out]

            fns["pinocchio"] = bd.pinocchio_derivative_loops(pin_.pm, pin_.pd, reorder(q), reorder(qd), reorder(qdd))
        for alg in bd.DERIVATIVE_ALGORITHMS:
            times = _time_interleaved({name: f[alg] for name, f in fns.items()}, cfg)
            rows.append({"algorithm": alg, "batch": batch, "ours_ms": times.get("ours"),
                         "ours_torch_ms": times.get("ours_torch"), "pinocchio_ms": times.get("pinocchio")})
    return rows


def _batch1_rows(cfg: RbdBenchConfig, model: RobotModel, end: str, pin_: _Pinocchio | None, rng) -> list[dict]:
    """Rows ``{algorithm, thin_us, plain_us, routed_us, pinocchio_us}`` of one sample per call
    (:mod:`engine.robots.bench_batch1`)."""
    from engine.robots import bench_batch1 as b1

    lo = np.maximum(model.joint_limits.lower.cpu().numpy(), -np.pi)
    hi = np.minimum(model.joint_limits.upper.cpu().numpy(), np.pi)
    q, v, a = rng.uniform(lo, hi), rng.normal(size=model.dof), rng.normal(size=model.dof)
    fns = b1.batch1_calls(model, end, q, v, a)
    if pin_ is not None:
        qp, vp, ap = (np.zeros(model.dof) for _ in range(3))
        qp[pin_.perm], vp[pin_.perm], ap[pin_.perm] = q, v, a
        fns["pinocchio"] = b1.pinocchio_batch1_calls(pin_.pm, pin_.pd, pin_.fid, qp, vp, ap)
    rows = []
    for alg in b1.BATCH1_ALGORITHMS:
        times = b1.cpu_time_per_call({name: f[alg] for name, f in fns.items() if alg in f}, cfg.repeats,
                                     cfg.min_time_s)
        rows.append({"algorithm": alg} | {f"{name}_us": times.get(name) for name in ("thin", "plain", "routed",
                                                                                      "pinocchio")})
    return rows


def _floating_calls(model, end, pm, pd, fid, state, pin_state):
    """The four algorithms on one batch, ours and Pinocchio's loop: ``({alg: fn}, {alg: fn})``."""
    qt, vt, at = (torch.as_tensor(x, device=model.device) for x in state)
    theirs = pinocchio_loops(pm, pd, fid, *([np.ascontiguousarray(r) for r in x] for x in pin_state))

    ours = {"fk_jacobian": lambda: (model.forward_kinematics(qt), model.jacobian(qt, end)),
            "rnea": lambda: model.inverse_dynamics(qt, vt, at), "crba": lambda: model.mass_matrix(qt),
            "aba": lambda: model.forward_dynamics(qt, vt, at)}
    return _synced(ours, model.device), theirs


def _floating_rows(name: str, cfg: RbdBenchConfig, rng) -> list[dict]:
    """Rows ``{robot, nv, algorithm, batch, ours_ms, pinocchio_ms}`` of a floating-base library robot."""
    import pinocchio as pin

    from engine.robots.library import load_robot, resolve_robot

    logging.disable(logging.WARNING)
    try:
        model = load_robot(name, floating_base=True, device=resolve_device(cfg.device))
    finally:
        logging.disable(logging.NOTSET)
    path = resolve_robot(name)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=bool(model.mimic_joint_names))
    pd = pm.createData()
    end = default_end_effector(model)
    fid = pm.getFrameId(end, pin.BODY)
    slots = [pm.joints[pm.getJointId(j)] for j in model.joint_names]
    rows = []
    for batch in cfg.batches:
        lim = model.joint_limits
        joints = rng.uniform(
            np.maximum(lim.lower.cpu().numpy(), -np.pi),
            np.minimum(lim.upper.cpu().numpy(), np.pi),
            (batch, model.dof),
        )
        quat = rng.normal(size=(batch, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        q = np.concatenate([rng.normal(size=(batch, 3)), quat, joints], 1)
        v, a = rng.normal(size=(2, batch, model.nv))
        qp = np.zeros((batch, pm.nq))
        qp[:, :7] = q[:, :7]
        vp, ap = np.zeros((batch, pm.nv)), np.zeros((batch, pm.nv))
        vp[:, :6], ap[:, :6] = v[:, :6], a[:, :6]
        for k, jm in enumerate(slots):
            if jm.nq == 2:
                qp[:, jm.idx_q], qp[:, jm.idx_q + 1] = np.cos(joints[:, k]), np.sin(joints[:, k])
            else:
                qp[:, jm.idx_q] = joints[:, k]
            vp[:, jm.idx_v], ap[:, jm.idx_v] = v[:, 6 + k], a[:, 6 + k]
        ours, theirs = _floating_calls(model, end, pm, pd, fid, (q, v, a), (qp, vp, ap))
        algorithms: tuple[str, ...] = ALGORITHMS
        if batch in cfg.derivative_batches:     # the analytic derivatives too (bench_derivatives)
            from engine.robots import bench_derivatives as bd

            ours |= _synced(bd.derivative_calls(model, q, v, a), model.device)
            theirs |= bd.pinocchio_derivative_loops(pm, pd, *([np.ascontiguousarray(r) for r in x]
                                                               for x in (qp, vp, ap)))
            algorithms = ALGORITHMS + bd.DERIVATIVE_ALGORITHMS
        torch_path = _torch_path(ours)
        for alg in algorithms:
            fns = {"ours": ours[alg], "pinocchio": theirs[alg]} | (
                {"torch": torch_path[alg]} if alg in torch_path else {}
            )
            times = _time_interleaved(fns, cfg)
            rows.append({"robot": name, "nv": model.nv, "algorithm": alg, "batch": batch,
                         "ours_ms": times.get("ours"), "ours_torch_ms": times.get("torch"),
                         "pinocchio_ms": times.get("pinocchio")})
    return rows


def format_table(result: dict) -> str:
    """The result as a text table with speed-up ratios (reference time / ours); "torch": ours
    through the torch algorithms (differentiable), with its own ratios ("xt")."""
    lines = [(f"robot {result['robot']} ({result['dof']} dof, {result['threads']} threads, end link "
              f"{result['end_link']}, malloc tuned: {result.get('malloc_tuned', False)}); times in ms, "
              f"ratio = their time / ours (> 1: we are faster); torch: ours through the differentiable torch "
              f"algorithms, xt its ratio")]
    head = (
        f"{'algorithm':<12}{'batch':>6}{'ours':>9}{'torch':>9}{'pinocchio':>11}{'x':>7}{'xt':>6}{'pk':>9}{'x':>7}"
        f"{'drm':>10}{'x':>8}{'xt':>7}"
    )
    lines.append(head)

    def cell(r, key, width):
        v = r.get(key)
        return f"{'-':>{width}}" if v is None else f"{v:>{width}.3f}"

    def ratio(r, key, width, ours="ours_ms"):
        v, o = r.get(key), r.get(ours)
        return f"{'-':>{width}}" if v is None or not o else f"{v / o:>{width}.1f}"

    for r in result["rows"]:
        lines.append(
            f"{r['algorithm']:<12}{r['batch']:>6}{cell(r, 'ours_ms', 9)}{cell(r, 'ours_torch_ms', 9)}"
            f"{cell(r, 'pinocchio_ms', 11)}{ratio(r, 'pinocchio_ms', 7)}"
            f"{ratio(r, 'pinocchio_ms', 6, 'ours_torch_ms')}"
            f"{cell(r, 'pytorch_kinematics_ms', 9)}{ratio(r, 'pytorch_kinematics_ms', 7)}"
            f"{cell(r, 'drm_ms', 10)}{ratio(r, 'drm_ms', 8)}{ratio(r, 'drm_ms', 7, 'ours_torch_ms')}"
        )
    if result.get("derivative_rows"):
        lines.append("analytic derivatives (full matrices; *_backward: forward + backward of a weighted sum; *_vjp: "
                     "the backward alone) against Pinocchio's computeRNEADerivatives / computeABADerivatives loop")
        lines.append(f"{'algorithm':<12}{'batch':>6}{'ours':>9}{'torch':>9}{'pinocchio':>11}{'x':>7}{'xt':>6}")
    for r in result.get("derivative_rows", []):
        lines.append(f"{r['algorithm']:<12}{r['batch']:>6}{cell(r, 'ours_ms', 9)}{cell(r, 'ours_torch_ms', 9)}"
                     f"{cell(r, 'pinocchio_ms', 11)}{ratio(r, 'pinocchio_ms', 7)}"
                     f"{ratio(r, 'pinocchio_ms', 6, 'ours_torch_ms')}")
    if result.get("batch1_rows"):
        from engine.robots.bench_batch1 import format_batch1_rows

        lines.append(format_batch1_rows(result["batch1_rows"]))
    robot = None
    for r in result.get("floating_rows", []):
        if r["robot"] != robot:
            robot = r["robot"]
            lines.append(
                f"floating base: {robot} (nv {r['nv']}, free-flyer coordinates) against Pinocchio's loop"
            )
            lines.append(f"{'algorithm':<12}{'batch':>6}{'ours':>9}{'torch':>9}{'pinocchio':>11}{'x':>7}{'xt':>6}")
        lines.append(
            f"{r['algorithm']:<12}{r['batch']:>6}{cell(r, 'ours_ms', 9)}{cell(r, 'ours_torch_ms', 9)}"
            f"{cell(r, 'pinocchio_ms', 11)}{ratio(r, 'pinocchio_ms', 7)}"
            f"{ratio(r, 'pinocchio_ms', 6, 'ours_torch_ms')}"
        )
    return "\n".join(lines)
