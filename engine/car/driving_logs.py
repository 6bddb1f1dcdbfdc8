"""Driving logs for the car model, read the model lab's way.

A log goes through ``engine.logs`` (any format it reads: CSV/TSV, Parquet, HDF5, bags; a
``<stem>.mapping.json`` beside the file as in the model lab, else the columns t, x, y, yaw,
throttle, steering by name), its time and gap checks and unit conversion, then the car's
preparation (:func:`engine.car.data.prepare_car_log`: Savitzky-Golay smoothing and
finite differences into local velocities). Used by the Car planner and ``engine car train --log``.
"""

from __future__ import annotations

from pathlib import Path

from engine.car.data import CarDataError, prepare_car_log

__all__ = ["CAR_SIGNALS", "car_mapping", "load_car_log"]

CAR_SIGNALS = {"t": ("t", "time", "timestamp", "time_s", "t_s"), "x": ("x",), "y": ("y",),
               "yaw": ("yaw", "heading", "theta", "psi"), "throttle": ("throttle", "acceleration", "accel"),
               "steering": ("steering", "steer", "delta")}


def car_mapping(table, path: Path):
    """The mapping of a car log: ``<stem>.mapping.json`` beside the file (as in the model
    lab), else the columns t, x, y, yaw, throttle, steering (case-insensitive, common aliases)."""
    from engine.logs import LogError, LogMapping

    beside = path.with_name(path.stem + ".mapping.json")
    if beside.is_file():
        mapping = LogMapping.load(beside)
        if len(mapping.q) != 3 or len(mapping.u) != 2:
            raise LogError(f"a car log maps q to x, y, yaw and u to throttle, steering; this mapping has "
                           f"{len(mapping.q)} q and {len(mapping.u)} u column(s)", path=beside)
        return mapping
    lower = {c.lower().strip(): c for c in table.columns}
    found, missing = {}, []
    for signal, names in CAR_SIGNALS.items():
        col = next((lower[n] for n in names if n in lower), None)
        if col is None:
            missing.append(signal)
        else:
            found[signal] = col
    if missing:
        raise LogError(f"missing column(s) {', '.join(missing)}: a car log needs t, x, y, yaw, throttle, "
                       f"steering (found {', '.join(table.columns[:12])})", path=path)
    return LogMapping(time=found["t"], q=[found["x"], found["y"], found["yaw"]],
                      u=[found["throttle"], found["steering"]], name=path.stem)


def load_car_log(path: str, params, driving, ctx=None) -> dict:
    """Read a driving log with the model lab's loader (``engine.logs``), map it, and prepare
    it the car's way (``engine.car.data.prepare_car_log``: Savitzky-Golay smoothing,
    finite differences into local velocities at the model step ``params.dt``).

    Returns numpy ``pose`` (K, 3), ``u`` (K, 2), ``inputs`` (K-2, 5), ``targets`` (K-2, 3)
    and ``path``, ``rows``, ``seconds``. Raises ``engine.logs.LogError`` (or
    ``CarDataError``), both ValueErrors whose message names the file.
    """
    from engine.logs import LogError, apply_mapping, read_log
    from engine.logs.validate import check_no_gaps, check_time

    p = Path(path)
    try:
        table = read_log(p, ctx)
        mapping = car_mapping(table, p)
        check_no_gaps(table, mapping.columns)
        m = apply_mapping(table, mapping)
        check_time(table, m.t, mapping.time)
        log = {"t": m.t, "x": m.q[:, 0], "y": m.q[:, 1], "yaw": m.q[:, 2],
               "throttle": m.u[:, 0], "steering": m.u[:, 1]}
        prep = prepare_car_log(log, params.dt, driving.savgol_window, driving.savgol_order, source=str(p))
    except (LogError, CarDataError):
        raise
    except (OSError, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise LogError(f"cannot load this log ({exc})", path=p) from exc
    prep["path"] = str(p)
    prep["rows"] = int(table.n_rows)
    prep["seconds"] = float(m.t[-1] - m.t[0])
    return prep
