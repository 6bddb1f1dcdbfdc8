"""The learned car model ``v_{i+1} = f_theta(v_i, u_i)`` (Köhler et al.): an MLP on local velocities.

Inputs ``v`` (..., 3) = (forward m/s, lateral m/s, yaw rate rad/s) and ``u`` (..., 2) =
(throttle m/s^2, steering rad); output the next local velocity (..., 3). Internally the
inputs are standardised and the network predicts the velocity change in units of the data's
per-step change (a residual), both stored as buffers so a checkpoint is self-contained.
The pose update ``x_{i+1} = x_i + h R(yaw_i) v_{i+1}`` lives with the planner
(:class:`engine.car.dynamics.LearnedCarModel`); the training loop in :mod:`engine.car.training`.

Default architecture: 8 hidden layers x 64 units, GELU; ReLU, other sizes and the L1, L2
and relative losses (``L_rel = |v' - f|_1 / (|v'|_1 + eps)``) are selectable.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import cast

import torch
from torch import nn

from engine import io
from engine.validation import InputError, check_allocation, check_int, check_range

__all__ = [
    "ACTIVATIONS",
    "LOSSES",
    "CarMLP",
    "CarMLPConfig",
    "CarModelError",
    "DEFAULT_MODEL",
    "car_loss",
    "training_elements",
    "default_model_dir",
    "expected_shapes",
    "load_car_model",
    "read_safetensors_header",
    "save_car_model",
]

ACTIVATIONS = ("gelu", "relu")
LOSSES = ("relative", "l1", "l2")


DEFAULT_MODEL = "default"       # the name of the shipped model (resources/car_models/default)


def default_model_dir() -> Path:
    """The shipped learned car model (8 x 64 GELU, trained by ``car train``; see its README)."""
    from engine.paths import resource

    return resource("car_models", DEFAULT_MODEL)


class CarModelError(InputError):
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
            raise CarModelError(
                f"{self.activation!r}, choose one of {', '.join(ACTIVATIONS)}",
                owner="CarMLPConfig",
                field="activation",
            )
        if self.loss not in LOSSES:
            raise CarModelError(f"{self.loss!r}, choose one of {', '.join(LOSSES)}", owner="CarMLPConfig",
                                field="loss")
        who = "car model setting"      # plain-language messages naming the flag (engine/validation.py)
        check_int(who, "hidden (--hidden)", self.hidden, 1, 10**9, hint="the paper uses 64")
        check_int(who, "layers (--layers)", self.layers, 1, 64, hint="the paper uses 8")
        check_int(who, "epochs (--epochs)", self.epochs, 1, 1_000_000)
        check_int(who, "batch_size", self.batch_size, 1, 10_000_000)
        check_int(who, "seed (--seed)", self.seed, 0, 2**32 - 1, hint="seeds are whole numbers from 0")
        check_range(
            who, "lr", self.lr, 0.0, 1.0, lo_open=True, hint="Adam learning rates are usually 1e-4 to 1e-2"
        )
        check_range(who, "eps", self.eps, 0.0, 100.0, lo_open=True, unit="m/s")
        check_range(who, "weight_decay", self.weight_decay, 0.0, 1.0)
        check_range(who, "val_fraction", self.val_fraction, 0.0, 1.0, hi_open=True)
        check_allocation(f"training a car model of {self.layers} x {self.hidden} units on batches of "
                         f"{self.batch_size}", training_elements(self), 4, field="hidden (--hidden)",
                         hint="lower --hidden or --layers")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CarMLPConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def training_elements(config: CarMLPConfig) -> float:
    """Float32 numbers training ``config`` holds at once, estimated before anything is made: the
    weights with their gradients and Adam's two moments, and one batch's activations through
    every layer forward and backward (about six numbers per unit)."""
    h, n = float(config.hidden), float(config.layers)
    weights = 5 * h + (n - 1) * h * (h + 1) + 4 * h + 3
    return 4 * weights + 6 * float(config.batch_size) * h * n


class CarMLP(nn.Module):
    """``v_next = v + out_scale * net((cat(v, u) - in_mean) / in_std)``."""

    linears: nn.ModuleList  # of nn.Linear
    in_mean: torch.Tensor  # buffers: (5,), (5,), (3,)
    in_std: torch.Tensor
    out_scale: torch.Tensor

    def __init__(self, config: CarMLPConfig = CarMLPConfig()):
        super().__init__()
        self.config = config
        dims = [5] + [config.hidden] * config.layers + [3]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.register_buffer("in_mean", torch.zeros(5))
        self.register_buffer("in_std", torch.ones(5))
        self.register_buffer("out_scale", torch.ones(3))
        with torch.no_grad():  # a small last layer: the untrained model is close to v_next = v
            cast(nn.Linear, self.linears[-1]).weight.mul_(0.1)
            cast(nn.Linear, self.linears[-1]).bias.zero_()

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
            for i, layer in enumerate(cast("list[nn.Linear]", self.linears)):
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


def save_car_model(directory: str | Path, model: CarMLP, meta: dict | None = None) -> Path:
    """Write ``car_model.safetensors`` + ``car_model.json`` (config and ``meta``) into ``directory``."""
    info = {"kind": "car_mlp", "config": model.config.to_dict(), **(meta or {})}
    return io.save_checkpoint(directory, model.state_dict(), info, name="car_model")


def expected_shapes(config: CarMLPConfig) -> dict[str, tuple[int, ...]]:
    """The tensor names and shapes of a :class:`CarMLP` with ``config`` (without building it)."""
    dims = [5] + [config.hidden] * config.layers + [3]
    shapes: dict[str, tuple[int, ...]] = {"in_mean": (5,), "in_std": (5,), "out_scale": (3,)}
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        shapes[f"linears.{i}.weight"] = (b, a)
        shapes[f"linears.{i}.bias"] = (b,)
    return shapes


def read_safetensors_header(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes from a safetensors file's header (no weights are read)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise CarModelError(f"{path}: too short for a safetensors file; save the model again")
            n = int.from_bytes(head, "little")
            size = path.stat().st_size
            if n <= 0 or n > min(size - 8, 100_000_000):
                raise CarModelError(
                    f"{path}: not a valid safetensors file (header length {n}); save the model again"
                )
            header = json.loads(fh.read(n).decode("utf-8"))
    except FileNotFoundError:
        raise CarModelError(f"{path}: file not found; a car model folder holds car_model.safetensors "
                            f"and car_model.json") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CarModelError(f"{path}: not a valid safetensors file (its header is not JSON: {exc})") from None
    if not isinstance(header, dict):
        raise CarModelError(f"{path}: not a valid safetensors file (header is not an object)")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape") if isinstance(info, dict) else None
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise CarModelError(f"{path}: tensor {name!r} has no valid shape in the header")
        out[name] = tuple(shape)
    return out


def load_car_model(directory: str | Path) -> tuple[CarMLP, dict]:
    """Load a model written by :func:`save_car_model`; ``CarModelError`` naming the file if broken.

    Checked before anything is built: the JSON's sizes (``config``) against the tensor shapes
    in the weights' header; after reading: every weight finite (the tensor is named).
    """
    directory = Path(directory)
    json_path, weights_path = directory / "car_model.json", directory / "car_model.safetensors"
    meta = io.read_json(json_path)
    if (
        not isinstance(meta, dict)
        or meta.get("kind") != "car_mlp"
        or not isinstance(meta.get("config"), dict)
    ):
        raise CarModelError(f"{json_path}: not a car model (field 'kind'/'config')")
    try:
        config = CarMLPConfig.from_dict(meta["config"])
    except (TypeError, ValueError) as exc:
        raise CarModelError(f"{json_path}: field 'config': {exc}") from None
    want = expected_shapes(config)
    have = read_safetensors_header(weights_path)
    if have != want:
        missing = sorted(set(want) - set(have))
        extra = sorted(set(have) - set(want))
        wrong = [k for k in want if k in have and have[k] != want[k]]
        detail = (f"tensor {wrong[0]!r} is {list(have[wrong[0]])}, the config ({config.layers} layers x "
                  f"{config.hidden} units) needs {list(want[wrong[0]])}" if wrong else
                  f"missing tensors {missing[:3]}" if missing else f"unexpected tensors {extra[:3]}")
        raise CarModelError(f"{weights_path}: the weights do not match {json_path.name} ({detail}); "
                            f"use the two files saved together")
    state, _ = io.load_checkpoint(directory, name="car_model")
    for name, tensor in state.items():
        if not torch.isfinite(tensor).all():
            raise CarModelError(f"{weights_path}: tensor {name!r} holds NaN or infinite values; "
                                f"the model is broken, train it again")
    try:
        model = CarMLP(config)
        model.load_state_dict(state)
    except (RuntimeError, TypeError, KeyError) as exc:
        raise CarModelError(f"{weights_path}: weights do not match the config ({exc})") from exc
    model.eval()
    return model, meta
