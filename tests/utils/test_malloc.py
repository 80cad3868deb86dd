"""``alf.utils.malloc``: freed memory stays in the process for the next update, while big
blocks (replay buffers) are still mapped on their own.

Checked on glibc's own accounting (``mallinfo2``) in fresh processes: page-fault counts
are not a stable measure here (transparent huge pages map 512 pages in one fault, where
the block's address allows it).
"""

import ctypes
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from alf.utils import malloc

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or platform.libc_ver()[0] != "glibc"
    or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="glibc's allocator only (mallinfo2: glibc 2.33 or later)",
)

# Allocates a block of ``size`` MiB (a torch tensor, or lazy_zeros's calloc), frees it, and
# prints the MiB that glibc mapped for it and the MiB free in its heap afterwards.
BLOCK = textwrap.dedent(
    """
    import ctypes, sys, torch
    from alf.utils import malloc, torch_utils

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = MallInfo2
    mode, size, how = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3]
    if mode == "keep":
        assert malloc.keep_freed_memory()
    before = mallinfo2().hblkhd
    if how == "tensor":
        block = torch.ones(size // 4)
    else:
        block = torch_utils.lazy_zeros((size // 4,), torch.float32, "cpu")
    mapped = mallinfo2().hblkhd - before
    del block
    print(mapped >> 20, mallinfo2().fordblks >> 20)
    """
)


def _block(mode: str, size_mib: int, how: str = "tensor") -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", BLOCK, mode, str(size_mib), how], capture_output=True,
        text=True, env=env, timeout=300, check=True,
    )  # fmt: skip
    mapped, free_in_heap = out.stdout.split()[-2:]
    return int(mapped), int(free_in_heap)


def test_an_update_sized_block_stays_in_the_heap_after_it_is_freed():
    # glibc's defaults: a 24 MiB activation is mapped on its own and returned when freed,
    # so the next update faults it in again
    mapped, free_in_heap = _block("default", 24)
    assert mapped == 24 and free_in_heap < 24
    mapped, free_in_heap = _block("keep", 24)
    assert mapped == 0 and free_in_heap >= 24


def test_a_replay_buffer_sized_block_is_still_mapped_lazily():
    mapped, free_in_heap = _block("keep", 64, how="lazy_zeros")
    assert mapped == 64 and free_in_heap < 64


def test_other_c_libraries_are_left_alone(monkeypatch):
    monkeypatch.setattr(malloc.platform, "libc_ver", lambda: ("", ""))
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: pytest.fail("mallopt called"))
    assert not malloc.keep_freed_memory()
