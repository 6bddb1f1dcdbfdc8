"""Analytic mechanical systems: the ground truth for learning and control.

Modules are imported lazily: ``get_system(name)`` builds a registered
:class:`~engine.systems.base.MechanicalSystem` (``pendulum``, ``cartpole``, ``acrobot``); other modules
(``double_pendulum``, ``rc_car``) are imported by their users directly.
"""

from __future__ import annotations

import importlib

__all__ = ["SYSTEMS", "get_system", "system_names"]

# name -> (module, class); imported on first use.
SYSTEMS: dict[str, tuple[str, str]] = {
    "pendulum": ("engine.systems.pendulum", "Pendulum"),
    "cartpole": ("engine.systems.cartpole", "CartPole"),
    "acrobot": ("engine.systems.acrobot", "Acrobot"),
}


def system_names() -> list[str]:
    return sorted(SYSTEMS)


def get_system(name: str):
    """A fresh analytic system by name; ``ValueError`` naming the choices for an unknown one."""
    try:
        module, cls = SYSTEMS[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; choose one of {', '.join(system_names())}") from None
    return getattr(importlib.import_module(module), cls)()
