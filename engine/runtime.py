"""Process-wide settings the engine applies once, at ``import engine`` (scripts, notebooks, the
CLI and the app alike; ``LAGRANGE_NO_TUNE_MALLOC=1`` opts out of the allocator setting).

PyTorch recommends jemalloc or tcmalloc for CPU work; with glibc's default malloc every
tensor above 128 KiB is a fresh ``mmap`` and pays page faults on first touch, which at
batch 1024 costs more than the arithmetic (about 1 us per 4 KiB page).
"""

from __future__ import annotations

__all__ = ["intra_op_threads", "tune_malloc"]

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
    _tuned = bool(mallopt(M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(
        mallopt(M_TRIM_THRESHOLD, int(trim_threshold))
    )
    return _tuned


class intra_op_threads:  # noqa: N801 - used as a context manager, like torch.no_grad
    """``with intra_op_threads(1): ...``: torch's intra-op threads for the calling thread, restored after.

    The rigid-body algorithms run hundreds of small tensor operations per call; at batches in
    the thousands each is just above torch's parallel grain (32768 elements), so every one opens
    an OpenMP region over all of torch's threads (by default one per core). Fork and join then
    cost more than the arithmetic, and on a machine whose cores are busy (other processes, the
    GUI) a thread that waits for a descheduled peer stalls the call: measured here with the
    cores shared by other work, RNEA at batch 1024 took 100 to 900 ms with 2 threads against
    6 to 9 ms with one (Pinocchio's loop: 4 to 7 ms). OpenMP keeps the thread count per calling
    thread, so other threads keep theirs.
    """

    def __init__(self, n: int = 1):
        self.n = int(n)
        self._prev = None

    def __enter__(self):
        import torch

        prev = torch.get_num_threads()
        if prev != self.n:
            self._prev = prev
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        if self._prev is not None:
            import torch

            torch.set_num_threads(self._prev)
            self._prev = None
        return False
