"""``lazy_zeros``: the zeros of ``torch.zeros``, with memory committed as it is written."""

import os

import pytest
import torch

from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.tensor_specs import TensorSpec
from alf.utils.torch_utils import lazy_zeros


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS"))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bool]
)
def test_lazy_zeros_equal_torch_zeros(dtype):
    x = lazy_zeros((3, 4, 2), dtype, "cpu")
    assert x.dtype == dtype and x.shape == (3, 4, 2) and x.device.type == "cpu"
    assert torch.equal(x, torch.zeros(3, 4, 2, dtype=dtype))
    x[1, 2] = 1  # a writable tensor of its own
    assert int(x.sum()) == 2 and x.is_contiguous()


def test_lazy_zeros_without_numpy_dtype_is_torch_zeros():
    x = lazy_zeros((2, 3), torch.bfloat16, torch.device("cpu"))
    assert x.dtype == torch.bfloat16 and torch.equal(x, torch.zeros(2, 3, dtype=torch.bfloat16))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmRSS from /proc")
def test_a_large_replay_buffer_is_resident_only_where_written():
    spec = dict(observation=TensorSpec((50,)), reward=TensorSpec(()))
    before = _rss_mb()
    buffer = ReplayBuffer(spec, num_environments=2, max_length=1_000_000)  # 408 MB of zeros
    allocated = _rss_mb()
    for leaf in buffer.state_dict().values():
        if torch.is_tensor(leaf) and leaf.dim() >= 2:
            leaf[:, :100_000] = 1.0  # a tenth of the rows
    written = _rss_mb()
    assert allocated - before < 30
    assert 30 < written - allocated < 80  # ~41 MB written
