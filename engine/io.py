"""Atomic writes and safe checkpoints (safetensors + JSON; never pickle)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_text", "DiskFullError", "is_disk_full", "disk_full_as_error",
           "output_mode", "publish_file", "write_json", "read_json", "json_default",
           "save_tensors", "load_tensors", "save_checkpoint", "load_checkpoint",
           "CheckpointError", "finite_or_none", "dataclass_from_dict", "staged_files",
           "move_entries", "flatten_state", "unflatten_state", "csv_text", "tensor_header",
           "check_tensor_shapes", "module_shapes"]


class CheckpointError(ValueError):
    """A checkpoint or JSON file that cannot be read; the message names the file."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def output_mode() -> int:
    """The permissions a new output file gets: 0o666 less the umask (what ``open(path, "w")``
    gives; ``tempfile.mkstemp`` makes 0600, so an atomic save sets this before the rename)."""
    return 0o666 & ~_umask()


class DiskFullError(ValueError):
    """A write that did not fit: the disk (or the user's quota) is full. A user error: the
    message says how much was needed (when known) and where; nothing was replaced."""

    def __init__(self, path: str | os.PathLike, needed: int | None = None, detail: str = "", *,
                 where: str | None = None):
        self.path, self.needed = Path(path), needed
        free = None if where else _free_bytes(self.path)
        if where:   # not a path: e.g. "standard output"
            what = f"disk full: could not write {where}"
        elif needed:
            what = f"disk full: {_megabytes(needed)} needed at {self.path}"
        else:
            what = f"disk full at {self.path}"
        if free is not None:
            what += f" ({_megabytes(free)} free)"
        if detail:
            what += f": {detail}"
        super().__init__(f"{what}; free some space or choose another place")


def _megabytes(n: int) -> str:
    return f"{max(n / 1e6, 0.1):.1f} MB" if n < 10e6 else f"{n / 1e6:.0f} MB"


def _free_bytes(path: Path) -> int | None:
    for p in (path, *path.parents):
        try:
            return shutil.disk_usage(p).free
        except OSError:
            continue
    return None


def is_disk_full(exc: BaseException) -> bool:
    """True for an OSError that says the disk or the quota is full (ENOSPC, EDQUOT)."""
    codes = {errno.ENOSPC} | ({errno.EDQUOT} if hasattr(errno, "EDQUOT") else set())
    return isinstance(exc, OSError) and exc.errno in codes


@contextlib.contextmanager
def disk_full_as_error(path: str | os.PathLike, needed: int | None = None):
    """Within the block, a full disk (:func:`is_disk_full`) raises :class:`DiskFullError`
    naming ``path`` (and ``needed`` bytes) instead of a bare OSError."""
    try:
        yield
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(path, needed) from exc
        raise


def publish_file(tmp: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Move a finished temporary file (made by ``tempfile.mkstemp`` in ``path``'s folder) onto
    ``path``: it gets the permissions of a normal new file (:func:`output_mode`), its data is
    flushed to disk, then one rename replaces ``path``."""
    os.chmod(tmp, output_mode())
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return Path(path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename.
    A full disk raises :class:`DiskFullError` and leaves ``path`` as it was."""
    path = Path(path)
    with disk_full_as_error(path, len(data)):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.chmod(tmp, output_mode())  # mkstemp makes 0600; a saved file gets normal permissions
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


def csv_text(rows: Sequence[Mapping[str, Any]], columns: list[str], nan: str = "nan") -> str:
    """Rows (dicts) as CSV text in ``columns`` order: None is an empty cell, a float its ``repr``
    (exact), a non-finite float ``nan`` (the text given)."""
    import csv
    import io

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, float):
            return repr(v) if math.isfinite(v) else nan
        return str(v)

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([cell(r.get(c)) for c in columns])
    return buf.getvalue()


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


_MAX_JSON_BYTES = 256 << 20


def _regular_file(path: Path) -> int:
    """The size of ``path``; CheckpointError if it is missing or not a regular file (a pipe
    would hang the read, a folder gives an obscure error)."""
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: file not found") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise CheckpointError(f"{path}: {kind}; give the path of a file")
    return st.st_size


def read_json(path: str | os.PathLike) -> Any:
    """Parse a JSON file; :class:`CheckpointError` (naming the file, without a traceback's
    jargon) if it is missing, not a regular file, huge, not UTF-8 or not JSON."""
    path = Path(path)
    size = _regular_file(path)
    if size > _MAX_JSON_BYTES:
        raise CheckpointError(f"{path}: {size / 2**20:.0f} MiB is too big for a settings/metadata JSON file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path}: file not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from exc
    except RecursionError:
        raise CheckpointError(f"{path}: not valid JSON (nested too deeply)") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read the file ({exc.strerror or exc})") from None


def save_tensors(path: str | os.PathLike, tensors: Mapping[str, Any],
                 metadata: Mapping[str, str] | None = None) -> Path:
    """Save a name -> tensor mapping as safetensors, atomically."""
    import torch
    from safetensors.torch import save

    clean = {k: v.detach().cpu().contiguous() if isinstance(v, torch.Tensor) else torch.as_tensor(v)
             for k, v in tensors.items()}
    return atomic_write_bytes(path, save(clean, metadata=dict(metadata) if metadata else None))


_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                "U16": 2, "U32": 4, "U64": 8, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_MAX_HEADER_BYTES = 100 << 20  # safetensors' own limit


def tensor_header(path: str | os.PathLike) -> dict[str, tuple[str, tuple[int, ...]]]:
    """``{name: (dtype, shape)}`` from a safetensors file's header, reading no tensor data.

    Checks the header against the file: a truncated file, offsets that overlap or run past
    the end, or a shape whose size disagrees with its bytes give a :class:`CheckpointError`
    naming the file (and the tensor) instead of an allocation or an obscure parser error.
    """
    import math

    path = Path(path)
    size = _regular_file(path)
    bad = f"{path}: not a valid safetensors file"
    if size < 8:
        raise CheckpointError(f"{bad} ({size} bytes: truncated or empty)")
    with open(path, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        if n > _MAX_HEADER_BYTES or 8 + n > size:
            raise CheckpointError(f"{bad} (its header claims {n} bytes but the file has {size}: truncated?)")
        raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise CheckpointError(f"{bad} (unreadable header)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{bad} (the header is not a table of tensors)")
    data_size = size - 8 - n
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, end) = (
                info["dtype"],
                tuple(int(d) for d in info["shape"]),
                info["data_offsets"],
            )
            start, end = int(start), int(end)
        except (TypeError, KeyError, ValueError):
            raise CheckpointError(f"{bad} (tensor {name!r}: malformed entry in the header)") from None
        if dtype not in _DTYPE_BYTES or any(d < 0 for d in shape):
            raise CheckpointError(f"{bad} (tensor {name!r}: dtype {dtype!r}, shape {list(shape)})")
        if not 0 <= start <= end <= data_size:
            raise CheckpointError(f"{bad} (tensor {name!r} lies past the end of the file: truncated?)")
        if math.prod(shape) * _DTYPE_BYTES[dtype] != end - start:
            raise CheckpointError(f"{bad} (tensor {name!r}: shape {list(shape)} does not match its "
                                  f"{end - start} bytes)")
        spans.append((start, end, name))
        out[name] = (dtype, shape)
    spans.sort()
    for (_, e0, a), (s1, _, b) in zip(spans, spans[1:]):
        if s1 < e0:
            raise CheckpointError(f"{bad} (tensors {a!r} and {b!r} overlap)")
    return out


def check_tensor_shapes(
    path: str | os.PathLike, expected: Mapping[str, Any], what: str = "the model"
) -> None:
    """Compare the shapes in ``path``'s header with ``expected`` (name -> shape) before any
    tensor is read or any model built at full size; CheckpointError names the tensor."""
    path = Path(path)
    found = tensor_header(path)
    missing = [k for k in expected if k not in found]
    extra = [k for k in found if k not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(map(repr, missing[:5]))}{' ...' if len(missing) > 5 else ''}")
        if extra:
            parts.append(f"unexpected {', '.join(map(repr, extra[:5]))}{' ...' if len(extra) > 5 else ''}")
        raise CheckpointError(f"{path}: the weights do not match {what} ({'; '.join(parts)})")
    for name, shape in expected.items():
        if tuple(shape) != found[name][1]:
            raise CheckpointError(
                f"{path}: tensor {name!r} has shape {list(found[name][1])} but {what} "
                f"needs {list(shape)}; the .json and .safetensors files do not belong together"
            )


def module_shapes(factory) -> dict[str, tuple[int, ...]] | None:
    """The state-dict shapes of the module ``factory()`` builds, built on torch's "meta" device
    (no memory is allocated, so absurd sizes in a JSON cost nothing); None if it cannot be
    built there (then the caller builds it normally)."""
    import torch

    try:
        with torch.device("meta"):
            module = factory()
        return {k: tuple(v.shape) for k, v in module.state_dict().items()}
    except Exception:  # noqa: BLE001 - some constructors compute on real tensors; fall back
        return None


def load_tensors(path: str | os.PathLike, device: str = "cpu", *, check_finite: bool = True) -> dict:
    """Read a safetensors file (header checked first); non-finite floating tensors are refused
    by name unless ``check_finite`` is False."""
    from safetensors.torch import load_file

    path = Path(path)
    tensor_header(path)  # missing, truncated or inconsistent files: a clear message before any read
    try:
        tensors = load_file(str(path), device=device)
    except Exception as exc:  # safetensors raises several types for corrupt files
        raise CheckpointError(f"{path}: not a valid safetensors file ({exc})") from exc
    if check_finite:
        _check_finite_tensors(path, tensors)
    return tensors


def _check_finite_tensors(path: Path, tensors: Mapping[str, Any]) -> None:
    import torch

    for name, t in tensors.items():
        if t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all()):
            bad = int((~torch.isfinite(t)).sum())
            kinds = "NaN" if bool(torch.isnan(t).any()) else "infinite"
            raise CheckpointError(
                f"{path}: tensor {name!r} holds {bad} {kinds} value(s) of {t.numel()}; the "
                "model would predict NaN (saved from a diverged run?): retrain it or use an "
                "earlier checkpoint"
            )


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def move_entries(source: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Move every file and folder of ``source`` into ``destination`` (same file system) as one
    change: an entry of the same name there is moved aside first and put back if a later move
    fails, so ``destination`` ends with the whole old set or the whole new one; entries of
    ``destination`` that ``source`` does not have are never touched. ``source`` is left empty."""
    source, destination = Path(source), Path(destination)
    destination.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in source.iterdir())
    backup = Path(tempfile.mkdtemp(prefix=".previous-", dir=destination))
    done: list[str] = []
    try:
        for name in names:
            if (destination / name).exists() or (destination / name).is_symlink():
                os.replace(destination / name, backup / name)   # the old entry stays reachable
            os.replace(source / name, destination / name)
            done.append(name)
    except BaseException:
        for name in reversed(done):  # roll back: the old set again
            os.replace(destination / name, source / name)
        for name in names:
            if (backup / name).exists() or (backup / name).is_symlink():
                os.replace(backup / name, destination / name)
        shutil.rmtree(backup, ignore_errors=True)
        raise
    _fsync_dir(destination)
    shutil.rmtree(backup, ignore_errors=True)
    return destination


@contextlib.contextmanager
def staged_files(directory: str | os.PathLike):
    """Write several files as one save: ``with staged_files(d) as tmp: write files into tmp``.

    Yields a new hidden temporary folder inside ``directory`` (created if needed; same file
    system). When the block ends normally, what was written there replaces its namesakes in
    ``directory`` as one change (:func:`move_entries`: the whole old set or the whole new one).
    When the block raises (a full disk, an interrupt), nothing in ``directory`` has changed.
    The temporary folder is removed either way; other files in ``directory`` are never touched.
    """
    directory = Path(directory)
    with disk_full_as_error(directory):
        directory.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".saving-", dir=directory))
    try:
        yield tmp
        move_entries(tmp, directory)
    except (DiskFullError, OSError) as exc:  # name the folder being saved, not the hidden temporary one
        if not isinstance(exc, DiskFullError) and not is_disk_full(exc):
            raise
        needed = getattr(exc, "needed", None) or 0
        with contextlib.suppress(OSError):   # what went in before the write that failed, and that write
            needed += sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        raise DiskFullError(directory, needed or None) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save_checkpoint(directory: str | os.PathLike, state_dict: Mapping[str, Any],
                    meta: Mapping[str, Any], name: str = "model",
                    extra_files: Mapping[str, str | bytes] | None = None) -> Path:
    """Write ``<name>.safetensors`` (weights) and ``<name>.json`` (meta) into ``directory`` as one
    save (:func:`staged_files`: both files or neither), with ``extra_files`` (file name -> text or
    bytes) in the same save."""
    directory = Path(directory)
    with staged_files(directory) as tmp:
        save_tensors(tmp / f"{name}.safetensors", state_dict)
        write_json(tmp / f"{name}.json", dict(meta))
        for file_name, data in (extra_files or {}).items():
            atomic_write_bytes(tmp / file_name, data.encode("utf-8") if isinstance(data, str) else data)
    return directory


def load_checkpoint(directory: str | os.PathLike, name: str = "model",
                    device: str = "cpu", expected_shapes=None) -> tuple[dict, dict]:
    """Return ``(state_dict, meta)`` written by :func:`save_checkpoint`.

    Before any tensor is read: the folder must be a folder, the JSON an object, the weights'
    header consistent with the file (truncation) and, when ``expected_shapes(meta)`` is given
    (name -> shape, e.g. from :func:`module_shapes`), with the shapes the JSON declares.
    After: every floating tensor finite (a NaN weight is refused by name).
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise CheckpointError(f"{directory}: a file, not a model folder; give the folder that holds "
                              f"{name}.json and {name}.safetensors")
    meta = read_json(directory / f"{name}.json")
    if not isinstance(meta, dict):
        raise CheckpointError(f"{directory / (name + '.json')}: expected a JSON object")
    weights = directory / f"{name}.safetensors"
    tensor_header(weights)
    if expected_shapes is not None:
        shapes = expected_shapes(meta)
        if shapes is not None:
            check_tensor_shapes(weights, shapes, f"the model described in {name}.json")
    return load_tensors(weights, device=device), meta


def flatten_state(obj: Any, prefix: str = "") -> tuple[Any, dict]:
    """Split a nested state (an optimiser's or a scheduler's ``state_dict()``, RNG states) into a
    JSON-ready structure and a ``name -> tensor`` dict for safetensors: each tensor is replaced by
    ``{"tensor": name}``. Dict keys become strings (int keys are marked so they come back as
    ints); tuples become lists. :func:`unflatten_state` inverts it."""
    import torch

    tensors: dict = {}

    def walk(x, path):
        if isinstance(x, torch.Tensor):
            tensors[path] = x.detach().cpu().contiguous()
            return {"tensor": path}
        if isinstance(x, Mapping):
            return {"dict": [[k, walk(v, f"{path}.{k}")] for k, v in x.items()]}
        if isinstance(x, (list, tuple)):
            return {"list": [walk(v, f"{path}.{i}") for i, v in enumerate(x)], "tuple": isinstance(x, tuple)}
        if isinstance(x, float) and not math.isfinite(x):
            return {"float": repr(x)}
        return x

    return walk(obj, prefix or "state"), tensors


def unflatten_state(obj: Any, tensors: Mapping[str, Any]) -> Any:
    """The nested state :func:`flatten_state` split (tensors looked up by name)."""
    if isinstance(obj, dict):
        if "tensor" in obj:
            try:
                return tensors[obj["tensor"]]
            except KeyError:
                raise CheckpointError(f"saved state: tensor {obj['tensor']!r} is missing") from None
        if "dict" in obj:
            return {k: unflatten_state(v, tensors) for k, v in obj["dict"]}
        if "list" in obj:
            items = [unflatten_state(v, tensors) for v in obj["list"]]
            return tuple(items) if obj.get("tuple") else items
        if "float" in obj:
            return float(obj["float"])
    return obj
