"""ROS 1 bags, ROS 2 bags (folder, ``.db3``, ``.mcap``) and MCAP files of JSON, protobuf or
ROS 1 messages.

Needs the ``logs`` extra (``rosbags``, ``mcap``), imported only when a bag is opened.

Every message becomes one row, in time order. Its numeric fields are flattened into
columns named ``<topic>/<field path>``: nested messages by path (``/odom/pose/pose/position/x``),
numeric arrays by index (``/imu/orientation_covariance/0``) or, when the message has a
``name`` list of the same length (``sensor_msgs/JointState``, the older array form of
``foxglove.JointState``), by that name (``/joint_states/position/panda_joint1``). A list of
messages that each carry a ``name`` (``foxglove.JointStates`` in protobuf or JSON, ROS 2
``foxglove_msgs/msg/JointStates``: ``joints``, one ``JointState`` per joint) is keyed by those names
(``/arm/joint_states/joints/panda_joint1/position``); where a message's entries have no
names, or repeat one, that message's entries are indexed (``.../joints/0/position``) and a
note says so. Optional fields a message leaves out give no value (NaN), not 0.

Columns ``t`` (all rows) and ``<topic>/t`` (the rows of that topic) hold the recording time
in seconds since the first message; times inside messages (``builtin_interfaces/Time``,
ROS 1 ``time``, ``header.stamp``) become seconds on the same origin. With several topics the
table is *sparse*: a topic's columns are NaN on other topics' rows.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.logs.errors import LogError
from engine.logs.table import LogTable

__all__ = ["BAG_SUFFIXES", "flatten_message", "read_bag"]

BAG_SUFFIXES = (".bag", ".db3", ".mcap")
_PROGRESS_EVERY = 256


def _field_names(obj) -> list[str]:
    return [f.name for f in dataclasses.fields(obj) if not f.name.startswith("__")]


def _is_time(obj) -> bool:
    names = set(_field_names(obj)) if dataclasses.is_dataclass(obj) else set()
    return names in ({"sec", "nanosec"}, {"sec", "nsec"})


def _ns(sec, nsec) -> int:
    """A time as integer nanoseconds (exact: a float of seconds since the epoch keeps only ~0.2 us)."""
    if isinstance(sec, int) and isinstance(nsec, int):
        return int(sec) * 10**9 + int(nsec)
    return int(round(float(sec) * 1e9)) + int(round(float(nsec)))


def flatten_message(msg, prefix: str, out: dict[str, float], times: set[str] | None = None) -> None:
    """Add the numeric leaves of a deserialised ROS message (a dataclass) to ``out``; the
    names of leaves that are times (integer nanoseconds since the epoch) are added to ``times``."""
    if _is_time(msg):
        out[prefix] = _ns(msg.sec, getattr(msg, "nanosec", getattr(msg, "nsec", 0)))
        if times is not None:
            times.add(prefix)
        return
    fields = _field_names(msg)
    names = getattr(msg, "name", None)
    labels = list(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else None
    for fname in fields:
        value = getattr(msg, fname)
        key = f"{prefix}/{fname}"
        _flatten_value(value, key, out, labels, times)


def _flatten_value(value, key: str, out: dict[str, float], labels=None, times=None) -> None:
    if isinstance(value, bool | int | float | np.number | np.bool_):
        out[key] = float(value)
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf" and value.ndim == 1:
            use = labels if labels is not None and len(labels) == len(value) else None
            for i, v in enumerate(value):
                out[f"{key}/{use[i] if use else i}"] = float(v)
    elif dataclasses.is_dataclass(value):
        flatten_message(value, key, out, times)
    elif isinstance(value, list | tuple):
        names = _item_names(value) if value and dataclasses.is_dataclass(value[0]) else None
        for i, item in enumerate(value):
            if not isinstance(item, str):
                _flatten_value(item, f"{key}/{names[i] if names else i}", out, None, times)


def _item_names(items) -> list[str] | None:
    """The ``name`` of every entry of a list of messages (foxglove.JointStates' ``joints``), when
    each has a non-empty one and no two agree; else None (the entries are then indexed)."""
    names = [item.get("name") if isinstance(item, dict) else getattr(item, "name", None) for item in items]
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        return None
    return [str(n) for n in names]


def _has_names(items) -> bool:
    return bool(items) and all(isinstance(item, dict) and "name" in item for item in items)


def _flatten_json(value, key: str, out: dict[str, float], times: set[str],
                  unnamed: set[str] | None = None) -> None:
    if isinstance(value, bool | int | float):
        out[key] = float(value)
    elif isinstance(value, dict):
        if set(value) in ({"sec", "nsec"}, {"sec", "nanosec"}) \
                and all(isinstance(v, int | float) for v in value.values()):
            out[key] = _ns(value["sec"], value.get("nsec", value.get("nanosec", 0)))
            times.add(key)
            return
        names = value.get("name")
        labels = names if isinstance(names, list) and all(isinstance(n, str) for n in names) else None
        for k, v in value.items():
            if isinstance(v, list) and labels and len(v) == len(labels) \
                    and all(isinstance(x, int | float) for x in v):
                for lab, x in zip(labels, v):
                    out[f"{key}/{k}/{lab}"] = float(x)
            else:
                _flatten_json(v, f"{key}/{k}", out, times, unnamed)
    elif isinstance(value, list):
        names = _item_names(value)
        if names is None and unnamed is not None and _has_names(value):
            unnamed.add(key)
        for i, item in enumerate(value):
            _flatten_json(item, f"{key}/{names[i] if names else i}", out, times, unnamed)


class _Rows:
    """Collects (topic, time, flat fields) records and builds the sparse table."""

    def __init__(self):
        self.times: list[int] = []
        self.topics: list[str] = []
        self.records: list[dict[str, float]] = []
        self.time_fields: set[str] = set()
        self.unnamed: set[str] = set()      # lists of named entries (joints) whose names are missing

    def add(self, topic: str, ts_ns: int, flat: dict[str, float]) -> None:
        self.times.append(int(ts_ns))
        self.topics.append(topic)
        self.records.append(flat)

    def table(self, path: Path, fmt: str, notes: list[str]) -> LogTable:
        if not self.records:
            raise LogError("the recording holds no messages (on the chosen topics)", path=path)
        order = np.argsort(np.asarray(self.times, dtype=np.int64), kind="stable")
        times = np.asarray(self.times, dtype=np.int64)[order]
        t0 = int(times[0])
        t = (times - t0) * 1e-9
        n = len(order)
        columns: dict[str, np.ndarray] = {"t": t}
        topic_of_row = [self.topics[i] for i in order]
        for topic in dict.fromkeys(topic_of_row):
            rows = np.array([j for j, tp in enumerate(topic_of_row) if tp == topic])
            col = np.full(n, np.nan)
            col[rows] = t[rows]
            columns[f"{topic}/t"] = col
            names: dict[str, None] = {}
            for j in rows:
                names.update(dict.fromkeys(self.records[order[j]]))
            for name in names:
                col = np.full(n, np.nan)
                values = [self.records[order[j]].get(name, np.nan) for j in rows]
                if name in self.time_fields:  # stamps (int ns) on the same origin as t
                    values = [(v - t0) * 1e-9 if isinstance(v, int) else v for v in values]
                col[rows] = values
                columns[name] = col
        topics = list(dict.fromkeys(topic_of_row))
        notes.append(f"t: seconds since the first message ({t0} ns since the epoch); "
                     f"header stamps on the same origin")
        notes.append(f"topics: {', '.join(topics)}")
        for key in sorted(self.unnamed):
            notes.append(f"{key}: entries without a name (or with repeated names) in some messages: "
                         f"their columns are named by index ({key}/0/...), not by joint")
        sparse = len(topics) > 1
        if sparse:
            notes.append("several topics: each topic's columns are NaN on the other topics' rows")
        return LogTable(columns=list(columns), data=columns, source=str(path), format=fmt,
                        notes=notes, sparse=sparse)


def _mcap_encodings(path: Path) -> set[str]:
    from mcap.reader import make_reader

    with open(path, "rb") as fh:
        summary = make_reader(fh).get_summary()
    if summary is None:
        return set()
    return {ch.message_encoding for ch in summary.channels.values()}


def _read_mcap_decoded(path: Path, ctx, topics) -> LogTable:
    """MCAP files whose channels are JSON, protobuf or ROS 1 (see engine.logs.mcap_messages)."""
    from mcap.reader import make_reader

    from engine.logs.mcap_messages import decoder_for

    rows = _Rows()
    factories: dict = {}
    decoders: dict[int, Callable[[bytes], object]] = {}
    kinds: set[str] = set()
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        summary = reader.get_summary()
        total = sum(summary.statistics.channel_message_counts.values()) if summary and summary.statistics \
            else 0
        for i, (schema, channel, message) in enumerate(reader.iter_messages(topics=topics)):
            if i % _PROGRESS_EVERY == 0 and ctx is not None:
                ctx.check_cancelled()
                ctx.progress(i / total * 0.95 if total else None, f"reading {path.name}: {i} messages")
            decode = decoders.get(channel.id)
            if decode is None:
                decode = decoders[channel.id] = decoder_for(channel.message_encoding, schema, factories, path,
                                                            channel.topic)
                kinds.add(channel.message_encoding)
            try:
                payload = decode(message.data)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise LogError(f"message {i} is not valid JSON ({exc})", path=path,
                               column=channel.topic) from None
            except LogError:
                raise
            except Exception as exc:  # noqa: BLE001 - protobuf DecodeError, genpy struct errors
                raise LogError(f"message {i} cannot be decoded as {channel.message_encoding} "
                               f"({type(exc).__name__}: {exc})", path=path, column=channel.topic) from None
            flat: dict[str, float] = {}
            _flatten_json(payload, channel.topic, flat, rows.time_fields, rows.unnamed)
            rows.add(channel.topic, message.log_time, flat)
    names = {"json": "JSON", "protobuf": "protobuf", "ros1": "ROS 1"}
    return rows.table(path, "mcap", [f"MCAP with {' and '.join(names[k] for k in sorted(kinds))} messages"])


def _read_ros(path: Path, ctx, topics) -> LogTable:
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    ros1 = path.suffix == ".bag"
    store = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
    rows = _Rows()
    with AnyReader([path], default_typestore=store) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        if not conns:
            have = sorted({c.topic for c in reader.connections})
            raise LogError(f"no such topics {topics}; the recording has {have}", path=path)
        total = sum(c.msgcount for c in conns)
        for i, (conn, ts, raw) in enumerate(reader.messages(connections=conns)):
            if i % _PROGRESS_EVERY == 0 and ctx is not None:
                ctx.check_cancelled()
                ctx.progress(i / total * 0.95 if total else None, f"reading {path.name}: {i} messages")
            msg = reader.deserialize(raw, conn.msgtype)
            flat: dict[str, float] = {}
            flatten_message(msg, conn.topic, flat, rows.time_fields)
            rows.add(conn.topic, ts, flat)
    return rows.table(path, "ros1" if ros1 else "ros2", [f"{'ROS 1' if ros1 else 'ROS 2'} recording"])


def read_bag(path: str | os.PathLike, ctx=None, *, topics: list[str] | None = None) -> LogTable:
    """Read a ROS 1 ``.bag``, a ROS 2 bag (folder with ``metadata.yaml``, ``.db3`` or
    ``.mcap``) or an MCAP file of JSON, protobuf or ROS 1 messages into a :class:`LogTable`
    (see the module doc)."""
    path = Path(path)
    if not path.exists():
        raise LogError("file not found", path=path)
    if path.is_file() and path.stat().st_size == 0:
        raise LogError("the file is empty", path=path)
    try:
        import mcap  # noqa: F401
        import rosbags  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the logs extra
        raise LogError("reading ROS bags and MCAP needs the 'logs' extra "
                       "(pip install 'lagrange-studio[logs]')", path=path) from exc
    try:
        if path.suffix == ".mcap":
            encodings = _mcap_encodings(path)
            if encodings and encodings <= {"json", "protobuf", "ros1"}:
                table = _read_mcap_decoded(path, ctx, topics)
            else:
                table = _read_ros(path, ctx, topics)
        else:
            table = _read_ros(path, ctx, topics)
    except LogError:
        raise
    except Exception as exc:
        # rosbags and mcap raise many types (ReaderError, AnyReaderError, struct.error...)
        from engine.jobs import JobCancelled

        if isinstance(exc, JobCancelled):
            raise
        raise LogError(f"not a readable recording ({type(exc).__name__}: {exc})", path=path) from None
    if ctx is not None:
        ctx.progress(1.0, f"read {path.name}")
    return table
