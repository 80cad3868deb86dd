"""``alf.utils.malloc``: freed memory is kept for the next update (no page faults)."""

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from alf.utils import malloc

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's allocator only",
)

# Adam steps of an 8-512-512-1 MLP on 256 rows (activations of 512 kB); prints the minor
# page faults per step after 5 warm-up steps.
STEPS = textwrap.dedent(
    """
    import resource, sys, torch
    from alf.utils import malloc
    if sys.argv[1] == "keep":
        assert malloc.keep_freed_memory()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(8, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 1),
    )
    optimizer = torch.optim.Adam(net.parameters())
    x = torch.randn(256, 8)

    def step():
        loss = net(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(5):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(50):
        step()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50)
    """
)


def _faults_per_step(mode: str) -> float:
    env_free = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", STEPS, mode], capture_output=True, text=True, env=env_free,
        timeout=300, check=True,
    )  # fmt: skip
    return float(out.stdout.split()[-1])


def test_kept_memory_is_not_faulted_in_again():
    default, kept = _faults_per_step("default"), _faults_per_step("keep")
    # glibc's defaults return the freed activations to the OS: hundreds of faults per step
    assert default > 100, default
    assert kept < default / 20, (kept, default)


def test_other_c_libraries_are_left_alone(monkeypatch):
    monkeypatch.setattr(malloc.platform, "libc_ver", lambda: ("", ""))
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: pytest.fail("mallopt called"))
    assert not malloc.keep_freed_memory()
