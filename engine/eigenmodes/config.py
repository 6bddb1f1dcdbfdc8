"""Design, training and stabilisation settings: the one source of truth for the CLI and the GUI.

Defaults follow METHODS section 3 and the paper's tables (Adam, 500 epochs, step 0.05 s,
constraint weight gamma = 10, effort weight lambda = 1e-4, k_E = 10, k_M = 1, |p| threshold
5e-4 in the energy controller), with two measured departures: the task weight is 100 (the
task loss is a squared distance in m^2, so with weight 1 the optimiser settled 5-15 cm from
the target; with 100 it reaches < 1 mm) and Adam's learning rate is 3e-3 decaying by 0.999
per epoch (lr 1e-3 had not converged within 500 epochs). The paper's own start and target were lost
in its text extraction; the default task below is a pick-and-place swing of the tip from
the lower left to the lower right, a little off the natural mode's mirror image, so the
learned potential has work to do.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from engine.systems.double_pendulum import DoublePendulumParams, reach
from engine.io import dataclass_from_dict

__all__ = [
    "ConfigError",
    "DesignConfig",
    "EigenmodeTask",
    "LossWeights",
    "PotentialConfig",
    "StabiliseConfig",
    "TrainConfig",
    "config_from_dict",
]


class ConfigError(ValueError):
    """A setting out of range; the message names the field."""


def _check_number(owner: str, name: str, value, *, minimum=None, strict=False):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ConfigError(f"{owner}.{name}: expected a finite number, got {value!r}")
    if minimum is not None and (value < minimum or (strict and value == minimum)):
        op = ">" if strict else ">="
        raise ConfigError(f"{owner}.{name}: must be {op} {minimum} (got {value})")


@dataclass
class EigenmodeTask:
    """What the oscillation must do: start at rest at ``q0`` (rad), put the tip on ``target`` (m)
    at half the period ``period`` (s). ``learn_period``: optimise the period too (appendix D)."""

    q0: tuple[float, float] = (-0.6, -0.2)
    target: tuple[float, float] = (1.25, -1.5)
    period: float = 2.5
    learn_period: bool = False

    def validate(self, plant: DoublePendulumParams | None = None) -> None:
        if len(self.q0) != 2 or len(self.target) != 2:
            raise ConfigError("EigenmodeTask.q0 and .target: expected two numbers each")
        for i, v in enumerate(self.q0):
            _check_number("EigenmodeTask", f"q0[{i}]", v)
        for i, v in enumerate(self.target):
            _check_number("EigenmodeTask", f"target[{i}]", v)
        _check_number("EigenmodeTask", "period", self.period, minimum=0.0, strict=True)
        if plant is not None:
            r_in, r_out = reach(plant)
            r = math.hypot(*self.target)
            if not (r_in - 1e-9 <= r <= r_out + 1e-9):
                raise ConfigError(f"EigenmodeTask.target: {tuple(self.target)} is {r:.3f} m from the pivot, "
                                  f"outside the reachable annulus [{r_in:.3f}, {r_out:.3f}] m")


@dataclass
class PotentialConfig:
    """The learned potential V_theta: an MLP q (2) -> hidden x layers (tanh) -> 1."""

    hidden: int = 256
    layers: int = 1
    output_scale: float = 0.1   # initial scale of the last layer (small: start near the plant)

    def validate(self) -> None:
        for name in ("hidden", "layers"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"PotentialConfig.{name}: expected a positive integer, got {v!r}")
        _check_number("PotentialConfig", "output_scale", self.output_scale, minimum=0.0)


@dataclass
class LossWeights:
    """Loss = task_weight * |tip(T/2) - target|^2 + gamma * C + effort_weight * int |u|^2 dt.

    ``constraint_mode``: "soft" keeps gamma fixed; "hard" raises it geometrically from
    ``constraint_weight`` to ``constraint_weight_max`` over training (a penalty method that
    approaches the hard constraint of the paper's problem (2))."""

    task_weight: float = 100.0
    constraint_weight: float = 10.0
    effort_weight: float = 1e-4
    constraint_mode: str = "soft"
    constraint_weight_max: float = 1000.0

    def validate(self) -> None:
        for name in ("task_weight", "constraint_weight", "effort_weight", "constraint_weight_max"):
            _check_number("LossWeights", name, getattr(self, name), minimum=0.0)
        if self.constraint_mode not in ("soft", "hard"):
            raise ConfigError(f"LossWeights.constraint_mode: expected 'soft' or 'hard', got {self.constraint_mode!r}")


@dataclass
class TrainConfig:
    """Optimiser and integration settings for learning the potential."""

    epochs: int = 500
    lr: float = 3e-3
    lr_decay: float = 0.999       # multiplicative, per epoch
    period_lr: float = 1e-2       # learning rate of log(period) when the period is learned
    dt: float = 0.05              # s, RK4 step (the number of steps is fixed at round(T/dt), even)
    dtype: str = "float32"       # the house default for learning (float64 gave the same mode, slower)
    seed: int = 0
    grad_clip: float = 10.0
    device: str = "cpu"           # where it learns: cpu, cuda, cuda:N or auto (engine/devices.py; --device)

    def validate(self) -> None:
        if not isinstance(self.epochs, int) or self.epochs < 0:
            raise ConfigError(f"TrainConfig.epochs: expected an integer >= 0, got {self.epochs!r}")
        for name in ("lr", "dt", "period_lr", "grad_clip"):
            _check_number("TrainConfig", name, getattr(self, name), minimum=0.0, strict=True)
        _check_number("TrainConfig", "lr_decay", self.lr_decay, minimum=0.0, strict=True)
        if self.lr_decay > 1:
            raise ConfigError(f"TrainConfig.lr_decay: must be <= 1 (got {self.lr_decay})")
        if self.dtype not in ("float32", "float64"):
            raise ConfigError(f"TrainConfig.dtype: expected 'float32' or 'float64', got {self.dtype!r}")
        if not isinstance(self.seed, int):
            raise ConfigError(f"TrainConfig.seed: expected an integer, got {self.seed!r}")
        from engine.devices import DeviceError, parse_device_name

        try:
            parse_device_name(self.device)
        except DeviceError as exc:
            raise ConfigError(f"TrainConfig.device: {exc}") from None


@dataclass
class StabiliseConfig:
    """The stabilising controller u = u_E + u_M - D qd on the plant plus the learned potential.

    ``perturb_q`` (rad) and ``perturb_p`` (kg m^2/s) shift the start from the mode's start
    (q0, 0). ``periods``: simulated duration in mode periods; ``dt``: RK4 step (s)."""

    k_energy: float = 10.0
    k_mode: float = 1.0
    damping: float = 0.0
    perturb_q: tuple[float, float] = (0.2, -0.2)
    perturb_p: tuple[float, float] = (0.0, 0.0)
    periods: float = 10.0
    dt: float = 0.005
    p_threshold: float = 5e-4
    harmonics: int = 24           # Fourier harmonics of the desired orbit
    settle_periods: float = 3.0   # before the monodromy: periods to settle on the limit cycle
    multiplier_steps: int = 500   # RK4 steps per period for the monodromy

    def validate(self) -> None:
        for name in ("k_energy", "k_mode", "damping"):
            _check_number("StabiliseConfig", name, getattr(self, name), minimum=0.0)
        for name in ("periods", "dt", "p_threshold"):
            _check_number("StabiliseConfig", name, getattr(self, name), minimum=0.0, strict=True)
        for name in ("perturb_q", "perturb_p"):
            v = getattr(self, name)
            if len(v) != 2:
                raise ConfigError(f"StabiliseConfig.{name}: expected two numbers, got {v!r}")
            for i, x in enumerate(v):
                _check_number("StabiliseConfig", f"{name}[{i}]", x)
        for name in ("harmonics", "multiplier_steps"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"StabiliseConfig.{name}: expected a positive integer, got {v!r}")
        _check_number("StabiliseConfig", "settle_periods", self.settle_periods, minimum=0.0)


@dataclass
class DesignConfig:
    """Everything that defines one eigenmode design."""

    plant: DoublePendulumParams = field(default_factory=DoublePendulumParams)
    task: EigenmodeTask = field(default_factory=EigenmodeTask)
    potential: PotentialConfig = field(default_factory=PotentialConfig)
    weights: LossWeights = field(default_factory=LossWeights)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        self.task.validate(self.plant)
        self.potential.validate()
        self.weights.validate()
        self.train.validate()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DesignConfig:
        if not isinstance(data, dict):
            raise ConfigError("design: expected a JSON object")
        plant = DoublePendulumParams.from_dict(data.get("plant", {}))
        return cls(plant=plant,
                   task=config_from_dict(EigenmodeTask, data.get("task", {}), "task"),
                   potential=config_from_dict(PotentialConfig, data.get("potential", {}), "potential"),
                   weights=config_from_dict(LossWeights, data.get("weights", {}), "weights"),
                   train=config_from_dict(TrainConfig, data.get("train", {}), "train"))


def config_from_dict(cls, data: dict, where: str = ""):
    """Build the dataclass ``cls`` from a dict, rejecting unknown fields (lists become tuples)."""
    return dataclass_from_dict(cls, data, where or None, ConfigError,
                               lambda v: tuple(v) if isinstance(v, list) else v)
