"""The learned car model ``v_{i+1} = f_theta(v_i, u_i)`` (Köhler et al.): an MLP on local velocities.

Inputs ``v`` (..., 3) = (forward m/s, lateral m/s, yaw rate rad/s) and ``u`` (..., 2) =
(throttle m/s^2, steering rad); output the next local velocity (..., 3). Internally the
inputs are standardised and the network predicts the velocity change in units of the data's
per-step change (a residual), both stored as buffers so a checkpoint is self-contained.
The pose update ``x_{i+1} = x_i + h R(yaw_i) v_{i+1}`` lives with the planner.

Default architecture: 8 hidden layers x 64 units, GELU; ReLU, other sizes and the L1, L2
and relative losses (``L_rel = |v' - f|_1 / (|v'|_1 + eps)``) are selectable.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn

from engine import io

__all__ = [
    "ACTIVATIONS",
    "LOSSES",
    "CarMLP",
    "CarMLPConfig",
    "CarModelError",
    "car_loss",
    "load_car_model",
    "save_car_model",
    "train_car_mlp",
]

ACTIVATIONS = ("gelu", "relu")
LOSSES = ("relative", "l1", "l2")


class CarModelError(ValueError):
    """Bad configuration or checkpoint for the car model; the message names the field/file."""


@dataclass(frozen=True)
class CarMLPConfig:
    """Architecture and training hyperparameters of the learned car model."""

    hidden: int = 64
    layers: int = 8                 # hidden layers
    activation: str = "gelu"        # gelu | relu
    loss: str = "relative"          # relative | l1 | l2
    eps: float = 0.1                # relative-loss floor (m/s)
    # 160 epochs: at 40 the one-step loss looks flat but the open-loop rollouts (TVE, plans)
    # are still far off (TVE 2.9 -> 0.50 on the default data)
    epochs: int = 160
    batch_size: int = 256
    lr: float = 2e-3                # peak of the one-cycle cosine schedule
    weight_decay: float = 0.0
    val_fraction: float = 0.1
    seed: int = 0

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise CarModelError(f"CarMLPConfig.activation: {self.activation!r}, choose one of {ACTIVATIONS}")
        if self.loss not in LOSSES:
            raise CarModelError(f"CarMLPConfig.loss: {self.loss!r}, choose one of {LOSSES}")
        for name in ("hidden", "layers", "epochs", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise CarModelError(f"CarMLPConfig.{name}: must be at least 1")
        if not (0.0 <= self.val_fraction < 1.0):
            raise CarModelError("CarMLPConfig.val_fraction: must be in [0, 1)")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CarMLPConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class CarMLP(nn.Module):
    """``v_next = v + out_scale * net((cat(v, u) - in_mean) / in_std)``."""

    def __init__(self, config: CarMLPConfig = CarMLPConfig()):
        super().__init__()
        self.config = config
        dims = [5] + [config.hidden] * config.layers + [3]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.register_buffer("in_mean", torch.zeros(5))
        self.register_buffer("in_std", torch.ones(5))
        self.register_buffer("out_scale", torch.ones(3))
        with torch.no_grad():  # a small last layer: the untrained model is close to v_next = v
            self.linears[-1].weight.mul_(0.1)
            self.linears[-1].bias.zero_()

    @property
    def activation(self):
        return nn.functional.gelu if self.config.activation == "gelu" else torch.relu

    def forward(self, v: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        shape = torch.broadcast_shapes(v.shape[:-1], u.shape[:-1])
        v, u = v.expand(shape + (3,)), u.expand(shape + (2,))
        z = (torch.cat([v, u], -1) - self.in_mean) / self.in_std
        act = self.activation
        for layer in self.linears[:-1]:
            z = act(layer(z))
        return v + self.out_scale * self.linears[-1](z)

    def set_normalisation(self, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        """Standardise inputs (N, 5) and scale outputs by the std of ``targets - v`` (N, 3)."""
        with torch.no_grad():
            self.in_mean.copy_(inputs.mean(0))
            self.in_std.copy_(inputs.std(0).clamp_min(1e-3))
            self.out_scale.copy_((targets - inputs[:, :3]).std(0).clamp_min(1e-4))

    def folded_layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The linear layers with the normalisation folded in: list of (W (out, in), b (out,)).

        ``v_next = v + W_L act(... act(W_1 cat(v, u) + b_1) ...) + b_L``; detached float32 copies.
        """
        with torch.no_grad():
            out = []
            for i, layer in enumerate(self.linears):
                W, b = layer.weight.detach().float().clone(), layer.bias.detach().float().clone()
                if i == 0:
                    b = b - W @ (self.in_mean / self.in_std).float()
                    W = W / self.in_std.float()
                if i == len(self.linears) - 1:
                    W = W * self.out_scale.float()[:, None]
                    b = b * self.out_scale.float()
                out.append((W.contiguous(), b.contiguous()))
        return out


def car_loss(pred: torch.Tensor, target: torch.Tensor, kind: str = "relative",
             eps: float = 0.1) -> torch.Tensor:
    """Mean training loss over a batch (N, 3): ``relative``, ``l1`` or ``l2``."""
    err = pred - target
    if kind == "l1":
        return err.abs().sum(-1).mean()
    if kind == "l2":
        return (err * err).sum(-1).mean()
    if kind == "relative":
        return (err.abs().sum(-1) / (target.abs().sum(-1) + eps)).mean()
    raise CarModelError(f"loss: {kind!r}, choose one of {LOSSES}")


def _split(n: int, val_fraction: float, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Validation pairs as whole contiguous blocks (neighbouring time steps are nearly equal, so
    a pair-wise random split would leak); returns ``(train_idx, val_idx)``."""
    block = 100 if n >= 2000 else max(1, n // 20)
    blocks = torch.arange(n) // block
    nb = int(blocks[-1]) + 1 if n else 0
    n_val = round(val_fraction * nb)
    val_blocks = torch.randperm(nb, generator=gen)[:n_val]
    is_val = torch.isin(blocks, val_blocks)
    return torch.nonzero(~is_val).flatten(), torch.nonzero(is_val).flatten()


def train_car_mlp(inputs: torch.Tensor, targets: torch.Tensor,
                  config: CarMLPConfig = CarMLPConfig(), ctx=None) -> tuple[CarMLP, dict]:
    """Train on pairs ``inputs`` (N, 5) = (v_i, u_i) -> ``targets`` (N, 3) = v_{i+1}.

    Pairs are expected in recording order: the held-out pairs are whole blocks of consecutive
    steps. One-step loss (``config.loss``), Adam, one-cycle cosine learning rate.
    ``ctx`` is an optional job context (progress with live metrics, cancellation).
    Returns ``(model, history)`` with per-epoch ``train_loss`` / ``val_loss`` lists.
    """
    if inputs.ndim != 2 or inputs.shape[1] != 5 or targets.shape != (inputs.shape[0], 3):
        raise CarModelError(f"training data: expected inputs (N, 5) and targets (N, 3), got "
                            f"{tuple(inputs.shape)} and {tuple(targets.shape)}")
    if not (torch.isfinite(inputs).all() and torch.isfinite(targets).all()):
        raise CarModelError("training data: contains NaN or inf")
    gen = torch.Generator().manual_seed(config.seed)
    torch.manual_seed(config.seed)
    inputs, targets = inputs.float(), targets.float()
    train_idx, val_idx = _split(inputs.shape[0], config.val_fraction, gen)
    model = CarMLP(config)
    model.set_normalisation(inputs[train_idx], targets[train_idx])
    bs = config.batch_size
    steps_per_epoch = max(1, math.ceil(len(train_idx) / bs))
    total_steps = config.epochs * steps_per_epoch
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=total_steps,
                                                pct_start=0.05, anneal_strategy="cos",
                                                div_factor=10.0, final_div_factor=50.0)
    history = {"train_loss": [], "val_loss": [], "seconds": 0.0}
    t0 = time.perf_counter()
    for epoch in range(config.epochs):
        order = train_idx[torch.randperm(len(train_idx), generator=gen)]
        total = 0.0
        for k in range(steps_per_epoch):
            idx = order[k * bs:(k + 1) * bs]
            x, y = inputs[idx], targets[idx]
            loss = car_loss(model(x[:, :3], x[:, 3:]), y, config.loss, config.eps)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if sched.last_epoch + 1 < total_steps:
                sched.step()
            total += float(loss.detach()) * len(idx)
            if ctx is not None and k % 20 == 0:
                ctx.check_cancelled()
        train_loss = total / max(1, len(train_idx))
        if not math.isfinite(train_loss):
            raise CarModelError(f"training diverged (loss {train_loss}) at epoch {epoch + 1}; lower lr")
        with torch.no_grad():
            if len(val_idx):
                xv, yv = inputs[val_idx], targets[val_idx]
                val_loss = float(car_loss(model(xv[:, :3], xv[:, 3:]), yv, config.loss, config.eps))
            else:
                val_loss = float("nan")
        history["train_loss"].append(train_loss)
        history["val_loss"].append(val_loss)
        if ctx is not None:
            ctx.progress((epoch + 1) / config.epochs, f"epoch {epoch + 1}/{config.epochs}",
                         {"train_loss": train_loss, "val_loss": val_loss})
    history["seconds"] = time.perf_counter() - t0
    model.eval()
    return model, history


def save_car_model(directory: str | Path, model: CarMLP, meta: dict | None = None) -> Path:
    """Write ``car_model.safetensors`` + ``car_model.json`` (config and ``meta``) into ``directory``."""
    info = {"kind": "car_mlp", "config": model.config.to_dict(), **(meta or {})}
    return io.save_checkpoint(directory, model.state_dict(), info, name="car_model")


def load_car_model(directory: str | Path) -> tuple[CarMLP, dict]:
    """Load a model written by :func:`save_car_model`; ``CarModelError`` naming the file if broken."""
    directory = Path(directory)
    state, meta = io.load_checkpoint(directory, name="car_model")
    if meta.get("kind") != "car_mlp" or "config" not in meta:
        raise CarModelError(f"{directory / 'car_model.json'}: not a car model (field 'kind'/'config')")
    try:
        model = CarMLP(CarMLPConfig.from_dict(meta["config"]))
        model.load_state_dict(state)
    except (RuntimeError, TypeError, KeyError) as exc:
        raise CarModelError(f"{directory / 'car_model.safetensors'}: weights do not match the config ({exc})") from exc
    model.eval()
    return model, meta
