"""The learned control potential V_theta(q): an MLP with tanh hidden layers and its analytic gradient.

The closed loop uses ``u = -dV_theta/dq``. The gradient is written out by hand (a backward
pass through the tanh layers) so that integrating the closed loop needs no nested autograd;
it is itself differentiable with respect to ``q`` and the weights.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from engine.eigenmodes.config import PotentialConfig

__all__ = ["PotentialMLP"]


class PotentialMLP(nn.Module):
    """V_theta: ``(..., 2) -> (...)`` in J, with ``gradient(q) -> (..., 2)`` in N m."""

    hidden: nn.ModuleList  # of nn.Linear
    out: nn.Linear

    def __init__(self, config: PotentialConfig | None = None, dtype=torch.float64, seed: int | None = None):
        super().__init__()
        config = config if config is not None else PotentialConfig()
        config.validate()
        self.config = config
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        sizes = [2] + [config.hidden] * config.layers
        self.hidden = nn.ModuleList()
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            layer = nn.Linear(n_in, n_out, dtype=dtype)
            bound = 1.0 / n_in ** 0.5
            with torch.no_grad():
                layer.weight.copy_(
                    torch.empty(n_out, n_in, dtype=dtype).uniform_(-bound, bound, generator=gen)
                )
                layer.bias.copy_(torch.empty(n_out, dtype=dtype).uniform_(-bound, bound, generator=gen))
            self.hidden.append(layer)
        self.out = nn.Linear(sizes[-1], 1, dtype=dtype)
        bound = config.output_scale / sizes[-1] ** 0.5
        with torch.no_grad():
            self.out.weight.copy_(
                torch.empty(1, sizes[-1], dtype=dtype).uniform_(-bound, bound, generator=gen)
            )
            self.out.bias.zero_()

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        h = q
        for layer in self.hidden:
            h = torch.tanh(layer(h))
        return self.out(h).squeeze(-1)

    def gradient(self, q: torch.Tensor) -> torch.Tensor:
        """dV_theta/dq, ``(..., 2)``: the analytic backward pass through the tanh layers."""
        acts = []
        h = q
        for layer in cast("list[nn.Linear]", self.hidden):
            h = torch.tanh(torch.nn.functional.linear(h, layer.weight, layer.bias))
            acts.append(h)
        g = self.out.weight[0].expand_as(acts[-1])
        for layer, a in zip(reversed(cast("list[nn.Linear]", self.hidden)), reversed(acts)):
            g = (g * (1 - a * a)) @ layer.weight
        return g

    def control(self, q: torch.Tensor) -> torch.Tensor:
        """u = -dV_theta/dq, ``(..., 2)`` in N m."""
        return -self.gradient(q)
