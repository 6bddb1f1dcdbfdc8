"""A prepared log: :class:`PreparedLog` (arrays on a uniform grid, masks, description), its
``.npz`` file (:meth:`PreparedLog.save`, :func:`load_prepared`), its hash and the train /
validation masks from time ranges (:func:`split_masks`). Made by :mod:`engine.logs.prepare`."""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from engine.io import atomic_write_bytes
from engine.logs.errors import LogError

__all__ = ["PreparedLog", "data_hash", "load_prepared", "split_masks"]


@dataclass
class PreparedLog:
    """Uniformly sampled training data from a log (SI units).

    ``t``: (N,) s; ``q``, ``qd``: (N, nq); ``qdd``: (N, nq) or None; ``u``: (N, nu) (nu may
    be 0); ``dt``: s; ``train_mask``, ``val_mask``: (N,) bool, disjoint. ``description``:
    source, mapping, config, names and units; ``data_hash``: sha256 of the arrays.
    ``episode``: (N,) int64, the episode of each sample of a log of several episodes (``t``
    then restarts with each episode), else None (one run).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray | None
    u: np.ndarray
    dt: float
    train_mask: np.ndarray
    val_mask: np.ndarray
    description: dict
    data_hash: str
    episode: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(self.t.shape[0])

    def segments(self, mask: np.ndarray) -> list[slice]:
        """Contiguous runs of ``mask`` as slices (for windowing trajectories); a run never
        crosses from one episode into the next."""
        edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
        runs = [(int(a), int(b)) for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))]
        if self.episode is None:
            return [slice(a, b) for a, b in runs]
        starts = np.flatnonzero(np.diff(self.episode) != 0) + 1      # first sample of each later episode
        out = []
        for a, b in runs:
            cuts = [a, *(int(c) for c in starts if a < c < b), b]
            out += [slice(x, y) for x, y in zip(cuts[:-1], cuts[1:])]
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"t": self.t, "q": self.q, "qd": self.qd, "u": self.u, "train_mask": self.train_mask,
               "val_mask": self.val_mask}
        if self.qdd is not None:
            out["qdd"] = self.qdd
        if self.episode is not None:
            out["episode"] = self.episode
        return out

    def save(self, path: str | os.PathLike) -> Path:
        """Write an ``.npz`` (no pickle): the arrays, ``dt``, and the description as JSON text."""
        buf = io.BytesIO()
        meta = json.dumps({"dt": self.dt, "description": self.description, "data_hash": self.data_hash},
                          default=_json_default)
        np.savez_compressed(buf, meta=np.array(meta), **self.arrays())  # type: ignore[arg-type]  # stub: **kwds read as allow_pickle
        return atomic_write_bytes(path, buf.getvalue())


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(type(obj).__name__)


def load_prepared(path: str | os.PathLike) -> PreparedLog:
    """Read a :meth:`PreparedLog.save` file."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays.pop("meta")))
        return PreparedLog(t=arrays["t"], q=arrays["q"], qd=arrays["qd"], qdd=arrays.get("qdd"),
                           u=arrays["u"], dt=float(meta["dt"]), train_mask=arrays["train_mask"].astype(bool),
                           val_mask=arrays["val_mask"].astype(bool), description=meta["description"],
                           data_hash=meta["data_hash"], episode=arrays.get("episode"))
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
        raise LogError(f"not a prepared log ({exc})", path=path) from None


def data_hash(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(key.encode())
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def split_masks(t: np.ndarray, config) -> tuple[np.ndarray, np.ndarray]:
    """Train and validation masks (N,) bool from a :class:`~engine.logs.prepare.PrepareConfig`'s
    time ranges (``train_ranges``, ``val_ranges``, else the last ``val_fraction`` of the time)."""

    def in_ranges(ranges):
        m = np.zeros(len(t), dtype=bool)
        for a, b in ranges:
            m |= (t >= a) & (t <= b)
        return m

    if config.train_ranges or config.val_ranges:
        train = in_ranges(config.train_ranges) if config.train_ranges else None
        val = in_ranges(config.val_ranges) if config.val_ranges else None
        if train is None:
            train = ~cast(np.ndarray, val)
        if val is None:
            val = ~train
        overlap = train & val
        if overlap.any():
            i = int(np.argmax(overlap))
            raise LogError(f"train and validation ranges overlap at t = {t[i]:.6g} s", setting="val_ranges")
        if not train.any():
            raise LogError("the train ranges hold no samples of the prepared log "
                           f"(which spans {t[0]:.6g} to {t[-1]:.6g} s)", setting="train_ranges")
        if not val.any() and config.val_ranges:
            raise LogError("the validation ranges hold no samples of the prepared log "
                           f"(which spans {t[0]:.6g} to {t[-1]:.6g} s)", setting="val_ranges")
        return train, val
    if config.val_fraction == 0:
        return np.ones(len(t), dtype=bool), np.zeros(len(t), dtype=bool)
    cut = t[0] + (1.0 - config.val_fraction) * (t[-1] - t[0])
    return t < cut, t >= cut
