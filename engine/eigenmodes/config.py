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

from engine.io import dataclass_from_dict
from engine.systems.double_pendulum import DoublePendulumParams, reach
from engine.validation import InputError, check_allocation, check_int, check_range

__all__ = [
    "ConfigError",
    "DesignConfig",
    "EigenmodeTask",
    "LossWeights",
    "PotentialConfig",
    "StabiliseConfig",
    "TrainConfig",
    "check_period",
    "config_from_dict",
]


class ConfigError(InputError):
    """A setting out of range; the message names the field (and the flag that sets it)."""


# physical and computational ranges (one place: the CLI flags and the GUI forms come from here)
PERIOD_RANGE_S = (0.1, 60.0)      # a double pendulum's oscillation: a tenth of a second to a minute
DT_RANGE_S = (1e-4, 1.0)          # RK4 step
MAX_EPOCHS = 1_000_000
MAX_HIDDEN = 65_536
MAX_LAYERS = 64
MAX_SIM_PERIODS = 1_000.0         # simulated periods of the stabilised loop
MAX_SETTLE_PERIODS = 100.0        # periods to settle before the monodromy
MAX_STEPS_PER_PERIOD = 100_000


def _checked(helper, *args, **kwargs):
    """``engine.validation``'s ``helper``, raising :class:`ConfigError` (callers catch that)."""
    try:
        return helper(*args, **kwargs)
    except ConfigError:
        raise
    except InputError as exc:
        raise ConfigError(exc.reason, owner=exc.owner, field=exc.field, flag=exc.flag) from None


def _check_number(
    owner: str, name: str, value, *, minimum=None, strict=False, maximum=None, unit=None, hint=None
):
    _checked(check_range, owner, name, value, minimum, maximum, lo_open=strict, unit=unit, hint=hint)


def _check_count(owner: str, name: str, value, lo: int, hi: int, hint=None):
    _checked(check_int, owner, name, value, lo, hi, hint=hint)


def check_period(value, field: str = "period", owner: str | None = "EigenmodeTask") -> float:
    """A mode period in :data:`PERIOD_RANGE_S` (s); ``field`` names the flag (``--periods`` for a sweep)."""
    lo, hi = PERIOD_RANGE_S
    return _checked(check_range, owner, field, value, lo, hi, unit="s",
                    hint="the period of one oscillation, for example 2.5")


@dataclass
class EigenmodeTask:
    """What the oscillation must do: start at rest at ``q0`` (rad), put the tip on ``target`` (m)
    at half the period ``period`` (s). ``learn_period``: optimise the period too (appendix D)."""

    q0: tuple[float, float] = (-0.6, -0.2)
    target: tuple[float, float] = (1.25, -1.5)
    period: float = 2.5
    learn_period: bool = False

    def validate(self, plant: DoublePendulumParams | None = None) -> None:
        for name in ("q0", "target"):
            if len(getattr(self, name)) != 2:
                raise ConfigError(f"expected two numbers, got {getattr(self, name)!r}", owner="EigenmodeTask",
                                  field=name)
        for i, v in enumerate(self.q0):
            _check_number("EigenmodeTask", f"q0[{i}]", v)
        for i, v in enumerate(self.target):
            _check_number("EigenmodeTask", f"target[{i}]", v)
        check_period(self.period)
        if plant is not None:
            r_in, r_out = reach(plant)
            r = math.hypot(*self.target)
            if not (r_in - 1e-9 <= r <= r_out + 1e-9):
                raise ConfigError(
                    f"{tuple(self.target)} is {r:.3f} m from the pivot, outside the reachable "
                    f"annulus [{r_in:.3f}, {r_out:.3f}] m",
                    owner="EigenmodeTask",
                    field="target",
                )


@dataclass
class PotentialConfig:
    """The learned potential V_theta: an MLP q (2) -> hidden x layers (tanh) -> 1."""

    hidden: int = 256
    layers: int = 1
    output_scale: float = 0.1   # initial scale of the last layer (small: start near the plant)

    def validate(self) -> None:
        _check_count(
            "PotentialConfig", "hidden", self.hidden, 1, MAX_HIDDEN, hint="hidden units of V, such as 256"
        )
        _check_count("PotentialConfig", "layers", self.layers, 1, MAX_LAYERS)
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
            raise ConfigError(f"expected 'soft' or 'hard', got {self.constraint_mode!r}", owner="LossWeights",
                              field="constraint_mode")


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
        _check_count("TrainConfig", "epochs", self.epochs, 0, MAX_EPOCHS)
        for name in ("lr", "period_lr", "grad_clip"):
            _check_number("TrainConfig", name, getattr(self, name), minimum=0.0, strict=True)
        _check_number("TrainConfig", "dt", self.dt, minimum=DT_RANGE_S[0], maximum=DT_RANGE_S[1], unit="s",
                      hint="the RK4 step, for example 0.05")
        _check_number("TrainConfig", "lr_decay", self.lr_decay, minimum=0.0, strict=True)
        if self.lr_decay > 1:
            raise ConfigError(
                f"must be at most 1, got {self.lr_decay}", owner="TrainConfig", field="lr_decay"
            )
        if self.dtype not in ("float32", "float64"):
            raise ConfigError(f"expected 'float32' or 'float64', got {self.dtype!r}", owner="TrainConfig",
                              field="dtype")
        _check_count("TrainConfig", "seed", self.seed, 0, 2**62)
        from engine.devices import DeviceError, parse_device_name

        try:
            parse_device_name(self.device)
        except DeviceError as exc:
            raise ConfigError(str(exc), owner="TrainConfig", field="device") from None


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
        _check_number(
            "StabiliseConfig",
            "periods",
            self.periods,
            minimum=0.0,
            strict=True,
            maximum=MAX_SIM_PERIODS,
            hint="the simulated duration in mode periods, for example 10",
        )
        _check_number(
            "StabiliseConfig",
            "dt",
            self.dt,
            minimum=DT_RANGE_S[0],
            maximum=DT_RANGE_S[1],
            unit="s",
            hint="the RK4 step, for example 0.005",
        )
        _check_number("StabiliseConfig", "p_threshold", self.p_threshold, minimum=0.0, strict=True)
        for name in ("perturb_q", "perturb_p"):
            v = getattr(self, name)
            if len(v) != 2:
                raise ConfigError(f"expected two numbers, got {v!r}", owner="StabiliseConfig", field=name)
            for i, x in enumerate(v):
                _check_number("StabiliseConfig", f"{name}[{i}]", x)
        _check_count("StabiliseConfig", "harmonics", self.harmonics, 1, 1_000)
        _check_count("StabiliseConfig", "multiplier_steps", self.multiplier_steps, 1, MAX_STEPS_PER_PERIOD,
                     hint="RK4 steps per period for the monodromy, for example 500")
        _check_number(
            "StabiliseConfig",
            "settle_periods",
            self.settle_periods,
            minimum=0.0,
            maximum=MAX_SETTLE_PERIODS,
            hint="periods to settle before the multipliers, for example 3",
        )

    def check_steps(self, period: float) -> None:
        """Refuse a simulation whose samples (one state, torque and energy row per RK4 step)
        would not fit the memory budget, before it starts."""
        steps = (self.periods * period) / self.dt
        _checked(
            check_allocation,
            f"the simulated run ({steps:.3g} RK4 steps of {self.dt:g} s)",
            steps,
            16 * 8,
            field="--periods",
            hint="lower --periods or raise --dt",
        )


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
