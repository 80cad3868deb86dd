"""Shared pytest setup."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op thread, as alf trains by default (TrainerConfig.num_threads=1).

    With torch's default (one thread per core) a tiny op on this loaded 2-core
    machine can take 100x longer while threads spin and wait for a core.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
