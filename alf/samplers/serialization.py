"""``dumps``/``loads``: the pickling of the messages between the learner and its samplers.

Plain ``pickle`` stores a torch tensor through ``torch.save`` of its storage, which
costs about 0.1 ms per tensor: an unroll of a few hundred small tensors would spend
most of its time there. Here a CPU tensor whose dtype numpy has is pickled as its numpy
array (protocol 5, a plain copy of the bytes) and comes back as a tensor sharing that
array's memory; any other tensor (bfloat16, CUDA) is pickled as ``pickle`` would.
"""

from __future__ import annotations

import io
import pickle

import torch


def _tensor_from_numpy(array) -> torch.Tensor:
    return torch.from_numpy(array)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if type(obj) is torch.Tensor and obj.device.type == "cpu":
            try:
                array = obj.detach().numpy()
            except (TypeError, RuntimeError):
                return NotImplemented  # a dtype numpy lacks (e.g. bfloat16)
            return _tensor_from_numpy, (array,)
        return NotImplemented


def dumps(obj) -> bytes:
    """Pickle ``obj`` (see the module doc)."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def loads(data: bytes):
    """Unpickle what ``dumps`` made."""
    return pickle.loads(data)
