"""Open any supported log by its file name: :func:`read_log` and its job form :func:`load_log_job`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.logs.episodes import EPISODE_COLUMNS, episode_column, episodes, select_episode
from engine.logs.errors import LogError
from engine.logs.table import LogTable

__all__ = ["EPISODE_COLUMNS", "LOG_FILE_FILTERS", "ReadOptions", "episode_column", "episodes", "load_log_job",
           "log_format", "read_log", "select_episode"]

TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".dat", ".log")
LOG_FILE_FILTERS = ("Logs (*.csv *.tsv *.txt *.dat *.npz *.parquet *.pq *.bag *.db3 *.mcap)",
                    "All files (*)")


@dataclass
class ReadOptions:
    """How to read a log. ``delimiter``: None sniffs it (text only; ``"ws"`` = whitespace).
    ``topics``: the bag/MCAP topics to read (None: all). ``chunk_bytes``: text block size
    between progress reports. ``episode``: keep only the rows of this episode (files with an
    ``episode_index``/``episode``/``episode_id`` column, as LeRobot data sets: see
    :mod:`engine.logs.episodes`); None keeps all."""

    delimiter: str | None = None
    topics: list[str] | None = None
    chunk_bytes: int = 1 << 20
    episode: int | None = None


def log_format(path: str | os.PathLike) -> str:
    """``"text"``, ``"npz"``, ``"parquet"`` or ``"bag"`` from the file name (folders: ROS 2 bags)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if path.is_dir():
        if (path / "metadata.yaml").exists():
            return "bag"
        raise LogError("a folder that is not a ROS 2 bag (no metadata.yaml)", path=path)
    if suffix == ".npz":
        return "npz"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".bag", ".db3", ".mcap"):
        return "bag"
    return "text"


def read_log(path: str | os.PathLike, ctx=None, options: ReadOptions | None = None) -> LogTable:
    """Read a log file into a :class:`LogTable`; ``ctx`` is an optional job context.

    Raises :class:`LogError` (naming file, line, column) for anything unreadable; nothing
    is returned half-loaded. Cancellation raises ``engine.jobs.JobCancelled``.
    """
    options = options or ReadOptions()
    return select_episode(_read(Path(path), ctx, options), options.episode)


def _read(path: Path, ctx, options: ReadOptions) -> LogTable:
    from engine.logs.delimited import check_delimiter, require_regular_file

    if not path.exists():
        raise LogError("file not found", path=path)
    check_delimiter(options.delimiter)
    if not path.is_dir():  # ROS 2 bags are folders; anything else must be a regular file
        require_regular_file(path)
    kind = log_format(path)
    if kind == "npz":
        from engine.logs.arrays import read_npz

        return read_npz(path, ctx)
    if kind == "parquet":
        from engine.logs.arrays import read_parquet

        return read_parquet(path, ctx)
    if kind == "bag":
        from engine.logs.bags import read_bag

        return read_bag(path, ctx, topics=options.topics)
    from engine.logs.delimited import read_delimited

    return read_delimited(path, ctx, delimiter=options.delimiter, chunk_bytes=options.chunk_bytes)


def load_log_job(path: str | os.PathLike, options: ReadOptions | None = None):
    """A job (``job(ctx) -> LogTable``) that reads ``path``: submit it to a job runner."""

    def job(ctx):
        return read_log(path, ctx, options)

    job.__name__ = f"load {Path(path).name}"
    return job
