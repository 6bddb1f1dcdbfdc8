"""Training hyperparameters (one source of truth for the CLI and the GUI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from engine.data.config import PROTOCOLS, protocol_for
from engine.devices import parse_device_name
from engine.io import dataclass_from_dict
from engine.models.nets import INITS
from engine.validation import InputError, check_allocation, check_choice, check_int, check_range

__all__ = ["TrainConfig"]


def _model_names() -> list[str]:
    from engine.models.registry import model_names  # models rank below training

    return model_names()


@dataclass
class TrainConfig:
    """One training run. ``None`` takes the system's protocol value (hidden width, learning rate)."""

    model: str = "symo"
    system: str = "pendulum"  # the SyMo protocol (its defaults; the analytic system of generated data)
    log: str | None = None  # training on a hardware log: its name (a label; the data name the log)
    trajectories: int = 8               # N: training trajectories (the first N of the data set)
    epochs: int = 2000
    learning_rate: float | None = None  # the protocol's: pendulum 1e-4, cartpole and acrobot 1e-3
    hidden: int | None = None           # pendulum 128, cartpole and acrobot 256
    layers: int = 2
    init: str = "xavier"  # network init: "xavier" (the paper's code) or "torch" (engine/models/nets.py)
    batch_factor: int = 4               # mini-batch = batch_factor * N windows
    patience: int = 50                  # ReduceLROnPlateau
    factor: float = 0.7
    seed: int = 0
    checkpoint_every: int = 100         # epochs between on-disk checkpoints (with a checkpoint dir)
    threads: int | None = 1             # torch intra-op threads (process-wide; None: leave as is). One thread
                                        # is fastest for these small networks; more oversubscribes a busy CPU
    device: str = "cpu"                 # cpu, cuda, cuda:N or auto (engine/devices.py; --device)
    robot: str | None = None            # robot models: the robot learned (library name or robot file; --robot)
    # model selection on held-out training chunks (engine/training/trainer.py Selection): every
    # round(1 / holdout)-th training chunk is held out (0: none); every select_every epochs (and at
    # epoch 0 and the last) the held-out rollouts are scored and the best weights are the ones kept
    holdout: float = 0.0
    select_every: int = 0               # 0: no selection (the last epoch's weights are kept)
    stop_patience: int = 0              # stop after this many scores without a better one (0: never)
    time_budget: float | None = None    # s of training (wall time); stops after the epoch that spends it

    def __post_init__(self):
        check_choice("training setting", "system (--system)", self.system, PROTOCOLS)
        if self.log is not None and not (isinstance(self.log, str) and self.log.strip()):
            raise InputError(
                f"expected the log's name, got {self.log!r}", owner="training setting", field="log"
            )
        self.device = parse_device_name(self.device)  # a name; resolved where the model is built
        if self.robot is not None and not (isinstance(self.robot, str) and self.robot.strip()):
            raise InputError(f"expected a robot name or file, got {self.robot!r}", owner="training setting",
                             field="robot (--robot)")
        protocol_for(self.system)
        self._check_sizes()  # plain-language messages naming the flag (engine/validation.py)

    def _check_sizes(self) -> None:
        """Ranges that make sense, and the memory of the network and a batch estimated before any
        allocation (engine/validation.py; budget: LAGRANGE_MEMORY_BUDGET, default 25 % of RAM)."""
        who = "training setting"
        check_int(who, "trajectories (--trajectories)", self.trajectories, 1, 10_000_000)
        check_int(who, "epochs (--epochs)", self.epochs, 1, 100_000_000)
        check_int(who, "layers", self.layers, 1, 64)
        check_int(who, "batch_factor", self.batch_factor, 1, 100_000)
        check_int(who, "checkpoint_every", self.checkpoint_every, 1, 100_000_000)
        check_int(who, "patience", self.patience, 0, 100_000_000)
        check_int(who, "seed (--seed)", self.seed, 0, 2**32 - 1, hint="seeds are whole numbers from 0")
        check_range(who, "factor", self.factor, 0.0, 1.0, lo_open=True, hi_open=True)
        check_choice(who, "model (--model)", self.model, _model_names())
        check_choice(who, "init", self.init, INITS)
        if self.hidden is not None:
            check_int(who, "hidden (--hidden)", self.hidden, 1, 1_000_000)
        if self.learning_rate is not None:
            check_range(who, "learning_rate (--lr)", self.learning_rate, 0.0, 1.0, lo_open=True,
                        hint="Adam learning rates are usually 1e-5 to 1e-2")
        if self.threads is not None:
            check_int(who, "threads", self.threads, 1, 4096)
        check_range(who, "holdout", self.holdout, 0.0, 0.5, hi_open=False)
        check_int(who, "select_every", self.select_every, 0, 100_000_000)
        check_int(who, "stop_patience", self.stop_patience, 0, 100_000_000)
        if self.time_budget is not None:
            check_range(who, "time_budget (--time-budget)", self.time_budget, 0.0, 1e9, lo_open=True)
        h, n_layers, batch = self.width, self.layers, self.batch_factor * self.trajectories
        # weights, gradients and Adam's two moments in float64; activations of one batch of windows
        # (three points each) through every layer, forward and backward
        elements = 4 * (n_layers * h * h + 64 * h) + 6 * 3 * batch * h * n_layers
        check_allocation(f"training a network of {n_layers} x {h} neurons on batches of {batch} windows",
                         elements, 8, hint="lower --hidden or --trajectories")

    @property
    def lr(self) -> float:
        """The explicit ``learning_rate``, else the system protocol's (the paper's, for every model)."""
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return float(protocol_for(self.system).learning_rate)

    @property
    def data_name(self) -> str:
        """What the run trains on, for rows and messages: the log's name, else the system."""
        return self.log or self.system

    @property
    def width(self) -> int:
        return int(self.hidden if self.hidden is not None else protocol_for(self.system).hidden)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrainConfig:
        return dataclass_from_dict(cls, data, "training settings")
