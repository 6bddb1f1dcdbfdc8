"""The Model lab's state, without Qt: the data, the models shown in the comparison, which plots apply,
and the one-click example ("Compare models on an example log").

:class:`ModelLabState` holds the current data source (a generated data set or a prepared log,
with the JSON-able description that rebuilds it), the runs whose results are compared, the
compare view's choices (signal, learned quantity, size metric) and the example's progress
and result (:class:`ExampleComparison`, dataclasses). Jobs go through a runner with
``submit(job, name=, on_result=, on_error=, on_progress=, on_cancelled=)``. Changes are
announced through plain callbacks in :attr:`ModelLabState.events`; the page observes them.
Tests drive this object directly. Engine calls go through the workspace's engine bridge.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.widgets.events import Events
from app.workspaces.model_lab import lab_jobs, robot_compare
from app.workspaces.model_lab.run_queue import COMPARE_PREFIX
from engine.jobs import ProgressSpan
from engine.logs import LogMapping, PrepareConfig
from engine.logs.units import si_unit
from engine.paths import resource
from engine.training import compare as lc
from engine.training.compare import LogCompareConfig

__all__ = ["EXAMPLE_LOG", "EXAMPLE_MODELS", "PLOTS", "DataSource", "ExampleComparison", "ExampleSettings",
           "ModelLabState", "ModelResult", "signal_labels"]

EXAMPLE_LOG = "pendulum_friction"
EXAMPLE_MODELS = ("node-rk4", "lnode-rk4")
PLOTS = ("rollout", "phase", "energy", "horizon", "inertia", "size", "torque")
SIZE_METRICS = ("integration_mse", "test_mse", "train_mse", "energy_mse", "inertia_mse")


def example_log_path(name: str = EXAMPLE_LOG) -> Path:
    """A shipped example log (``resources/logs/<name>.csv``)."""
    return Path(resource("logs", f"{name}.csv"))


@dataclass
class DataSource:
    """The data the models train on and are compared against."""

    dataset: object                    # TrajectoryDataset or LogDataset
    source: dict                       # JSON-able: {"kind": "generated", "config"} or {"kind": "log", ...}
    prepared: object | None = None     # the PreparedLog of a log

    @property
    def is_log(self) -> bool:
        return self.source.get("kind") == "log"

    def summary(self) -> str:
        return lab_jobs.data_summary(self.dataset)


@dataclass
class ModelResult:
    """One trained model of a comparison (what the compare view draws)."""

    name: str
    model_type: str
    index: int                         # colour index
    row: dict                          # metrics row
    curves: dict                       # plot data
    losses: list = field(default_factory=list)
    train_config: object | None = None
    model: object | None = None


@dataclass
class ExampleSettings:
    """The one-click example: which shipped log, which two models, how long they train."""

    log: str = EXAMPLE_LOG
    models: tuple[str, ...] = EXAMPLE_MODELS
    epochs: int = 40
    steps: int = 16
    horizon: int = 40


@dataclass
class ExampleComparison:
    """The example's result: the data it used and the trained models."""

    data: DataSource
    models: list[ModelResult]
    seconds: float = 0.0


_UNIT_SUFFIX = re.compile(r"[_ ](mm|cm|m|ms|us|s|deg|rad|rev|N|Nm|mm_s|deg_s|rad_s|rpm)$")


def signal_labels(names: list[str], units: dict[str, str] | None = None) -> list[str]:
    """Plot labels of the q signals in the units they are shown in (SI, after conversion).

    ``cart_x_mm`` logged in mm is plotted in metres: "cart_x [m]" (the unit suffix of the
    column name is dropped so the label does not name the unit it no longer is in)."""
    out = []
    for name in names:
        unit = (units or {}).get(name)
        if unit is None:
            out.append(name)
            continue
        si = si_unit(unit)
        base = _UNIT_SUFFIX.sub("", name) if si != unit or name.endswith(f"_{unit}") else name
        out.append(f"{base} [{si}]" if si else base)
    return out


class ModelLabState:
    """Events (plain callbacks):

    - ``data(DataSource or None)``: new data;
    - ``runs(list)``: the compared runs changed;
    - ``plots(dict name -> reason or None)``: which plots apply (None = shown; a reason = hidden);
    - ``example_busy(bool)``, ``example_progress(fraction or None, message)``,
      ``example(ExampleComparison)``: the one-click example;
    - ``robot(source or None)``: the robot a comparison on the log uses;
    - ``compare_busy(bool)``, ``compare_progress(fraction or None, message)``,
      ``robot_comparison(RobotComparison)``: the comparison on a robot's log
      (:mod:`~app.workspaces.model_lab.robot_compare`);
    - ``message(text)``, ``error(title, message)``.
    """

    def __init__(self, runner=None):
        self.events = Events("data", "runs", "plots", "example_busy", "example_progress", "example",
                             "robot", "compare_busy", "compare_progress", "robot_comparison",
                             "message", "error")
        self.runner = runner
        self.data: DataSource | None = None
        self.runs: list = []                 # objects with name, model_type, index, row, curves
        self._trained: list = []             # the runs panel's runs (the comparison's entries follow them)
        self.robot: str | None = None        # the robot of the log (library name or robot file)
        self.shown_robot: str | None = None  # the robot the Robot workspace shows (the shell tells)
        self.robot_comparison = None         # RobotComparison
        self.compare_handle = None
        self.compare_folder: Path | None = None
        self.signal = 0
        self.learned = "inertia"
        self.size_metric = SIZE_METRICS[0]
        self.example_settings = ExampleSettings()
        self.example_result: ExampleComparison | None = None
        self.example_handle = None
        self.example_progress: tuple[float | None, str] = (0.0, "")

    # ------------------------------------------------------------------ data and runs
    @property
    def is_empty(self) -> bool:
        """Nothing to show yet: no data and no trained model (the page shows what to do)."""
        return self.data is None and not self.runs

    def set_data(self, dataset, source: dict, prepared=None) -> None:
        new_log = self.data is None or self.data.source.get("path") != source.get("path")
        self.data = DataSource(dataset, dict(source), prepared)
        self.signal = 0
        if new_log and self.robot_comparison is not None:   # its rows are of another log
            self.robot_comparison = None
        self.events.data.emit(self.data)
        if self.data.is_log and self.robot is None:
            self.set_robot(self.default_robot())
        self.set_runs(self._trained)

    def set_runs(self, runs: list) -> None:
        """The runs to compare (those without results are left out); the robot comparison's
        models follow them."""
        self._trained = list(runs)
        entries = self.robot_comparison.entries if self.robot_comparison is not None else []
        self.runs = [r for r in self._trained if getattr(r, "row", None) is not None] + list(entries)
        self.events.runs.emit(self.runs)
        self.events.plots.emit(self.applicable_plots())

    def signal_names(self) -> list[str]:
        """The q signals' labels, in the units plotted (SI)."""
        if self.data is None:
            return []
        ds = self.data.dataset
        names = getattr(ds, "q_names", None) or [f"q[{i}]" for i in range(ds.system.dof)]
        units = ((self.data.source.get("mapping") or {}).get("units") or {}) if self.data.is_log else None
        return signal_labels(list(names), units)

    def joint_names(self) -> list[str]:
        """The robot's joints, in the order of the comparison's per-joint values ([] without one)."""
        return list(self.robot_comparison.joint_names) if self.robot_comparison is not None else []

    def sizes(self) -> list[int]:
        """The distinct training-set sizes N of the compared runs that have the size metric."""
        out = set()
        for r in self.runs:
            v, n = r.row.get(self.size_metric), r.row.get("trajectories")
            if isinstance(v, (int, float)) and n and math.isfinite(v) and v > 0:
                out.add(int(n))
        return sorted(out)

    def applicable_plots(self) -> dict[str, str | None]:
        """Plot name -> None when it applies to the data and runs, else why not (it is hidden)."""
        out: dict[str, str | None] = dict.fromkeys(PLOTS)
        if self.data is None:
            return {k: "no data yet" for k in PLOTS}
        if self.data.is_log:
            out["energy"] = "a log has no known energy"
            out["inertia"] = "a log has no known inertia"
        else:
            keys = ("inertia_true", "potential_true")
            if self.runs and not any(
                r.curves and any(r.curves.get(k) is not None for k in keys) for r in self.runs
            ):
                out["inertia"] = "no model here learns one"
        if len(self.sizes()) < 2:
            out["size"] = "needs runs at two or more N (Add sweep)"
        if not any(r.row.get("torque_rmse_per_joint") for r in self.runs):
            out["torque"] = "no model here gives joint torques (compare on a robot in the Hardware log tab)"
        return out

    def set_choices(
        self, signal: int | None = None, learned: str | None = None, size_metric: str | None = None
    ):
        if signal is not None:
            self.signal = max(0, int(signal))
        if learned is not None:
            self.learned = learned
        if size_metric is not None:
            self.size_metric = size_metric
        self.events.plots.emit(self.applicable_plots())

    # ------------------------------------------------------------------ the example
    @property
    def example_running(self) -> bool:
        return self.example_handle is not None

    def run_example(self, settings: ExampleSettings | None = None) -> bool:
        """Load the shipped example log, train two small models on it in one job, compare them."""
        if self.example_running:
            return False
        settings = settings or self.example_settings
        self.example_settings = settings
        job = example_job(settings)
        self.example_progress = (0.0, "starting")
        self.example_handle = _PENDING
        self.events.example_busy.emit(True)
        handle = self.runner.submit(job, name="Compare models on an example log", on_result=self._on_example,
                                    on_error=self._on_example_error, on_progress=self._on_example_progress,
                                    on_cancelled=self._on_example_cancelled)
        if self.example_handle is _PENDING:
            self.example_handle = handle
        return True

    def cancel_example(self) -> None:
        if self.example_handle is not None and self.example_handle is not _PENDING:
            self.example_handle.cancel()

    def _example_ended(self) -> None:
        self.example_handle = None
        self.events.example_busy.emit(False)

    def _on_example_progress(self, update) -> None:
        self.example_progress = (update.fraction, update.message)
        self.events.example_progress.emit(update.fraction, update.message)

    def _on_example(self, result: ExampleComparison) -> None:
        self.example_result = result
        self._example_ended()
        self.set_data(result.data.dataset, result.data.source, result.data.prepared)
        self.events.example.emit(result)
        self.set_runs(result.models)
        self.events.message.emit(
            f"Example: {len(result.models)} models trained on {Path(result.data.source['path']).name} "
            f"in {result.seconds:.0f} s"
        )

    def _on_example_error(self, message: str, _tb: str = "") -> None:
        self._example_ended()
        self.events.error.emit("Compare models on an example log", message)

    def _on_example_cancelled(self) -> None:
        self._example_ended()
        self.events.message.emit("Example cancelled.")

    # ------------------------------------------------------------------ comparing on a robot
    def default_robot(self) -> str | None:
        """The robot for the log: the one the Robot workspace shows, else a library robot named like
        the log (``panda_joints.csv`` -> panda), else None (the user picks one)."""
        if self.shown_robot:
            return self.shown_robot
        if self.data is not None and self.data.is_log and self.data.source.get("path"):
            return robot_compare.robot_named_like(self.data.source["path"])
        return None

    def set_robot(self, source: str | None) -> None:
        """The robot whose log this is: a library name or a URDF, xacro or MJCF path."""
        self.robot = str(source).strip() if source else None
        self.events.robot.emit(self.robot)

    def set_shown_robot(self, source: str | None) -> None:
        """The robot the Robot workspace shows (the shell tells); it becomes the log's robot when
        the user has chosen none."""
        self.shown_robot = str(source) if source else None
        if self.robot is None and self.shown_robot:
            self.set_robot(self.shown_robot)

    @property
    def comparing(self) -> bool:
        return self.compare_handle is not None

    def compare_on_robot(self, models, epochs: int | None = None, lagrangian_prior: str | None = None) -> bool:
        """Compare ``models`` on the log with :attr:`robot` in one job (progress, cancel);
        ``lagrangian_prior``: "robot" or "none" (LogCompareConfig.lagrangian_prior; None: its
        default). Bad input is one plain ``error`` event before any work; returns whether the job
        started."""
        if self.comparing:
            return False
        try:
            if self.data is None or not self.data.is_log:
                raise ValueError("open a hardware log first (Hardware log tab)")
            if not self.robot:
                raise ValueError("choose the robot whose log this is")
            folder = Path(self.compare_folder or Path.cwd()) / time.strftime(f"{COMPARE_PREFIX}%Y%m%d_%H%M%S")
            first = 1 + max((getattr(r, "index", 0) for r in self._trained), default=0)
            job = robot_compare.robot_compare_job(self.data.source, self.robot, list(models), folder, epochs,
                                                  first_index=first, lagrangian_prior=lagrangian_prior)
        except ValueError as exc:
            self.events.error.emit("Compare on the robot", str(exc))
            return False
        self.compare_handle = _PENDING
        self.events.compare_busy.emit(True)
        self.events.compare_progress.emit(0.0, "starting")
        handle = self.runner.submit(job, name=f"Compare models on {Path(self.robot).name}",
                                    on_result=self._on_compared, on_error=self._on_compare_error,
                                    on_progress=lambda u: self.events.compare_progress.emit(u.fraction, u.message),
                                    on_cancelled=self._on_compare_cancelled)
        if self.compare_handle is _PENDING:
            self.compare_handle = handle
        return True

    def cancel_compare(self) -> None:
        if self.compare_handle is not None and self.compare_handle is not _PENDING:
            self.compare_handle.cancel()

    def _compare_ended(self) -> None:
        self.compare_handle = None
        self.events.compare_busy.emit(False)

    def _on_compared(self, result) -> None:
        self._compare_ended()
        self.robot_comparison = result
        self.events.robot_comparison.emit(result)
        self.set_runs(self._trained)
        failed = [r["model"] for r in result.rows if r.get("error")]
        self.events.message.emit(
            f"Compared {len(result.rows)} models on {Path(result.robot).name} in {result.seconds:.0f} s"
            + (f"; {', '.join(failed)} failed (the table says why)" if failed else ""))

    def _on_compare_error(self, message: str, _tb: str = "") -> None:
        self._compare_ended()
        self.events.error.emit("Compare on the robot", message)

    def _on_compare_cancelled(self) -> None:
        self._compare_ended()
        self.events.message.emit("Comparison on the robot cancelled.")

    def identified_robot(self) -> str | None:
        """The robot file identified by the last comparison (URDF, its actuation JSON beside it)."""
        c = self.robot_comparison
        return c.identified if c is not None else None


_PENDING = object()


def example_job(settings: ExampleSettings):
    """A job: read the shipped log with its mapping, prepare it, train and evaluate each model."""
    path = example_log_path(settings.log)
    mapping_path = path.with_name(path.stem + ".mapping.json")

    def job(ctx) -> ExampleComparison:
        import time

        t0 = time.perf_counter()
        ctx.progress(0.0, f"reading {path.name}")
        table = lab_jobs.read_log_job(path)(ProgressSpan(ctx, 0.0, 0.05))
        mapping = LogMapping.load(mapping_path)
        prepare = PrepareConfig()
        compare = LogCompareConfig(steps=settings.steps, horizon=settings.horizon, epochs=settings.epochs)
        ctx.progress(0.05, "preparing the log")
        prepared, dataset = lab_jobs.prepare_job(table, mapping, prepare, compare)(
            ProgressSpan(ctx, 0.05, 0.1)
        )
        source = {
            "kind": "log",
            "path": str(path),
            "mapping": mapping.to_dict(),
            "prepare": prepare.to_dict(),
            "compare": compare.to_dict(),
        }
        models = []
        n = len(settings.models)
        for i, model_type in enumerate(settings.models):
            ctx.check_cancelled()
            cfg = lab_jobs.with_changes(
                lab_jobs.default_train_config(dataset, model_type), epochs=settings.epochs
            )
            span = (0.1 + 0.9 * i / n, 0.1 + 0.9 * (i + 1) / n)
            out = lc.train_and_evaluate(model_type, dataset, cfg, None, ctx, span)
            row = dict(out["row"])
            row["model"], row["type"] = model_type, model_type
            models.append(ModelResult(name=model_type, model_type=model_type, index=i, row=row,
                                      curves=out["curves"], losses=list(out["losses"]), train_config=cfg,
                                      model=out["model"]))
        ctx.progress(1.0, "comparison ready")
        return ExampleComparison(DataSource(dataset, source, prepared), models, time.perf_counter() - t0)

    return job
