"""The one interface the planner needs: ``step(pose, v, u) -> (pose_next, v_next)``, batched.

Two implementations: :class:`SimulatorCarModel` (the drifting simulator, the reference) and
:class:`LearnedCarModel` (``v_{i+1} = f_theta(v_i, u_i)``, ``pose_{i+1} = pose_i + h R(yaw_i)
v_{i+1}``). Shapes: pose and v (..., 3), u (..., 2); float32 unless the inputs say otherwise.
"""

from __future__ import annotations

import torch

from engine.systems.rc_car import CarParams, car_step, pose_update

__all__ = ["LearnedCarModel", "SimulatorCarModel", "rollout"]


class SimulatorCarModel:
    """The drifting simulator as a planning model (autograd gives its gradients).

    The hard static-to-dynamic friction switch makes the rollout cost discontinuous, which
    stalls gradient descent; the planning copy therefore blends the traction loss over
    ``slip_smoothing`` m/s^2 (unless ``params`` already sets a band). Execution on the
    simulator (:func:`engine.car.scenarios.execute_open_loop`, MPC) uses ``params`` as given.
    """

    kind = "simulator"

    def __init__(self, params: CarParams = CarParams(), slip_smoothing: float = 1.0):
        if params.slip_smoothing == 0 and slip_smoothing > 0:
            params = params.with_(slip_smoothing=slip_smoothing)
        self.params = params
        self.h = params.dt
        self.name = "simulator"

    def step(self, pose: torch.Tensor, v: torch.Tensor, u: torch.Tensor):
        out = car_step(pose, v, u, self.params)
        return out.pose, out.v


class LearnedCarModel:
    """A learned velocity model (e.g. :class:`engine.car.model.CarMLP`) with the pose update."""

    kind = "learned"

    def __init__(self, model, h: float = 0.05, name: str = "learned"):
        self.model = model
        self.h = float(h)
        self.name = name
        for p in model.parameters():
            p.requires_grad_(False)

    def step(self, pose: torch.Tensor, v: torch.Tensor, u: torch.Tensor):
        device = next(self.model.parameters()).device  # the network's device (--device); poses stay put
        if device != v.device:
            return_to = v.device
            v_next = self.model(v.to(device), u.to(device)).to(return_to)
            return pose_update(pose, v_next, self.h), v_next
        v_next = self.model(v, u)
        return pose_update(pose, v_next, self.h), v_next


def rollout(dynamics, pose0: torch.Tensor, v0: torch.Tensor, controls: torch.Tensor):
    """Poses (..., N+1, 3) and velocities (..., N+1, 3) under ``controls`` (..., N, 2)."""
    shape = torch.broadcast_shapes(pose0.shape[:-1], v0.shape[:-1], controls.shape[:-2])
    pose, v = pose0.expand(shape + (3,)), v0.expand(shape + (3,))
    poses, vels = [pose], [v]
    for i in range(controls.shape[-2]):
        pose, v = dynamics.step(pose, v, controls[..., i, :])
        poses.append(pose)
        vels.append(v)
    return torch.stack(poses, -2), torch.stack(vels, -2)


def load_dynamics(spec: str, params: CarParams = CarParams(), device: str = "cpu"):
    """``"sim"`` (or ``"simulator"``) -> :class:`SimulatorCarModel`; ``"default"`` -> the shipped
    learned model (:func:`engine.car.model.default_model_dir`); else a folder written by
    :func:`engine.car.model.save_car_model` -> :class:`LearnedCarModel`. ``device``: where a learned
    network runs (cpu, cuda, auto; the simulator is the CPU reference)."""
    if spec in ("sim", "simulator"):
        return SimulatorCarModel(params)
    from pathlib import Path

    from engine.car.model import DEFAULT_MODEL, default_model_dir, load_car_model
    from engine.devices import resolve_device

    if spec == DEFAULT_MODEL and not Path(spec).exists():
        model, meta = load_car_model(default_model_dir())
        return LearnedCarModel(
            model.to(resolve_device(device)), float(meta.get("h", params.dt)), name="default"
        )
    model, meta = load_car_model(spec)
    return LearnedCarModel(
        model.to(resolve_device(device)), float(meta.get("h", params.dt)), name=Path(spec).name
    )
