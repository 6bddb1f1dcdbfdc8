"""Model types by name, and checkpoints (safetensors + JSON) that rebuild a model from its name.

``register_model(name, factory)`` adds a type: ``factory(spec: ModelSpec) -> LearnedDynamics``.
Built in: node-rk4, node-midpoint, lnode-rk4, lnode-midpoint, symo, e2e-symo, mlp, and the
learnable rigid-body robot model of the system's URDF, robot-rk4 and robot-midpoint
(engine/models/robot.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.io import CheckpointError, load_checkpoint, module_shapes, save_checkpoint
from engine.models.base import LearnedDynamics, ModelSpec

__all__ = ["PAPER_MODELS", "build_model", "load_model", "model_names", "register_model", "save_model"]

_REGISTRY: dict[str, Callable[[ModelSpec], LearnedDynamics]] = {}

# The six models of the paper's Fig. 3, in its order.
PAPER_MODELS = ("node-rk4", "node-midpoint", "lnode-rk4", "lnode-midpoint", "symo", "e2e-symo")


def register_model(name: str, factory: Callable[[ModelSpec], LearnedDynamics], replace: bool = False) -> None:
    if name in _REGISTRY and not replace:
        raise ValueError(f"model type {name!r} is already registered")
    _REGISTRY[name] = factory


def model_names() -> list[str]:
    return list(_REGISTRY)


def build_model(name: str, spec: ModelSpec) -> LearnedDynamics:
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model type {name!r}; choose one of {', '.join(model_names())}") from None
    model = factory(spec)
    model.name = name
    return model


def save_model(
    directory: str | Path, model: LearnedDynamics, extra: dict | None = None, name: str = "model"
) -> Path:
    """Write ``<name>.safetensors`` + ``<name>.json`` (type, hyperparameters and ``extra``: data, metrics)."""
    meta = {"type": model.name, "hyperparameters": model.spec.to_dict()}
    meta.update(extra or {})
    return save_checkpoint(directory, model.state_dict(), meta, name)


def load_model(directory: str | Path, name: str = "model") -> tuple[LearnedDynamics, dict]:
    """Rebuild a model saved by :func:`save_model`; returns ``(model, meta)``."""
    def shapes(meta):  # compared with the weights' header before they are read (on torch's meta device)
        try:
            spec = ModelSpec.from_dict(meta["hyperparameters"])
        except (KeyError, TypeError, ValueError):
            return None  # reported below, naming the field
        return module_shapes(lambda: build_model(meta.get("type"), spec))

    state, meta = load_checkpoint(directory, name, expected_shapes=shapes)
    where = Path(directory) / f"{name}.json"
    try:
        spec = ModelSpec.from_dict(meta["hyperparameters"])
        model = build_model(meta["type"], spec)
    except (KeyError, TypeError) as exc:
        raise CheckpointError(f"{where}: missing or malformed field ({exc})") from exc
    except ValueError as exc:
        raise CheckpointError(f"{where}: {exc}") from exc
    migrate = getattr(model, "migrate_state", None)   # an older layout of the same model, brought up to date
    if callable(migrate):
        try:
            state = migrate(state)
        except ValueError as exc:
            raise CheckpointError(f"{where}: {exc}") from exc
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise CheckpointError(f"{Path(directory) / (name + '.safetensors')}: weights do not match the "
                              f"{meta['type']!r} model ({exc})") from exc
    return model, meta


def _register_builtin():
    from engine.models.hybrid import HybridDynamics
    from engine.models.node import LNODE, NODE, BlackBoxMLP
    from engine.models.robot import RobotDynamics
    from engine.models.symo import E2ESyMo, SyMo

    register_model("node-rk4", lambda s: NODE(s, "rk4"))
    register_model("node-midpoint", lambda s: NODE(s, "midpoint"))
    register_model("lnode-rk4", lambda s: LNODE(s, "rk4"))
    register_model("lnode-midpoint", lambda s: LNODE(s, "midpoint"))
    register_model("symo", SyMo)
    register_model("e2e-symo", E2ESyMo)
    register_model("mlp", BlackBoxMLP)
    register_model("robot-rk4", lambda s: RobotDynamics(s, "rk4"))
    register_model("robot-midpoint", lambda s: RobotDynamics(s, "midpoint"))
    register_model("hybrid-rk4", lambda s: HybridDynamics(s, "rk4"))


_register_builtin()
