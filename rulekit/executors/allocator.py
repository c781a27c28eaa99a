"""The process's C allocator, set for what a job does: read its logs a few MiB at a time.

Extraction reads each log in chunks of `extract.scan.CHUNK_SIZE` (4 MiB, completed
to a line end by a copy) and keeps a few in flight.  glibc's malloc serves such
blocks with `mmap` and hands them back on `free` (or, once its thresholds have
grown, grows the heap for them and trims it again), so every chunk of every job
was memory the kernel had to fault in and zero anew: ~6,100 page faults per
35 MiB job, most of what a batch of them faulted in.  `keep_chunk_memory()`
raises both thresholds to glibc's largest mmap threshold (32 MiB): a chunk is
carved from the heap and its pages are kept for the next one when it is freed.
The blocks in use at once are the same; up to 32 MiB of freed heap stays with the
process instead of going back to the kernel, so the peak RSS may be up to that
much higher (measured: the same on the realistic logs, +21 MiB in some runs at
20 % evidence lines).

Called once per process by `base.run_job` (the job's chunk-scan workers inherit
it with the fork).  Only where the C library has `mallopt` (glibc; elsewhere it
does nothing), and never when the user set the thresholds in the environment
(`MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`: theirs stand).
"""
from __future__ import annotations

import os

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_MMAP_THRESHOLD = -3
THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: above it mallopt refuses
USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")

_set: bool | None = None  # None: not asked yet in this process


def keep_chunk_memory() -> bool:
    """Set the thresholds (asked once per process); whether this process has them."""
    global _set
    if _set is None:
        _set = _apply()
    return _set


def _apply() -> bool:
    if any(name in os.environ for name in USER_SETTINGS):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or one without mallopt (macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, THRESHOLD))
