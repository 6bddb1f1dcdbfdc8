"""Training hyperparameters (one source of truth for the CLI and the GUI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from engine.data.config import protocol_for
from engine.io import dataclass_from_dict
from engine.models.nets import INITS

__all__ = ["TrainConfig"]


@dataclass
class TrainConfig:
    """One training run. ``None`` takes the system's protocol value (hidden width, learning rate)."""

    model: str = "symo"
    system: str = "pendulum"
    trajectories: int = 8               # N: training trajectories (the first N of the data set)
    epochs: int = 2000
    learning_rate: float | None = None  # the protocol's: pendulum 1e-4, cartpole and acrobot 1e-3
    hidden: int | None = None           # pendulum 128, cartpole and acrobot 256
    layers: int = 2
    init: str = "xavier"                # network init: "xavier" (the paper's code) or "torch" (engine/models/nets.py)
    batch_factor: int = 4               # mini-batch = batch_factor * N windows
    patience: int = 50                  # ReduceLROnPlateau
    factor: float = 0.7
    seed: int = 0
    checkpoint_every: int = 100         # epochs between on-disk checkpoints (with a checkpoint dir)
    threads: int | None = 1             # torch intra-op threads (process-wide; None: leave as is). One thread
                                        # is fastest for these small networks; more oversubscribes a busy CPU

    def __post_init__(self):
        protocol_for(self.system)
        for name in ("trajectories", "epochs", "layers", "batch_factor", "checkpoint_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"TrainConfig.{name}: expected a positive integer, got {v!r}")
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise ValueError(f"TrainConfig.learning_rate: expected > 0, got {self.learning_rate!r}")
        if self.init not in INITS:
            raise ValueError(f"TrainConfig.init: expected one of {', '.join(INITS)}, got {self.init!r}")
        if not 0 < self.factor < 1:
            raise ValueError(f"TrainConfig.factor: expected in (0, 1), got {self.factor!r}")

    @property
    def lr(self) -> float:
        """The explicit ``learning_rate``, else the system protocol's (the paper's, for every model)."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return float(protocol_for(self.system).learning_rate)

    @property
    def width(self) -> int:
        return int(self.hidden if self.hidden is not None else protocol_for(self.system).hidden)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        return dataclass_from_dict(cls, data, "training settings")
