"""The Device preference (cpu / auto / cuda): where the app's training and planning jobs compute;
and the Threads preference (auto / 1 / 2 ...): torch's intra-op threads for every job the app runs.

Qt-free: the menu (app/main_window.py) shows :func:`device_choices`, stores the choice in the
settings under :data:`SETTINGS_KEY` (app/settings.py's QSettings, or any object with
``value``/``setValue``) and calls :func:`set_preferred_device`; the jobs that train or plan read
:func:`preferred_device` when they are built (a name the engine resolves with
``engine.devices.resolve_device``, as the command line's ``--device``).

Threads work the same way under :data:`THREADS_KEY` (:func:`thread_choices`,
:func:`load_threads_preference`, :func:`save_threads_preference`, :func:`preferred_threads`);
``app/jobs.py`` runs every job inside ``engine.threads.job_threads(preferred_threads())``, as the
command line's ``--threads``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from engine.devices import DeviceError, cuda_available, parse_device_name
from engine.threads import AUTO, ThreadsError, parse_threads

__all__ = ["SETTINGS_KEY", "THREADS_KEY", "DeviceChoice", "device_choices", "load_preference",
           "load_threads_preference", "preferred_device", "preferred_threads", "save_preference",
           "save_threads_preference", "set_preferred_device", "set_preferred_threads", "thread_choices"]

SETTINGS_KEY = "compute/device"
DEFAULT = "cpu"
_current = DEFAULT


@dataclass(frozen=True)
class DeviceChoice:
    name: str        # cpu, auto, cuda
    label: str       # the menu's text
    enabled: bool
    reason: str      # why it is greyed out ("" when enabled)


def _no_cuda_reason() -> str:
    import torch

    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) is built without CUDA"
    return f"torch is built with CUDA {torch.version.cuda} but sees no GPU"


def device_choices(has_cuda: bool | None = None) -> list[DeviceChoice]:
    """The menu's entries; ``cuda`` is greyed out, with the reason, where there is no usable GPU."""
    has_cuda = cuda_available() if has_cuda is None else has_cuda
    return [
        DeviceChoice("cpu", "CPU", True, ""),
        DeviceChoice("auto", "Auto (the GPU when there is one)", True, ""),
        DeviceChoice("cuda", "CUDA GPU", has_cuda, "" if has_cuda else f"No CUDA GPU: {_no_cuda_reason()}"),
    ]


def _usable(name, has_cuda: bool) -> str | None:
    """``name`` normalised when it can be used here, else None."""
    try:
        text = parse_device_name(str(name))
    except DeviceError:
        return None
    if text.startswith("cuda") and not has_cuda:
        return None
    return text


def load_preference(settings, has_cuda: bool | None = None) -> str:
    """The stored preference when it can be used here; else ``cpu`` (a stored ``cuda`` on a
    machine without a GPU, or a value that is not a device)."""
    has_cuda = cuda_available() if has_cuda is None else has_cuda
    value = settings.value(SETTINGS_KEY, DEFAULT) if settings is not None else DEFAULT
    return _usable(value, has_cuda) or DEFAULT


def save_preference(settings, name: str, has_cuda: bool | None = None) -> str:
    """Store ``name`` (refused with :class:`~engine.devices.DeviceError` when it is not a device,
    or is CUDA where there is none) and make it the jobs' device; returns the stored name."""
    has_cuda = cuda_available() if has_cuda is None else has_cuda
    text = _usable(name, has_cuda)
    if text is None:
        parse_device_name(str(name))  # not a device: its own message
        raise DeviceError(f"Device preference {name}: {_no_cuda_reason()}; choose CPU or Auto")
    settings.setValue(SETTINGS_KEY, text)
    set_preferred_device(text)
    return text


def set_preferred_device(name: str) -> None:
    global _current
    _current = parse_device_name(name)


def preferred_device() -> str:
    """The device name the jobs that train or plan use (``cpu`` until the app loads the preference)."""
    return _current


# -- threads per job ------------------------------------------------------------------------------

THREADS_KEY = "compute/threads"
_threads: int | str = AUTO


def thread_choices(cores: int | None = None) -> list[tuple[int | str, str]]:
    """The menu's entries, ``(value, label)``: auto, then 1 up to the number of cores."""
    cores = max(1, int(cores or os.cpu_count() or 1))
    return [(AUTO, "Auto (measured per job: one thread)")] + \
        [(n, f"{n} thread{'s' if n > 1 else ''} per job") for n in range(1, cores + 1)]


def load_threads_preference(settings) -> int | str:
    """The stored thread preference, or ``auto`` when none is stored or it is not a thread count."""
    value = settings.value(THREADS_KEY, AUTO) if settings is not None else AUTO
    try:
        return parse_threads(value)
    except ThreadsError:
        return AUTO


def save_threads_preference(settings, value) -> int | str:
    """Store ``value`` (``auto`` or a count; :class:`~engine.threads.ThreadsError` otherwise) and make
    it the threads of the jobs started from now on; returns the stored value."""
    choice = parse_threads(value, flag="Threads preference")
    settings.setValue(THREADS_KEY, str(choice))
    set_preferred_threads(choice)
    return choice


def set_preferred_threads(value) -> None:
    global _threads
    _threads = parse_threads(value, flag="Threads preference")


def preferred_threads() -> int | str:
    """The thread count (or ``auto``) every job the app runs uses (``auto`` until the app loads it)."""
    return _threads
