"""Decoders for MCAP channels that are not ROS 2 (CDR): JSON, protobuf and ROS 1 messages.

Each decoded message becomes plain Python (dicts, lists, numbers; strings kept for ``name``
labels), which :mod:`engine.logs.bags` flattens into columns. Times become ``{"sec", "nsec"}``
dicts (protobuf ``google.protobuf.Timestamp``/``Duration``, ROS 1 ``time``/``duration``), so the
flattener puts them on the recording's clock.

Needs ``mcap-protobuf-support`` for protobuf and ``mcap-ros1-support`` for ROS 1 (the ``logs``
extra), imported only when a file has such channels.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from engine.logs.errors import LogError

__all__ = ["MCAP_ENCODINGS", "decoder_for", "to_plain"]

MCAP_ENCODINGS = ("json", "protobuf", "ros1")
_TIME_TYPES = ("google.protobuf.Timestamp", "google.protobuf.Duration")


def _unset(msg, f) -> bool:
    """A scalar field with explicit presence (proto3 ``optional``, proto2) that the message leaves out."""
    repeated = f.is_repeated if hasattr(f, "is_repeated") else f.label == f.LABEL_REPEATED
    if f.message_type is not None or repeated:
        return False
    return bool(getattr(f, "has_presence", False)) and not msg.HasField(f.name)


def _protobuf_plain(msg):
    from google.protobuf.message import Message

    desc = msg.DESCRIPTOR
    if desc.full_name in _TIME_TYPES:
        return {"sec": int(msg.seconds), "nsec": int(msg.nanos)}
    out = {}
    for f in desc.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            continue    # maps: no fixed columns
        if _unset(msg, f):
            continue    # an optional field left out (foxglove.JointState's effort...): no value, not 0
        value = getattr(msg, f.name)
        if isinstance(value, Message):
            out[f.name] = _protobuf_plain(value)
        elif isinstance(value, str | bytes):
            out[f.name] = value if isinstance(value, str) else None
        elif hasattr(value, "__len__"):     # repeated fields
            out[f.name] = [_protobuf_plain(v) if isinstance(v, Message) else v for v in value]
        else:
            out[f.name] = value
    return out


def _ros1_plain(value):
    slots = getattr(value, "__slots__", None)
    if slots is not None and hasattr(value, "secs") and hasattr(value, "nsecs") and len(slots) == 2:
        return {"sec": int(value.secs), "nsec": int(value.nsecs)}   # genpy Time / Duration
    if slots is not None and hasattr(value, "_slot_types"):
        return {name: _ros1_plain(getattr(value, name)) for name in slots}
    if isinstance(value, list | tuple):
        return [_ros1_plain(v) for v in value]
    if isinstance(value, bytes):
        return None
    return value


def to_plain(msg, encoding: str):
    """A decoded protobuf or ROS 1 message as dicts, lists and numbers."""
    return _protobuf_plain(msg) if encoding == "protobuf" else _ros1_plain(msg)


def _factory(encoding: str):
    try:
        if encoding == "protobuf":
            from mcap_protobuf.decoder import DecoderFactory
        else:
            from mcap_ros1.decoder import DecoderFactory  # type: ignore[assignment]  # one name, two packages
    except ImportError:  # pragma: no cover - the logs extra
        package = "mcap-protobuf-support" if encoding == "protobuf" else "mcap-ros1-support"
        raise LogError(f"{encoding} messages in MCAP need {package} (pip install 'lagrange-studio[logs]')") \
            from None
    return DecoderFactory()


def decoder_for(encoding: str, schema, factories: dict, path, topic: str) -> Callable[[bytes], object]:
    """``bytes -> plain Python`` for one channel (``factories`` caches the decoder factories)."""
    if encoding == "json":
        return json.loads
    if encoding not in MCAP_ENCODINGS:
        raise LogError(f"message encoding {encoding!r} cannot be mixed with {', '.join(MCAP_ENCODINGS)}",
                       path=path, column=topic)
    if encoding not in factories:
        factories[encoding] = _factory(encoding)
    raw = factories[encoding].decoder_for(encoding, schema)
    if raw is None:
        raise LogError(f"{encoding} channel without a {encoding} schema", path=path, column=topic)
    return lambda data: to_plain(raw(data), encoding)
