"""Training hyperparameters (one source of truth for the CLI and the GUI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from engine.data.config import protocol_for
from engine.models.nets import INITS

__all__ = ["TrainConfig", "MODEL_LEARNING_RATES"]

# Learning rates that replace the system protocol's for one model (``learning_rate=None``).
# ("cartpole", "symo"): the paper's 1e-3 sends SyMo's DEL-residual training into a poor basin
# (issue #5): the learned pole inertia H_22 collapses to ~1/6 of the true one, the residual loss
# plateaus ~30x above the true Lagrangian's, and since Newton's prediction error is
# ``J^-1 g`` with ``J ~ -H/h``, the small learned inertia amplifies the angle's error (one-step
# MSE ~1e-4, growing with N). At 3e-4 (2000 epochs, seed 0) the pole inertia is learned (0.9-1x)
# and train MSE / long-term state MSE are N=16: 2.2e-7 / 2.0 (was 9.5e-5 / 67), N=32: 7.2e-8 / 0.44,
# N=64: 5.2e-8 / 0.29 (paper 0.39 / 0.28 / 0.23). E2E-SyMo, trained on q-space errors, keeps 1e-3.
MODEL_LEARNING_RATES: dict[tuple[str, str], float] = {("cartpole", "symo"): 3e-4}


@dataclass
class TrainConfig:
    """One training run. ``None`` takes the system's protocol value (hidden width, learning rate)."""

    model: str = "symo"
    system: str = "pendulum"
    trajectories: int = 8               # N: training trajectories (the first N of the data set)
    epochs: int = 2000
    learning_rate: float | None = None  # pendulum 1e-4, cartpole 1e-3 (SyMo 3e-4: MODEL_LEARNING_RATES)
    hidden: int | None = None           # pendulum 128, cartpole 256
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
        """The explicit ``learning_rate``, else the model's override, else the system protocol's."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        override = MODEL_LEARNING_RATES.get((self.system, self.model))
        return float(override if override is not None else protocol_for(self.system).learning_rate)

    @property
    def width(self) -> int:
        return int(self.hidden if self.hidden is not None else protocol_for(self.system).hidden)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"TrainConfig: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(**data)
