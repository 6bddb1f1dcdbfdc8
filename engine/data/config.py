"""The data protocol of the SyMo paper, per system, as dataclasses (one source of truth).

Pendulum (h = 0.1): th ~ U[-pi, pi], thd ~ U[-2 pi, 2 pi]. Cart-pole (h = 0.05), the paper
repository's gym reset: x ~ U[-0.5, 0.5], th ~ U[-3.14, 3.14], xd ~ U[-0.05, 0.05],
thd ~ U[-3, 3]. Acrobot (h = 0.05, Experiments_acrobot): (th1, th2, thd1, thd2) ~ U[-3.14, 3.14]
each, and a trajectory whose recorded speeds reach gym's limits (|thd1| >= 4 pi - 0.001 or
|thd2| >= 9 pi - 0.001 rad/s at any recorded point) is rejected and redrawn (``reject_speed``).
A constant control per trajectory, u ~ U[-2, 2] (the acrobot's on joint 2). Each trajectory has
``steps + 2`` points (32 + 2: SyMo's three-point windows); the long-term set has 16
unseen initial states, zero control, 500 (+2) points.

``sampler="paper"`` (the default) draws exactly the paper repository's random numbers
(ssantos97/SyMo, Experiments_*/data.py ``get_dataset``/``sample_gym``): the initial states
from gym's (<= 0.21) seeded ``RandomState`` in the order its ``reset()`` draws them, the
controls from ``np.random.seed(seed); uniform(-2, 2, (train + test, 1))``, train and test
from one stream of ``train + test`` trajectories (train first), and each stored trajectory
starting one step *after* the drawn state (``sample_gym`` records the observation after each
``env.step``). A rejected trajectory (acrobot) is redrawn at once from the same env stream,
with the same control, before the next trajectory's draw. The long-term integration MSE is
dominated by the few of the 16 long-term states that pass over or near the upright, so only
the paper's own draws make our numbers comparable with its figures. ``sampler="numpy"`` is the
older ``numpy.random.default_rng`` sampling (first point = the drawn state), kept for data sets
saved before.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from engine.io import dataclass_from_dict
from engine.validation import InputError, check_allocation, check_choice, check_finite, check_int, check_range

__all__ = ["SystemProtocol", "PROTOCOLS", "DatasetConfig", "protocol_for", "SAMPLERS"]

SAMPLERS = ("paper", "numpy")


@dataclass(frozen=True)
class SystemProtocol:
    """Per-system constants of the paper's experiments."""

    h: float                          # s, time step
    state_low: tuple[float, ...]      # lower bounds of the initial state (q, qd)
    state_high: tuple[float, ...]
    hidden: int                       # neurons per hidden layer
    learning_rate: float
    # the paper's gym reset: state indices in the order it draws them, and whether it casts to float32
    reset_draw_order: tuple[int, ...] = ()
    reset_float32: bool = False
    # the paper's rejection rule (Experiments_acrobot/data.py ``sample_gym``): speed limits (rad/s or
    # m/s), one per velocity; a trajectory is kept only if every recorded |qd_i| < limit_i - 0.001,
    # else its state is redrawn. None: every draw is kept (pendulum, cart-pole)
    reject_speed: tuple[float, ...] | None = None

    def __post_init__(self):
        if self.reject_speed is not None and 2 * len(self.reject_speed) != len(self.state_low):
            raise InputError(f"expected one limit per velocity ({len(self.state_low) // 2}), got "
                             f"{len(self.reject_speed)}", owner="SystemProtocol", field="reject_speed")


PROTOCOLS: dict[str, SystemProtocol] = {
    "pendulum": SystemProtocol(
        h=0.1,
        state_low=(-math.pi, -2 * math.pi),
        state_high=(math.pi, 2 * math.pi),
        hidden=128,
        learning_rate=1e-4,
        reset_draw_order=(0, 1),
        reset_float32=False,
    ),
    "cartpole": SystemProtocol(
        h=0.05,
        state_low=(-0.5, -3.14, -0.05, -3.0),
        state_high=(0.5, 3.14, 0.05, 3.0),
        hidden=256,
        learning_rate=1e-3,
        # gym CartPole reset: x, x_dot, theta, theta_dot (state is x, th, xd, thd)
        reset_draw_order=(0, 2, 1, 3),
        reset_float32=True,
    ),
    "acrobot": SystemProtocol(
        h=0.05,
        state_low=(-3.14,) * 4,
        state_high=(3.14,) * 4,
        hidden=256,
        learning_rate=1e-3,
        # gym Acrobot reset: uniform(-3.14, 3.14, size=4) over (th1, th2, thd1, thd2)
        reset_draw_order=(0, 1, 2, 3),
        reset_float32=False,
        reject_speed=(4 * math.pi, 9 * math.pi),
    ),
}


def protocol_for(system: str) -> SystemProtocol:
    try:
        return PROTOCOLS[system]
    except KeyError:
        raise ValueError(
            f"no data protocol for system {system!r}; choose one of {', '.join(sorted(PROTOCOLS))}"
        ) from None


@dataclass
class DatasetConfig:
    """What to generate. ``h=None`` takes the system's protocol step."""

    system: str = "pendulum"
    h: float | None = None
    train_trajectories: int = 128        # the largest N; a run with N uses the first N
    test_trajectories: int = 128
    steps: int = 32                      # windows per trajectory (points = steps + 2)
    long_term_trajectories: int = 16
    long_term_steps: int = 500
    control_low: float = -2.0
    control_high: float = 2.0
    seed: int = 0                        # train + test set
    long_term_seed: int = 1
    sampler: str = "paper"  # "paper": the paper repository's exact draws; "numpy": older sampling

    def __post_init__(self):
        check_choice("data set setting", "system (--system)", self.system, PROTOCOLS)
        protocol_for(self.system)
        self._check_sizes()  # plain-language messages naming the flag (engine/validation.py)
        for name in (
            "train_trajectories",
            "test_trajectories",
            "steps",
            "long_term_trajectories",
            "long_term_steps",
        ):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise InputError(
                    f"expected a positive whole number, got {v!r}", owner="DatasetConfig", field=name
                )
        if self.h is not None and not self.h > 0:
            raise InputError(
                f"expected a positive time step, got {self.h!r}", owner="DatasetConfig", field="h"
            )
        if self.sampler not in SAMPLERS:
            raise InputError(
                f"expected one of {', '.join(SAMPLERS)}, got {self.sampler!r}",
                owner="DatasetConfig",
                field="sampler",
            )
        if not self.control_low <= self.control_high:
            raise InputError(f"must be at most control_high ({self.control_high}), got {self.control_low}",
                             owner="DatasetConfig", field="control_low")

    def _check_sizes(self) -> None:
        """Ranges that make sense and the data set's memory estimated before it is generated
        (engine/validation.py; budget: LAGRANGE_MEMORY_BUDGET, default 25 % of RAM)."""
        who = "data set setting"
        for name, flag in (
            ("train_trajectories", "--trajectories"),
            ("test_trajectories", "--test-trajectories"),
            ("long_term_trajectories", None),
            ("steps", None),
            ("long_term_steps", "--long-term-steps"),
        ):
            check_int(who, f"{name} ({flag})" if flag else name, getattr(self, name), 1, 100_000_000)
        for name in ("seed", "long_term_seed"):
            check_int(who, f"{name} (--seed)" if name == "seed" else name, getattr(self, name), 0, 2**32 - 1,
                      hint="seeds are whole numbers from 0")
        if self.h is not None:
            check_range(who, "h", self.h, 0.0, 10.0, lo_open=True, unit="s")
        check_choice(who, "sampler (--sampler)", self.sampler, SAMPLERS)
        check_finite(who, "control_low", self.control_low)
        check_finite(who, "control_high", self.control_high)
        width = len(protocol_for(self.system).state_low) + 1  # state and control per point (float64)
        points = ((self.train_trajectories + self.test_trajectories) * (self.steps + 2)
                  + self.long_term_trajectories * (self.long_term_steps + 2))
        check_allocation(f"a data set of {points:.3g} points", points * width, 8 * 3,
                         hint="lower the number of trajectories or steps")

    @property
    def time_step(self) -> float:
        return float(self.h if self.h is not None else protocol_for(self.system).h)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DatasetConfig:
        return dataclass_from_dict(cls, data, "data set settings")
