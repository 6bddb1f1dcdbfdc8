"""Preparing a log of several episodes (LeRobot's ``episode_index``...) as one data set.

:func:`prepare_episodes` is what :func:`engine.logs.prepare.prepare_log` does for a table with
two or more episodes (:mod:`engine.logs.episodes`):

1. every episode is prepared on its own (checked, resampled, smoothed, differentiated) at one
   common step ``dt`` (the config's, else the median step within the episodes), its times as
   logged (each episode's clock may restart at 0); ``t_start``/``t_end`` crop every episode;
2. the episodes are joined in increasing episode number; ``PreparedLog.episode`` (N,) names
   the episode of each sample, so that :meth:`PreparedLog.segments` (and the training windows
   cut from them) never cross from one episode into the next;
3. train / validation: with ``train_ranges``/``val_ranges`` the time ranges apply within every
   episode; otherwise whole episodes are held out: the last ``round(val_fraction x episodes)``
   (at least one, at most all but one); with one usable episode, its last ``val_fraction``
   of the time.

An episode too short to prepare (fewer samples than the smoothing window, or none inside
``t_start``/``t_end``) is left out and named in ``description["skipped_episodes"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from engine.logs.episodes import episode_column, select_episode
from engine.logs.errors import LogError
from engine.logs.mapping import LogMapping, apply_mapping
from engine.logs.prepared import PreparedLog, data_hash, split_masks
from engine.logs.table import LogTable

__all__ = ["episode_split", "prepare_episodes"]


def _common_dt(table: LogTable, mapping: LogMapping, groups: dict[int, np.ndarray]) -> float:
    """The median time step (s) within the episodes (never across an episode start)."""
    steps = []
    for episode in groups:
        t = apply_mapping(select_episode(table, episode), mapping).t
        d = np.diff(t[np.isfinite(t)])
        steps.append(d[d > 0])
    pos = np.concatenate(steps) if steps else np.zeros(0)
    if pos.size == 0:
        raise LogError("no episode has two increasing times", path=table.source or None, column=mapping.time)
    return float(np.median(pos))


def episode_split(n_episodes: int, val_fraction: float) -> int:
    """How many of ``n_episodes`` (the last ones) are held out for validation."""
    if val_fraction <= 0 or n_episodes < 2:
        return 0
    return int(min(n_episodes - 1, max(1, round(val_fraction * n_episodes))))


def prepare_episodes(table: LogTable, mapping: LogMapping, config, groups: dict[int, np.ndarray],
                     prepare_log: Callable[..., PreparedLog], ctx=None) -> PreparedLog:
    """Prepare each episode of ``table`` (``groups``: :func:`engine.logs.episodes.episode_rows`)
    with ``prepare_log`` (:func:`engine.logs.prepare.prepare_log`, for one run) and join them into
    one :class:`~engine.logs.prepared.PreparedLog` (see the module doc)."""
    config.validate()
    col = episode_column(table)
    if table.sparse:
        raise LogError(f"episodes (column {col!r}) in a recording of several topics: choose one episode "
                       "(--episode K)", path=table.source or None, column=col)
    dt = config.dt if config.dt is not None else _common_dt(table, mapping, groups)
    single = replace(config, dt=dt, train_ranges=[], val_ranges=[], val_fraction=0.0)
    parts: list[PreparedLog] = []
    used: list[int] = []
    skipped: list[dict] = []
    for i, number in enumerate(groups):
        sub = select_episode(table, number)
        try:
            parts.append(prepare_log(sub, mapping, single))
            used.append(number)
        except LogError as exc:
            if "samples" not in exc.reason and "holds no data" not in exc.reason:
                raise LogError(f"episode {number}: {exc.reason}", path=table.source or None, line=exc.line,
                               column=exc.column, setting=exc.setting) from None
            skipped.append({"episode": number, "reason": exc.reason})
        if ctx is not None:
            ctx.check_cancelled()
            ctx.progress((i + 1) / len(groups) * 0.95, f"prepared episode {number} ({i + 1} of {len(groups)})")
    if not parts:
        raise LogError("every episode is too short to prepare: " + "; ".join(
            f"episode {s['episode']}: {s['reason']}" for s in skipped[:5]), path=table.source or None,
            setting="window")
    t = np.concatenate([p.t for p in parts])
    episode = np.concatenate([np.full(p.n_samples, e, dtype=np.int64) for p, e in zip(parts, used)])
    n_val = episode_split(len(parts), config.val_fraction)
    if config.train_ranges or config.val_ranges or n_val == 0:
        train, val = split_masks(t, config)     # per-episode times: the ranges apply within each episode
        split_by, val_episodes = "time", []
    else:
        val_episodes = used[-n_val:]
        val = np.isin(episode, val_episodes)
        train = ~val
        split_by = "episode"
    arrays: dict[str, np.ndarray] = {
        "t": t, "q": np.concatenate([p.q for p in parts]), "qd": np.concatenate([p.qd for p in parts]),
        "u": np.concatenate([p.u for p in parts]), "train_mask": train, "val_mask": val, "episode": episode}
    qdd = np.concatenate([p.qdd for p in parts]) if parts[0].qdd is not None else None
    if qdd is not None:
        arrays["qdd"] = qdd
    description = dict(parts[0].description)
    description.update({
        "config": config.to_dict(), "n_samples": len(t), "dt": dt,
        "t_range": [float(t.min()), float(t.max())], "n_train": int(train.sum()), "n_val": int(val.sum()),
        "episode_column": col, "split_by": split_by, "val_episodes": val_episodes,
        "episodes": [{"episode": int(e), "samples": p.n_samples, "t_range": [float(p.t[0]), float(p.t[-1])]}
                     for e, p in zip(used, parts)],
        "skipped_episodes": skipped,
    })
    if ctx is not None:
        ctx.progress(1.0, f"prepared {len(t)} samples in {len(parts)} episodes at dt = {dt:.6g} s")
    return PreparedLog(t=t, q=arrays["q"], qd=arrays["qd"], qdd=qdd, u=arrays["u"], dt=float(dt),
                       train_mask=train, val_mask=val, description=description, data_hash=data_hash(arrays),
                       episode=episode)
