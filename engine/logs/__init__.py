"""Hardware logs: read (CSV/TSV, NPZ, Parquet, ROS bags, MCAP), map, validate, prepare.

No Qt here. Typical use::

    table = read_log("run.csv", ctx)                       # or run load_log_job(path) as a job
    mapping = LogMapping(time="t", q=["theta"], u=["torque"], units={"theta": "deg"})
    prepared = prepare_log(table, mapping, PrepareConfig(dt=0.01, window=21))

Every failure is a :class:`LogError` (a ``ValueError``) naming file, line and column.
"""

from engine.logs.errors import LogError
from engine.logs.mapping import (
                                 LogMapping,
                                 MappedLog,
                                 apply_mapping,
                                 column_signature,
                                 find_saved_mapping,
                                 preview_mapping,
                                 save_mapping,
)
from engine.logs.prepare import (
                                 PrepareConfig,
                                 PreparedLog,
                                 load_prepared,
                                 prepare_job,
                                 prepare_log,
                                 smoothing_preview,
)
from engine.logs.reader import LOG_FILE_FILTERS, ReadOptions, load_log_job, read_log
from engine.logs.table import LogTable
from engine.logs.validate import Problem, find_problems, guess_time_column

__all__ = [
                                 "LOG_FILE_FILTERS",
                                 "LogError",
                                 "LogMapping",
                                 "LogTable",
                                 "MappedLog",
                                 "PrepareConfig",
                                 "PreparedLog",
                                 "Problem",
                                 "ReadOptions",
                                 "apply_mapping",
                                 "column_signature",
                                 "find_problems",
                                 "find_saved_mapping",
                                 "guess_time_column",
                                 "load_log_job",
                                 "load_prepared",
                                 "prepare_job",
                                 "prepare_log",
                                 "preview_mapping",
                                 "read_log",
                                 "save_mapping",
                                 "smoothing_preview",
]
