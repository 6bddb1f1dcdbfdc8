"""Process-wide settings the engine's entry points apply once (the CLI and the app).

PyTorch recommends jemalloc or tcmalloc for CPU work; with glibc's default malloc every
tensor above 128 KiB is a fresh ``mmap`` and pays page faults on first touch, which at
batch 1024 costs more than the arithmetic (about 1 us per 4 KiB page).
"""

from __future__ import annotations

__all__ = ["tune_malloc"]

_tuned: bool | None = None


def tune_malloc(mmap_threshold: int = 32 << 20, trim_threshold: int = 1 << 30) -> bool:
    """Make glibc's malloc reuse freed memory instead of returning it to the system.

    Allocations below ``mmap_threshold`` bytes come from the heap, and up to
    ``trim_threshold`` bytes of free heap are kept, so large temporary tensors stop paying
    page faults on every call. Process-wide and permanent (memory is kept up to the peak).
    Returns False where it does not apply (not glibc). Idempotent.
    """
    global _tuned
    if _tuned is not None:
        return _tuned
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        _tuned = False
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    _tuned = bool(mallopt(M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(mallopt(M_TRIM_THRESHOLD, int(trim_threshold)))
    return _tuned
