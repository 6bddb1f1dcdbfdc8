"""A small random car model for the planner tests: 3 x 32, weights scaled up so the dynamics
are clearly nonlinear, with fixed input and output scales."""

import torch

from engine.car.model import CarMLP, CarMLPConfig


def random_car_model(activation: str = "gelu", seed: int = 0) -> CarMLP:
    torch.manual_seed(seed)
    m = CarMLP(CarMLPConfig(hidden=32, layers=3, activation=activation))
    with torch.no_grad():
        m.in_std.copy_(torch.tensor([1.0, 0.3, 1.5, 4.0, 0.3]))
        m.out_scale.copy_(torch.tensor([0.3, 0.1, 0.5]))
        for layer in m.linears:
            layer.weight.mul_(1.5)
    return m
