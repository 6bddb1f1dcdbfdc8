"""Data sets for learned dynamics: the SyMo protocol, log-backed sets, windows, .npz + JSON files,
and the simulated example logs."""

from engine.data.base import TrajectoryData
from engine.data.config import PROTOCOLS, DatasetConfig, SystemProtocol, protocol_for
from engine.data.dataset import DatasetError, TrajectoryDataset, generate_dataset, load_dataset, save_dataset
from engine.data.log_dataset import LogDataset, LogSystem, log_dataset
from engine.data.windows import Windows, make_windows

__all__ = ["PROTOCOLS", "DatasetConfig", "SystemProtocol", "protocol_for", "DatasetError", "TrajectoryData",
           "TrajectoryDataset", "generate_dataset", "load_dataset", "save_dataset", "LogDataset", "LogSystem",
           "log_dataset", "Windows", "make_windows"]
