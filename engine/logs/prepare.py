"""From a mapped log to training data: resample, smooth, differentiate, split.

:func:`prepare_log` (job form :func:`prepare_job`) turns a :class:`LogTable` and a
:class:`LogMapping` into a :class:`PreparedLog` on a uniform time grid:

1. map and convert to SI units; check time (finite, strictly increasing) and NaN gaps;
2. optionally unwrap angle columns (``q`` in rad/deg/rev) so interpolation and
   differences do not jump at +-pi;
3. resample to the step ``dt`` (linear or cubic interpolation);
4. Savitzky-Golay smoothing (``scipy.signal.savgol_filter``) of ``q`` (and of logged
   velocities, and of ``u`` if asked);
5. velocities: the logged ones when mapped (and ``use_logged_velocities``), else finite
   differences (``np.gradient``, second order) of smoothed ``q`` or the Savitzky-Golay
   derivative; accelerations the same way;
6. train / validation masks from time ranges (or the last ``val_fraction`` of the time).

A log of several episodes (an ``episode_index`` column, as LeRobot's) is prepared episode by
episode and joined into one data set whose windows never cross an episode's start, split
into train and validation by episode: see :mod:`engine.logs.prepare_episodes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from engine.logs.errors import LogError
from engine.logs.mapping import LogMapping, MappedLog, apply_mapping
from engine.logs.prepared import PreparedLog, data_hash, load_prepared, split_masks
from engine.logs.table import LogTable
from engine.logs.units import ANGLE_UNITS
from engine.logs.validate import check_no_gaps, check_time, check_time_gaps
from engine.validation import InputError, check_allocation, check_finite, check_int, check_range

__all__ = [
    "PrepareConfig",
    "PreparedLog",
    "differentiate",
    "load_prepared",
    "prepare_job",
    "prepare_log",
    "resample",
    "smooth",
    "smoothing_preview",
    "split_masks",
]

INTERPOLATIONS = ("linear", "cubic")
DERIVATIVES = ("finite_difference", "savgol")
TIME_GAPS = ("refuse", "keep", "split")


@dataclass
class PrepareConfig:
    """Preparation settings (one source of truth for the CLI flags and the GUI form).

    Times are log times in seconds (after unit conversion). ``dt``: resampling step (s),
    None = the median step of the log. ``window``: Savitzky-Golay window in samples of the
    resampled signal (odd, > ``polyorder``). ``train_ranges`` / ``val_ranges``: lists of
    ``[t_start, t_end]`` (s, inclusive); with neither, the last ``val_fraction`` of the
    time is validation; with one, the other is its complement. ``time_gaps``: a time step
    longer than ``gap_factor`` x the median step (a pause, a clock jump, one bogus timestamp)
    is refused (``"refuse"``, naming its line), resampled across (``"keep"``: the signals
    are interpolated over the gap) or cut out (``"split"``: each part between gaps is
    prepared on its own at the same ``dt`` and the parts are joined; the first sample of
    each later part is in neither mask, so training windows never straddle a gap).
    ``allow_large``: let through a resampled log bigger than the memory budget
    (engine/validation.py).
    """

    dt: float | None = None
    t_start: float | None = None
    t_end: float | None = None
    interpolation: str = "linear"
    smooth: bool = True
    window: int = 11
    polyorder: int = 3
    smooth_controls: bool = False
    derivative: str = "finite_difference"
    use_logged_velocities: bool = True
    accelerations: bool = True
    unwrap_angles: bool = False
    train_ranges: list[list[float]] = field(default_factory=list)
    val_ranges: list[list[float]] = field(default_factory=list)
    val_fraction: float = 0.2
    time_gaps: str = "refuse"
    gap_factor: float = 100.0
    allow_large: bool = False

    def validate(self) -> None:
        try:
            if self.dt is not None:
                check_range(None, "dt", self.dt, 0.0, None, lo_open=True, unit="s",
                            hint="the resampling step in seconds, e.g. 0.01")
            for name in ("t_start", "t_end"):
                if getattr(self, name) is not None:
                    check_finite(None, name, getattr(self, name))
            check_range(None, "gap_factor", self.gap_factor, 2.0, None,
                        hint="a step longer than this many median steps is a gap")
            check_int(None, "window", self.window, 3, 100_001, hint="an odd number of samples")
            check_int(None, "polyorder", self.polyorder, 0, 100_000)
            check_range(None, "val_fraction", self.val_fraction, 0.0, 1.0, hi_open=True)
            for name in (
                "smooth",
                "smooth_controls",
                "use_logged_velocities",
                "accelerations",
                "unwrap_angles",
                "allow_large",
            ):
                if not isinstance(getattr(self, name), bool):
                    raise InputError(f"must be true or false, got {getattr(self, name)!r}", field=name)
        except InputError as exc:
            raise LogError(exc.reason, setting=exc.field) from None
        for name, choices in (("time_gaps", TIME_GAPS), ("interpolation", INTERPOLATIONS),
                              ("derivative", DERIVATIVES)):
            if not isinstance(getattr(self, name), str) or getattr(self, name) not in choices:
                raise LogError(
                    f"must be one of {', '.join(choices)}, got {getattr(self, name)!r}", setting=name
                )
        if self.window % 2 == 0:
            raise LogError(f"must be an odd number >= 3, got {self.window}", setting="window")
        if not self.polyorder < self.window:
            raise LogError(f"must be in [0, window), got {self.polyorder}", setting="polyorder")
        for name in ("train_ranges", "val_ranges"):
            ranges = getattr(self, name)
            if not isinstance(ranges, (list, tuple)):
                raise LogError(f"must be a list of [t_start, t_end] pairs, got {ranges!r}", setting=name)
            for r in ranges:
                ok = isinstance(r, (list, tuple)) and len(r) == 2 and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in r)
                if not ok or not r[0] < r[1]:
                    raise LogError(f"each range must be [t_start, t_end] with t_start < t_end, got {r}",
                                   setting=name)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> PrepareConfig:
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise LogError(f"unknown field(s) {sorted(unknown)}", setting=min(unknown))
        return cls(**d)


def resample(t: np.ndarray, values: np.ndarray, grid: np.ndarray, method: str = "linear") -> np.ndarray:
    """Interpolate ``values`` (N,) or (N, k) sampled at increasing ``t`` (N,) onto ``grid`` (M,).

    NaN entries are skipped per column (each column is interpolated over its own samples).
    """
    values = np.asarray(values, dtype=np.float64)
    flat = values.reshape(len(t), -1)
    out = np.empty((len(grid), flat.shape[1]))
    for j in range(flat.shape[1]):
        ok = np.isfinite(flat[:, j])
        tj, vj = t[ok], flat[ok, j]
        if len(tj) < 2:
            raise LogError(f"column {j} has {len(tj)} samples; cannot interpolate")
        if method == "cubic" and len(tj) >= 4:
            from scipy.interpolate import CubicSpline

            out[:, j] = CubicSpline(tj, vj, extrapolate=True)(grid)
        else:
            out[:, j] = np.interp(grid, tj, vj)
    return out.reshape((len(grid),) + values.shape[1:])


def smooth(values: np.ndarray, window: int, polyorder: int, deriv: int = 0, dt: float = 1.0) -> np.ndarray:
    """Savitzky-Golay filter along axis 0 (``deriv`` > 0 gives derivatives scaled by ``dt``)."""
    from scipy.signal import savgol_filter

    n = values.shape[0]
    if n < window:
        raise LogError(f"the smoothing window ({window} samples) is longer than the data ({n} samples)",
                       setting="window")
    return savgol_filter(values, window, polyorder, deriv=deriv, delta=dt, axis=0, mode="interp")


def differentiate(values: np.ndarray, dt: float) -> np.ndarray:
    """Second-order finite differences along axis 0 (central inside, one-sided at the ends)."""
    if values.shape[0] < 3:
        raise LogError("need at least 3 samples for finite differences")
    return np.gradient(values, dt, axis=0, edge_order=2)


def _mapped_checked(table: LogTable, mapping: LogMapping, config: PrepareConfig | None = None) -> MappedLog:
    m = apply_mapping(table, mapping)
    refuse_gaps = config is None or config.time_gaps == "refuse"
    factor = 100.0 if config is None else config.gap_factor
    if table.sparse:
        # Each column is checked over its own samples; time over the rows that have any.
        keep = np.isfinite(m.t) & np.isfinite(m.q[:, 0])
        check_time(table, m.t[keep], mapping.time, rows=np.flatnonzero(keep))
        if refuse_gaps:
            check_time_gaps(table, m.t[keep], mapping.time, factor, rows=np.flatnonzero(keep))
    else:
        check_time(table, m.t, mapping.time)
        if refuse_gaps:
            check_time_gaps(table, m.t, mapping.time, factor)
        check_no_gaps(table, [c for c in mapping.columns if c != mapping.time])
    return m


def _grid(t: np.ndarray, config: PrepareConfig, source: str, spans: Sequence[tuple[float, float]] = (),
          channels: int = 1) -> tuple[np.ndarray, float]:
    """The uniform grid: from the latest start to the earliest end of the signals' ``spans``
    (multi-rate logs are never extrapolated), cropped to ``[t_start, t_end]``. Its memory
    (samples x ``channels`` x 8 bytes) is checked against the budget before it is made."""
    lo = max([float(np.nanmin(t))] + [a for a, _ in spans])
    hi = min([float(np.nanmax(t))] + [b for _, b in spans])
    t_lo = lo if config.t_start is None else max(config.t_start, lo)
    t_hi = hi if config.t_end is None else min(config.t_end, hi)
    dt = config.dt if config.dt is not None else float(np.median(np.diff(t[np.isfinite(t)])))
    if not t_hi > t_lo:
        raise LogError(f"the time range [{config.t_start}, {config.t_end}] holds no data "
                       f"(the signals span {lo:.6g} to {hi:.6g} s)", path=source, setting="t_start")
    n_float = np.floor((t_hi - t_lo) / dt + 1e-9) + 1
    check_allocation(
        f"resampling {t_hi - t_lo:.6g} s of log at dt = {dt:.3g} s ({n_float:.3g} samples x "
        f"{channels} channels)",
        n_float * channels,
        8,
        override_flag="--allow-large",
        allow=config.allow_large,
        hint="choose a larger --dt or a shorter --t-start/--t-end range",
    )
    n = int(n_float)
    return t_lo + dt * np.arange(n), dt


def _resampled(table, mapping, config):
    config.validate()
    m = _mapped_checked(table, mapping, config)
    q = m.q.copy()
    if config.unwrap_angles:
        for j, col in enumerate(mapping.q):
            if mapping.unit(col) in ANGLE_UNITS:
                ok = np.isfinite(q[:, j])
                q[ok, j] = np.unwrap(q[ok, j])
    src_t = m.t
    spans = []
    if table.sparse:
        ok = np.isfinite(src_t)
        src_t, q = src_t[ok], q[ok]
        qd = m.qd[ok] if m.qd is not None else None
        u = m.u[ok]
        for sig in (q, qd, u):
            for j in range(0 if sig is None else sig.shape[1]):
                tj = src_t[np.isfinite(sig[:, j])]
                if len(tj) < 2:
                    raise LogError(f"a mapped signal has {len(tj)} samples with a time; for signals from "
                                   "several topics map the time column 't' (it covers every row)",
                                   path=table.source or None, column=mapping.time)
                spans.append((float(tj[0]), float(tj[-1])))
    else:
        qd, u = m.qd, m.u
    nq, nu = q.shape[1], u.shape[1]
    # t, q, qd, qdd, u, the raw copies and the smoothing's temporaries: about 4 x (1 + 3 nq + nu)
    grid, dt = _grid(m.t, config, table.source, spans, channels=4 * (1 + 3 * nq + nu))
    try:
        q_r = resample(src_t, q, grid, config.interpolation)
        qd_r = resample(src_t, qd, grid, config.interpolation) if qd is not None else None
        u_r = resample(src_t, u, grid, config.interpolation) if u.shape[1] else np.zeros((len(grid), 0))
    except LogError as exc:
        raise LogError(exc.reason, path=table.source or None) from None
    return m, grid, dt, q_r, qd_r, u_r


def prepare_log(table: LogTable, mapping: LogMapping, config: PrepareConfig | None = None,
                ctx=None) -> PreparedLog:
    """Resample, smooth, differentiate and split a log (see the module doc); a log of several
    episodes is prepared episode by episode (:mod:`engine.logs.prepare_episodes`)."""
    from engine.logs.episodes import episode_rows

    config = config or PrepareConfig()
    groups = episode_rows(table)
    if groups:
        from engine.logs.prepare_episodes import prepare_episodes

        return prepare_episodes(table, mapping, config, groups, prepare_log, ctx)
    if config.time_gaps == "split":
        return _prepare_split(table, mapping, config, ctx)
    if ctx is not None:
        ctx.progress(0.0, "checking and resampling")
    m, t, dt, q_raw, qd_log, u = _resampled(table, mapping, config)
    if ctx is not None:
        ctx.check_cancelled()
        ctx.progress(0.4, "smoothing")
    try:
        q = smooth(q_raw, config.window, config.polyorder) if config.smooth else q_raw
        if config.smooth_controls and u.shape[1]:
            u = smooth(u, config.window, config.polyorder)
        if qd_log is not None and config.use_logged_velocities:
            qd = smooth(qd_log, config.window, config.polyorder) if config.smooth else qd_log
            qd_source = "logged"
        elif config.derivative == "savgol":
            qd = smooth(q_raw, config.window, config.polyorder, deriv=1, dt=dt)
            qd_source = "savgol"
        else:
            qd = differentiate(q, dt)
            qd_source = "finite_difference"
        qdd = None
        if config.accelerations:
            if config.derivative == "savgol" and qd_source != "logged":
                qdd = smooth(q_raw, config.window, config.polyorder, deriv=2, dt=dt)
            else:
                qdd = differentiate(qd, dt)
    except LogError as exc:
        raise LogError(
            exc.reason, path=table.source or None, column=exc.column, setting=exc.setting
        ) from None
    if ctx is not None:
        ctx.check_cancelled()
        ctx.progress(0.8, "splitting")
    train, val = split_masks(t, config)
    arrays = {"t": t, "q": q, "qd": qd, "u": u, "train_mask": train, "val_mask": val}
    if qdd is not None:
        arrays["qdd"] = qdd
    description = {
        "source": table.source, "format": table.format, "mapping": mapping.to_dict(),
        "config": config.to_dict(), "n_samples": len(t), "dt": dt,
        "t_range": [float(t[0]), float(t[-1])], "q_names": list(mapping.q), "qd_names": list(mapping.qd),
        "u_names": list(mapping.u), "q_units": m.q_units, "u_units": m.u_units, "qd_source": qd_source,
        "n_train": int(train.sum()), "n_val": int(val.sum()),
    }
    prepared = PreparedLog(t=t, q=q, qd=qd, qdd=qdd, u=u, dt=dt, train_mask=train, val_mask=val,
                           description=description, data_hash=data_hash(arrays))
    if ctx is not None:
        ctx.progress(1.0, f"prepared {len(t)} samples at dt = {dt:.6g} s")
    return prepared


def _prepare_split(table: LogTable, mapping: LogMapping, config: PrepareConfig, ctx=None) -> PreparedLog:
    """``time_gaps="split"``: prepare each part of the log between time gaps on its own (same
    ``dt``), join them, and leave the first sample of every later part out of both masks."""
    from dataclasses import replace

    from engine.logs.validate import time_gaps

    config.validate()
    if table.sparse:
        raise LogError("time_gaps 'split' is for logs with one time column; use 'keep' or crop with "
                       "--t-start/--t-end", path=table.source or None, setting="time_gaps")
    m = apply_mapping(table, mapping)
    check_time(table, m.t, mapping.time)
    gaps, median = time_gaps(m.t, config.gap_factor)
    single = replace(config, time_gaps="refuse")
    if not gaps.size:
        return prepare_log(table, mapping, single, ctx)
    dt = config.dt if config.dt is not None else median
    cuts = [0, *(int(g) + 1 for g in gaps), table.n_rows]
    parts: list[PreparedLog] = []
    skipped: list[str] = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        rows = slice(a, b)
        lines = table.row_lines[rows] if table.row_lines is not None else None
        sub = LogTable(columns=table.columns, data={c: table.data[c][rows] for c in table.columns},
                       source=table.source, format=table.format, row_lines=lines,
                       repeated=table.repeated, skipped=table.skipped)
        sub_config = replace(
            single, dt=dt, t_start=None, t_end=None, train_ranges=[], val_ranges=[], val_fraction=0.0
        )
        t0, t1 = float(m.t[a]), float(m.t[b - 1])
        if (config.t_start is not None and t1 < config.t_start) or (
            config.t_end is not None and t0 > config.t_end
        ):
            continue
        sub_config = replace(sub_config, t_start=config.t_start, t_end=config.t_end)
        try:
            parts.append(prepare_log(sub, mapping, sub_config))
        except LogError as exc:
            if "samples" not in exc.reason and "holds no data" not in exc.reason:
                raise  # a part too short to prepare is skipped (and named); anything else is an error
            skipped.append(f"{t0:.6g} to {t1:.6g} s ({exc.reason})")
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress(b / table.n_rows * 0.95, f"prepared part {len(parts)} of the log")
    if not parts:
        raise LogError(
            f"every part of the log between time gaps is too short to prepare: {'; '.join(skipped)}",
            path=table.source or None,
            setting="time_gaps",
        )
    t = np.concatenate([p.t for p in parts])
    join = np.zeros(len(t), dtype=bool)
    join[np.cumsum([p.n_samples for p in parts])[:-1]] = True
    train, val = split_masks(t, config)
    train, val = train & ~join, val & ~join
    arrays = {"t": t, "q": np.concatenate([p.q for p in parts]), "qd": np.concatenate([p.qd for p in parts]),
              "u": np.concatenate([p.u for p in parts]), "train_mask": train, "val_mask": val}
    qdd = np.concatenate([p.qdd for p in parts]) if parts[0].qdd is not None else None
    if qdd is not None:
        arrays["qdd"] = qdd
    description = dict(parts[0].description)
    description.update(
        {
            "config": config.to_dict(),
            "n_samples": len(t),
            "t_range": [float(t[0]), float(t[-1])],
            "n_train": int(train.sum()),
            "n_val": int(val.sum()),
            "segments": [[float(p.t[0]), float(p.t[-1])] for p in parts],
            "skipped_segments": skipped,
        }
    )
    if ctx is not None:
        ctx.progress(1.0, f"prepared {len(t)} samples in {len(parts)} parts at dt = {dt:.6g} s")
    return PreparedLog(t=t, q=arrays["q"], qd=arrays["qd"], qdd=qdd, u=arrays["u"], dt=float(parts[0].dt),
                       train_mask=train, val_mask=val, description=description, data_hash=data_hash(arrays))


def prepare_job(table: LogTable, mapping: LogMapping, config: PrepareConfig | None = None):
    """A job (``job(ctx) -> PreparedLog``) for a job runner."""
    return lambda ctx: prepare_log(table, mapping, config, ctx)


def smoothing_preview(table: LogTable, mapping: LogMapping, config: PrepareConfig | None = None,
                      signal: str = "q", index: int = 0) -> dict[str, np.ndarray]:
    """Raw (resampled) against smoothed for one mapped signal, for a live preview.

    Returns ``{"t": (M,), "raw": (M,), "smoothed": (M,)}``; ``signal`` is ``"q"``, ``"qd"``
    or ``"u"`` and ``index`` its column. A log of several episodes previews its first episode.
    """
    from engine.logs.episodes import episode_rows, select_episode

    config = config or PrepareConfig()
    groups = episode_rows(table)
    if groups:
        table = select_episode(table, next(iter(groups)))
    _, t, _, q_raw, qd_log, u = _resampled(table, mapping, config)
    values = {"q": q_raw, "qd": qd_log, "u": u}.get(signal)
    if values is None or not 0 <= index < values.shape[1]:
        raise LogError(f"no mapped signal {signal}[{index}]", column=signal)
    raw = values[:, index]
    try:
        smoothed = smooth(raw, config.window, config.polyorder)
    except LogError as exc:
        raise LogError(
            exc.reason, path=table.source or None, column=exc.column, setting=exc.setting
        ) from None
    return {"t": t, "raw": raw, "smoothed": smoothed}
