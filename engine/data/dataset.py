"""Generate, save and load the trajectory data sets of the SyMo protocol.

A :class:`TrajectoryDataset` holds numpy float64 arrays:

- ``train_x`` (N, steps + 2, 2n), ``train_u`` (N, steps + 2, m): states ``(q, qd)`` and the
  control applied from each point to the next (constant per trajectory here);
- ``test_x``, ``test_u``: the same for the test set;
- ``long_x`` (16, long_term_steps + 2, 2n), ``long_u``: the unforced long-term set.

Saved as ``<name>.npz`` (read with ``allow_pickle=False``) plus ``<name>.json`` (the config,
the system and the shapes).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.data.base import ARRAYS, TrajectoryData
from engine.data.config import DatasetConfig, protocol_for
from engine.io import CheckpointError, atomic_write_bytes, read_json, write_json
from engine.systems import get_system

__all__ = [
    "DatasetError",
    "TrajectoryDataset",
    "generate_dataset",
    "gym_random_state",
    "load_dataset",
    "paper_initial_states",
    "paper_states_with_rejection",
    "save_dataset",
]

class DatasetError(ValueError):
    """A data set file that is missing, malformed or inconsistent; the message names the file and field."""


@dataclass
class TrajectoryDataset(TrajectoryData):
    """The SyMo protocol's simulated train, test and long-term sets of an analytic system."""

    config: DatasetConfig
    train_x: np.ndarray
    train_u: np.ndarray
    test_x: np.ndarray
    test_u: np.ndarray
    long_x: np.ndarray
    long_u: np.ndarray

    @property
    def system(self):
        return get_system(self.config.system)

    @property
    def h(self) -> float:
        return self.config.time_step

    def describe(self) -> dict:
        return {"config": self.config.to_dict(), "h": self.h, "system": self.system.describe(),
                "shapes": {k: list(getattr(self, k).shape) for k in ARRAYS}}

    def subset(self, n_train: int) -> TrajectoryDataset:
        """The data set with only the first ``n_train`` training trajectories (nested sets, as in the paper)."""
        if not 1 <= n_train <= len(self.train_x):
            raise DatasetError(
                f"train trajectories: asked for {n_train}, the data set has {len(self.train_x)}"
            )
        return TrajectoryDataset(self.config, self.train_x[:n_train], self.train_u[:n_train], self.test_x,
                                 self.test_u, self.long_x, self.long_u)


def _sample(system, cfg: DatasetConfig, count: int, steps: int, rng: np.random.Generator, controlled: bool):
    P = protocol_for(cfg.system)
    x0 = rng.uniform(P.state_low, P.state_high, size=(count, 2 * system.dof))
    if controlled:
        u = rng.uniform(cfg.control_low, cfg.control_high, size=(count, system.control_dim))
    else:
        u = np.zeros((count, system.control_dim))
    x = system.simulate(x0, u, cfg.time_step, steps + 1)
    return x, np.repeat(u[:, None, :], steps + 2, axis=1)


# -- the paper repository's random numbers (gym <= 0.21 seeding) -----------------------------
def _bigint_from_bytes(data: bytes) -> int:
    data = data + b"\0" * (4 - len(data) % 4)
    words = struct.unpack(f"{len(data) // 4}I", data)
    return sum(w << (32 * i) for i, w in enumerate(words))


def gym_random_state(seed: int) -> np.random.RandomState:
    """``gym.utils.seeding.np_random(seed)`` of gym <= 0.21: a ``RandomState`` seeded with the
    32-bit words of the first 8 bytes of ``sha512(str(seed))`` (what ``env.seed(seed)`` gives)."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"gym seed: expected a non-negative integer, got {seed!r}")
    big = _bigint_from_bytes(hashlib.sha512(str(int(seed) % 2 ** 64).encode("utf8")).digest()[:8])
    words = []
    while big > 0:
        big, w = divmod(big, 2 ** 32)
        words.append(w)
    rs = np.random.RandomState()
    rs.seed(words or [0])
    return rs


def _reset_states(P, rs: np.random.RandomState, count: int) -> np.ndarray:
    """The next ``count`` states of gym ``reset()`` calls on the env stream ``rs`` (count, 2n)."""
    order = P.reset_draw_order or tuple(range(len(P.state_low)))
    out = np.empty((count, len(order)))
    for k in range(count):
        for i in order:  # one scalar uniform per coordinate, in the reset's order
            out[k, i] = rs.uniform(low=P.state_low[i], high=P.state_high[i])
    return out.astype(np.float32).astype(np.float64) if P.reset_float32 else out


def paper_initial_states(system_name: str, seed: int, count: int) -> np.ndarray:
    """The states the paper's gym ``reset()`` draws, ``count`` of them after ``env.seed(seed)`` (count, 2n).

    These are the trajectories' drawn states when no trajectory is rejected (always for the
    pendulum and the cart-pole); :func:`paper_states_with_rejection` gives the kept ones."""
    return _reset_states(protocol_for(system_name), gym_random_state(seed), count)


# sample_gym keeps a trajectory if every recorded speed is strictly inside (-MAX + 0.001, MAX - 0.001)
REJECT_MARGIN = 0.001


def _speed_ok(P, x: np.ndarray) -> np.ndarray:
    """(B,) whether the recorded points ``x`` (B, T, 2n) keep every speed inside the protocol's limits."""
    n = len(P.reject_speed)
    limit = np.asarray(P.reject_speed) - REJECT_MARGIN
    qd = x[..., n:]
    return np.all((qd < limit) & (qd > -limit), axis=(1, 2))


def paper_states_with_rejection(system, P, seed: int, u: np.ndarray, h: float, steps: int,
                                max_redraws: int | None = None):
    """sample_gym's loop with the speed rejection: ``(x0, x, redraws)``.

    Trial k draws a state from the env stream, records ``steps`` points after it under its
    control ``u[k]`` and, if a speed reaches its limit, draws again from the same stream (the
    control unchanged) until one is kept; then trial k + 1 draws. Done in batches: simulate the
    remaining trials at once, keep them up to the first rejected one, which takes the next draw,
    and the later trials the draws after it. Returns the kept states (count, 2n), their
    trajectories (count, steps + 1, 2n) with the drawn state first, and the number of redraws.
    More than ``max_redraws`` redraws (default 1000 + 100 count) is a ValueError: the paper's
    loop would never end.
    """
    rs = gym_random_state(seed)
    count = len(u)
    x0 = np.empty((count, 2 * system.dof))
    x = np.empty((count, steps + 1, 2 * system.dof))
    k, redraws = 0, 0
    max_redraws = 1000 + 100 * count if max_redraws is None else max_redraws
    pending = _reset_states(P, rs, count)  # the next draws of the stream, for trials k, k+1, ...
    while k < count:
        traj = system.simulate(pending, u[k:], h, steps)
        ok = _speed_ok(P, traj[:, 1:])
        bad = int(np.argmin(ok)) if not ok.all() else len(ok)
        x0[k:k + bad], x[k:k + bad] = pending[:bad], traj[:bad]
        k += bad
        if k < count:  # trial k rejected its draw: the draws after it go to trials k, k+1, ...
            redraws += 1
            if redraws > max_redraws:
                raise ValueError(f"{system.name}: {redraws} trajectories redrawn and trial {k} still reaches "
                                 f"the speed limits reject_speed = {P.reject_speed}; raise them")
            pending = np.concatenate([pending[bad + 1:], _reset_states(P, rs, 1)])
    return x0, x, redraws


def _sample_paper(system, cfg: DatasetConfig, count: int, steps: int, seed: int, controlled: bool):
    """``get_dataset``/``sample_gym`` of the paper repository: controls from the global numpy RNG,
    states from the seeded env, and ``steps + 2`` points recorded *after* each step (with the
    protocol's speed rejection, where it has one)."""
    if controlled:
        u = np.random.RandomState(seed).uniform(cfg.control_low, cfg.control_high, (count, 1))
        u = np.repeat(u, system.control_dim, axis=1)
    else:
        u = np.zeros((count, system.control_dim))
    P = protocol_for(cfg.system)
    if P.reject_speed is None:
        x0 = paper_initial_states(cfg.system, seed, count)
        x = system.simulate(x0, u, cfg.time_step, steps + 2)[:, 1:]
    else:
        _, x, _ = paper_states_with_rejection(system, P, seed, u, cfg.time_step, steps + 2)
        x = x[:, 1:]
    return x, np.repeat(u[:, None, :], steps + 2, axis=1)


def generate_dataset(config: DatasetConfig | None = None) -> TrajectoryDataset:
    """Simulate the train, test and long-term sets with scipy RK45 (seeded, reproducible)."""
    cfg = config or DatasetConfig()
    system = get_system(cfg.system)
    n_tr, n_te = cfg.train_trajectories, cfg.test_trajectories
    if cfg.sampler == "paper":
        x, u = _sample_paper(system, cfg, n_tr + n_te, cfg.steps, cfg.seed, controlled=True)
        long_x, long_u = _sample_paper(system, cfg, cfg.long_term_trajectories, cfg.long_term_steps,
                                       cfg.long_term_seed, controlled=False)
    else:
        rng = np.random.default_rng(cfg.seed)
        x, u = _sample(system, cfg, n_tr + n_te, cfg.steps, rng, controlled=True)
        long_x, long_u = _sample(system, cfg, cfg.long_term_trajectories, cfg.long_term_steps,
                                 np.random.default_rng(cfg.long_term_seed), controlled=False)
    return TrajectoryDataset(cfg, x[:n_tr], u[:n_tr], x[n_tr:], u[n_tr:], long_x, long_u)


def save_dataset(dataset: TrajectoryDataset, path: str | Path) -> Path:
    """Write ``path`` (.npz) and the JSON description beside it (same stem, .json)."""
    import io

    path = Path(path).with_suffix(".npz")
    buf = io.BytesIO()
    np.savez(buf, **{k: getattr(dataset, k) for k in ARRAYS})
    atomic_write_bytes(path, buf.getvalue())
    write_json(path.with_suffix(".json"), dataset.describe())
    return path


def load_dataset(path: str | Path) -> TrajectoryDataset:
    """Load a data set written by :func:`save_dataset`; :class:`DatasetError` names what is wrong."""
    given = Path(path)
    path = given.with_suffix(".npz")
    meta_path = path.with_suffix(".json")
    if not path.exists():  # name the file the user gave, and what was looked for
        looked = "" if path == given else f" (looked for the data set {path.name} beside it)"
        raise DatasetError(
            f"{given}: {'file not found' if not given.exists() else 'not a data set'}{looked}; "
            "give an .npz written by `learn data`"
        )
    try:
        meta = read_json(meta_path)
    except CheckpointError as exc:  # its message already names the file
        raise DatasetError(f"{exc} (the .json written beside the .npz by `learn data`)") from exc
    try:
        # files written before ``sampler`` existed were sampled with numpy's default_rng
        config = DatasetConfig.from_dict({"sampler": "numpy", **meta["config"]})
    except (KeyError, TypeError) as exc:
        raise DatasetError(f"{meta_path}: missing or malformed field 'config' ({exc})") from exc
    except ValueError as exc:
        raise DatasetError(f"{meta_path}: {exc}") from exc
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {}
            for k in ARRAYS:
                if k not in z.files:
                    raise DatasetError(f"{path}: missing array {k!r}")
                arrays[k] = np.asarray(z[k], dtype=np.float64)
    except DatasetError:
        raise
    except Exception as exc:
        raise DatasetError(f"{path}: not a readable .npz file ({exc})") from exc
    system = get_system(config.system)
    d, m = 2 * system.dof, system.control_dim
    for xs, us in (("train_x", "train_u"), ("test_x", "test_u"), ("long_x", "long_u")):
        x, u = arrays[xs], arrays[us]
        if x.ndim != 3 or x.shape[2] != d:
            raise DatasetError(f"{path}: array {xs!r} must have shape (B, T, {d}), got {x.shape}")
        if u.shape != x.shape[:2] + (m,):
            raise DatasetError(f"{path}: array {us!r} must have shape {x.shape[:2] + (m,)}, got {u.shape}")
        if not np.all(np.isfinite(x)):
            raise DatasetError(f"{path}: array {xs!r} holds NaN or inf")
    return TrajectoryDataset(config, **arrays)
