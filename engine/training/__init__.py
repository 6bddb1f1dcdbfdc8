"""Training learned dynamics: configs, the loop, metrics, jobs and sweeps."""

from engine.training.config import TrainConfig
from engine.training.jobs import dataset_for, resume_job, train_job
from engine.training.metrics import METRIC_NAMES, evaluate
from engine.training.trainer import TrainingDiverged, TrainResult, build_for, fit, train_model

__all__ = [
    "TrainConfig",
    "dataset_for",
    "resume_job",
    "train_job",
    "METRIC_NAMES",
    "evaluate",
    "TrainingDiverged",
    "TrainResult",
    "build_for",
    "fit",
    "train_model",
]
