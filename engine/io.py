"""Atomic writes and safe checkpoints (safetensors + JSON; never pickle)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any
from collections.abc import Mapping

__all__ = ["atomic_write_bytes", "atomic_write_text", "write_json", "read_json", "json_default",
           "save_tensors", "load_tensors", "save_checkpoint", "load_checkpoint",
           "file_sha256", "CheckpointError", "finite_or_none", "dataclass_from_dict"]


class CheckpointError(ValueError):
    """A checkpoint or JSON file that cannot be read; the message names the file."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file gets normal permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, inf) replaced by None, through dicts, lists and
    tuples (tuples become lists): what strict JSON and an empty CSV cell can hold."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_none(v) for v in obj]
    return obj


def dataclass_from_dict(cls, data: Any, where: str | None = None, error: type[Exception] = ValueError,
                        convert=None):
    """Build the dataclass ``cls`` from a dict (a config read from JSON), refusing unknown fields.

    ``where`` names the thing in messages (default: the class name); ``error`` is the exception
    type raised for a non-dict or unknown fields; ``convert(value)`` (optional) maps each value
    first (e.g. ``float``, or lists to tuples). Missing fields take the dataclass defaults.
    """
    where = where or cls.__name__
    if not isinstance(data, Mapping):
        raise error(f"{where}: expected an object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise error(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    return cls(**({k: convert(v) for k, v in data.items()} if convert else dict(data)))


def json_default(obj: Any):
    """``json.dumps``' ``default`` for numpy scalars and arrays, torch tensors and paths."""
    try:
        import numpy as np
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    try:
        import torch
        if isinstance(obj, torch.Tensor):
            return obj.detach().cpu().tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


_json_default = json_default  # the old private name (still imported by engine/cli/_common.py)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, default=json_default) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path}: file not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from exc


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_tensors(path: str | os.PathLike, tensors: Mapping[str, Any],
                 metadata: Mapping[str, str] | None = None) -> Path:
    """Save a name -> tensor mapping as safetensors, atomically."""
    import torch
    from safetensors.torch import save

    clean = {k: v.detach().cpu().contiguous() if isinstance(v, torch.Tensor) else torch.as_tensor(v)
             for k, v in tensors.items()}
    return atomic_write_bytes(path, save(clean, metadata=dict(metadata) if metadata else None))


def load_tensors(path: str | os.PathLike, device: str = "cpu") -> dict:
    from safetensors.torch import load_file

    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: file not found")
    try:
        return load_file(str(path), device=device)
    except Exception as exc:  # safetensors raises several types for corrupt files
        raise CheckpointError(f"{path}: not a valid safetensors file ({exc})") from exc


def save_checkpoint(directory: str | os.PathLike, state_dict: Mapping[str, Any],
                    meta: Mapping[str, Any], name: str = "model") -> Path:
    """Write ``<name>.safetensors`` (weights) and ``<name>.json`` (meta) into ``directory``."""
    directory = Path(directory)
    save_tensors(directory / f"{name}.safetensors", state_dict)
    write_json(directory / f"{name}.json", dict(meta))
    return directory


def load_checkpoint(directory: str | os.PathLike, name: str = "model",
                    device: str = "cpu") -> tuple[dict, dict]:
    """Return ``(state_dict, meta)`` written by :func:`save_checkpoint`."""
    directory = Path(directory)
    meta = read_json(directory / f"{name}.json")
    if not isinstance(meta, dict):
        raise CheckpointError(f"{directory / (name + '.json')}: expected a JSON object")
    return load_tensors(directory / f"{name}.safetensors", device=device), meta
