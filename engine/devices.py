"""Which torch device a computation runs on: ``cpu``, ``cuda`` (``cuda:N``) or ``auto``.

The command line's ``--device`` (engine/cli/_common.py: ``add_device_option``) and the app's
preference resolve through :func:`resolve_device`. ``auto`` takes the GPU when torch can use
one, else the CPU; asking for CUDA where there is none is a user error (:class:`DeviceError`, a
``ValueError``) that says so and what to use instead. Precision stays the caller's choice: the
rigid-body engine keeps float64 on every device.
"""

from __future__ import annotations

import re

import torch

__all__ = ["DEVICE_CHOICES", "DeviceError", "cuda_available", "parse_device_name", "resolve_device"]

DEVICE_CHOICES = ("cpu", "cuda", "auto")
_NAME = re.compile(r"^(cpu|auto|cuda)(?::(\d+))?$")


class DeviceError(ValueError):
    """A device that does not exist here, or a name that is not a device."""


def cuda_available() -> bool:
    """True when torch was built with CUDA and sees at least one GPU."""
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver reads as "no CUDA"
        return False


def parse_device_name(name: str) -> str:
    """``name`` normalised (``"CUDA:0"`` -> ``"cuda:0"``), or :class:`DeviceError` when it is
    not ``cpu``, ``cuda``, ``cuda:N`` or ``auto``."""
    text = str(name).strip().lower()
    match = _NAME.match(text)
    if not match or (match.group(2) is not None and match.group(1) != "cuda"):
        raise DeviceError(f"device {name!r} is not one of cpu, cuda, cuda:N, auto; choose one of these")
    return text


def resolve_device(name: str | torch.device | None = "auto", flag: str = "--device") -> torch.device:
    """The torch device ``name`` means here.

    ``"auto"`` (or None): ``cuda`` when available, else ``cpu``. ``"cuda"``/``"cuda:N"`` where
    CUDA is absent, or N beyond the GPUs there are, raises :class:`DeviceError` naming ``flag``
    (the option or setting the user chose it with).
    """
    if isinstance(name, torch.device):
        name = str(name)
    text = parse_device_name("auto" if name is None else name)
    if text == "auto":
        return torch.device("cuda" if cuda_available() else "cpu")
    if text == "cpu":
        return torch.device("cpu")
    if not cuda_available():
        built = (
            "without CUDA"
            if torch.version.cuda is None
            else f"with CUDA {torch.version.cuda} but sees no GPU"
        )
        raise DeviceError(
            f"{flag} {text}: this machine has no usable CUDA GPU (torch {torch.__version__} "
            f"is built {built}); use {flag} cpu, or {flag} auto to take a GPU only where there is one"
        )
    device = torch.device(text)
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise DeviceError(
            f"{flag} {text}: there {'is' if count == 1 else 'are'} only {count} CUDA "
            f"device{'s' if count != 1 else ''} (cuda:0 to cuda:{count - 1}); choose one of them"
        )
    return device
