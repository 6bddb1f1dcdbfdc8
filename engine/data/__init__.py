"""Data sets for learned dynamics: the SyMo protocol, windows, .npz + JSON files."""

from engine.data.config import PROTOCOLS, DatasetConfig, SystemProtocol, protocol_for
from engine.data.dataset import (DatasetError, TrajectoryDataset, generate_dataset, load_dataset,
                                 save_dataset)
from engine.data.windows import Windows, make_windows

__all__ = ["PROTOCOLS", "DatasetConfig", "SystemProtocol", "protocol_for", "DatasetError",
           "TrajectoryDataset", "generate_dataset", "load_dataset", "save_dataset", "Windows", "make_windows"]
