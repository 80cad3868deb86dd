"""The C library allocator's settings for a training process.

glibc's ``malloc`` hands memory back to the OS eagerly: blocks above its mmap threshold
(128 kB at first, raised only as such blocks are freed) are mapped and unmapped one by one,
and free memory at the top of the heap is trimmed once it exceeds twice that threshold. A
training step allocates and frees the same activations and gradients every time, so the
same pages are returned and then faulted in again, zeroed by the kernel, on every update:
an 8-512-512-1 MLP's Adam step on 256 rows took 64 to 354 page faults per step, an alf SAC
iteration on Pendulum (256-unit critics, 256 rows) 251. Raising both thresholds keeps that
memory in the process for the next step. Peak memory barely moves (the same blocks are reused); what
is kept after a peak is at most ``trim_threshold`` more.
"""

from __future__ import annotations

import ctypes
import logging
import platform
import sys

#: ``mallopt`` parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: blocks from this size up stay mapped one by one: a replay buffer's untouched rows are
#: then never committed (``torch_utils.lazy_zeros``), and its memory returns when freed
MMAP_THRESHOLD = 32 << 20


def keep_freed_memory(
    mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = 256 << 20
) -> bool:
    """Let glibc keep freed memory for reuse (module doc): blocks below ``mmap_threshold``
    bytes come from the heap, and free heap memory is returned to the OS only beyond
    ``trim_threshold`` bytes.

    Returns:
        True when both settings took effect; False where the C library is not glibc
        (nothing is changed) or refused one of them (logged).
    """
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = ((M_MMAP_THRESHOLD, mmap_threshold), (M_TRIM_THRESHOLD, trim_threshold))
    refused = [value for param, value in settings if mallopt(param, value) != 1]
    if refused:
        logging.warning("glibc mallopt refused the allocator thresholds %s", refused)
    return not refused
