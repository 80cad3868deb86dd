"""Small torch helpers shared by algorithms and the acting loop."""

from __future__ import annotations

import contextlib
import logging

import numpy as np
import torch

import alf.nest as nest


@contextlib.contextmanager
def frozen(parameters):
    """Within the block, ops on ``parameters`` record no gradient for them (gradients
    still flow through them to other inputs); ``requires_grad`` is restored after.

    Used for actor losses through a critic: the critic's weight gradients are
    neither computed nor needed there.
    """
    parameters = list(parameters)
    flags = [p.requires_grad for p in parameters]
    for p in parameters:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(parameters, flags):
            p.requires_grad_(flag)


def configure_cpu_math(
    num_threads: int, flush_denormal: bool, matmul_precision: str = "highest"
) -> None:
    """Set the process's torch arithmetic for training and play.

    Args:
        num_threads: ``torch.set_num_threads`` (0: leave torch's default).
        flush_denormal: ``torch.set_flush_denormal``: treat subnormal floats (nonzero
            ``|x| < 1.2e-38``) as 0 in CPU arithmetic. x86 CPUs compute on subnormals
            many times slower, and Adam produces them: the first moment of a weight
            whose gradient is almost always 0 (a ReLU unit that rarely fires) decays
            geometrically through the subnormal range. A warning is logged where the
            CPU cannot flush (it then keeps computing on subnormals).
        matmul_precision: ``torch.set_float32_matmul_precision`` (``TrainerConfig``).
    """
    torch.set_float32_matmul_precision(matmul_precision)
    if num_threads > 0:
        torch.set_num_threads(num_threads)
    if not torch.set_flush_denormal(flush_denormal) and flush_denormal:
        logging.warning(
            "TrainerConfig.flush_denormal=True has no effect: this CPU cannot flush "
            "subnormal floats to zero"
        )


def lazy_zeros(shape, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``torch.zeros(shape, dtype=dtype, device=device)`` whose memory is committed as it
    is written, on the CPU.

    ``torch.zeros`` writes every byte, so a replay buffer sized for a million steps is
    resident from its first step. On the CPU this takes the zeroed pages of the C
    library's ``calloc`` (through numpy), which the OS maps only when first written:
    the same zeros, with the memory of the rows used so far. Other devices, and dtypes
    numpy lacks, get ``torch.zeros``.
    """
    device = torch.device(device)
    numpy_dtype = _NUMPY_DTYPES.get(dtype)
    if device.type != "cpu" or numpy_dtype is None:
        return torch.zeros(shape, dtype=dtype, device=device)
    return torch.from_numpy(np.zeros(tuple(shape), dtype=numpy_dtype))


_NUMPY_DTYPES = {
    torch.bool: np.bool_,
    torch.uint8: np.uint8,
    torch.int8: np.int8,
    torch.int16: np.int16,
    torch.int32: np.int32,
    torch.int64: np.int64,
    torch.float16: np.float16,
    torch.float32: np.float32,
    torch.float64: np.float64,
    torch.complex64: np.complex64,
    torch.complex128: np.complex128,
}


def reset_state_if_necessary(state, initial_state, reset_mask: torch.Tensor):
    """``state`` with rows where ``reset_mask`` ``[B]`` holds replaced by ``initial_state``."""

    def _reset(s, s0):
        mask = reset_mask.reshape((-1,) + (1,) * (s.ndim - 1))
        return torch.where(mask, s0, s)

    return nest.map_structure(_reset, state, initial_state)
